#!/bin/bash
# The vmgenid driver let go of its device and bound to it again, on each
# patched kernel (the debug lane's too), through sysfs
# (guest/test-scripts/vmgenid-driver):
#  - a poller asleep on /dev/vmgenid across an unbind and a bind is still
#    woken by the next fork: one wake, one uevent, the count one up in a
#    fresh-GUID clone (the file stays open across the unbind; a driver
#    that initialises the wait queue again on each bind orphans it);
#  - the bind brings the device back: /dev/vmgenid answers again;
#  - with the driver unbound, a fork notification finds no handler left
#    behind: the clone's console has no oops, no KASAN report, and the
#    clone still answers (6.12's ACPI path installed a notify handler that
#    outlived the driver, with a NULL driver_data behind it, and a second
#    bind failed on the handler already there);
#  - the control: a clone with the original's GUID sees no wake;
#  - the ID's page goes from user space with the driver and comes back
#    with it (guest/fork_signal.c, "vmgenid-maps"): a /dev/vmgenid mapping
#    made while bound, and on 6.11+ the vvar area's vmgenid_page, hold
#    the ID with their entries kept (a read takes no fault); unbound, the
#    entries are dropped (a read faults) and read zeros; bound again,
#    dropped again and read the ID; a child forked after the parent's
#    read faults vmgenid_page in itself (its fork's copy dropped);
#  - the unbind and the bind print no lockdep, KASAN or atomic-sleep
#    report on the guest's console (the debug lane's kernel sees them).
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

DRIVER=/etc/forksafe/test-scripts/vmgenid-driver
RESUMED_S=2
# What a broken kernel leaves on the console.
OOPS='BUG:|Oops|general protection fault|KASAN|Call Trace'

kernels=$(test_kernels) lane="" patched=""
[ -n "${KERNEL:-}${IMAGE:-}" ] || lane=$(debug_kernel)
for k in $kernels $lane; do
	[ "$(kernel_role "$k")" = stock ] || patched+=" $k"
done
[ -n "$patched" ] || die "vmgenid_rebind: KERNELS names no patched kernel: nothing to test"
# shellcheck disable=SC2086 # a list of names
require_kernels vmgenid_rebind $patched

# oopses NAME: the lines of NAME's console that say the kernel broke.
oopses() { tr -d '\r' <"$(guest_dir "$1")/console.log" | grep -cE "$OOPS" || true; }

ZERO_ID=00000000-0000-0000-0000-000000000000

# maps WHICH: in the "vmgenid-maps status" reply on stdin (one read of each
# of the agent's mappings), the faults of the read of WHICH (dev or vvar)
# and the ID it found.
maps() {
	local out
	out=$(cat)
	echo "$(agent_field "$1_faults" <<<"$out") $(agent_field "$1_id" <<<"$out")"
}

# has_vdso_getrandom RELEASE: Linux 6.11 or later.
has_vdso_getrandom() {
	local major minor
	IFS=. read -r major minor _ <<<"$1"
	[ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 11 ]; }
}

