#!/bin/bash
# make bench-rng: what the kernel series buys and what it costs, stock and
# patched measured in the same run.
#  - exposure: the fork-matrix row for migrate-file (a new QEMU process
#    per clone, fresh GUID) with --clones clones (default 20), 1 and 2 vCPUs;
#  - cost: getrandom() calls per second for 16- and 4096-byte requests,
#    one pinned thread per vCPU, --rounds rounds (default 5) of --ms ms
#    each, stock and patched guests alternating; get_random_u32() calls per
#    second the same way; medians and their ratio;
#  - reseeds: crng reseeds between 10 s and 70 s of uptime with a GUID that
#    never changes, the RNG used every second, stock against patched.
#  The cost and reseed figures come from the *-bench kernels, which add the
#  same two hooks (kernel-patches/bench/) to both.
#   bench-rng.sh [--clones N] [--rounds N] [--ms MS] [--vcpus "1 2"] [--out DIR]
#                [--no-exposure]   (the cost and reseed parts only)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

nclones=20 rounds=5 ms=3000 vcpus_list="1 2" exposure=1
out=${RESULTS:-$FORKSAFE_ROOT/results}
while [ $# -gt 0 ]; do
	case "$1" in
	--clones) nclones=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--ms) ms=$2; shift ;;
	--vcpus) vcpus_list=$2; shift ;;
	--out) out=$2; shift ;;
	--no-exposure) exposure=0; shift; continue ;;
	*) die "bench-rng: unknown option '$1'" ;;
	esac
	shift || die "bench-rng: $1 needs a value"
done
bench_counts bench-rng "$nclones" "$rounds" "$ms"
for k in stock patched stock-bench patched-bench; do
	[ -f "$(kernel_path "$k")" ] || die "bench-rng: $(kernel_path "$k") not found: make kernel kernel-stock kernel-bench"
done
mkdir -p "$out/bench-rng"
md=$out/bench-rng.md

# ---- exposure ---------------------------------------------------------------
rows=()
for k in stock patched; do
	for v in $vcpus_list; do
		rows+=("$out/bench-rng/$k-${v}cpu-migrate-file.json")
		[ "$exposure" = 1 ] || continue
		fork_run "$k" "$(kernel_path "$k")" migrate-file "$v" "$nclones" "${rows[-1]}" || true
	done
done
if [ "$exposure" = 1 ]; then
	"$BUILD/matrix-report" -m "$out/bench-rng/exposure.md" "${rows[@]}"
else
	echo "### Kernel: exposure not measured in this run (--no-exposure)" >"$out/bench-rng/exposure.md"
fi

# ---- cost -------------------------------------------------------------------

{
	echo "## make bench-rng"
	echo
	echo "Exposure (migrate-file, $nclones clones with a fresh GUID per row):"
	sed -n '/^### Kernel/,$p' "$out/bench-rng/exposure.md" | sed 's/^### /#### /'
	echo
	echo "Calls per second over all vCPUs, one pinned thread each (median of $rounds rounds, stock and patched alternating; getrandom() for $ms ms a round, get_random_u32() 2^20 calls per thread a round):"
	echo
	echo "| vCPUs | call | stock | patched | patched/stock |"
	echo "| --- | --- | --- | --- | --- |"
} >"$md.tmp"

# Medians of $rounds rounds, stock and patched alternating, into the table.
cost_row() {
	local v=$1 label=$2 r k
	shift 2
	for ((r = 1; r <= rounds; r++)); do
		for k in stock patched; do
			guest_call "bench-$k-$v" -t $((ms / 1000 + 60)) "$@" |
				t_field calls_per_s >>"$RUN_DIR/$k-$v-$label"
		done
	done
	echo "| $v | $label | $(cost_cells "$v vCPU(s), $label" "$RUN_DIR/stock-$v-$label" \
		"$RUN_DIR/patched-$v-$label") |" >>"$md.tmp"
}

uptime_s() { guest_call "$1" info | t_field uptime_ms | awk '{ print int($1 / 1000) }'; }

# Reseeds between 10 s and 70 s of uptime, both guests' RNG used about
# twice a second; prints "KERNEL RESEEDS" per kernel.
reseed_window() {
	local k u
	declare -A at10 at70
	while [ -z "${at70[stock]:-}" ] || [ -z "${at70[patched]:-}" ]; do
		for k in stock patched; do
			[ -n "${at70[$k]:-}" ] && continue
			guest_call "bench-$k-1" bench 16 100 >/dev/null
			u=$(uptime_s "bench-$k-1")
			if [ "$u" -ge 10 ] && [ -z "${at10[$k]:-}" ]; then
				at10[$k]=$(guest_call "bench-$k-1" reseeds | t_field reseeds)
			fi
			if [ "$u" -ge 70 ]; then
				at70[$k]=$(guest_call "bench-$k-1" reseeds | t_field reseeds)
			fi
		done
		sleep 0.5
	done
	for k in stock patched; do
		echo "$k $((at70[$k] - at10[$k]))"
	done
}

for v in $vcpus_list; do
	for k in stock patched; do
		fork_progress "bench: booting $k-bench with $v vCPUs"
		guest_boot "bench-$k-$v" "$(kernel_path "$k-bench")" --smp "$v" || die "bench-rng: $k-bench did not boot"
	done
	if [ "$v" = 1 ]; then
		reseed_window >"$RUN_DIR/reseeds"
		fork_progress "bench: reseeds from 10 s to 70 s of uptime: $(tr '\n' ' ' <"$RUN_DIR/reseeds")"
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
		echo "crng reseeds from 10 s to 70 s of uptime, GUID never changing, 1 vCPU (stock must equal patched):"
		echo
		echo "| kernel | reseeds |"
		echo "| --- | --- |"
		awk '{ print "| " $1 " | " $2 " |" }' "$RUN_DIR/reseeds"
	} >>"$md.tmp"
fi
mv "$md.tmp" "$md"
cat "$md"
echo "bench-rng: results in $md and $out/bench-rng/" >&2
