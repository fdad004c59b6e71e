#!/bin/bash
# make bench-rng: what the kernel series buys and what it costs, stock and
# patched measured in the same run.
#  - exposure: the fork-matrix row for migrate-file (a new QEMU process
#    per clone, fresh GUID) with --clones clones (default 20), 1 and 2 vCPUs;
#  - cost: getrandom() calls per second for 16- and 4096-byte requests,
#    one pinned thread per vCPU, --rounds rounds (default 5) of --ms ms
#    each, stock and patched guests alternating; get_random_u32() calls per
#    second the same way; medians and their ratio;
#  - instructions: the same calls on guests that count instructions
#    (machine.sh --deterministic: guest time advances 1 ns per instruction,
#    so calls per guest second give instructions per call, the same in
#    every run), 1 vCPU, 3 rounds, and the patched/stock ratio of calls per
#    instruction: what TCG's wall-clock scatter (0.92 to 1.10 between
#    runs) cannot resolve;
#  - reseeds: crng reseeds between 10 s and 70 s of uptime with a GUID that
#    never changes, the RNG used every second, stock against patched.
#  The cost and reseed figures come from the *-bench kernels, which add the
#  same two hooks (kernel-patches/6.1/bench/) to both.
#   bench-rng.sh [--clones N] [--rounds N] [--ms MS] [--vcpus "1 2"] [--out DIR]
#                [--no-exposure]   (the cost and reseed parts only)
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"
. "$(dirname "$0")/../lib/stats.sh"

nclones=20 rounds=5 ms=3000 vcpus_list="1 2" exposure=1
out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse bench-rng --clones=nclones --rounds=rounds --ms=ms --vcpus=vcpus_list --out=out \
	--no-exposure=exposure=0 -- "$@"
qemu_setup
opts_counts bench-rng "--clones, --rounds and --ms" "$nclones" "$rounds" "$ms"
# shellcheck disable=SC2086 # a list of words
opts_counts bench-rng --vcpus $vcpus_list
require_kernels bench-rng stock patched stock-bench patched-bench
results_lock bench-rng "$out"
mkdir -p "$out/bench-rng"
md=$out/bench-rng.md

# ---- exposure ---------------------------------------------------------------
ROWS=()
if [ "$exposure" = 1 ]; then
	rng_rows "$out/bench-rng" "$nclones" "stock patched" "$vcpus_list" migrate-file
	"$BUILD/fork-report" "${ROWS[@]}" >"$out/bench-rng/exposure.md"
else
	echo "### Kernel: exposure not measured in this run (--no-exposure)" >"$out/bench-rng/exposure.md"
fi

# ---- cost -------------------------------------------------------------------

{
	echo "## make bench-rng"
	echo
	echo "Exposure (migrate-file, $nclones clones with a fresh GUID per row):"
	sed -n '/^### Kernel/,$p' "$out/bench-rng/exposure.md" | sed 's/^### /#### /'
} >"$md.tmp"

# ---- instructions -------------------------------------------------------------
# Guest time is instructions (1 ns each): calls per guest second give
# instructions per call (icount_row, lib/stats.sh).
{
	echo
	echo "Instructions per call, guests that count instructions (1 vCPU, $ICOUNT_ROUNDS rounds of $ICOUNT_MS ms of guest time, median; user-space loop included), and calls per instruction patched/stock (the target is at least 0.99):"
	echo
	echo "| call | stock | patched | patched/stock | distinct figures over all rounds |"
	echo "| --- | --- | --- | --- | --- |"
} >>"$md.tmp"
for k in stock patched; do
	progress "bench: booting $k-bench counting instructions"
	guest_boot "icount-$k" "$(kernel_path "$k-bench")" --deterministic --guid "$ICOUNT_GUID"
done
for size in 16 4096; do
	icount_row "getrandom $size B" icount-stock icount-patched bench "$size" "$ICOUNT_MS" >>"$md.tmp"
done
icount_row get_random_u32 icount-stock icount-patched bench-u32 >>"$md.tmp"
for k in stock patched; do guest_stop "icount-$k"; done
{
	echo
	echo "Wall clock, calls per second over all vCPUs, one pinned thread each (median of $rounds rounds, stock and patched alternating; getrandom() for $ms ms a round, get_random_u32() 2^20 calls per thread a round):"
	echo
	echo "| vCPUs | call | stock | patched | patched/stock |"
	echo "| --- | --- | --- | --- | --- |"
} >>"$md.tmp"

# Medians of $rounds rounds, stock and patched alternating, into the table.
cost_row() {
	local v=$1 label=$2 r k
	shift 2
	for ((r = 1; r <= rounds; r++)); do
		for k in stock patched; do
			guest_call "bench-$k-$v" -t $((ms / 1000 + 60)) "$@" |
				agent_field calls_per_s >>"$RUN_DIR/$k-$v-$label"
		done
	done
	echo "| $v | $label | $(cost_cells "$v vCPU(s), $label" "$RUN_DIR/stock-$v-$label" \
		"$RUN_DIR/patched-$v-$label") |" >>"$md.tmp"
}

uptime_s() { guest_call "$1" info | agent_field uptime_ms | awk '{ print int($1 / 1000) }'; }

# Reseeds between 10 s and 70 s of uptime, both guests' RNG used every
# RESEED_PACE seconds; prints "KERNEL RESEEDS" per kernel.
RESEED_PACE=0.5
reseed_window() {
	local k u
	declare -A at10 at70
	while [ -z "${at70[stock]:-}" ] || [ -z "${at70[patched]:-}" ]; do
		for k in stock patched; do
			[ -n "${at70[$k]:-}" ] && continue
			guest_call "bench-$k-1" bench 16 100 >/dev/null
			u=$(uptime_s "bench-$k-1")
			if [ "$u" -ge 10 ] && [ -z "${at10[$k]:-}" ]; then
				at10[$k]=$(guest_call "bench-$k-1" reseeds | agent_field reseeds)
			fi
			if [ "$u" -ge 70 ]; then
				at70[$k]=$(guest_call "bench-$k-1" reseeds | agent_field reseeds)
			fi
		done
		sleep "$RESEED_PACE"
	done
	for k in stock patched; do
		echo "$k $((at70[$k] - at10[$k]))"
	done
}

for v in $vcpus_list; do
	for k in stock patched; do
		progress "bench: booting $k-bench with $v vCPUs"
		guest_boot "bench-$k-$v" "$(kernel_path "$k-bench")" --smp "$v"
	done
	if [ "$v" = 1 ]; then
		reseed_window >"$RUN_DIR/reseeds"
		progress "bench: reseeds from 10 s to 70 s of uptime: $(tr '\n' ' ' <"$RUN_DIR/reseeds")"
	fi
	for size in 16 4096; do
		cost_row "$v" "getrandom ${size} B" bench "$size" "$ms"
	done
	cost_row "$v" "get_random_u32" bench-u32
	for k in stock patched; do guest_stop "bench-$k-$v"; done
done
if [ -s "$RUN_DIR/reseeds" ]; then
	{
		echo
		echo "crng reseeds from 10 s to 70 s of uptime, GUID never changing, 1 vCPU (equal but for one reseed that falls on an edge of the window: the edges are read to the second, and the early reseeds come every uptime/2 s):"
		echo
		echo "| kernel | reseeds |"
		echo "| --- | --- |"
		awk '{ print "| " $1 " | " $2 " |" }' "$RUN_DIR/reseeds"
	} >>"$md.tmp"
fi
mv "$md.tmp" "$md"
cat "$md"
echo "bench-rng: results in $md and $out/bench-rng/" >&2
