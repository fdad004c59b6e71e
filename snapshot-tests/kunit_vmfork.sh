#!/bin/bash
# The series' KUnit suites pass in the debug build of the patched kernel
# (make kernel-debug: the KUnit build plus lockdep and KASAN; the measured
# kernels do not carry the suites), booted with 2 vCPUs, parsed from the
# KTAP the kernel prints on the serial console.  make check boots the
# debug build for fork_debug anyway, so a fresh machine builds one kernel
# fewer; make mutants runs this on the KUnit build of each mutant
# (KERNEL=).  The suites:
#  - random_vmfork: a fork is counted once through every entry point, the
#    unregistered path included; a change of one half of the ID (a new tail
#    an operator gave, a torn read: once per half) counts at once, also for
#    a CPU that read the count before another CPU handled the change;
#    output, batched values and long reads after a fork differ from what the old state gives; CPUs
#    racing one fork count it once; on 6.12, the word the vDSO compares
#    gives the generation back for the ID the kernel reseeded for only, and
#    never for the zero page the vDSO reads when the ID's page cannot be
#    mapped (every call then takes the system call);
#  - wireguard_vmfork: the send path and the tx worker refuse exactly the
#    keypairs from before a fork, sessions carry their handshake's
#    generation, the fork notifier expires pre-fork state and asks for a
#    rekey only for peers with a session in use.
# Every case must be there and pass: a missing suite or case, or a case
# that skips, fails.
# Then the one thing a KUnit case cannot assert alone, that the fork path
# mixes the new ID into the pool: a boot printing the first output after a
# fork to ID 1 is recorded with QEMU's record/replay and replayed with ID 1
# and with ID 2 (everything else, interrupts and clocks included, the same).
# The replay with ID 1 must agree with the recording (else the comparison
# proves nothing) and the one with ID 2 must differ.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

kernel=${KERNEL:-$BUILD/bzImage-$(debug_kernel)}
[ -f "$kernel" ] || t_skip "no debug kernel at $kernel: run 'make kernel-debug LINUX=6.12' (DEBUG_KERNEL=debug: 'make kernel-debug')"
declare -A cases=(
	[random_vmfork]="vmfork_test_id_in_output vmfork_test_unchanged vmfork_test_changed_once
		vmfork_test_output_differs vmfork_test_batch_after_fork vmfork_test_torn
		vmfork_test_tail_race vmfork_test_unregistered vmfork_test_register vmfork_test_many
		vmfork_test_cpus_race vmfork_test_long_read vmfork_test_race_state
		vmfork_test_race_batch"
	[wireguard_vmfork]="wg_vmfork_test_send_check wg_vmfork_test_send_staged wg_vmfork_test_tx_drop
		wg_vmfork_test_initiation_stamp wg_vmfork_test_response_stamp
		wg_vmfork_test_session_stamp wg_vmfork_test_session_in_use
		wg_vmfork_test_no_session wg_vmfork_test_rekeyed_since"
)
# The 6.12 series' vDSO check (0013) adds a case where the vDSO has getrandom().
config=$(dirname "$(readlink -f "$kernel")")/.config
if grep -qx 'CONFIG_VDSO_GETRANDOM=y' "$config" 2>/dev/null; then
	cases[random_vmfork]+=" vmfork_test_vdso_check vmfork_test_vdso_no_page"
fi
# And its 8-byte source (the kernel's patches file lists what it carries).
if grep -q 'random: take an 8-byte VM generation counter' "${config%.config}patches" 2>/dev/null; then
	cases[random_vmfork]+=" vmfork_test_counter"
fi
t_plan $(($(wc -w <<<"${cases[*]}") + 2 + 3))

# kunit_boot NAME [machine options]: boot until both suites have reported,
# then stop; KTAP in NAME's dir.  Nothing talks to the guest meanwhile: an
# agent connecting would interrupt it at a moment that differs between
# boots, and the deterministic boots would not be.
KUNIT_TIMEOUT=${KUNIT_TIMEOUT:-300}
kunit_boot() {
	local name=$1 console
	shift
	console=$(guest_dir "$name")/console.log
	guest_start "$name" "$kernel" "$@" || true
	wait_until "$KUNIT_TIMEOUT" grep -qE '(not )?ok [0-9]+ wireguard_vmfork' "$console" || true
	guest_quit "$name"
	sed -n 's/^\[[ 0-9.]*\] //p' "$console" | tr -d '\r' >"$(guest_dir "$name")/ktap"
}

