#!/bin/bash
# Both kernels boot under QEMU with a vmgenid device; the guest's vmgenid
# driver binds, its crng is initialised, and the generation ID the agent
# reads from guest memory is the one QMP says QEMU gave the VM.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

nonzero_guid() { [ -n "$1" ] && [ "$1" != 00000000-0000-0000-0000-000000000000 ]; }

kernels=$(test_kernels)
t_plan $((6 * $(wc -w <<<"$kernels")))
for k in $kernels; do
	kernel=$(kernel_path "$k")
	t_diag "$k: $kernel, accel $(qemu_accel "$kernel")"
	t_check "$k: boots and the agent answers" guest_boot "$k" "$kernel"
	info=$(guest_call "$k" info || true)
	t_diag "$k: $(tr '\n' ' ' <<<"$info")"
	t_eq "$k: vmgenid driver bound" "$(agent_field vmgenid_driver <<<"$info")" bound
	t_eq "$k: crng initialised" "$(agent_field crng <<<"$info")" ready
	qmp_guid=$(guest_qmp_guid "$k" || true)
	t_eq "$k: guest-memory GUID equals QMP query-vm-generation-id" "$(agent_field guid <<<"$info")" "$qmp_guid"
	t_check "$k: QEMU drew a non-zero GUID ('$qmp_guid')" nonzero_guid "$qmp_guid"
	guest_call "$k" poweroff >/dev/null || true
	t_check "$k: powers off on request" guest_wait_exit "$k" "$POWEROFF_TIMEOUT"
	guest_stop "$k"
done
t_done
