#!/bin/bash
# make bench-wg: WireGuard across VM forks, stock and patched in one run.
#  - exposure and rekey: wg_row (lib/wg_fork.sh) with --clones fresh-GUID clones
#    (default 20) and 2 controls, with the tunnel streaming and idle:
#    packets under pre-fork keys, nonce-reuse pairs, and the time from
#    the resume to the first initiation, the completed handshake and the
#    first data under the new keys, over the clones;
#    (clones alive side by side with one key are make wg-deploy's);
#  - cost: datagrams per second through the tunnel between two guests,
#    --rounds rounds (default 5) of --ms ms, stock and patched alternating;
#    and instructions per datagram on a sending guest that counts
#    instructions (machine.sh --count-instructions): its busy time over a
#    burst of --burst datagrams (default 30000), 1 ns per instruction, on
#    the bench kernels (stock-bench, patched-bench), whose WireGuard frees
#    each data packet where its tx worker would send it
#    (wireguard.bench_sink=1): socket, encryption and the tx worker's
#    checks, without the virtio-net queue and the peer.
#   bench-wg.sh [--clones N] [--rounds N] [--ms MS] [--burst N] [--boots N]
#               [--instructions-only] [--out DIR]
#   --boots: boots of each bench kernel for the instruction count (default 3).
#   --instructions-only skips the forks and the throughput.
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"
. "$(dirname "$0")/../lib/stats.sh"

nclones=20 rounds=5 ms=3000 burst=30000 boots=3 parts=all
out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse bench-wg --clones=nclones --rounds=rounds --ms=ms --burst=burst --boots=boots \
	--out=out --instructions-only=parts=instructions -- "$@"
qemu_setup
opts_counts bench-wg "--clones, --rounds, --ms, --burst and --boots" "$nclones" "$rounds" "$ms" "$burst" "$boots"
if [ "$parts" = all ]; then
	require_kernels bench-wg stock patched stock-bench patched-bench
else
	require_kernels bench-wg stock-bench patched-bench
fi
results_lock bench-wg "$out"
mkdir -p "$out/bench-wg"
md=$out/bench-wg.md

# tunnel_pair NAME KERNEL_NAME [machine options]: NAME-peer and NAME-vm,
# the tunnel between them up.
tunnel_pair() {
	local name=$1 k=$2
	shift 2
	progress "bench-wg: booting $name ($k)"
	wg_switch "$name"
	guest_boot "$name-peer" "$(kernel_path "$k")" "${WG_NETS[@]:0:2}" "$@"
	guest_boot "$name-vm" "$(kernel_path "$k")" "${WG_NETS[@]:2:2}" "$@"
	wg_tunnel "$name-peer" "$name-vm" || die "bench-wg: the tunnel did not come up on $k"
}

: >"$md.tmp"
if [ "$parts" = all ]; then
	ROWS=()
	WG_TRAFFIC="stream idle" wg_rows "$out/bench-wg" "$nclones" stock patched
	{
		echo "## make bench-wg"
		echo
		echo "Forks: migrate-file, $nclones clones with a fresh GUID per row, each next to a restore of the peer, $WG_WINDOW_S s each; 2 controls with the original GUID. Times in ms from the resume (the clone's first heartbeat on the wire, every 5 ms), min/median/max (clones where it happened)."
		"$BUILD/fork-report" "${ROWS[@]}"
	} >"$md.tmp"

	{
		echo
		echo "Tunnel throughput between two guests, datagrams per second the peer received (32-byte datagrams sent as fast as the sender's 100 µs pacing allows; median of $rounds rounds of $ms ms, stock and patched alternating):"
		echo
		echo "| stock | patched | patched/stock |"
		echo "| --- | --- | --- |"
	} >>"$md.tmp"
	for k in stock patched; do tunnel_pair "tp-$k" "$k"; done
	for ((r = 1; r <= rounds; r++)); do
		for k in stock patched; do
			before=$(wg_received "tp-$k-peer")
			wg_stream "tp-$k-vm" flood 100
			sleep_ms "$ms"
			guest_call "tp-$k-vm" stream stop flood >/dev/null
			sleep "$WG_SETTLE_S"
			after=$(wg_received "tp-$k-peer")
			echo $(((after - before) * 1000 / ms)) >>"$RUN_DIR/tp-$k"
		done
	done
	echo "| $(cost_cells "tunnel throughput" "$RUN_DIR/tp-stock" "$RUN_DIR/tp-patched") |" >>"$md.tmp"
	for k in stock patched; do guest_quit "tp-$k-vm"; guest_quit "tp-$k-peer"; done

	# What is measured so far is kept if the instruction count fails.
	cp "$md.tmp" "$md"
