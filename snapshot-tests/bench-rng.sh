#!/bin/bash
# make bench-rng: what the kernel series buys and what it costs, stock and
# patched measured in the same run.
#  - exposure: the fork-matrix row for migrate-file (a new QEMU process
#    per clone, fresh GUID) with --clones clones (default 20), 1 and 2 vCPUs;
#  - cost: getrandom() calls per second for 16- and 4096-byte requests,
#    one pinned thread per vCPU, --rounds rounds (default 5) of --ms ms
#    each, stock and patched guests alternating; medians and their ratio.
#   bench-rng.sh [--clones N] [--rounds N] [--ms MS] [--vcpus "1 2"] [--out DIR]
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

nclones=20 rounds=5 ms=3000 vcpus_list="1 2"
out=${RESULTS:-$FORKSAFE_ROOT/results}
while [ $# -gt 0 ]; do
	case "$1" in
	--clones) nclones=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--ms) ms=$2; shift ;;
	--vcpus) vcpus_list=$2; shift ;;
	--out) out=$2; shift ;;
	*) die "bench-rng: unknown option '$1'" ;;
	esac
	shift || die "bench-rng: $1 needs a value"
done
for n in "$nclones" "$rounds" "$ms"; do
	case "$n" in '' | *[!0-9]* | 0) die "bench-rng: counts and --ms want positive numbers" ;; esac
done
for k in stock patched; do
	[ -f "$(kernel_path "$k")" ] || die "bench-rng: $(kernel_path "$k") not found: make kernel kernel-stock"
done
mkdir -p "$out/bench-rng"
md=$out/bench-rng.md

# ---- exposure ---------------------------------------------------------------
rows=()
for k in stock patched; do
	for v in $vcpus_list; do
		rows+=("$out/bench-rng/$k-${v}cpu-migrate-file.json")
		fork_run "$k" "$(kernel_path "$k")" migrate-file "$v" "$nclones" "${rows[-1]}" || true
	done
done
"$BUILD/matrix-report" -m "$out/bench-rng/exposure.md" "${rows[@]}"

# ---- cost -------------------------------------------------------------------
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

{
	echo "## make bench-rng"
	echo
	echo "Exposure (migrate-file, $nclones clones with a fresh GUID per row):"
	sed -n '/^### Kernel/,$p' "$out/bench-rng/exposure.md" | sed 's/^### /#### /'
	echo
	echo "getrandom() calls per second over all vCPUs (median of $rounds rounds of $ms ms, stock and patched alternating):"
	echo
	echo "| vCPUs | request | stock | patched | patched/stock |"
	echo "| --- | --- | --- | --- | --- |"
} >"$md.tmp"

for v in $vcpus_list; do
	for k in stock patched; do
		fork_progress "bench: booting $k with $v vCPUs"
		guest_boot "bench-$k-$v" "$(kernel_path "$k")" --smp "$v" || die "bench-rng: $k did not boot"
	done
	for size in 16 4096; do
		for ((r = 1; r <= rounds; r++)); do
			for k in stock patched; do
				guest_call "bench-$k-$v" -t $((ms / 1000 + 30)) bench "$size" "$ms" |
					t_field calls_per_s >>"$RUN_DIR/$k-$v-$size"
			done
		done
		s=$(median <"$RUN_DIR/stock-$v-$size")
		p=$(median <"$RUN_DIR/patched-$v-$size")
		ratio=$(awk -v p="$p" -v s="$s" 'BEGIN { printf "%.3f", s ? p / s : 0 }')
		fork_progress "bench: $v vCPU(s), $size bytes: stock $s/s, patched $p/s, ratio $ratio"
		echo "| $v | $size B | $s | $p | $ratio |" >>"$md.tmp"
	done
	for k in stock patched; do guest_stop "bench-$k-$v"; done
done
mv "$md.tmp" "$md"
cat "$md"
echo "bench-rng: results in $md and $out/bench-rng/" >&2
