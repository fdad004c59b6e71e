#!/bin/bash
# A driver interrupted while a row has guests running stops everything it
# started and leaves no half-written result.  cold-clones.sh (the quickest
# driver to reach a running guest) is started in a session of its own and,
# once a QEMU of its run is up, interrupted twice over: SIGINT to its
# whole process group, as Ctrl-C in a terminal does, and SIGTERM to the
# driver alone, as kill and timeout do.  Each time the driver must exit
# within DRIVER_STOP_TIMEOUT with 130 or 143, every process below it at
# the signal (the row's shell, its QEMUs) must be gone, its run directory
# removed, and no result file left half-written (*.tmp).  The row has ten
# boots, several times DRIVER_STOP_TIMEOUT: a driver that lets the row
# run to its end before it stops (as bash does with a foreground child)
# fails.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

k=$(test_kernels | awk '{ print $1 }')
DRIVER_STOP_TIMEOUT=30
t_plan 6

# The processes below PID, recursively.
descendants() {
	local child
	for child in $(pgrep -P "$1" || true); do
		echo "$child"
		descendants "$child"
	done
}

# A QEMU of the run under TMP is up.
qemu_up() { pgrep -f "qemu-system.*$1/forksafe\\." >/dev/null; }

for case in INT:group:130 TERM:driver:143; do
	IFS=: read -r sig target want <<<"$case"
	tmp=$(mktemp -d "$RUN_DIR/$sig.XXXXXX")
	# A background job of a script starts with SIGINT ignored, which no
	# shell can trap again; a terminal's job would not, so restore it.
	TMPDIR=$tmp setsid python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' "$FORKSAFE_ROOT/snapshot-tests/drivers/cold-clones.sh" \
		--kernels "$k" --clones 10 --rows "det,absent,none,qemu64,no" --out "$tmp/out" \
		>"$tmp/driver.log" 2>&1 &
	pid=$!
	if ! wait_until 120 qemu_up "$tmp"; then
		t_fail "SIG$sig: the driver reached a running guest"
		t_diag "$(tail -n 1 "$tmp/driver.log")"
		kill -TERM "$pid" 2>/dev/null || true
		continue
	fi
	below=$(descendants "$pid" | tr '\n' ' ')
	t_diag "SIG$sig to the $target: processes below the driver: $below"
	if [ "$target" = group ]; then kill "-$sig" -- "-$pid"; else kill "-$sig" "$pid"; fi
	rc=0 start=$SECONDS
	if wait_until "$DRIVER_STOP_TIMEOUT" not_running "$pid"; then
		wait "$pid" || rc=$?
		t_diag "SIG$sig to the $target: the driver exited $((SECONDS - start)) s after the signal"
		t_eq "SIG$sig to the $target: the driver exits with $want" "$rc" "$want"
	else
		t_fail "SIG$sig to the $target: the driver exits within ${DRIVER_STOP_TIMEOUT}s"
		kill -9 "$pid" 2>/dev/null || true
	fi
	left=""
	for p in $below; do if kill -0 "$p" 2>/dev/null; then left+=" $p($(ps -o comm= -p "$p"))"; fi; done
	t_eq "SIG$sig to the $target: nothing it started is left running" "$left" ""
	# shellcheck disable=SC2086 # a list of PIDs
	[ -z "$left" ] || kill -9 ${left//([^)]*)/} 2>/dev/null || true
	t_eq "SIG$sig to the $target: no half-written result, no run directory" \
		"$(find "$tmp" \( -name '*.tmp' -o -name 'forksafe.*' \) | tr '\n' ' ')" ""
done
t_done
