# shellcheck shell=bash
# One measurement, one row.  Sourced after qemu.sh; defines functions only.
#
# A measurement (rng_fork.sh's rng_measure, wg_fork.sh's wg_measure) runs
# in a child shell of its own, with errexit on, the parent's RUN_DIR, and
# traps that stop every guest, switch and libvirt daemon it started.
# Whatever ends it early (a failed command, a die, a signal) ends only that
# row: the row records the reason, which also goes to stderr, and the
# matrix goes on.  A row is JSON, built by jq:
#
#   {KEYS..., "result": RESULT}   or   {KEYS..., "error": "WHY"}
#
# where RESULT is what the measurement wrote to $ROW_DIR/result.json.
# fork-report turns rows into verdicts.

# row_keys KEY=VALUE...: a JSON object; values that are numbers stay numbers.
row_keys() {
	jq -nc '[$ARGS.positional[] | capture("(?<k>[^=]*)=(?<v>.*)") | {(.k): (.v | tonumber? // .)}] | add' \
		--args "$@"
}

# row_run DIR OUT.json KEYS-JSON FUNCTION ARGS...: run FUNCTION ARGS as a
# measurement in DIR (its stderr in DIR/errors) and write the row to
# OUT.json.  Returns 1 for an error row.
row_run() {
	local dir=$1 out=$2 keys=$3 rc=0 why
	shift 3
	mkdir -p "$dir"
	rm -f "$dir/result.json"
	# In the background, waited for: a signal to this shell interrupts the
	# wait at once, and its cleanup (row_stop) ends the row's shell, whose
	# own traps stop what it started.
	ROW_DIR=$dir PROGRESS_FD=3 FORKSAFE_ROOT=$FORKSAFE_ROOT bash -c '
		set -eEuo pipefail
		. "$FORKSAFE_ROOT/snapshot-tests/lib/measure.sh"
		trap '\''echo "at ${BASH_SOURCE[0]##*/}:$LINENO: \"$BASH_COMMAND\" failed (status $?)" >&2'\'' ERR
		qemu_setup_row
		"$@"' row "$@" 3>&2 >"$dir/output" 2>"$dir/errors" &
	ROW_PID=$!
	wait "$ROW_PID" || rc=$?
	ROW_PID=""
	if [ "$rc" = 0 ] && jq -e 'type == "object"' "$dir/result.json" >/dev/null 2>&1; then
		jq -c --argjson k "$keys" '$k + {result: .}' "$dir/result.json" >"$out.tmp"
		mv "$out.tmp" "$out"
		return 0
	fi
	why=$(row_reason "$dir/errors" "$rc")
	progress "$(jq -r '[.[] | tostring] | join(" ")' <<<"$keys"): error: $why"
	jq -c --argjson k "$keys" --arg why "$why" '$k + {error: $why}' -n >"$out.tmp"
	mv "$out.tmp" "$out"
	return 1
}

# The row running in the background, if any, for row_stop, which
# qemu_cleanup runs first: SIGTERM, and time for the row's own cleanup
# (its guests, libvirt's daemons) before SIGKILL.
ROW_PID=""
ROW_STOP_TIMEOUT=60
row_stop() {
	[ -n "$ROW_PID" ] || return 0
	kill "$ROW_PID" 2>/dev/null || true
	wait_until "$ROW_STOP_TIMEOUT" not_running "$ROW_PID" || kill -9 "$ROW_PID" 2>/dev/null || true
	wait "$ROW_PID" 2>/dev/null || true
	ROW_PID=""
}
CLEANUP_HOOKS+=(row_stop)

# Why a row failed: the last line a measurement wrote to stderr, unless it
# is only the ERR trap's "at FILE:LINE" (a command failed silently), which
# is used when there is nothing else.
row_reason() {
	local errors=$1 rc=$2 why
	why=$(grep -v '^at [^ ]*:[0-9]*: ' "$errors" 2>/dev/null | tail -n 1 || true)
	[ -n "$why" ] || why=$(grep -m1 '^at ' "$errors" 2>/dev/null || true)
	[ "$rc" != 0 ] || why="no result (${why:-the measurement wrote none})"
	echo "${why:-failed with status $rc and no message}"
}

# rows_judge ROW.json...: fork-report's tables as KTAP diagnostics, and its
# verdicts, one JSON object per row, in ROW_VERDICTS.  For each, with
# VERDICT set, `v KEY` reads a field by name and `t_row DESCRIPTION` is
# the assertion that the row was measured (needs ktap.sh).
ROW_VERDICTS=()
VERDICT=""

rows_judge() {
	"$BUILD/fork-report" "$@" | sed 's/^/# /'
	# shellcheck disable=SC2034 # for the caller
	mapfile -t ROW_VERDICTS < <("$BUILD/fork-report" -f verdicts "$@")
}

v() { jq -r ".$1" <<<"$VERDICT"; }

t_row() {
	if [ "$(v verdict)" = error ]; then
		t_fail "$1"
		t_diag "$(v why)"
		return 1
	fi
	t_ok "$1"
}

# results_lock PROG DIR: PROG is the only one of its kind writing to DIR
# (its results directory); a second run is refused with one line rather
# than interleaving its files with the first's.  Held until PROG exits.
results_lock() {
	local prog=$1 dir=$2
	mkdir -p "$dir"
	exec {RESULTS_LOCK_FD}>"$dir/.$prog.lock"
	flock -n "$RESULTS_LOCK_FD" ||
		die "$prog: another $prog run is writing to $dir (wait for it, or give this one --out DIR)"
}
