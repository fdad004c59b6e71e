#!/bin/bash
# forksafe-seed survives a crash at every step (guest/seed.c): a guest
# boots with a seed disk holding a creditable seed, and the tool is
# stopped at STEP by SIGKILL (the system goes on and shuts down cleanly)
# or by a power cut (nothing more reaches the disk): each step by one of
# the two, in turn (SEED_CRASH_ACTIONS=both: by both).  A second boot of the
# same disk must then:
#  - boot and load a seed (the tool exits 0);
#  - find no torn seed: every seed file is 512 bytes and is the provisioned
#    seed or one the tool announced it would write;
#  - and no seed is ever credited twice, over both boots.
# Each case must also show its fault firing, or it proves nothing.  The
# positive controls are the tool's mutants (guest/mutants/): crediting
# before the unlink is durable, and writing the next seed in place, must
# each be caught by the step that exposes them.  The host build of the tool
# checks its SHA-256 against known answers and refuses bad options with
# one line.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

host_tool=$BUILD/forksafe-seed-host
kernel=$(kernel_path "$(test_kernels | awk '{ print $1 }')")
mapfile -t steps < <("$host_tool" fault-steps)
declare -A caught_by=([credit-before-unlink]=credited:cut [write-in-place]=mid-write:kill)
# Every step by one action, kill and cut in turn (SEED_CRASH_ACTIONS=both:
# every step by both, twice the boots).
crash_actions=${SEED_CRASH_ACTIONS:-alternate}
case "$crash_actions" in
alternate) per_step=1 ;;
both) per_step=2 ;;
*) die "seed_crash: SEED_CRASH_ACTIONS=$crash_actions: alternate or both" ;;
esac
# step_actions INDEX: the actions step INDEX is crashed by.
step_actions() {
	if [ "$crash_actions" = both ]; then echo kill cut; elif (($1 % 2)); then echo cut; else echo kill; fi
}
t_plan $((1 + 3 + per_step * ${#steps[@]} + ${#caught_by[@]}))

t_check "sha256 passes its known answers" "$host_tool" selftest
# bad_option WANT ARGS...: exit status 2 and one line naming the problem.
bad_option() {
	local want=$1 rc=0 err
	shift
	err=$("$host_tool" "$@" 2>&1 >/dev/null) || rc=$?
	[ "$rc" = 2 ] && [ "$(wc -l <<<"$err")" = 1 ] && grep -q -- "$want" <<<"$err" && return 0
	echo "exit $rc: $err" >&2
	return 1
}
t_check "--fault with an unknown step is refused" bad_option "no step 'nowhere'" --fault nowhere:kill load
t_check "--fault with an unknown action is refused" bad_option "STEP:kill or STEP:cut" --fault read:explode load
t_check "--interval 0 is refused" bad_option "--interval wants" --interval 0 watch

# crash_case NAME INITRAMFS STEP:ACTION: WHY is empty on success, else
# the reason.  (No command substitution around the boots: a guest belongs
# to the shell whose traps stop it.)
crash_case() {
	local name=$1 initrd=$2 fault=$3 disk log1 log2 known dup bad
	disk=$RUN_DIR/$name.img log1=$RUN_DIR/$name-crash.log log2=$RUN_DIR/$name-after.log
	WHY=""
	seed_disk "$disk" golden
	INITRAMFS=$initrd seed_boot "$name-crash" "$kernel" "$disk" \
		"forksafe.seed=load forksafe.seedfault=$fault" >"$log1" || { WHY="the crash boot failed"; return; }
	INITRAMFS=$initrd seed_boot "$name-after" "$kernel" "$disk" "forksafe.seed=load" >"$log2" ||
		{ WHY="the boot after the crash failed"; return; }
	grep -q "fault at ${fault%:*}:" "$log1" || { WHY="the fault never fired: $(tail -n 1 "$log1")"; return; }
	grep -q 'forksafe-seed load exited with status 0' "$log2" ||
		{ WHY="after the crash: $(grep 'forksafe-seed' "$log2" | tail -n 2 | head -n 1)"; return; }
	known=" $(seed_id golden) $(sed -n 's/^forksafe-seed: writing [^ ]* \([0-9a-f]*\)$/\1/p' "$log1" | tr '\n' ' ')"
	bad=$(sed -n 's/^forksafe-seed: found \([^ ]*\) \([0-9]*\) bytes \([0-9a-f]*\)$/\1 \2 \3/p' "$log2" |
		while read -r file bytes id; do
			[ "$bytes" = 512 ] && [[ "$known" == *" $id "* ]] || echo "$file ($bytes bytes, $id)"
		done)
	[ -z "$bad" ] || { WHY="torn seed after the crash: $bad"; return; }
	dup=$(cat "$log1" "$log2" | sed -n 's/^forksafe-seed: credited [^ ]* //p' | sort | uniq -d)
	[ -z "$dup" ] || WHY="seed $dup credited twice"
}

for i in "${!steps[@]}"; do
	step=${steps[$i]}
	for action in $(step_actions "$i"); do
		crash_case "$step-$action" "$INITRAMFS" "$step:$action"
		t_eq "crash at $step by $action: boots, no torn seed, nothing credited twice" "$WHY" ""
	done
done
for m in "${!caught_by[@]}"; do
	crash_case "mutant-$m" "$BUILD/initramfs-seed-mutant-$m.cpio" "${caught_by[$m]}"
	case "$WHY" in
	"" | "the fault never fired"* | *"boot"*"failed"*) t_fail "mutant $m is caught by a crash at ${caught_by[$m]}"
		t_diag "${WHY:-the crash tests passed it}" ;;
	*) t_ok "mutant $m is caught by a crash at ${caught_by[$m]}"
		t_diag "$m: $WHY" ;;
	esac
done
t_done
