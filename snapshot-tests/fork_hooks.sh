#!/bin/bash
# forksafe-hooks (guest/hooks.c) runs the fork hooks once per fork.  The
# patched kernel boots with the daemon watching /dev/vmgenid and the hooks
# of guest/test-hooks/ (forksafe.hooks=, a 2 s timeout each): 10-first
# and 40-last say they ran and with which generation, 20-hang never ends
# (nor does the child it starts), 30-fail exits 3, 50-not.run has a name
# run-parts skips and 60-not-executable no x bit.  A migrate-file fork:
#  - a fresh-GUID clone runs the four hooks once each, in order, with the
#    new generation and its source in their environment: 20-hang is
#    killed at its timeout, 30-fail's status is logged, 40-last still
#    runs; the other two never run;
#  - a clone of that clone (the daemon went through a hook that hung)
#    runs them once more, with the next generation;
#  - the control, with the original's GUID, runs none: its console is
#    read after three times as long as the fresh clone's hooks took
#    (wait_as_positive).
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

HOOKS_TIMEOUT_S=30
kname=""
for k in $(test_kernels); do [ "$(kernel_role "$k")" = patched ] && { kname=$k; break; }; done
[ -n "$kname" ] || die "fork_hooks: KERNELS names no patched kernel (the hooks wait on /dev/vmgenid)"
require_kernels fork_hooks "$kname"
kernel=$(kernel_path "$kname")
dir=$RUN_DIR/hooks
mkdir -p "$dir"

console() { tr -d '\r' <"$(guest_dir "$1")/console.log"; }
# ran NAME GENERATION: NAME's daemon logged the end of the last hook for GENERATION.
ran() { console "$1" | grep -q "forksafe-hooks: generation $2: 40-last: exited"; }
# count NAME PATTERN: lines of NAME's console matching the fixed PATTERN.
count() { console "$1" | grep -cF -- "$2" || true; }

t_plan 11
snap_boot migrate-file orig "$kernel" 1 "$dir" --append "forksafe.hooks=/etc/forksafe/test-fork.d forksafe.hooktimeout=2"
wait_until "$HOOKS_TIMEOUT_S" eval 'console orig | grep -q "forksafe-hooks: watching generation"' ||
	die "fork_hooks: the daemon never said it was watching: $(guest_console_tail orig)"
gen=$(console orig | sed -n 's/.*forksafe-hooks: watching generation \([0-9]*\) through \([a-z]*\).*/\1 \2/p' | head -n 1)
source=${gen#* } gen=${gen% *}
guid=$(guest_qmp_guid orig)
t_eq "the daemon watches /dev/vmgenid" "$source" vmgenid
snap_save migrate-file orig "$dir"

# The fresh clone: every hook once, in order, each ended as it must.
t0=$(ms_now)
snap_restore migrate-file orig "$dir" c1 "$kernel" 1 auto
wait_until "$HOOKS_TIMEOUT_S" ran c1 "$((gen + 1))" || true
took=$(($(ms_now) - t0))
t_diag "c1: the hooks ran $took ms after its restore began"
g=$((gen + 1))
t_eq "a fresh clone runs the hooks for generation $g once" "$(count c1 "forksafe-hooks: generation $g: 4 hooks")" 1
t_eq "10-first runs once, with the generation and the source" "$(count c1 "hook 10-first: generation $g from vmgenid")" 1
t_eq "20-hang is killed at its timeout, and the child it started with it" \
	"$(count c1 "generation $g: 20-hang: killed after 2 s (timeout)") $(count c1 "hook 40-last: no child of the hung hook left")" "1 1"
t_eq "30-fail's status is logged, and the hooks go on" "$(count c1 "generation $g: 30-fail: exited 3")" 1
t_eq "the hooks run one at a time, in the order of their names" \
	"$(console c1 | grep -oE "generation $g: [0-9a-z.-]+: (exited|killed)" | awk '{ print $3 }' | tr '\n' ' ')" \
	"10-first: 20-hang: 30-fail: 40-last: "
t_eq "40-last runs once, after the one that hung and the one that failed" "$(count c1 "hook 40-last: generation $g")" 1
t_eq "names run-parts skips, and files without x, never run" \
	"$(count c1 "hook 50-not.run ran") $(count c1 "hook 60-not-executable ran")" "0 0"

# A clone of that clone: the daemon survived the hung hook.
mkdir -p "$dir/c1"
snap_save migrate-file c1 "$dir/c1"
snap_restore migrate-file c1 "$dir/c1" c2 "$kernel" 1 auto
wait_until "$HOOKS_TIMEOUT_S" ran c2 "$((gen + 2))" || true
t_eq "a clone of the clone runs them again, for generation $((gen + 2))" \
	"$(count c2 "forksafe-hooks: generation $((gen + 2)): 4 hooks") $(count c2 "hook 40-last: generation $((gen + 2))")" "1 1"
snap_end migrate-file c2

# The control: the original's GUID, no fork, no hook, judged after three
# times as long as the fresh clone took.
t0=$(ms_now)
snap_restore migrate-file orig "$dir" control "$kernel" 1 "$guid"
wait_as_positive_since "$t0" "$took" 1000
t_eq "the control keeps the original's GUID" "$(guest_qmp_guid control)" "$guid"
t_eq "the control (the original's GUID) runs no hook" "$(count control "forksafe-hooks: generation")" 0
snap_end migrate-file control
t_done
