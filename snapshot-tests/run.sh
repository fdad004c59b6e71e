#!/bin/bash
# Run every scenario in snapshot-tests/ (or those named in $TESTS) and report
# KTAP, ending with the line "N passed, N failed, N skipped".  A scenario
# that outlives TEST_TIMEOUT seconds is killed (its trap stops its guests)
# and fails.
set -euo pipefail

dir=$(cd "$(dirname "$0")" && pwd)
timeout_s=${TEST_TIMEOUT:-1200}
passed=0 failed=0 skipped=0 n=0
tests=()

if [ -n "${TESTS:-}" ]; then
	for t in $TESTS; do
		[ -f "$dir/$t.sh" ] || { echo "run: no test named '$t' in snapshot-tests/" >&2; exit 2; }
		tests+=("$t")
	done
else
	for f in "$dir"/*.sh; do
		t=$(basename "$f" .sh)
		case "$t" in lib | run | fork-matrix | bench-*) continue ;; esac # not scenarios
		tests+=("$t")
	done
fi

# One KVM probe for the whole run (a failing probe costs 15 s).
if [ -z "${ACCEL:-}" ]; then
	probe_kernel=${KERNEL:-${FORKSAFE_BUILD:-$dir/../build}/bzImage-stock}
	ACCEL=$("$dir/../qemu-scripts/accel-probe.sh" "$probe_kernel")
	export ACCEL
fi

echo "KTAP version 1"
echo "# accelerator: $ACCEL"
echo "1..${#tests[@]}"
for t in "${tests[@]}"; do
	n=$((n + 1))
	out=$(mktemp)
	rcfile=$(mktemp)
	# Streamed as it runs, so long scenarios show progress.
	{ rc=0; timeout -k 30 "$timeout_s" bash "$dir/$t.sh" </dev/null 2>&1 || rc=$?; echo "$rc" >"$rcfile"; } |
		tee "$out" | sed -u 's/^/# /'
	rc=$(cat "$rcfile")
	case "$rc" in
	0) echo "ok $n $t"; passed=$((passed + 1)) ;;
	4) echo "ok $n $t # SKIP $(sed -n 's/^1\.\.0 # SKIP //p' "$out" | head -n 1)"
	   skipped=$((skipped + 1)) ;;
	124) echo "not ok $n $t # TIMEOUT after ${timeout_s}s"; failed=$((failed + 1)) ;;
	*) echo "not ok $n $t"; failed=$((failed + 1)) ;;
	esac
	rm -f "$out" "$rcfile"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
