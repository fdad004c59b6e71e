# shellcheck shell=bash
# Starting, talking to and stopping forksafe guests.  Sourced, not run;
# sourcing only defines things.  A script that starts guests calls
# qemu_setup first.
#
# Each guest gets a directory under $RUN_DIR named after it, holding its
# QMP socket, the agent's virtio-serial socket, the serial console log and
# QEMU's output.  Every QEMU and switch started here is recorded and
# stopped by PID when the shell that started it exits, fails or is
# interrupted.  The machine itself is described in machine.sh.

FORKSAFE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FORKSAFE_BUILD:-$FORKSAFE_ROOT/build}
QEMU=${QEMU:-qemu-system-x86_64}
INITRAMFS=${INITRAMFS:-$BUILD/initramfs.cpio}
QMP_TOOL=$BUILD/qmp
AGENT_TOOL=$BUILD/agent-call
GUEST_MEM=${GUEST_MEM:-256}
IMAGE_MEM=${IMAGE_MEM:-1024} # at least, for a systemd image (image.sh)
# The agent's port, from the header the agent is built with.
AGENT_PORT=$(sed -n 's/^#define AGENT_PORT "\(.*\)"$/\1/p' "$FORKSAFE_ROOT/guest/protocol.h")

# ---- waits --------------------------------------------------------------------
# Every wait has a timeout, in seconds, named here.
BOOT_TIMEOUT=${BOOT_TIMEOUT:-90}  # start of QEMU to the agent's first answer
QMP_START_TIMEOUT=10              # start of QEMU to QMP's first answer
STOP_TIMEOUT=5                    # SIGTERM to SIGKILL
POWEROFF_TIMEOUT=30               # the agent's poweroff to QEMU's exit
QUIT_TIMEOUT=10                   # QMP quit to QEMU's exit
KVM_PROBE_TIMEOUT=15              # a KVM guest that boots does so in about 1 s
CALL_TIMEOUT=30                   # one agent request
QMP_TIMEOUT=10                    # one QMP command
POLL_INTERVAL=0.1                 # between two looks at something awaited

die() { echo "$*" >&2; exit 1; }

# Progress lines go to the terminal's stderr, also from inside a row
# whose stderr is captured (snapshot-tests/lib/rows.sh sets PROGRESS_FD).
progress() { echo "$*" >&"${PROGRESS_FD:-2}"; }

