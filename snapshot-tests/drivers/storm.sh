#!/bin/bash
# make storm: chained forks, a clone of a clone of a clone.  A guest is
# snapshotted by METHOD and restored with a fresh GUID; that clone is
# snapshotted and restored again with another, DEPTH times.  The methods
# that chain: migrate-file (the default), qcow2-newproc (savevm into the
# qcow2 the clone has open, -loadvm in the next QEMU) and libvirt-save
# (virsh save of the restored domain, virsh restore of that).  At every
# level:
#  - the guest reads the new GUID, and its console since the restore logs
#    exactly one "crng reseeded due to virtual machine fork": each fork
#    counted once, none lost, none twice;
#  - its first output after the restore (the agent's `sample`, 32 bytes of
#    getrandom()) was never seen at an earlier level;
#  - no kernel warning, BUG or oops on its console;
#  - MemAvailable is recorded: level DEPTH may have at most MEM_BOUND_KB
#    less than level 1, or the chain leaks;
#  - with --wg (migrate-file, qcow2-newproc): the guest streams through a
#    WireGuard tunnel to a peer that stays up for the whole chain, its
#    wire captured at each level; every level must complete a new
#    handshake (wg-detect), and on the patched kernel send nothing under a
#    key from before its restore.  A frame the parent had already handed
#    to its NIC is sent by every restore of the snapshot, byte for byte,
#    before the guest runs: a twin (another restore with a fresh GUID, on
#    a switch of its own, so the peer never sees it) lets wg-detect count
#    such frames apart, as in flight.
# At level 1 and every CONTROL_EVERY levels the fork is measured as a row
# of make demo measures it: the parent records getrandom() on its vCPU
# (guest/recorder.c) when it is snapshotted, two more restores keep the
# parent's GUID (the reference and the control), and rng-exposure counts
# the blocks the level's clone produced from the pre-fork state after its
# GUID changed.  The control must stay the reference's (the negative
# control: else the recording cannot tell a fork, and the run is blind),
# the patched kernel must expose 0 blocks at every such level, and the
# stock kernel must expose some at one level at least (the positive
# control: else the recording cannot see a window here).
# With --wg nothing is recorded: the stream draws getrandom() for every
# datagram at moments the host's timing decides, so two restores with the
# parent's GUID never stay alike (measured: a pair differed at once); the
# fork count, the new GUID and the WireGuard checks carry such a run.
#
#   storm.sh [--kernels "patched stock"] [--method M] [--wg] [--depth 100]
#            [--control-every 10] [--out DIR]
#
# KERNEL=/path/bzImage runs that kernel alone.  The table goes to stdout
# and DIR/storm-METHOD[-wg].md, every level to
# DIR/storm/KERNEL-METHOD[-wg].jsonl.  The
# run fails when a patched level fails a check, when a control differs
# from its reference or the stock kernel shows no window (blind).
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"

kernels=$(test_kernels)
method=migrate-file
wg=""
depth=100
every=10
out=${RESULTS:-$FORKSAFE_ROOT/results}
MEM_BOUND_KB=${MEM_BOUND_KB:-2048}
STORM_RUN_S=1 # a level runs this long after its sample before its console is read
STORM_WG_S=2  # with --wg, this long: the rekey and new data through the tunnel
STORM_TWIN_S=1 # with --wg, a level's twin runs this long: past its first heartbeat
opts_parse storm --kernels=kernels --method=method --wg=wg=1 --depth=depth --control-every=every \
	--out=out -- "$@"
opts_counts storm --depth "$depth"
opts_counts storm --control-every "$every"
case "$method" in
migrate-file | qcow2-newproc | libvirt-save) ;;
*) die "storm: --method chains migrate-file, qcow2-newproc or libvirt-save, not '$method'" ;;
esac
[ -z "$wg" ] || snap_newproc "$method" ||
	die "storm: --wg needs a method that restores into a QEMU of ours (migrate-file, qcow2-newproc)"
[ -z "$wg" ] || [ "$STORM_RUN_S" -ge "$STORM_WG_S" ] || STORM_RUN_S=$STORM_WG_S
# shellcheck disable=SC2086 # a list of words
require_kernels storm $kernels
qemu_setup
results_lock storm "$out"
mkdir -p "$out/storm"
run=$method${wg:+-wg}

warnings() {
	tail -c +"$(($2 + 1))" "$(guest_dir "$1")/console.log" | grep -c -E 'WARNING:|BUG:|Oops|Call Trace' || true
}
sample() { agent_field bytes <<<"$(guest_call "$1" sample)"; }
console_size() { stat -c %s "$(guest_dir "$1")/console.log" 2>/dev/null || echo 0; }

