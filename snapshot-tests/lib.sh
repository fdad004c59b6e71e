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

# For the benchmarks: the median of the numbers on stdin, and P/S.
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
ratio() { awk -v p="$1" -v s="$2" 'BEGIN { printf "%.3f", s ? p / s : 0 }'; }

# bench_counts NAME VALUE...: the benchmarks' counts and --ms are positive.
bench_counts() {
	local name=$1 n
	shift
	for n in "$@"; do
		case "$n" in '' | *[!0-9]* | 0) die "$name: counts and --ms want positive numbers" ;; esac
	done
}

# cost_cells LABEL STOCK-FILE PATCHED-FILE: "STOCK | PATCHED | RATIO" from
# the medians of the rounds in each file, and a progress line.
cost_cells() {
	local s p r
	s=$(median <"$2") p=$(median <"$3")
	r=$(ratio "$p" "$s")
	fork_progress "bench: $1: stock $s/s, patched $p/s, ratio $r"
	echo "$s | $p | $r"
}

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

# ---- the WireGuard fork measurement -------------------------------------------
# A peer and a VM, joined by WireGuard over a user-space switch, are
# snapshotted together; each clone of the VM is restored next to a restore
# of the peer, so that every clone meets the peer as it was at the
# snapshot (a peer that had already seen one clone would reject the next
# one's first handshake as a replay: the clones' clocks all restart at the
# snapshot).  The peer keeps its GUID and sees no fork.  The VM's wire
# traffic is captured and read by wg-detect.
WG_WINDOW_S=${WG_WINDOW_S:-6}
WG_STREAM_US=${WG_STREAM_US:-10000} # through the tunnel: 100 datagrams/s
WG_BEAT_US=5000                      # on the wire: marks the resume in the capture
WG_BEAT_PORT=9                       # (UDP discard)
WG_PEER_PORT=51001 WG_VM_PORT=51002 WG_SINK_PORT=7000
WG_PEER_GUID=6f726b73-6166-6500-0000-00000000beef
WG_VM_GUID=6f726b73-6166-6500-0000-0000000000fe

# wg_run KERNEL_NAME KERNEL TRAFFIC CLONES OUT.json
# TRAFFIC "stream" keeps the VM sending through the tunnel across the
# snapshot; "idle" lets the tunnel fall silent after its handshake.
# Restores CLONES clones with a fresh GUID and, as the negative control,
# WG_CONTROLS (default CLONES, at least 2) with the original GUID (always
# streaming, or nothing could be reused).  OUT.json: {"kernel", "traffic", "fresh", "control"}, the last
# two wg-detect's reports with each clone's "delivered" datagrams added,
# or {"error"}.  Returns 1 on error.
wg_run() {
	local kname=$1 kernel=$2 traffic=$3 nclones=$4 out=$5 dir err n rc=0
	dir=$RUN_DIR/wg-$kname-$traffic
	mkdir -p "$dir/peer" "$dir/vm"
	wg_measure "$kname" "$kernel" "$traffic" "$nclones" "$dir" 2>"$dir/errors" || rc=$?
	if [ "$rc" != 0 ]; then
		err=$(tail -n 1 "$dir/errors" | tr -cd '[:print:]' | sed 's/["\]//g')
		fork_progress "wg $kname $traffic: error: ${err:-failed}"
		printf '{"kernel":"%s","traffic":"%s","error":"%s"}\n' "$kname" "$traffic" "${err:-failed}" >"$out"
		for n in "${!GUEST_PID[@]}"; do guest_quit "$n"; done
		return 1
	fi
	jq -c --arg k "$kname" --arg t "$traffic" \
		'{kernel: $k, traffic: $t, fresh: .[0], control: .[1]}' \
		-s "$dir/fresh.json" "$dir/control.json" >"$out"
}

# wg_switch NAME: a switch for a peer and a VM; WG_NETS holds the --net
# options of the peer (first two words) and of the VM (last two).
wg_switch() {
	switch_start "$1"
	WG_NETS=(--net "$SWITCH_DIR,52:54:00:f0:00:01" --net "$SWITCH_DIR,52:54:00:f0:00:02")
}