rebind_tests() {
	local k=$1 kernel dir g guid out waited vvar
	kernel=$(kernel_path "$k")
	dir=$RUN_DIR/$k
	mkdir -p "$dir/bound" "$dir/unbound"
	snap_boot migrate-file "$k" "$kernel" 1 "$dir/bound"
	out=$(guest_call "$k" info)
	guid=$(agent_field guid <<<"$out")
	vvar=0
	! has_vdso_getrandom "$(agent_field kernel <<<"$out")" || vvar=1
	g=$(agent_field generation <<<"$(guest_call "$k" vmgenid-probe)")
	guest_call "$k" vmgenid-watch start >/dev/null
	guest_call "$k" vmgenid-maps start >/dev/null
	out=$(guest_call "$k" vmgenid-maps status)
	t_eq "$k: bound: /dev/vmgenid's mapping holds the ID, its entry kept" "$(maps dev <<<"$out")" "0 $guid"
	if [ "$vvar" = 1 ]; then
		t_eq "$k: vvar's vmgenid_page holds the ID, its entry kept; a child forked after the read faults it in" \
			"$(agent_field vvar <<<"$out") $(maps vvar <<<"$out") $(agent_field child_vvar_faults <<<"$out")" "1 0 $guid 1"
	else
		t_diag "$k: before Linux 6.11 there is no vDSO getrandom(), and no vmgenid_page to check"
	fi
	t_check "$k: the driver lets go of its device" guest_call "$k" sh "$DRIVER" unbind
	out=$(guest_call "$k" vmgenid-maps status)
	t_eq "$k: unbound: that mapping reads zeros, its entry dropped" "$(maps dev <<<"$out")" "1 $ZERO_ID"
	[ "$vvar" = 0 ] || t_eq "$k: unbound: vmgenid_page reads zeros, its entry dropped" "$(maps vvar <<<"$out")" "1 $ZERO_ID"
	out=$(guest_call "$k" sh "$DRIVER" bind 2>&1) || true
	t_check "$k: and binds to it again ($(agent_field error <<<"$out"))" grep -q '^out=bind: ' <<<"$out"
	out=$(guest_call "$k" vmgenid-maps status)
	t_eq "$k: bound again: the mapping reads the ID, the zero page dropped" "$(maps dev <<<"$out")" "1 $guid"
	[ "$vvar" = 0 ] || t_eq "$k: bound again: vmgenid_page reads the ID, the zero page dropped" "$(maps vvar <<<"$out")" "1 $guid"
	t_eq "$k: the console is clean after the boot, the unbind and the bind (lockdep, KASAN, atomic sleep)" "$(oopses "$k")" 0
	t_eq "$k: /dev/vmgenid answers again after the bind" \
		"$(agent_field generation <<<"$(guest_call "$k" vmgenid-probe 2>&1)")" "$g"
	snap_save migrate-file "$k" "$dir/bound"
	snap_restore migrate-file "$k" "$dir/bound" "$k-a" "$kernel" 1 auto
	watch_until "$k-a" "1 1 $((g + 1))"
	waited=$WATCH_WAITED
	t_eq "$k: the poller asleep across unbind and bind wakes once at the next fork, one uevent, the count one up (${waited}s)" \
		"$(watch_status "$k-a")" "1 1 $((g + 1))"
	t_eq "$k: and that clone's console is clean" "$(oopses "$k-a")" 0
	snap_end migrate-file "$k-a"
	snap_restore migrate-file "$k" "$dir/bound" "$k-control" "$kernel" 1 "$guid"
	guest_call "$k-control" reseed >/dev/null
	wait_as_positive "$waited" "$RESUMED_S"
	t_eq "$k: a clone with the original's GUID: no wake, no uevent, the count unmoved" \
		"$(watch_status "$k-control")" "0 0 $g"
	snap_end migrate-file "$k-control"

	# Unbound at the snapshot: the clone's notification has no driver.
	snap_boot migrate-file "$k-u" "$kernel" 1 "$dir/unbound"
	guest_call "$k-u" sh "$DRIVER" unbind >/dev/null
	snap_save migrate-file "$k-u" "$dir/unbound"
	snap_restore migrate-file "$k-u" "$dir/unbound" "$k-ua" "$kernel" 1 auto
	# The notification is the GPE's, handled within the resume; a reseed
	# round trip and the positive clone's wake time (3x) let it land.
	guest_call "$k-ua" reseed >/dev/null || true
	wait_as_positive "$waited" "$RESUMED_S"
	t_check "$k: unbound, a fork's notification: the clone still answers" guest_call "$k-ua" ping
	t_eq "$k: and its console has no oops or KASAN report" "$(oopses "$k-ua")" 0
	t_diag "$k: $(tr -d '\r' <"$(guest_dir "$k-ua")/console.log" | grep -m 3 -E "$OOPS" || echo 'no report')"
	snap_end migrate-file "$k-ua"
}

for k in $patched; do rebind_tests "$k"; done
t_done