# case_result SUITE CASE <<<KTAP: "ok", "not ok", "skip" or "missing".
case_result() {
	local line
	line=$(sed -n "/# Subtest: $1\$/,/[0-9] $1\$/p" | grep -E "^ +(not )?ok [0-9]+ $2( |\$)" | head -n 1)
	case "$line" in
	"") echo missing ;;
	*"# SKIP"*) echo skip ;;
	*"not ok"*) echo "not ok" ;;
	*) echo ok ;;
	esac
}

kunit_boot kunit --smp 2 --kunit
ktap=$(cat "$(guest_dir kunit)/ktap")
for suite in random_vmfork wireguard_vmfork; do
	for c in ${cases[$suite]}; do
		t_eq "kunit: $suite: $c" "$(case_result "$suite" "$c" <<<"$ktap")" ok
	done
	if grep -q "^ok [0-9]* $suite\$" <<<"$ktap"; then t_ok "kunit: $suite passed"; else t_fail "kunit: $suite passed"; fi
done
grep -E '^ +# vmfork_test_(long_read|race_state|race_batch): ' <<<"$ktap" | sed 's/^ */# /' || true
while read -r line; do t_diag "$line"; done < <(grep -E '^ +(# |not ok)' <<<"$ktap" | grep -iE 'expect|not ok|fail' | head -n 10)

# The output after a fork follows the ID.
# A boot with ID 1 is recorded (QEMU record/replay: every input of the run,
# at the instruction it came at), then replayed twice, with ID 1 and with
# ID 2 in /vmfork-test-id of the initramfs: the instructions are the same
# (copying one digit or another, hashing one value or another), and so is
# everything the crng draws from, but for the ID.  -icount alone is not
# enough: two boots part within 0.4 s.  Each run stops once the line is out.
# initramfs_with_id ID: the suite's initramfs with ID appended, as a file.
initramfs_with_id() {
	local dir=$RUN_DIR/id-$1
	mkdir -p "$dir/root"
	printf '%s\n' "$1" >"$dir/root/vmfork-test-id"
	touch -d 2020-01-01 "$dir/root/vmfork-test-id"
	initramfs_with "$dir/initramfs.cpio" "$dir/root" || die "cannot append to $INITRAMFS"
	echo "$dir/initramfs.cpio"
}

fingerprint() {
	local name=$1 id=$2 mode=$3 console initrd
	console=$(guest_dir "$name")/console.log
	initrd=$(initramfs_with_id "$id")
	INITRAMFS=$initrd guest_start "$name" "$kernel" "--$mode" "$RUN_DIR/kunit.replay" --role probe --kunit \
		--guid 6f726b73-6166-6500-0000-0000000000fe || return 0
	wait_until "$KUNIT_TIMEOUT" grep -q "vmfork_test_id_in_output: output" "$console" || true
	guest_quit "$name"
	tr -d '\r' <"$console" | sed -n "s/.* output after a fork to ID $id: //p" | head -n 1
}
fingerprint a 1 record >"$RUN_DIR/fp-a"
fingerprint b 1 replay >"$RUN_DIR/fp-b"
fingerprint c 2 replay >"$RUN_DIR/fp-c"
a=$(cat "$RUN_DIR/fp-a") b=$(cat "$RUN_DIR/fp-b") c=$(cat "$RUN_DIR/fp-c")
t_diag "first output after a fork to ID 1: '$a', replayed: '$b'; replayed with ID 2: '$c'"
t_check "the recorded and replayed boots print the output after a fork" test -n "$a" -a -n "$b" -a -n "$c"
t_eq "the replay with the same ID gives the same output (the comparison can see)" "$b" "$a"
t_check "a fork to another ID gives other output (the ID reaches the pool)" test "$c" != "$a"
t_done
