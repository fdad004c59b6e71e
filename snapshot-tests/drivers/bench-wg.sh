#!/bin/bash
# make bench-wg: WireGuard across VM forks, stock and patched in one run.
#  - exposure and rekey: wg_row (lib/wg_fork.sh) with --clones fresh-GUID clones
#    (default 20) and 2 controls, with the tunnel streaming and idle:
#    packets under pre-fork keys, nonce-reuse pairs, and the time from
#    the resume to the first initiation, the completed handshake and the
#    first data under the new keys, over the clones;
#  - both clones alive at once: two clones of one snapshot next to one
#    peer, each streaming; what reaches the peer;
#  - cost: datagrams per second through the tunnel between two guests,
#    --rounds rounds (default 5) of --ms ms, stock and patched alternating.
#   bench-wg.sh [--clones N] [--rounds N] [--ms MS] [--out DIR]
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"
. "$(dirname "$0")/../lib/stats.sh"
qemu_setup

nclones=20 rounds=5 ms=3000
out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse bench-wg --clones=nclones --rounds=rounds --ms=ms --out=out -- "$@"
opts_counts bench-wg "--clones, --rounds and --ms" "$nclones" "$rounds" "$ms"
require_kernels bench-wg stock patched
mkdir -p "$out/bench-wg"
md=$out/bench-wg.md

ROWS=()
wg_rows "$out/bench-wg" "$nclones" stock patched
{
	echo "## make bench-wg"
	echo
	echo "Forks: migrate-file, $nclones clones with a fresh GUID per row, each next to a restore of the peer, $WG_WINDOW_S s each; 2 controls with the original GUID. Times in ms from the resume (the clone's first heartbeat on the wire, every 5 ms), min/median/max (clones where it happened)."
	"$BUILD/fork-report" "${ROWS[@]}"
} >"$md.tmp"

# ---- both clones alive at once ----------------------------------------------
{
	echo
	echo "Both clones alive at once: two fresh-GUID clones of one snapshot restored side by side next to one peer, each streaming 100 datagrams/s for $((2 * WG_WINDOW_S)) s (same MAC, address and static key):"
	echo
	echo "| kernel | datagrams the peer received | handshakes done (ms after resume, per clone) | pre-fork-key packets (per clone) | nonce-reuse pairs |"
	echo "| --- | --- | --- | --- | --- |"
} >>"$md.tmp"
for k in stock patched; do
	r=$out/bench-wg/both-$k.json
	if row_run "$RUN_DIR/both-$k" "$r" "$(row_keys kind=wg-both kernel="$k")" \
		wg_both_measure "$k" "$(kernel_path "$k")"; then
		jq -r '.result | "| \(.kernel) | \(.received) of \(.sent) | \([.detect.clones[] | .handshake_us |
			if . < 0 then "none" else (. / 1000 | floor | tostring) end] | join(", ")) | \(
			[.detect.clones[].prefork_packets | tostring] | join(", ")) | \(.detect.nonce_reuse_pairs) |"' "$r"
	else
		echo "| $k | error: $(jq -r .error "$r") |"
	fi >>"$md.tmp"
done

{
	echo
	echo "Tunnel throughput between two guests, datagrams per second the peer received (32-byte datagrams sent as fast as the sender's 100 µs pacing allows; median of $rounds rounds of $ms ms, stock and patched alternating):"
	echo
	echo "| stock | patched | patched/stock |"
	echo "| --- | --- | --- |"
} >>"$md.tmp"
for k in stock patched; do
	progress "bench-wg: tunnel throughput, booting $k"
	wg_switch "tp-$k"
	guest_boot "tp-peer-$k" "$(kernel_path "$k")" "${WG_NETS[@]:0:2}"
	guest_boot "tp-vm-$k" "$(kernel_path "$k")" "${WG_NETS[@]:2:2}"
	wg_tunnel "tp-peer-$k" "tp-vm-$k" || die "bench-wg: the tunnel did not come up on $k"
done
for ((r = 1; r <= rounds; r++)); do
	for k in stock patched; do
		before=$(wg_received "tp-peer-$k")
		wg_stream "tp-vm-$k" flood 100
		sleep_ms "$ms"
		guest_call "tp-vm-$k" stream stop flood >/dev/null
		sleep "$WG_SETTLE_S"
		after=$(wg_received "tp-peer-$k")
		echo $(((after - before) * 1000 / ms)) >>"$RUN_DIR/tp-$k"
	done
done
echo "| $(cost_cells "tunnel throughput" "$RUN_DIR/tp-stock" "$RUN_DIR/tp-patched") |" >>"$md.tmp"
mv "$md.tmp" "$md"
cat "$md"
echo "bench-wg: results in $md and $out/bench-wg/" >&2
