# shellcheck shell=bash
# KTAP for the scenarios.  Sourced; defines functions only.
#
# A scenario reports each assertion as a KTAP test line on stdout and
# exits 0 (all passed), 1 (something failed) or 4 (skipped, the kselftest
# convention); snapshot-tests/run.sh turns that into one result.

KSFT_SKIP=4
T_NUM=0
T_FAILED=0
T_PLANNED=""

t_diag() { echo "# $*"; }

# t_plan N: the number of tests, printed first where it is known.
t_plan() {
	T_PLANNED=$1
	echo "1..$1"
}

t_ok() {
	T_NUM=$((T_NUM + 1))
	echo "ok $T_NUM $*"
}

t_fail() {
	T_NUM=$((T_NUM + 1))
	T_FAILED=$((T_FAILED + 1))
	echo "not ok $T_NUM $*"
}

# t_result STATUS DESCRIPTION: ok when STATUS is 0.
t_result() {
	if [ "$1" = 0 ]; then t_ok "$2"; else t_fail "$2"; fi
}

# t_check DESCRIPTION COMMAND...: ok when COMMAND succeeds; on failure its
# status and the last line it wrote to stderr.  COMMAND runs in this shell
# (a guest it starts is this shell's to stop).
t_check() {
	local desc=$1 rc=0 err=${TMPDIR:-/tmp}/ktap-check.$$
	shift
	"$@" >/dev/null 2>"$err" || rc=$?
	t_result "$rc" "$desc"
	[ "$rc" = 0 ] || t_diag "exit=$rc: $(tail -n 1 "$err")"
	rm -f "$err"
}

# t_eq DESCRIPTION GOT WANT
t_eq() {
	t_result "$([ "$2" = "$3" ]; echo $?)" "$1"
	[ "$2" = "$3" ] || t_diag "got '$2', want '$3'"
}

# A prerequisite is missing: the whole test is skipped, with the reason.
t_skip() {
	echo "1..0 # SKIP $*"
	exit "$KSFT_SKIP"
}

# The plan (unless printed first) and the exit status.
t_done() {
	if [ -z "$T_PLANNED" ]; then
		echo "1..$T_NUM"
	elif [ "$T_PLANNED" != "$T_NUM" ]; then
		t_diag "planned $T_PLANNED tests, ran $T_NUM"
		T_FAILED=$((T_FAILED + 1))
	fi
	[ "$T_FAILED" -eq 0 ]
}

# expect_fail DESC PATTERN COMMAND...: COMMAND must fail, and its stderr
# say PATTERN; its last line goes to a comment.  In the caller's shell, so
# what COMMAND starts is tracked.  (RUN_DIR: qemu_setup's.)
expect_fail() {
	local desc=$1 pattern=$2 out rc=0
	shift 2
	"$@" >/dev/null 2>"$RUN_DIR/expect.err" || rc=$?
	out=$(cat "$RUN_DIR/expect.err")
	t_diag "$desc: $(echo "$out" | tail -n 1)"
	if [ "$rc" = 0 ] || ! grep -q -- "$pattern" <<<"$out"; then
		t_fail "$desc (status $rc)"
	else
		t_ok "$desc"
	fi
}

# t_exec_host_test NAME: build NAME (a sanitized host test that prints
# KTAP itself) and become it; one failed test if it does not build.
t_exec_host_test() {
	local root build
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	build=${FORKSAFE_BUILD:-$root/build}
	if ! make --no-print-directory -C "$root" BUILD="$build" "$build/$1" >&2; then
		t_plan 1
		t_fail "$1 builds"
		t_done
		exit 1
	fi
	exec "$build/$1"
}
