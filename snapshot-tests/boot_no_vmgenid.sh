#!/bin/bash
# Without a vmgenid device no driver binds and the guest has no generation
# ID to read; the agent must say so plainly (that is what every fork test
# relies on to refuse a guest that cannot see forks), and QMP must agree.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

for k in $(test_kernels); do
	kernel=$(kernel_path "$k")
	name=$k-novmgenid
	if ! guest_boot "$name" "$kernel" --no-vmgenid; then
		t_fail "$k: boots without vmgenid and the agent answers"
		continue
	fi
	t_ok "$k: boots without vmgenid and the agent answers"
	info=$(guest_call "$name" info)
	t_eq "$k: no vmgenid device, no driver bound" "$(agent_field vmgenid_driver <<<"$info")" absent
	t_eq "$k: crng still initialised" "$(agent_field crng <<<"$info")" ready
	err=$(agent_field guid_error <<<"$info")
	t_diag "$k: agent says: $err"
	case "$err" in
	"no VGIA"*) t_ok "$k: agent reports that there is no generation ID" ;;
	*) t_fail "$k: agent reports that there is no generation ID" ;;
	esac
	if guest_qmp "$name" query-vm-generation-id >/dev/null 2>&1; then
		t_fail "$k: QMP query-vm-generation-id fails without the device"
	else
		t_ok "$k: QMP query-vm-generation-id fails without the device"
	fi
	guest_stop "$name"
done
t_done
