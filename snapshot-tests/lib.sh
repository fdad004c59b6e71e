# shellcheck shell=bash
# Shared helpers of the snapshot tests.  Sourced, not run.
#
# A test is one scenario.  It reports each assertion as a KTAP subtest on
# stdout and exits 0 (all passed), 1 (something failed) or 4 (skipped, the
# kselftest convention), which snapshot-tests/run.sh turns into one result.

set -euo pipefail
# shellcheck source=../qemu-scripts/qemu.sh
. "$(dirname "${BASH_SOURCE[0]}")/../qemu-scripts/qemu.sh"

KSFT_SKIP=4
T_NUM=0
T_FAILED=0

t_diag() { echo "# $*"; }

t_ok() {
	T_NUM=$((T_NUM + 1))
	echo "ok $T_NUM $*"
}

t_fail() {
	T_NUM=$((T_NUM + 1))
	T_FAILED=$((T_FAILED + 1))
	echo "not ok $T_NUM $*"
}

# t_eq DESCRIPTION GOT WANT
t_eq() {
	if [ "$2" = "$3" ]; then
		t_ok "$1"
	else
		t_fail "$1"
		t_diag "got '$2', want '$3'"
	fi
}

# A prerequisite is missing: the whole test is skipped, with the reason.
t_skip() {
	echo "1..0 # SKIP $*"
	exit "$KSFT_SKIP"
}

t_done() {
	echo "1..$T_NUM"
	[ "$T_FAILED" -eq 0 ]
}

# key=value from agent output: t_field KEY <<<"$output"
t_field() { sed -n "s/^$1=//p" | head -n 1; }

# The kernels under test: KERNEL=/path tests that one, otherwise both builds.
test_kernels() {
	if [ -n "${KERNEL:-}" ]; then echo custom; else echo patched stock; fi
}

kernel_path() {
	case "$1" in
	custom) echo "$KERNEL" ;;
	*) echo "$BUILD/bzImage-$1" ;;
	esac
}

qemu_require