# wg_tunnel PEER VM: addresses on the wire, WireGuard keys drawn for this
# run, the tunnel between the two guests, and the peer's sink.
wg_tunnel() {
	local peer=$1 vm=$2 pkey vkey
	pkey=$(wg genkey) vkey=$(wg genkey)
	guest_call "$peer" net-up 10.9.0.1/24 >/dev/null &&
		guest_call "$peer" wg-up "$pkey" "$WG_PEER_PORT" 10.10.0.1/24 "$(wg pubkey <<<"$vkey")" \
			- 10.10.0.2/32 >/dev/null &&
		guest_call "$vm" net-up 10.9.0.2/24 >/dev/null &&
		guest_call "$vm" wg-up "$vkey" "$WG_VM_PORT" 10.10.0.2/24 "$(wg pubkey <<<"$pkey")" \
			"10.9.0.1:$WG_PEER_PORT" 10.10.0.1/32 >/dev/null &&
		guest_call "$peer" sink start "$WG_SINK_PORT" >/dev/null
}

# wg_stream VM NAME INTERVAL_US: datagrams through the tunnel to the sink.
wg_stream() {
	guest_call "$1" stream start "$2" 10.10.0.1 "$WG_SINK_PORT" "$3" >/dev/null
}

# What the peer's sink has received so far.
wg_received() { guest_call "$1" sink stat | t_field received; }

# wg_detect OUT.json CAPTURE...: wg-detect on captures of the VM.
wg_detect() {
	local out=$1
	shift
	"$BUILD/wg-detect" -p "$WG_VM_PORT" -m "$WG_BEAT_PORT" -j "$out" "$@"
}

# wg_snapshot KERNEL_NAME KERNEL TRAFFIC DIR: boot the peer and the VM,
# bring the tunnel up and snapshot both into DIR/peer and DIR/vm.  Sets
# WG_NETS (wg_switch).
wg_snapshot() {
	local kname=$1 kernel=$2 traffic=$3 dir=$4 tag="wg $1 $3" i hs
	wg_switch "${dir##*/}"
	fork_progress "$tag: booting the peer and the VM"
	snap_boot migrate-file peer "$kernel" 1 "$dir/peer" --guid "$WG_PEER_GUID" "${WG_NETS[@]:0:2}" || return 1
	snap_boot migrate-file vm "$kernel" 1 "$dir/vm" --guid "$WG_VM_GUID" "${WG_NETS[@]:2:2}" || return 1
	wg_tunnel peer vm || return 1
	guest_call vm stream start beat 10.9.0.1 "$WG_BEAT_PORT" "$WG_BEAT_US" >/dev/null || return 1
	wg_stream vm data "$WG_STREAM_US" || return 1
	for ((i = 0; i < 100; i++)); do
		hs=$(guest_call vm wg-show | t_field latest_handshake)
		[ "${hs:-0}" != 0 ] && break
		sleep 0.2
	done
	[ "${hs:-0}" != 0 ] || { echo "the tunnel did not come up: no handshake in 20 s" >&2; return 1; }
	sleep 2
	[ "$(wg_received peer)" -gt 0 ] || { echo "nothing came through the tunnel" >&2; return 1; }
	[ "$traffic" = idle ] && guest_call vm stream stop data >/dev/null
	sleep 1
	# Nothing from before the snapshot may hide what the fork changes.
	guest_call vm reseed >/dev/null || return 1
	fork_progress "$tag: snapshot"
	snap_save migrate-file vm "$dir/vm" || return 1
	snap_save migrate-file peer "$dir/peer"
}

wg_measure() {
	local kname=$1 kernel=$2 traffic=$3 nclones=$4 dir=$5 tag="wg $1 $3" i set clone base
	wg_snapshot "$kname" "$kernel" "$traffic" "$dir" || return 1
	for set in fresh control; do
		[ "$set" = control ] && nclones=${WG_CONTROLS:-$nclones}
		for ((i = 1; i <= nclones; i++)); do
			clone=$set$i
			fork_progress "$tag: restoring $clone"
			wg_restore_pair "$kernel" "$traffic" "$set" "$clone" "$dir" || return 1
		done
		base=$(printf "$dir/$set%d.pcap " $(seq 1 "$nclones"))
		# shellcheck disable=SC2086 # one word per capture
		wg_detect "$dir/$set.detect.json" $base >"$dir/$set.txt" || return 1
		jq -c --slurpfile d <(for ((i = 1; i <= nclones; i++)); do cat "$dir/$set$i.delivered"; done | jq -s .) \
			'.clones |= [range(0; length) as $i | .[$i] + {delivered: $d[0][$i]}]' \
			"$dir/$set.detect.json" >"$dir/$set.json"
	done
}

