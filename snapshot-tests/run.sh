#!/bin/bash
# make check: run every scenario listed in settings (or those named in
# $TESTS) and report KTAP, ending with the line "N passed, N failed,
# N skipped".  A scenario that outlives its timeout is killed (its traps
# stop its guests) and fails.  A scenario that skips (exit 4) is "# SKIP";
# with SKIP_FAILS=1 (make check, where make deps ran and every
# prerequisite is built) it fails instead.  Each scenario's time is
# printed after it, and before the closing line the phases that
# FORKSAFE_PHASES lists (check.sh: packages, kernels, tools) and the
# scenarios, with their times.
#
# A line "@JOB SECONDS" in settings is a barrier: the scenarios below it
# need what the background job JOB makes (check.sh builds the debug lane's
# kernel beside the scenarios above it, in the cores they leave idle).
# If $FORKSAFE_BACKGROUND/JOB.log exists, the job was started: before the
# first scenario below the line, run.sh waits up to SECONDS for
# JOB.status, the job's exit status, and says in one line why not if it
# failed or did not end; the scenarios then run and fail on what is
# missing.  Without the log (run.sh alone) the line is ignored.
set -euo pipefail

dir=$(cd "$(dirname "$0")" && pwd)
passed=0 failed=0 skipped=0 n=0
declare -A timeout=() barrier=()
tests=() times=() above=""

while read -r name secs; do
	case "$name" in '' | '#'*) continue ;; esac
	# The last barrier line above a scenario is the one it waits for.
	case "$name" in @*) above="${name#@} $secs"; continue ;; esac
	[ -z "$above" ] || barrier[$name]=$above
	[ -f "$dir/$name.sh" ] || { echo "run: settings names '$name', which has no $name.sh" >&2; exit 2; }
	timeout[$name]=$secs
	tests+=("$name")
done <"$dir/settings"
for f in "$dir"/*.sh; do
	t=$(basename "$f" .sh)
	[ "$t" = run ] || [ -n "${timeout[$t]:-}" ] ||
		{ echo "run: $t.sh is not in snapshot-tests/settings" >&2; exit 2; }
done
if [ -n "${TESTS:-}" ]; then
	tests=()
	for t in $TESTS; do
		[ -n "${timeout[$t]:-}" ] || { echo "run: no test named '$t' in snapshot-tests/settings" >&2; exit 2; }
		tests+=("$t")
	done
fi

# The guests, switches and libvirt daemons a scenario started, by PID: each
# scenario runs with a TMPDIR of its own, under which its run directory is.
suite_pids() { pgrep -f "$1/forksafe\\.[A-Za-z0-9]{6}/" | sort || true; }

# One KVM probe for the whole run (a failing probe costs 15 s).
if [ -z "${ACCEL:-}" ]; then
	probe_kernel=${KERNEL:-${FORKSAFE_BUILD:-$dir/../build}/bzImage-stock}
	ACCEL=$("$dir/../qemu-scripts/accel-probe.sh" "$probe_kernel")
	export ACCEL
fi

# wait_for JOB SECONDS: the background job's end, its time a phase.
declare -A waited=()
wait_for() {
	local job=$1 secs=$2 bg=${FORKSAFE_BACKGROUND:-} start=$SECONDS status
	[ -n "$bg" ] && [ -f "$bg/$job.log" ] && [ -z "${waited[$job]:-}" ] || return 0
	waited[$job]=1
	[ -f "$bg/$job.status" ] || echo "# waiting for $job (up to ${secs}s): it runs beside the scenarios"
	while [ ! -f "$bg/$job.status" ] && [ $((SECONDS - start)) -lt "$secs" ]; do sleep 5; done
	times+=("waiting for $job	$((SECONDS - start))")
	if [ ! -f "$bg/$job.status" ]; then
		echo "# $job did not end within ${secs}s: the scenarios that need it will fail; $(tail -n 1 "$bg/$job.log")"
	elif status=$(cat "$bg/$job.status") && [ "$status" != 0 ]; then
		echo "# $job failed (status $status): $(tail -n 1 "$bg/$job.log")"
	fi
}

echo "KTAP version 1"
echo "# accelerator: $ACCEL"
echo "1..${#tests[@]}"
for t in "${tests[@]}"; do
	n=$((n + 1))
	# shellcheck disable=SC2086 # JOB SECONDS
	[ -z "${barrier[$t]:-}" ] || wait_for ${barrier[$t]}
	secs=${TEST_TIMEOUT:-${timeout[$t]}}
	out=$(mktemp)
	rcfile=$(mktemp)
	tmp=$(mktemp -d /tmp/forksafe-scenario.XXXXXX)
	start=$SECONDS
	# Streamed as it runs, so long scenarios show progress.
	{ rc=0; TMPDIR=$tmp timeout -k 30 "$secs" bash "$dir/$t.sh" </dev/null 2>&1 || rc=$?; echo "$rc" >"$rcfile"; } |
		tee "$out" | sed -u 's/^/# /'
	rc=$(cat "$rcfile")
	# A scenario stops everything it starts; what outlives it is a bug.
	left=$(suite_pids "$tmp" | tr '\n' ' ')
	if [ -n "${left// /}" ]; then
		echo "# $t left processes running: $left(stopped now)"
		# shellcheck disable=SC2086 # a list of PIDs
		kill $left 2>/dev/null || true
		[ "$rc" != 0 ] || rc=1
	fi
	secs_taken=$((SECONDS - start))
	times+=("$t	$secs_taken")
	echo "# time: $t: ${secs_taken}s"
	why=$(sed -n 's/^1\.\.0 # SKIP //p' "$out" | head -n 1)
	case "$rc" in
	0) echo "ok $n $t"; passed=$((passed + 1)) ;;
	4) if [ "${SKIP_FAILS:-0}" = 1 ]; then
		echo "not ok $n $t # skipped where nothing may be: $why"; failed=$((failed + 1))
	   else
		echo "ok $n $t # SKIP $why"; skipped=$((skipped + 1))
	   fi ;;
	124) echo "# exit=$rc"; echo "not ok $n $t # TIMEOUT after ${secs}s"; failed=$((failed + 1)) ;;
	*) echo "# exit=$rc"; echo "not ok $n $t"; failed=$((failed + 1)) ;;
	esac
	rm -f "$out" "$rcfile"
	[ -n "${KEEP_RUN_DIR:-}" ] || rm -rf "$tmp"
done
# Where the time went: the phases before the scenarios, then each scenario.
{
	[ -z "${FORKSAFE_PHASES:-}" ] || cat "$FORKSAFE_PHASES"
	printf '%s\n' "${times[@]}"
} | awk -F '\t' '$3 == "beside" { printf "# phase %-28s %5d s (beside the others: not in the total)\n", $1, $2; next }
	{ total += $2; printf "# phase %-28s %5d s\n", $1, $2 }
	END { printf "# phase %-28s %5d s (%dm%02ds)\n", "total", total, total / 60, total % 60 }'
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