fi

# ---- instructions per datagram ------------------------------------------------
# The sender counts instructions (machine.sh --count-instructions, whose
# clock follows the host's while idle, so that keys do not expire while it
# waits on the peer, as they do under --deterministic): a burst of
# --burst datagrams through the tunnel (agent "burst"), timed on its clock
# from the first sendto() until the last is done; that time less the idle
# time in between (ns, /proc/timer_list) is the instructions the send path
# executed.  The bench kernels' WireGuard, booted with
# wireguard.bench_sink=1, frees each data packet where its tx worker would
# send it and counts it (the burst's end): socket, encryption, the tx
# worker and the fork checks on the way, without the virtio-net queue,
# whose completions follow the host's timing and made one burst scatter
# by 2 to 3% from the next (2026-12-03).  Handshakes still go out.
# A guest that counts instructions runs slower than the host's clock:
# BURST_TIMEOUT for one burst's answer.
BURST_TIMEOUT=300
SUNK=/sys/module/wireguard/parameters/bench_sunk
# send_burst NAME N: N datagrams from NAME-vm into the sink, timed.
send_burst() { guest_call "$1-vm" -t "$BURST_TIMEOUT" burst "$SUNK" 10.10.0.1 "$WG_SINK_PORT" "$2"; }
# One boot's figures scatter by about 0.5% from round to round, but the
# medians of three boots of the same patched-bench kernel came out 16,901,
# 17,091 and 17,369 (2026-12-07): each boot of each kernel gets --rounds
# rounds, and the figure is the median of the boots' medians.
for ((boot = 1; boot <= boots; boot++)); do
	for k in stock patched; do
		tunnel_pair "ic$boot-$k" "$k-bench" --count-instructions --append wireguard.bench_sink=1
		# A burst before the handshake would be staged, and WireGuard keeps 128.
		send_burst "ic$boot-$k" 1 >/dev/null ||
			die "bench-wg: $k's first datagram did not leave"
		wait_until "$WG_HANDSHAKE_TIMEOUT" wg_handshaken "ic$boot-$k-vm" ||
			die "bench-wg: no handshake on $k in ${WG_HANDSHAKE_TIMEOUT}s"
	done
	for ((r = 1; r <= rounds; r++)); do
		for k in stock patched; do
			progress "bench-wg: boot $boot, round $r, $k: a burst of $burst datagrams"
			b=$(send_burst "ic$boot-$k" "$burst") ||
				die "bench-wg: $k's burst failed: $(agent_field error <<<"${b:-}")"
			sent=$(agent_field sent <<<"$b") el=$(agent_field elapsed_ns <<<"$b") idle=$(agent_field idle_ns <<<"$b")
			[ "$el" -gt "$idle" ] || die "bench-wg: $k's burst took no busy time ($el ns, $idle idle)"
			echo $(((el - idle) / sent)) >>"$RUN_DIR/ic-$k-$boot"
			echo "$((idle * 100 / el))" >>"$RUN_DIR/ic-idle-$k"
		done
	done
	for k in stock patched; do
		median <"$RUN_DIR/ic-$k-$boot" >>"$RUN_DIR/ic-$k"
		guest_quit "ic$boot-$k-vm"
		guest_quit "ic$boot-$k-peer"
	done
done
{
	echo
	echo "Instructions per datagram on the sender, counting instructions (-icount shift=0,sleep=on: busy guest time, less the idle time from /proc/timer_list, over datagrams, for bursts of $burst 32-byte datagrams through the tunnel, from the first sendto() until WireGuard's tx worker freed the last, on stock-bench and patched-bench booted with wireguard.bench_sink=1; $boots boots of each, $rounds rounds a boot; the median of the boots' medians), and datagrams per instruction patched/stock (the target is at least 0.99):"
	echo
	echo "| stock | patched | patched/stock | each boot's median, stock | each boot's median, patched | idle share of a burst (median, stock / patched) |"
	echo "| --- | --- | --- | --- | --- | --- |"
	s=$(median <"$RUN_DIR/ic-stock") p=$(median <"$RUN_DIR/ic-patched")
	progress "bench-wg: instructions per datagram: stock $s, patched $p"
	echo "| $s | $p | $(ratio "$s" "$p") | $(paste -sd' ' "$RUN_DIR/ic-stock") | $(paste -sd' ' "$RUN_DIR/ic-patched") | $(median <"$RUN_DIR/ic-idle-stock")% / $(median <"$RUN_DIR/ic-idle-patched")% |"
} >>"$md.tmp"
mv "$md.tmp" "$md"
cat "$md"
echo "bench-wg: results in $md and $out/bench-wg/" >&2
