#!/bin/bash
# The series' KUnit suites pass in the KUnit build of the patched kernel
# (make kernel-kunit: the measured kernels do not carry them), booted with
# 2 vCPUs, parsed from the KTAP the kernel prints on the serial console:
#  - random_vmfork: a fork is counted once through every entry point, torn
#    reads and the unregistered path included; output, batched values and
#    long reads after a fork differ from what the old state gives; CPUs
#    racing one fork count it once;
#  - wireguard_vmfork: the send path and the tx worker refuse exactly the
#    keypairs from before a fork, sessions carry their handshake's
#    generation, the fork notifier expires pre-fork state and asks for a
#    rekey only for peers with a session in use.
# Every case must be there and pass: a missing suite or case, or a case
# that skips, fails.
# Then the one thing a KUnit case cannot assert alone, that the fork path
# mixes the new ID into the pool: on a machine that runs the same
# instructions in every boot (-icount, no RDRAND, a fixed clock), three
# boots print the first output after a fork to ID 1, 1 and 2.  The two
# boots with ID 1 must agree (else the machine is not deterministic and the
# comparison proves nothing) and the boot with ID 2 must differ.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

kernel=${KERNEL:-$(kernel_path kunit)}
[ -f "$kernel" ] || t_skip "no KUnit kernel at $kernel: run 'make kernel-kunit'"
declare -A cases=(
	[random_vmfork]="vmfork_test_id_in_output vmfork_test_unchanged vmfork_test_changed_once
		vmfork_test_output_differs vmfork_test_batch_after_fork vmfork_test_torn
		vmfork_test_unregistered vmfork_test_register vmfork_test_many
		vmfork_test_cpus_race vmfork_test_long_read"
	[wireguard_vmfork]="wg_vmfork_test_send_check wg_vmfork_test_tx_drop
		wg_vmfork_test_session_stamp wg_vmfork_test_session_in_use
		wg_vmfork_test_no_session wg_vmfork_test_rekeyed_since"
)
t_plan $(($(wc -w <<<"${cases[*]}") + 2 + 3))

# kunit_boot NAME [machine options]: boot, stop, and print the KTAP lines.
kunit_boot() {
	local name=$1
	shift
	guest_boot "$name" "$kernel" "$@" || true
	guest_stop "$name"
	sed -n 's/^\[[ 0-9.]*\] //p' "$(guest_dir "$name")/console.log" | tr -d '\r'
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

ktap=$(kunit_boot kunit --smp 2)
for suite in random_vmfork wireguard_vmfork; do
	for c in ${cases[$suite]}; do
		t_eq "kunit: $suite: $c" "$(case_result "$suite" "$c" <<<"$ktap")" ok
	done
	if grep -q "^ok [0-9]* $suite\$" <<<"$ktap"; then t_ok "kunit: $suite passed"; else t_fail "kunit: $suite passed"; fi
done
grep -E '^ +# vmfork_test_long_read: ' <<<"$ktap" | sed 's/^ */# /' || true
while read -r line; do t_diag "$line"; done < <(grep -E '^ +(# |not ok)' <<<"$ktap" | grep -iE 'expect|not ok|fail' | head -n 10)

# The output after a fork follows the ID.
fingerprint() {
	kunit_boot "det-$1-$2" --deterministic --smp 2 --guid 6f726b73-6166-6500-0000-0000000000fe \
		--append "random.vmfork_test_id=$2" |
		sed -n "s/^ *# vmfork_test_id_in_output: output after a fork to ID $2: //p" | head -n 1
}
a=$(fingerprint a 1) b=$(fingerprint b 1) c=$(fingerprint c 2)
t_diag "first output after a fork to ID 1: '$a', again: '$b'; to ID 2: '$c'"
t_check "deterministic boots print the output after a fork" test -n "$a" -a -n "$c"
t_eq "two boots with the same ID give the same output (the comparison can see)" "$b" "$a"
t_check "a fork to another ID gives other output (the ID reaches the pool)" test "$c" != "$a"
t_done
