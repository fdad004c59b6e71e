#!/bin/bash
# Both kernels boot under QEMU with a vmgenid device; the guest's vmgenid
# driver binds, its crng is initialised, and the generation ID the agent
# reads from guest memory is the one QMP says QEMU gave the VM.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

for k in $(test_kernels); do
	kernel=$(kernel_path "$k")
	t_diag "$k: $kernel, accel $(qemu_accel "$kernel")"
	if ! guest_boot "$k" "$kernel"; then
		t_fail "$k: boots and the agent answers"
		continue
	fi
	t_ok "$k: boots and the agent answers"
	info=$(guest_call "$k" info)
	t_diag "$k: $(echo "$info" | tr '\n' ' ')"
	t_eq "$k: vmgenid driver bound" "$(agent_field vmgenid_driver <<<"$info")" bound
	t_eq "$k: crng initialised" "$(agent_field crng <<<"$info")" ready
	guest_guid=$(agent_field guid <<<"$info")
	qmp_guid=$(guest_qmp "$k" query-vm-generation-id | sed -n 's/.*"guid": *"\([^"]*\)".*/\1/p')
	t_eq "$k: guest-memory GUID equals QMP query-vm-generation-id" "$guest_guid" "$qmp_guid"
	if [ -n "$qmp_guid" ] && [ "$qmp_guid" != 00000000-0000-0000-0000-000000000000 ]; then
		t_ok "$k: QEMU drew a non-zero GUID"
	else
		t_fail "$k: QEMU drew a non-zero GUID ('$qmp_guid')"
	fi
	guest_call "$k" poweroff >/dev/null
	if guest_wait_exit "$k" 30; then
		t_ok "$k: powers off on request"
	else
		t_fail "$k: powers off on request"
	fi
	guest_stop "$k"
done
t_done
