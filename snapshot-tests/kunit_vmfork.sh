#!/bin/bash
# The series' KUnit suites pass in the booted patched kernel:
#  - random_vmfork: a changed generation ID makes the next output differ
#    from what an unchanged one gives and bumps the fork counter once, an
#    unchanged ID changes nothing, many changes in a row are each detected
#    once;
#  - wireguard_vmfork: the send path refuses exactly the keypairs from
#    before a fork, the fork notifier expires pre-fork state, asks for a
#    rekey only for peers with a session in use, and leaves a rekey begun
#    since alone.
# Results are parsed from the KTAP the kernel prints on the serial console.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

kernel=${KERNEL:-$BUILD/bzImage-patched}
guest_boot kunit "$kernel" --smp 2 || { t_fail "the kernel boots"; t_done; exit 1; }
console=$(guest_dir kunit)/console.log
guest_stop kunit
# "[    1.65] ok 1 random_vmfork" and, indented, one line per case.
ktap=$(sed -n 's/^\[[ 0-9.]*\] //p' "$console" | tr -d '\r')
grep -q '# Subtest: random_vmfork' <<<"$ktap" || t_skip "this kernel has no random_vmfork KUnit suite"
# suite_cases SUITE: "ok|not-ok CASE" per case of SUITE.
suite_cases() {
	sed -n "/# Subtest: $1\$/,/ $1\$/p" <<<"$ktap" |
		sed -n 's/^ \{4\}\(ok\|not ok\) [0-9]* \([a-z0-9_]*\).*/\1 \2/p' | sed 's/^not ok/not-ok/'
}
for suite in random_vmfork wireguard_vmfork; do
	cases=0
	while read -r status name; do
		cases=$((cases + 1))
		if [ "$status" = ok ]; then t_ok "kunit: $suite: $name"; else t_fail "kunit: $suite: $name"; fi
	done < <(suite_cases "$suite")
	if [ "$cases" -ge 4 ]; then
		t_ok "kunit: $suite ran its $cases cases"
	else
		t_fail "kunit: $suite ran $cases cases, want at least 4"
	fi
	if grep -q "^ok [0-9]* $suite\$" <<<"$ktap"; then t_ok "kunit: $suite passed"; else t_fail "kunit: $suite passed"; fi
done
t_done
