#!/bin/bash
# Without a vmgenid device no driver binds and the guest has no generation
# ID to read; the agent must say so plainly (that is what every fork test
# relies on to refuse a guest that cannot see forks), and QMP must agree.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

no_qmp_guid() { ! guest_qmp "$1" query-vm-generation-id >/dev/null 2>&1; }

kernels=$(test_kernels)
t_plan $((5 * $(wc -w <<<"$kernels")))
for k in $kernels; do
	name=$k-novmgenid
	t_check "$k: boots without vmgenid and the agent answers" \
		guest_boot "$name" "$(kernel_path "$k")" --no-vmgenid
	info=$(guest_call "$name" info || true)
	t_eq "$k: no vmgenid device, no driver bound" "$(agent_field vmgenid_driver <<<"$info")" absent
	t_eq "$k: crng still initialised" "$(agent_field crng <<<"$info")" ready
	err=$(agent_field guid_error <<<"$info")
	t_diag "$k: agent says: $err"
	t_eq "$k: agent reports that there is no generation ID" "${err:0:7}" "no VGIA"
	t_check "$k: QMP query-vm-generation-id fails without the device" no_qmp_guid "$name"
	guest_stop "$name"
done
t_done