# storm_boot K DIR: the first guest (K), and with --wg its peer and tunnel
# (the peer K-peer is never snapshotted).  Sets NET (the guest's network
# options).
NET=() TWIN_NET=()
storm_boot() {
	local k=$1 dir=$2
	if [ -z "$wg" ]; then
		snap_boot "$method" "$k" "$(kernel_path "$k")" 1 "$dir"
		return
	fi
	wg_switch "$k-storm"
	NET=("${WG_NETS[@]:2:2}")
	switch_start "$k-twin"
	TWIN_NET=(--net "$SWITCH_DIR,52:54:00:f0:00:02")
	guest_boot "$k-peer" "$(kernel_path "$k")" --guid "$WG_PEER_GUID" "${WG_NETS[@]:0:2}"
	snap_boot "$method" "$k" "$(kernel_path "$k")" 1 "$dir" --guid "$WG_VM_GUID" "${NET[@]}"
	wg_tunnel "$k-peer" "$k"
	guest_call "$k" stream start beat 10.9.0.1 "$WG_BEAT_PORT" "$WG_BEAT_US" >/dev/null
	wg_stream "$k" data "$WG_STREAM_US"
	wait_until "$WG_HANDSHAKE_TIMEOUT" wg_handshaken "$k" ||
		die "storm: the tunnel did not come up: no handshake in ${WG_HANDSHAKE_TIMEOUT}s"
	guest_call "$k" reseed >/dev/null
}

# recorded LEVEL: is LEVEL's fork measured with the recorder?
recorded() { [ -z "$wg" ] && { [ "$1" = 1 ] || [ $(($1 % every)) = 0 ]; }; }

# record_before_save NAME LEVEL: NAME is about to be snapshotted as the
# parent of LEVEL; start its recording if LEVEL is recorded.
record_before_save() {
	recorded "$2" || return 0
	guest_call "$1" record start getrandom-16 "$FORK_BLOCKS" >/dev/null
}

# controls K DIR PARENT_GUID LEVEL_DIR: the reference and the control,
# restores of DIR's snapshot with the parent's GUID; their recordings in
# LEVEL_DIR/ref.dump and control.dump.
controls() {
	local k=$1 dir=$2 guid=$3 c name from
	for c in ref control; do
		name=$(snap_clone_name "$method" "$k" "$k-$c-$(basename "$4")")
		from=$(console_size "$name")
		snap_restore "$method" "$k" "$dir" "$name" "$(kernel_path "$k")" 1 "$guid"
		rng_collect "$name" "$4/$c" "$from"
		snap_end "$method" "$name"
	done
}

# twin K DIR LEVEL_DIR: with --wg, another restore of DIR's snapshot with a
# fresh GUID on the twin's switch, where nothing answers: its handshakes go
# nowhere and the peer keeps the chain's session.  Its wire goes to
# LEVEL_DIR/twin.pcap, for wg_level to compare with the level's.
twin() {
	local k=$1 dir=$2 name
	[ -n "$wg" ] || return 0
	name=$(snap_clone_name "$method" "$k" "$k-twin-$(basename "$3")")
	snap_restore "$method" "$k" "$dir" "$name" "$(kernel_path "$k")" 1 auto "${TWIN_NET[@]}" \
		--pcap "$3/twin.pcap"
	sleep "$STORM_TWIN_S"
	snap_end "$method" "$name"
}

# exposure K LEVEL_DIR: the level's fork as a row, judged by fork-report
# like every other (a control beyond its bound, a stream that recorded
# too little or a reference that saw a new GUID make it an error, never
# a "controls identical"), as JSON.
exposure() {
	"$BUILD/rng-exposure" "ref=$2/ref.dump:$2/ref.console" "control=$2/control.dump:$2/control.console" \
		"fork=$2/fork.dump:$2/fork.console" >"$2/exposure.json"
	jq -c --arg k "$1" --arg m "$method" '{kind: "rng", kernel: $k, method: $m, vcpus: 1, result: .}' \
		"$2/exposure.json" >"$2/row.json"
	"$BUILD/fork-report" -f verdicts "$2/row.json" |
		jq -c '{verdict, why, control_identical: (.verdict != "error"), diverged: (.diverged > 0),
			exposure_records: .exposure_max, exposure_us: .exposure_us_max}'
}