# wait_until SECONDS COMMAND...: COMMAND until it succeeds; 1 after SECONDS.
wait_until() {
	local deadline=$((SECONDS + $1 + 1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep "$POLL_INTERVAL"
	done
}

# wait_as_positive_since START_MS POSITIVE_MS FLOOR_MS: before a negative
# check says "none", wait three times as long as its positive counterpart
# took (POSITIVE_MS), FLOOR_MS at least, counted from START_MS (ms_now);
# not at all if that is past.
wait_as_positive_since() {
	local left=$(($1 + (3 * $2 > $3 ? 3 * $2 : $3) - $(ms_now)))
	[ "$left" -le 0 ] || sleep_ms "$left"
}
# wait_as_positive SECONDS FLOOR: the same from now, in seconds.
wait_as_positive() { wait_as_positive_since "$(ms_now)" "$(($1 * 1000))" "$(($2 * 1000))"; }
ms_now() { echo "$(($(date +%s%N) / 1000000))"; }

sleep_ms() { sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"; }

# ---- setup and cleanup ----------------------------------------------------------
declare -A GUEST_PID=()
SWITCH_PIDS=()
CLEANUP_HOOKS=() # run first on cleanup (libvirt.sh stops its domains and daemons)

# qemu_setup: the run directory and the traps that stop everything this
# shell starts.  qemu_setup_row, in the child shell that runs one
# measurement of a run: the parent's RUN_DIR, and traps that stop only
# what the child started.
qemu_setup() {
	RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/forksafe.XXXXXX")
	export RUN_DIR
	qemu_traps 'qemu_cleanup; run_dir_cleanup'
}

qemu_setup_row() {
	[ -d "${RUN_DIR:-}" ] || die "qemu: a row needs its parent's RUN_DIR"
	qemu_traps qemu_cleanup
}

qemu_traps() {
	# shellcheck disable=SC2064 # the handler is chosen now, on purpose
	trap "$1" EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	qemu_require
}

# A process we started gets a polite SIGTERM, then SIGKILL.
stop_pid() {
	local pid=$1
	kill "$pid" 2>/dev/null || return 0
	wait_until "$STOP_TIMEOUT" not_running "$pid" || kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

not_running() { ! kill -0 "$1" 2>/dev/null; }

qemu_cleanup() {
	local name hook
	for hook in "${CLEANUP_HOOKS[@]}"; do "$hook"; done
	for name in "${!GUEST_PID[@]}"; do stop_pid "${GUEST_PID[$name]}"; done
	GUEST_PID=()
	for name in "${SWITCH_PIDS[@]}"; do stop_pid "$name"; done
	SWITCH_PIDS=()
}

run_dir_cleanup() {
	if [ -n "${KEEP_RUN_DIR:-}" ]; then
		echo "# kept $RUN_DIR" >&2
	else
		rm -rf "$RUN_DIR"
	fi
}

qemu_require() {
	local f
	command -v "$QEMU" >/dev/null || die "qemu: $QEMU not found: run 'make deps' or set QEMU="
	for f in "$INITRAMFS" "$QMP_TOOL" "$AGENT_TOOL"; do
		[ -e "$f" ] || die "qemu: $f is missing: run 'make guest tools'"
	done
	[ -n "$AGENT_PORT" ] || die "qemu: no AGENT_PORT in guest/protocol.h"
}

# shellcheck source=machine.sh
. "$FORKSAFE_ROOT/qemu-scripts/machine.sh"
# shellcheck source=image.sh
. "$FORKSAFE_ROOT/qemu-scripts/image.sh"

# ---- the network --------------------------------------------------------------
# switch_start NAME: a user-space Ethernet switch (vde2, no privileges) for
# guests started with --net; sets SWITCH_DIR, the directory --net wants.
switch_start() {
	local dir=$RUN_DIR/$1.switch
	command -v vde_switch >/dev/null || die "qemu: vde_switch not found: run 'make deps' (package vde2)"
	vde_switch --daemon --sock "$dir" --pidfile "$dir.pid" >"$dir.out" 2>&1 ||
		die "qemu: vde_switch failed: $(head -n 1 "$dir.out")"
	wait_until "$STOP_TIMEOUT" test -s "$dir.pid" -a -S "$dir/ctl" ||
		die "qemu: vde_switch wrote no pid file"
	SWITCH_PIDS+=("$(cat "$dir.pid")")
	# shellcheck disable=SC2034 # for the caller
	SWITCH_DIR=$dir
}

# ---- the accelerator ----------------------------------------------------------
# /dev/kvm can exist while nested KVM fails at the first guest instruction
# ('KVM internal error'), so a throwaway guest decides: KVM only if it boots
# to our init under KVM.  ACCEL=tcg|kvm skips the probe, and
# snapshot-tests/run.sh probes once and exports the answer; within a run the
# answer is kept in $RUN_DIR/accel.  Prints the choice.
qemu_accel() {
	local kernel=$1 dir=$RUN_DIR/kvm-probe why
	if [ -n "${ACCEL:-}" ]; then
		echo "$ACCEL"
		return
	fi
	if [ -f "$RUN_DIR/accel" ]; then
		cat "$RUN_DIR/accel"
		return
	fi
	mkdir -p "$dir"
	why="no /dev/kvm"
	if [ -w /dev/kvm ]; then
		ACCEL=kvm machine kvm-probe "$kernel" --role probe --no-vmgenid
		machine_qemu_args
		timeout -k 5 "$KVM_PROBE_TIMEOUT" "$QEMU" "${QEMU_ARGS[@]}" >"$dir/qemu.out" 2>&1 || true
		if grep -q 'probe ok' "$dir/console.log" 2>/dev/null; then
			why=""
		else
			why=$(grep -m1 -iE 'error|fail' "$dir/qemu.out" || echo "probe guest did not boot")
		fi
	fi
	if [ -z "$why" ]; then
		echo kvm | tee "$RUN_DIR/accel"
	else
		echo "qemu: KVM unusable ($why), using TCG" >&2
		echo tcg | tee "$RUN_DIR/accel"
	fi
}

# ---- one guest ----------------------------------------------------------------
guest_dir() { echo "$RUN_DIR/$1"; }

# guest_start NAME KERNEL [options of machine]: start QEMU in the background,
# return once QMP answers.
guest_start() {
	local name=$1 kernel=$2 dir pid
	[ -f "$kernel" ] || { echo "qemu: kernel $kernel not found" >&2; return 1; }
	dir=$(guest_dir "$name")
	[ -z "${GUEST_PID[$name]:-}" ] || { echo "qemu: guest $name is already running" >&2; return 1; }
	mkdir -p "$dir"
	machine "$@" || return 1
	machine_qemu_args
	printf '%q ' "$QEMU" "${QEMU_ARGS[@]}" >"$dir/cmdline"
	"$QEMU" "${QEMU_ARGS[@]}" </dev/null >"$dir/qemu.out" 2>&1 &
	pid=$!
	GUEST_PID[$name]=$pid
	# A bad option, a locked disk or a snapshot that does not load ends
	# QEMU during start-up; QMP answers only once start-up is over.
	if wait_until "$QMP_START_TIMEOUT" qmp_answers_or_exits "$name"; then
		guest_running "$name" && return 0
		wait "$pid" 2>/dev/null || true
		unset "GUEST_PID[$name]"
		echo "qemu: $name failed to start: $(guest_qemu_error "$name")" >&2
		return 1
	fi
	echo "qemu: $name: QMP did not answer within ${QMP_START_TIMEOUT}s of start-up" >&2
	return 1
}

qmp_answers_or_exits() {
	! guest_running "$1" ||
		{ [ -S "$(guest_dir "$1")/qmp.sock" ] && guest_qmp "$1" -t 2 query-status >/dev/null 2>&1; }
}

# The first line of what QEMU said, for error messages.
guest_qemu_error() {
	local out
	out=$(grep -m1 -v '^\s*$' "$(guest_dir "$1")/qemu.out" 2>/dev/null || true)
	echo "${out:-QEMU exited without a message}"
}

guest_running() {
	local pid=${GUEST_PID[$1]:-}
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# "running", or what QEMU said when it ended, for error messages.
guest_state() {
	if guest_running "$1"; then echo running; else guest_qemu_error "$1"; fi
}

# guest_call NAME [-t SECONDS] COMMAND [ARGS]: a request to the agent.
guest_call() {
	local name=$1 t=$CALL_TIMEOUT
	shift
	if [ "$1" = -t ]; then t=$2; shift 2; fi
	"$AGENT_TOOL" -t "$t" "$(guest_dir "$name")/agent.sock" "$@"
}

# guest_qmp NAME [-t SECONDS] COMMAND [ARGUMENTS-JSON]
guest_qmp() {
	local name=$1 t=$QMP_TIMEOUT
	shift
	if [ "$1" = -t ]; then t=$2; shift 2; fi
	"$QMP_TOOL" -t "$t" "$(guest_dir "$name")/qmp.sock" "$@"
}

# guest_qmp_guid NAME: the vmgenid GUID QEMU says NAME has.
guest_qmp_guid() { guest_qmp "$1" query-vm-generation-id | jq -r .guid; }

# Wait until the agent answers, or say why not.
guest_wait_agent() {
	local name=$1
	if guest_call "$name" -t "$BOOT_TIMEOUT" ping >/dev/null 2>"$(guest_dir "$name")/wait.err"; then
		return 0
	fi
	if ! guest_running "$name"; then
		echo "qemu: $name died before its agent answered: $(guest_console_tail "$name")" >&2
	else
		echo "qemu: $name's agent did not answer within ${BOOT_TIMEOUT}s: $(guest_console_tail "$name")" >&2
	fi
	return 1
}

guest_console_tail() {
	tail -n 1 "$(guest_dir "$1")/console.log" 2>/dev/null | tr -d '\r' || true
}

# guest_wait_exit NAME SECONDS: wait for QEMU to exit on its own.
guest_wait_exit() {
	local name=$1 pid=${GUEST_PID[$1]:-}
	[ -n "$pid" ] || return 0
	wait_until "$2" not_running "$pid" || return 1
	wait "$pid" 2>/dev/null || true
	unset "GUEST_PID[$name]"
}

# Power off through the agent; QMP quit, then SIGKILL, if that fails.
guest_stop() {
	local name=$1
	guest_running "$name" || { unset "GUEST_PID[$name]"; return 0; }
	guest_call "$name" -t "$QUIT_TIMEOUT" poweroff >/dev/null 2>&1 || true
	guest_wait_exit "$name" "$POWEROFF_TIMEOUT" && return 0
	guest_quit "$name"
}

# End QEMU at once (a paused guest cannot power itself off).
guest_quit() {
	local name=$1
	guest_running "$name" || { unset "GUEST_PID[$name]"; return 0; }
	guest_qmp "$name" quit >/dev/null 2>&1 || true
	guest_wait_exit "$name" "$QUIT_TIMEOUT" && return 0
	kill -9 "${GUEST_PID[$name]}" 2>/dev/null || true
	guest_wait_exit "$name" "$STOP_TIMEOUT" || true
}

# initramfs_with OUT.cpio DIR: $INITRAMFS with DIR's files appended (the
# kernel unpacks a second archive over the first): a seed, an ID, the
# scripts of a test.  Reproducible (inode numbers, owners), so that two
# boots of deterministic guests stay alike; DIR's time stamps are the
# caller's to set.
initramfs_with() {
	local out=$1 dir=$2
	cp "$INITRAMFS" "$out.tmp" &&
		(cd "$dir" && find . -mindepth 1 -printf '%P\0' | LC_ALL=C sort -z |
			cpio --null -o -H newc --owner=0:0 --reproducible --quiet) >>"$out.tmp" &&
		mv "$out.tmp" "$out"
}

# guest_boot NAME KERNEL [options]: start and wait for the agent.
guest_boot() {
	guest_start "$@" && guest_wait_agent "$1"
}

# agent_field KEY <<<"$reply": the value of KEY=... in an agent's reply.
agent_field() { awk -v k="$1=" 'index($0, k) == 1 { print substr($0, length(k) + 1); exit }'; }
