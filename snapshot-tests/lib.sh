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

# ---- the fork measurement -----------------------------------------------------
# shellcheck source=../qemu-scripts/snapshot.sh
. "$FORKSAFE_ROOT/qemu-scripts/snapshot.sh"

FORK_BLOCKS=${FORK_BLOCKS:-60000}
# In its first two minutes the kernel reseeds every uptime/2 seconds on its
# own.  The original ages before it records, so that interval outlasts the
# recording even on a loaded host (10 s: every 5 s) and, for in-process
# loadvm, which does not rewind the guest clock, all the clones in a row.
FORK_UPTIME_S=${FORK_UPTIME_S:-10}
INPROC_UPTIME_S=${INPROC_UPTIME_S:-40}

# Progress goes straight to the caller's stderr (fd 3), past the capture
# of each run's errors.
exec 3>&2
fork_progress() { echo "fork: $*" >&3; }

# fork_run KERNEL_NAME KERNEL METHOD VCPUS CLONES OUT.json
# Snapshot one guest that is recording getrandom() blocks, restore a
# reference and a control with the original's GUID and CLONES clones with
# a fresh one, and write the analyzer's verdict material to OUT.json.  On
# failure OUT.json carries the error; returns 1.
fork_run() {
	local kname=$1 kernel=$2 method=$3 vcpus=$4 nclones=$5 out=$6
	local tag="$kname ${vcpus}cpu $method" dir err rc=0
	dir=$RUN_DIR/$kname-$method-$vcpus
	mkdir -p "$dir"
	if ! snap_known "$method"; then
		err="unknown method '$method' (known: $SNAP_METHODS)"
	else
		fork_measure "$kname" "$kernel" "$method" "$vcpus" "$nclones" "$dir" 2>"$dir/errors" || rc=$?
		err=$(tail -n 1 "$dir/errors" | tr -cd '[:print:]' | sed 's/["\]//g')
		[ "$rc" = 0 ] || err=${err:-"failed (status $rc)"}
		[ "$rc" != 0 ] || err=""
		# A row that failed half-way leaves its original (and for libvirt,
		# its domain) behind; the other rows should not carry it.
		[ "$rc" = 0 ] || snap_finish "$method" "$kname-$method-$vcpus" 2>/dev/null || true
	fi
	if [ -n "$err" ]; then
		fork_progress "$tag: error: $err"
		printf '{"kernel":"%s","method":"%s","vcpus":%d,"error":"%s"}\n' \
			"$kname" "$method" "$vcpus" "$err" >"$out"
		return 1
	fi
	printf '{"kernel":"%s","method":"%s","vcpus":%d,"result":%s}\n' \
		"$kname" "$method" "$vcpus" "$(cat "$dir/result.json")" >"$out"
}

fork_measure() {
	local kname=$1 kernel=$2 method=$3 vcpus=$4 nclones=$5 dir=$6
	local tag="$kname ${vcpus}cpu $method" orig info guid name clone g from i age wait_ms
	local -a clones args
	orig=$kname-$method-$vcpus
	fork_progress "$tag: booting the original"
	snap_boot "$method" "$orig" "$kernel" "$vcpus" "$dir" || return 1
	info=$(guest_call "$orig" info) || return 1
	fork_require "$info" || return 1
	guid=$(t_field guid <<<"$info")
	age=$FORK_UPTIME_S
	snap_inproc "$method" && age=$INPROC_UPTIME_S
	wait_ms=$((age * 1000 - $(t_field uptime_ms <<<"$info")))
	if [ "$wait_ms" -gt 0 ]; then
		fork_progress "$tag: letting the guest age to ${age}s of uptime"
		sleep "$((wait_ms / 1000)).$(printf '%03d' $((wait_ms % 1000)))"
	fi
	guest_call "$orig" record start "$FORK_BLOCKS" >/dev/null || return 1
	fork_progress "$tag: snapshot"
	snap_save "$method" "$orig" "$dir" || return 1

	clones=(ref control)
	for ((i = 1; i <= nclones; i++)); do clones+=("c$i"); done
	for clone in "${clones[@]}"; do
		fork_progress "$tag: restoring $clone"
		name=$(snap_clone_name "$method" "$orig" "$clone-$orig")
		g=auto
		case "$clone" in ref | control) g=$guid ;; esac
		from=$(stat -c %s "$(guest_dir "$name")/console.log" 2>/dev/null || echo 0)
		snap_restore "$method" "$orig" "$dir" "$name" "$kernel" "$vcpus" "$g" || return 1
		fork_collect "$name" "$dir/$clone" "$from" || return 1
		snap_end "$method" "$name"
		args+=("$clone=$dir/$clone.dump:$dir/$clone.console")
	done
	snap_finish "$method" "$orig"
	"$BUILD/rng-exposure" "${args[@]}" >"$dir/result.json"
}

# The guest must see its generation ID for the measurement to mean anything.
fork_require() {
	local info=$1
	case "$(t_field vmgenid_driver <<<"$info")" in
	bound) ;;
	unbound) echo "the kernel has no vmgenid driver bound (CONFIG_VMGENID missing?)" >&2; return 1 ;;
	*) echo "the guest has no vmgenid device" >&2; return 1 ;;
	esac
	if [ -z "$(t_field guid <<<"$info")" ]; then
		echo "the agent cannot read the generation ID: $(t_field guid_error <<<"$info")" >&2
		return 1
	fi
}

# Wait for the recording to fill, then fetch it and the console since FROM.
fork_collect() {
	local name=$1 base=$2 from=$3 status i
	for ((i = 0; i < 300; i++)); do
		status=$(guest_call "$name" -t 30 record status 2>"$RUN_DIR/call.err") || {
			echo "$name: no recording status after the restore ($(tail -n 1 "$RUN_DIR/call.err");" \
				"QEMU: $(guest_state "$name");" \
				"console: $(guest_console_tail "$name"))" >&2
			return 1
		}
		[ "$(t_field complete <<<"$status")" = 1 ] && break
		sleep 0.2
	done
	[ "$(t_field complete <<<"$status")" = 1 ] || { echo "$name: the recording did not complete" >&2; return 1; }
	guest_call "$name" -t 300 record dump >"$base.dump" || return 1
	tail -c +"$((from + 1))" "$(guest_dir "$name")/console.log" >"$base.console"
}

qemu_require