# wg_level LEVEL_DIR: wg-detect's verdict on the level's wire (its twin's
# beside it), as JSON.
wg_level() {
	[ -n "$wg" ] || { echo null; return; }
	# No original's capture: a level's packets are judged by absence (the
	# level before it is its original; matching it is not done yet).
	wg_detect "$1/wire.json" none "$1/wire.pcap" "$1/twin.pcap" >/dev/null
	jq -c '.clones[0] | {rekeyed: (.postfork_sessions > 0), prefork_packets, inflight_packets, handshake_us}' \
		"$1/wire.json"
}

# storm K: the chain on kernel K, one JSON line per level on stdout.
storm() {
	local k=$1 dir=$RUN_DIR/$1-0 next name info guid parent_guid s rec level from
	local -a pcap=()
	mkdir -p "$dir"
	storm_boot "$k" "$dir"
	info=$(guest_call "$k" info)
	parent_guid=$(agent_field guid <<<"$info")
	# The kernel reseeds every uptime/2 s in its first two minutes: the
	# original ages first, so that no reseed of its own falls in a recording.
	[ -n "$wg" ] || rng_prepare "$k" "$method" ready "$info"
	record_before_save "$k" 1
	snap_save "$method" "$k" "$dir"
	for level in $(seq 1 "$depth"); do
		name=$(snap_clone_name "$method" "$k" "$k-L$level") next=$RUN_DIR/$k-$level
		mkdir -p "$next"
		! recorded "$level" || controls "$k" "$dir" "$parent_guid" "$next"
		twin "$k" "$dir" "$next"
		from=$(console_size "$name")
		[ -z "$wg" ] || pcap=(--pcap "$next/wire.pcap")
		snap_restore "$method" "$k" "$dir" "$name" "$(kernel_path "$k")" 1 auto "${NET[@]}" "${pcap[@]}"
		rec=null
		if recorded "$level"; then
			rng_collect "$name" "$next/fork" "$from"
			rec=$(exposure "$k" "$next")
		fi
		s=$(sample "$name")
		sleep "$STORM_RUN_S"
		info=$(guest_call "$name" info)
		guid=$(agent_field guid <<<"$info")
		record_before_save "$name" "$((level + 1))"
		snap_save "$method" "$name" "$next"
		# qcow2-newproc saved into the qcow2 the level had open: it moves on.
		# (libvirt-save's domain keeps the disk it was defined with, in the
		# first level's directory: only the saved states go.)
		[ "$method" != qcow2-newproc ] || mv "$dir/vmstate.qcow2" "$next/"
		jq -nc --argjson level "$level" --arg guid "$guid" --arg parent "$parent_guid" --arg sample "$s" \
			--argjson forks "$(fork_lines "$name" "$from")" --argjson warnings "$(warnings "$name" "$from")" \
			--argjson mem "$(agent_field mem_available_kb <<<"$info")" --argjson rec "$rec" \
			--argjson wg "$(wg_level "$next")" \
			'{level: $level, guid: $guid, parent_guid: $parent, sample: $sample, forks: $forks,
			  warnings: $warnings, mem_available_kb: $mem, wg: $wg, recorded: $rec}'
		progress "storm $k $run: level $level: $(fork_lines "$name" "$from") fork line(s), MemAvailable $(agent_field mem_available_kb <<<"$info") kB"
		if snap_libvirt "$method"; then rm -f "$dir/vmstate.sav"; else rm -rf "$dir"; fi
		dir=$next parent_guid=$guid
	done
	snap_finish "$method" "$k"
	[ -z "$wg" ] || guest_quit "$k-peer"
	rm -rf "$dir"
}

for k in $kernels; do
	storm "$k" >"$out/storm/$k-$run.jsonl.tmp"
	mv "$out/storm/$k-$run.jsonl.tmp" "$out/storm/$k-$run.jsonl"
