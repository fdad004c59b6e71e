# shellcheck shell=bash
# Starting, talking to and stopping forksafe guests.  Sourced, not run.
#
# This is the one place that knows the QEMU command line.  Each guest gets a
# directory under $RUN_DIR named after it, holding its QMP socket, the
# agent's virtio-serial socket, the serial console log and QEMU's output.
# Every QEMU started here is recorded and stopped by PID when the sourcing
# shell exits, fails or is interrupted.

FORKSAFE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FORKSAFE_BUILD:-$FORKSAFE_ROOT/build}
QEMU=${QEMU:-qemu-system-x86_64}
INITRAMFS=${INITRAMFS:-$BUILD/initramfs.cpio}
QMP_TOOL=$BUILD/qmp
AGENT_TOOL=$BUILD/agent-call
BOOT_TIMEOUT=${BOOT_TIMEOUT:-90}
GUEST_MEM=${GUEST_MEM:-256}
AGENT_PORT=org.forksafe.agent

RUN_DIR=$(mktemp -d /tmp/forksafe.XXXXXX)
declare -A GUEST_PID=()
SWITCH_PIDS=()
CLEANUP_HOOKS=() # run first on exit (libvirt.sh stops its daemons there)

die() { echo "$*" >&2; exit 1; }

# ---- cleanup ------------------------------------------------------------------
# A process we started gets a polite SIGTERM, then SIGKILL after five seconds.
stop_pid() {
	local pid=$1 i
	kill "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

qemu_cleanup() {
	local name hook
	for hook in "${CLEANUP_HOOKS[@]}"; do "$hook"; done
	for name in "${!GUEST_PID[@]}"; do stop_pid "${GUEST_PID[$name]}"; done
	GUEST_PID=()
	for name in "${SWITCH_PIDS[@]}"; do stop_pid "$name"; done
	SWITCH_PIDS=()
	if [ -n "${KEEP_RUN_DIR:-}" ]; then
		echo "# kept $RUN_DIR" >&2
	else
		rm -rf "$RUN_DIR"
	fi
}
trap qemu_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- prerequisites ------------------------------------------------------------
qemu_require() {
	local f
	command -v "$QEMU" >/dev/null || die "qemu: $QEMU not found: run 'make deps' or set QEMU="
	for f in "$INITRAMFS" "$QMP_TOOL" "$AGENT_TOOL"; do
		[ -e "$f" ] || die "qemu: $f is missing: run 'make guest tools'"
	done
}

# ---- the command line ---------------------------------------------------------
# qemu_args DIR KERNEL ACCEL [options], result in QEMU_ARGS.
#   --smp N  --guid GUID|auto  --no-vmgenid  --role ROLE  --append "K=V ..."
#   --disk FILE (qcow2 for savevm)  --loadvm TAG  --incoming URI  --extra ARG
#   --net SWITCH,MAC (virtio-net on a switch_start switch)  --pcap FILE (its traffic)
qemu_args() {
	local dir=$1 kernel=$2 accel=$3 smp=1 guid=auto role=agent append="" vmgenid=1
	local -a extra=()
	shift 3
	while [ $# -gt 0 ]; do
		case "$1" in
		--smp) smp=$2; shift ;;
		--guid) guid=$2; shift ;;
		--no-vmgenid) vmgenid=0 ;;
		--role) role=$2; shift ;;
		--append) append=$2; shift ;;
		--disk) extra+=(-drive "if=none,id=snapdisk,format=qcow2,cache=unsafe,file=$2"); shift ;;
		--loadvm) extra+=(-loadvm "$2"); shift ;;
		--incoming) extra+=(-incoming "$2"); shift ;;
		--extra) extra+=("$2"); shift ;;
		--net)
			extra+=(-netdev "vde,id=net0,sock=${2%,*}" -device "virtio-net-pci,netdev=net0,mac=${2##*,}")
			shift
			;;
		--pcap) extra+=(-object "filter-dump,id=dump0,netdev=net0,file=$2"); shift ;;
		*) die "qemu: unknown guest option '$1'" ;;
		esac
		shift
	done
	QEMU_ARGS=(
		-nodefaults -no-user-config -display none -no-reboot
		-machine q35 -accel "$accel" -m "$GUEST_MEM" -smp "$smp"
		-kernel "$kernel" -initrd "$INITRAMFS"
		-append "console=ttyS0 panic=-1 forksafe.role=$role $append"
		-serial "file:$dir/console.log"
		-qmp "unix:$dir/qmp.sock,server=on,wait=off"
		-chardev "socket,id=agent,path=$dir/agent.sock,server=on,wait=off"
		-device "virtio-serial-pci,id=vser"
		-device "virtserialport,bus=vser.0,chardev=agent,name=$AGENT_PORT"
	)
	if [ "$vmgenid" = 1 ]; then
		QEMU_ARGS+=(-device "vmgenid,id=vmgenid0,guid=$guid")
	fi
	QEMU_ARGS+=("${extra[@]}")
}

