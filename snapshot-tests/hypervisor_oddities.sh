#!/bin/bash
# What a hypervisor may do that a plain fork does not, on each kernel:
#  - the GUID changes twice before the guest runs again: a clone restored
#    with a fresh GUID is migrated on, still paused, and restored once more
#    with another; the guest, running again, saw one fork and must say so
#    once (one "crng reseeded due to virtual machine fork" over the
#    consoles of both restores), with the last GUID in its memory.  The
#    positive control is the same chain with the guest running between
#    the restores: two forks, two lines;
#  - the notification comes with an unchanged GUID: QEMU raises the ACPI
#    event on every restore, so a restore with the original's GUID is one,
#    and it must reseed nothing and log nothing.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

RUN_AFTER_S=3 # the least a restored guest runs before a console says "no fork"
FORK_TIMEOUT_S=30
FORK_WAIT_S=0 # how long the last fork line took to show (a negative waits 3 times as long)
kernels=$(test_kernels)
t_plan $((5 * $(wc -w <<<"$kernels")))


# chain K DIR RUN: restore K's snapshot in DIR with a fresh GUID, run it
# RUN seconds (0: never resume it), migrate it on and restore that with
# another fresh GUID; GUIDS is then "B C SEEN" (the two GUIDs, and the one
# the guest reads at the end) and FORKS the fork lines of both consoles.
has_fork_line() { [ "$(fork_lines "$1")" -gt 0 ]; }

chain() {
	local k=$1 dir=$2 run=$3 first=$1-chain$3-1 second=$1-chain$3-2 b c seen start
	mkdir -p "$dir/next"
	if [ "$run" = 0 ]; then
		guest_start "$first" "$(kernel_path "$k")" --guid auto --incoming "exec:cat $dir/vmstate.mig"
		snap_wait_status "$first" inmigrate
	else
		snap_restore migrate-file "$k" "$dir" "$first" "$(kernel_path "$k")" 1 auto
		sleep "$run"
	fi
	b=$(guest_qmp_guid "$first")
	snap_save migrate-file "$first" "$dir/next"
	snap_restore migrate-file "$first" "$dir/next" "$second" "$(kernel_path "$k")" 1 auto
	c=$(guest_qmp_guid "$second")
	# The second restore's fork line is a positive: wait for it, and time it.
	start=$SECONDS
	wait_until "$FORK_TIMEOUT_S" has_fork_line "$second" || true
	FORK_WAIT_S=$((SECONDS - start))
	seen=$(agent_field guid <<<"$(guest_call "$second" info)")
	guest_stop "$second"
	GUIDS="$b $c $seen"
	FORKS=$(($(fork_lines "$first") + $(fork_lines "$second")))
}

for k in $kernels; do
	dir=$RUN_DIR/$k
	mkdir -p "$dir"
	snap_boot migrate-file "$k" "$(kernel_path "$k")" 1 "$dir"
	a=$(guest_qmp_guid "$k")
	snap_save migrate-file "$k" "$dir"
	chain "$k" "$dir" 0
	read -r b c seen <<<"$GUIDS"
	t_diag "$k: GUIDs $a, then $b (never run), then $c; the guest reads $seen"
	t_check "$k: three different GUIDs, the guest sees the last" \
		test "$a" != "$b" -a "$b" != "$c" -a "$a" != "$c" -a "$seen" = "$c"
	t_eq "$k: two GUID changes before the guest ran are one fork" "$FORKS" 1
	chain "$k" "$dir" "$RUN_AFTER_S"
	t_eq "$k: with the guest running between them, two forks (positive control)" "$FORKS" 2
	# The ACPI event again, with the original's GUID.
	# "None" is said after an agent round trip and three times as long as
	# the last fork line took to show, RUN_AFTER_S at least.
	snap_restore migrate-file "$k" "$dir" "$k-same" "$(kernel_path "$k")" 1 "$a"
	guest_call "$k-same" ping >/dev/null
	wait_as_positive "$FORK_WAIT_S" "$RUN_AFTER_S"
	guest_call "$k-same" ping >/dev/null
	t_eq "$k: a restore with an unchanged GUID keeps it" "$(guest_qmp_guid "$k-same")" "$a"
	t_eq "$k: a notification with an unchanged GUID is no fork" "$(fork_lines "$k-same")" 0
	guest_stop "$k-same"
done
t_done