done
# One summary per kernel, from its levels.
summary=$(for k in $kernels; do
	jq -s -c --arg k "$k" --arg run "$run" --argjson bound "$MEM_BOUND_KB" '
		def distinct: (unique | length) == length;
		[.[] | select(.recorded != null) | .recorded] as $rec |
		{kernel: $k, run: $run, levels: length,
		 one_fork_each: ([.[] | select(.forks != 1)] | length == 0),
		 bad_fork_levels: [.[] | select(.forks != 1) | "\(.level): \(.forks)"],
		 new_guid_each: ([.[] | select(.guid == .parent_guid or .guid == "")] | length == 0),
		 guids_distinct: (map(.guid) + [.[0].parent_guid] | distinct),
		 samples_distinct: (map(.sample) | distinct),
		 warnings: (map(.warnings) | add),
		 mem_first_kb: .[0].mem_available_kb, mem_last_kb: .[-1].mem_available_kb,
		 mem_lost_kb: (.[0].mem_available_kb - .[-1].mem_available_kb),
		 mem_bound_kb: $bound,
		 recorded: ($rec | length),
		 controls_equal: ([$rec[] | select(.control_identical)] | length),
		 forks_diverged: ([$rec[] | select(.diverged)] | length),
		 exposed_levels: ([$rec[] | select(.verdict == "exposure window")] | length),
		 errors: [$rec[] | select(.verdict == "error") | .why],
		 exposure_records_max: ([$rec[].exposure_records] | max // 0),
		 exposure_us_max: ([$rec[].exposure_us] | max // 0),
		 wg: (if .[0].wg == null then null else
			{rekeyed: ([.[] | select(.wg.rekeyed)] | length),
			 prefork_packets: (map(.wg.prefork_packets) | add),
			 inflight_packets: (map(.wg.inflight_packets) | add),
			 handshake_ms_max: (map(.wg.handshake_us) | max / 1000)} end)}' \
		"$out/storm/$k-$run.jsonl"
done | jq -s .)
echo "$summary" >"$out/storm-$run.json.tmp"
mv "$out/storm-$run.json.tmp" "$out/storm-$run.json"
{
	echo "## Chained forks (make storm, $run)"
	echo
	echo "$method, 1 vCPU, $depth levels per kernel, each level a restore of the last with a fresh GUID.${wg:+ A WireGuard tunnel streams to a peer that stays up for the whole chain.}"
	[ -n "$wg" ] || echo "Recorded (getrandom() from the snapshot on, a reference and a control with the parent's GUID): level 1 and every $every."
	echo
	if [ -n "$wg" ]; then
		cols=" levels rekeyed | packets under a pre-fork key | frames in flight at the snapshot | slowest handshake (ms) |"
		rule="---|---|---|---|"
	else
		cols=" recorded levels | controls identical | forks diverged | levels exposed | pre-fork blocks after the fork (max) | window µs (max) |"
		rule="---|---|---|---|---|---|"
	fi
	echo "| kernel | levels | one fork logged at each | GUIDs all new | first outputs all new | warnings | MemAvailable level 1 → $depth (kB) |$cols"
	echo "|---|---|---|---|---|---|---|$rule"
	jq -r '.[] | "| \(.kernel) | \(.levels) | \(if .one_fork_each then "yes" else "no: " + (.bad_fork_levels | join(", ")) end) | \(.guids_distinct and .new_guid_each) | \(.samples_distinct) | \(.warnings) | \(.mem_first_kb) → \(.mem_last_kb) (\(.mem_lost_kb) lost, bound \(.mem_bound_kb)) |" + (if .wg then " \(.wg.rekeyed) of \(.levels) | \(.wg.prefork_packets) | \(.wg.inflight_packets) | \(.wg.handshake_ms_max) |" else " \(.recorded) | \(.controls_equal) of \(.recorded) | \(.forks_diverged) of \(.recorded) | \(.exposed_levels) of \(.recorded) | \(.exposure_records_max) | \(.exposure_us_max) |" end)' <<<"$summary"
} >"$out/storm-$run.md.tmp"
mv "$out/storm-$run.md.tmp" "$out/storm-$run.md"
cat "$out/storm-$run.md"
echo "storm: results in $out/storm-$run.md, $out/storm-$run.json and $out/storm/" >&2
# Blind: a control that differs from its reference, or a stock kernel whose
# window no recorded level saw.  Failed: a patched (or custom) level.
jq -e 'all(.[]; .controls_equal == .recorded)' <<<"$summary" >/dev/null ||
	die "storm: a level's recording cannot tell a fork: $(jq -r '[.[].errors[]][0]' <<<"$summary")"
jq -e "all(.[] | select((.kernel | $STOCK_JQ) and .recorded > 0); .exposed_levels > 0)" <<<"$summary" >/dev/null ||
	die "storm: the stock kernel exposed nothing at any recorded level: the recording cannot see a window here"
jq -e "all(.[] | select(.kernel | $STOCK_JQ | not);"' .one_fork_each and .new_guid_each and .guids_distinct
	and .samples_distinct and .warnings == 0 and .mem_lost_kb <= .mem_bound_kb
	and .forks_diverged == .recorded and .exposed_levels == 0
	and (.wg == null or (.wg.rekeyed == .levels and .wg.prefork_packets == 0)))' <<<"$summary" >/dev/null ||
	die "storm: the patched kernel failed a check (the table says which)"
jq -e 'all(.[]; .wg == null or .wg.rekeyed == .levels)' <<<"$summary" >/dev/null ||
	die "storm: a level did not rekey WireGuard (the table says which)"