# ---- the network --------------------------------------------------------------
# switch_start NAME: a user-space Ethernet switch (vde2, no privileges) for
# guests started with --net; sets SWITCH_DIR, the directory --net wants.
switch_start() {
	local dir=$RUN_DIR/$1.switch i
	command -v vde_switch >/dev/null || die "qemu: vde_switch not found: run 'make deps' (package vde2)"
	vde_switch --daemon --sock "$dir" --pidfile "$dir.pid" >"$dir.out" 2>&1 ||
		die "qemu: vde_switch failed: $(head -n 1 "$dir.out")"
	for ((i = 0; i < 50; i++)); do
		[ -s "$dir.pid" ] && [ -S "$dir/ctl" ] && break
		sleep 0.1
	done
	[ -s "$dir.pid" ] || die "qemu: vde_switch wrote no pid file"
	SWITCH_PIDS+=("$(cat "$dir.pid")")
	# shellcheck disable=SC2034 # for the caller
	SWITCH_DIR=$dir
}

# ---- the accelerator ----------------------------------------------------------
# /dev/kvm can exist while nested KVM fails at the first guest instruction
# ('KVM internal error'), so a throwaway guest decides: KVM only if it boots
# to our init under KVM (it does so in about a second; a failing one hangs,
# so the probe gives up after 15 s).  ACCEL=tcg|kvm skips the probe, and
# snapshot-tests/run.sh probes once and exports the answer.  Prints the choice.
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
		qemu_args "$dir" "$kernel" kvm --role probe --no-vmgenid
		timeout -k 5 15 "$QEMU" "${QEMU_ARGS[@]}" >"$dir/qemu.out" 2>&1 || true
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

# guest_start NAME KERNEL [options of qemu_args]: start QEMU in the background.
guest_start() {
	local name=$1 kernel=$2 dir accel pid i
	shift 2
	[ -f "$kernel" ] || die "qemu: kernel $kernel not found"
	dir=$(guest_dir "$name")
	[ -z "${GUEST_PID[$name]:-}" ] || die "qemu: guest $name is already running"
	mkdir -p "$dir"
	accel=$(qemu_accel "$kernel")
	qemu_args "$dir" "$kernel" "$accel" "$@"
	printf '%q ' "$QEMU" "${QEMU_ARGS[@]}" >"$dir/cmdline"
	"$QEMU" "${QEMU_ARGS[@]}" </dev/null >"$dir/qemu.out" 2>&1 &
	pid=$!
	GUEST_PID[$name]=$pid
	# A bad option, a locked disk or a snapshot that does not load ends
	# QEMU during start-up; QMP answers only once start-up is over.
	for ((i = 0; i < 40; i++)); do
		if [ -S "$dir/qmp.sock" ] && guest_qmp "$name" -t 2 query-status >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null || true
			unset "GUEST_PID[$name]"
			echo "qemu: $name failed to start: $(guest_qemu_error "$name")" >&2
			return 1
		fi
		sleep 0.25
	done
	echo "qemu: $name: QMP did not answer during start-up" >&2
	return 1
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
	local name=$1 t=30
	shift
	if [ "$1" = -t ]; then t=$2; shift 2; fi
	"$AGENT_TOOL" -t "$t" "$(guest_dir "$name")/agent.sock" "$@"
}

# guest_qmp NAME [-t SECONDS] COMMAND [ARGUMENTS-JSON]
guest_qmp() {
	local name=$1 t=10
	shift
	if [ "$1" = -t ]; then t=$2; shift 2; fi
	"$QMP_TOOL" -t "$t" "$(guest_dir "$name")/qmp.sock" "$@"
}

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

# Wait up to SECONDS for QEMU to exit on its own.
guest_wait_exit() {
	local name=$1 t=$2 pid=${GUEST_PID[$1]:-} i
	[ -n "$pid" ] || return 0
	for ((i = 0; i < t * 10; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null || true
			unset "GUEST_PID[$name]"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# Power off through the agent; QMP quit, then SIGKILL, if that fails.
guest_stop() {
	local name=$1
	guest_running "$name" || { unset "GUEST_PID[$name]"; return 0; }
	guest_call "$name" -t 10 poweroff >/dev/null 2>&1 || true
	guest_wait_exit "$name" 30 && return 0
	guest_quit "$name"
}

# End QEMU at once (a paused guest cannot power itself off).
guest_quit() {
	local name=$1
	guest_running "$name" || { unset "GUEST_PID[$name]"; return 0; }
	guest_qmp "$name" quit >/dev/null 2>&1 || true
	guest_wait_exit "$name" 10 && return 0
	kill -9 "${GUEST_PID[$name]}" 2>/dev/null || true
	guest_wait_exit "$name" 5 || true
}

# guest_boot NAME KERNEL [options]: start and wait for the agent.
guest_boot() {
	guest_start "$@" && guest_wait_agent "$1"
}
