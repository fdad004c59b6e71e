#!/bin/bash
# make bench-wg: WireGuard across VM forks, stock and patched in one run.
#  - exposure and rekey: wg_run (lib.sh) with --clones fresh-GUID clones
#    (default 20) and 2 controls, with the tunnel streaming and idle:
#    packets under pre-fork keys, nonce-reuse pairs, and the time from
#    the resume to the first initiation, the completed handshake and the
#    first data under the new keys, over the clones;
#  - both clones alive at once: two clones of one snapshot next to one
#    peer, each streaming; what reaches the peer;
#  - cost: datagrams per second through the tunnel between two guests,
#    --rounds rounds (default 5) of --ms ms, stock and patched alternating.
#   bench-wg.sh [--clones N] [--rounds N] [--ms MS] [--out DIR]
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

nclones=20 rounds=5 ms=3000
out=${RESULTS:-$FORKSAFE_ROOT/results}
while [ $# -gt 0 ]; do
	case "$1" in
	--clones) nclones=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--ms) ms=$2; shift ;;
	--out) out=$2; shift ;;
	*) die "bench-wg: unknown option '$1'" ;;
	esac
	shift || die "bench-wg: $1 needs a value"
done
bench_counts bench-wg "$nclones" "$rounds" "$ms"
for k in stock patched; do
	[ -f "$(kernel_path "$k")" ] || die "bench-wg: $(kernel_path "$k") not found: make kernel kernel-stock"
done
mkdir -p "$out/bench-wg"
md=$out/bench-wg.md

{
	echo "## make bench-wg"
	echo
	echo "Forks: migrate-file, $nclones clones with a fresh GUID per row, each next to a restore of the peer, $WG_WINDOW_S s each; 2 controls with the original GUID. Times in ms from the resume (the clone's first heartbeat on the wire, every 5 ms), min/median/max (clones where it happened)."
	echo
	wg_table_head
} >"$md.tmp"

for traffic in stream idle; do
	for k in stock patched; do
		r=$out/bench-wg/$k-$traffic.json
		WG_CONTROLS=2 wg_run "$k" "$(kernel_path "$k")" "$traffic" "$nclones" "$r" || true
		wg_table_row "$r" >>"$md.tmp"
	done
done

# ---- both clones alive at once ----------------------------------------------
# Two clones of one snapshot on the switch next to one peer, both streaming:
# the same MAC, the same address, the same static key.
both_alive() {
	local k=$1
	local kernel dir=$RUN_DIR/both-$k before after c
	kernel=$(kernel_path "$k")
	mkdir -p "$dir/peer" "$dir/vm"
	wg_snapshot "$k" "$kernel" stream "$dir" || return 1
	wg_restore_peer "$kernel" "$dir" "both-peer-$k" || return 1
	before=$(wg_received "both-peer-$k")
	for c in a b; do
		wg_restore "$kernel" "$dir" "both-$c-$k" auto || return 1
	done
	sleep "$((2 * WG_WINDOW_S))"
	after=$(wg_received "both-peer-$k")
	for c in a b; do guest_quit "both-$c-$k"; done
	guest_quit "both-peer-$k"
	wg_detect "$dir/detect.json" "$dir/both-a-$k.pcap" "$dir/both-b-$k.pcap" >/dev/null || return 1
	echo "| $k | $((after - before)) of $((2 * 2 * WG_WINDOW_S * 1000000 / WG_STREAM_US))" \
		"| $(jq -r '[.clones[] | .handshake_us | if . < 0 then "none" else (. / 1000 | floor | tostring) end] | join(", ")' "$dir/detect.json")" \
		"| $(jq -r '[.clones[].prefork_packets | tostring] | join(", ")' "$dir/detect.json")" \
		"| $(jq -r .nonce_reuse_pairs "$dir/detect.json") |" >>"$md.tmp"
}
{
	echo
	echo "Both clones alive at once: two fresh-GUID clones of one snapshot restored side by side next to one peer, each streaming 100 datagrams/s for $((2 * WG_WINDOW_S)) s (same MAC, address and static key):"
	echo
	echo "| kernel | datagrams the peer received | handshakes done (ms after resume, per clone) | pre-fork-key packets (per clone) | nonce-reuse pairs |"
	echo "| --- | --- | --- | --- | --- |"
} >>"$md.tmp"
for k in stock patched; do
	fork_progress "bench-wg: both clones alive, $k"
	both_alive "$k" 2>"$RUN_DIR/both-$k.err" || echo "| $k | error: $(tail -n 1 "$RUN_DIR/both-$k.err" 2>/dev/null) |" >>"$md.tmp"
done

{
	echo
	echo "Tunnel throughput between two guests, datagrams per second the peer received (32-byte datagrams sent as fast as the sender's 100 µs pacing allows; median of $rounds rounds of $ms ms, stock and patched alternating):"
	echo
	echo "| stock | patched | patched/stock |"
	echo "| --- | --- | --- |"
} >>"$md.tmp"
for k in stock patched; do
	fork_progress "bench-wg: tunnel throughput, booting $k"
	wg_switch "tp-$k"
	guest_boot "tp-peer-$k" "$(kernel_path "$k")" "${WG_NETS[@]:0:2}" || die "bench-wg: $k did not boot"
	guest_boot "tp-vm-$k" "$(kernel_path "$k")" "${WG_NETS[@]:2:2}" || die "bench-wg: $k did not boot"
	wg_tunnel "tp-peer-$k" "tp-vm-$k" || die "bench-wg: the tunnel did not come up on $k"
done
for ((r = 1; r <= rounds; r++)); do
	for k in stock patched; do
		before=$(wg_received "tp-peer-$k")
		wg_stream "tp-vm-$k" flood 100
		sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
		guest_call "tp-vm-$k" stream stop flood >/dev/null
		sleep 0.5
		after=$(wg_received "tp-peer-$k")
		echo $(((after - before) * 1000 / ms)) >>"$RUN_DIR/tp-$k"
	done
done
echo "| $(cost_cells "tunnel throughput" "$RUN_DIR/tp-stock" "$RUN_DIR/tp-patched") |" >>"$md.tmp"
mv "$md.tmp" "$md"
cat "$md"
echo "bench-wg: results in $md and $out/bench-wg/" >&2