# wg_restore KERNEL DIR NAME GUID: one clone of the VM, its wire captured
# in DIR/NAME.pcap.
wg_restore() {
	snap_restore migrate-file vm "$2/vm" "$3" "$1" 1 "$4" "${WG_NETS[@]:2:2}" --pcap "$2/$3.pcap"
}

# wg_restore_peer KERNEL DIR NAME: the peer as it was at the snapshot.
wg_restore_peer() {
	snap_restore migrate-file peer "$2/peer" "$3" "$1" 1 "$WG_PEER_GUID" "${WG_NETS[@]:0:2}"
}

# The WireGuard table of make demo and make bench-wg: wg_table_head, then
# wg_table_row OUT.json per wg_run.  Times in ms after the resume and
# packet counts are min/median/max over the clones where the thing
# happened (their number in parentheses).
wg_stats() {
	sort -n | awk '$1 >= 0 { v[++n] = $1 } END {
		if (!n) { print "never"; exit }
		printf "%d/%d/%d (%d)", v[1], v[int((n + 1) / 2)], v[n], n }'
}

wg_table_head() {
	echo "| kernel | tunnel | verdict | pre-fork-key packets | nonce-reuse pairs | control reuse pairs | rekeyed | first initiation ms | handshake done ms | first new data ms | datagrams delivered |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
}

# wg_ms FIELD OUT.json: the fresh clones' FIELD (µs) in ms, as wg_stats.
wg_ms() { jq -r ".fresh.clones[].$1" "$2" | awk '{ print ($1 < 0) ? -1 : int($1 / 1000) }' | wg_stats; }

wg_table_row() {
	local r=$1 k t verdict prefork reuse
	k=$(jq -r .kernel "$r") t=$(jq -r .traffic "$r")
	if jq -e .error "$r" >/dev/null; then
		echo "| $k | $t | error: $(jq -r .error "$r") |"
		return
	fi
	prefork=$(jq '[.fresh.clones[].prefork_packets] | add' "$r")
	reuse=$(jq .fresh.nonce_reuse_pairs "$r")
	if [ "$(jq .control.nonce_reuse_pairs "$r")" = 0 ]; then
		verdict="error: blind (no reuse in the control)"
	elif [ "$prefork" != 0 ] || [ "$reuse" != 0 ]; then
		verdict=exposed
	elif [ "$(jq '[.fresh.clones[] | select(.handshake_us < 0)] | length' "$r")" != 0 ]; then
		verdict="not exposed, not rekeyed"
	else
		verdict=safe
	fi
	echo "| $k | $t | $verdict | $(jq -r '.fresh.clones[].prefork_packets' "$r" | wg_stats)" \
		"| $reuse | $(jq -r .control.nonce_reuse_pairs "$r")" \
		"| $(jq '[.fresh.clones[] | select(.handshake_us >= 0)] | length' "$r")/$(jq '.fresh.clones | length' "$r")" \
		"| $(wg_ms first_initiation_us "$r") | $(wg_ms handshake_us "$r") | $(wg_ms first_new_data_us "$r")" \
		"| $(jq -r '.fresh.clones[].delivered' "$r" | wg_stats) |"
}

# wg_restore_pair KERNEL TRAFFIC SET CLONE DIR: a clone next to a restore
# of the peer, for WG_WINDOW_S; DIR/CLONE.delivered counts what reached
# the peer's sink meanwhile.
wg_restore_pair() {
	local kernel=$1 traffic=$2 set=$3 clone=$4 dir=$5 before after guid=auto
	[ "$set" = control ] && guid=$WG_VM_GUID
	wg_restore_peer "$kernel" "$dir" "peer-$clone" || return 1
	before=$(wg_received "peer-$clone")
	wg_restore "$kernel" "$dir" "$clone" "$guid" || return 1
	# A control streams even in the idle case: reuse needs traffic.
	if [ "$traffic" = idle ] && [ "$set" = control ]; then
		wg_stream "$clone" data "$WG_STREAM_US" || return 1
	fi
	sleep "$WG_WINDOW_S"
	after=$(wg_received "peer-$clone") || return 1
	echo "$((after - before))" >"$dir/$clone.delivered"
	guest_quit "$clone"
	guest_quit "peer-$clone"
}

qemu_require
