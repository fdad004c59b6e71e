# shellcheck shell=bash
# Benchmark statistics.  Sourced; defines functions only.

# The median of the numbers on stdin (the lower one of an even count).
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# "MIN to MAX" of the numbers on stdin.
range() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo " to " hi }'; }

# ratio PATCHED STOCK, to three decimals.
ratio() { awk -v p="$1" -v s="$2" 'BEGIN { printf "%.3f", s ? p / s : 0 }'; }

# cost_cells LABEL STOCK-FILE PATCHED-FILE: "STOCK | PATCHED | RATIO" from
# the medians of the rounds in each file, and a progress line.
cost_cells() {
	local s p r
	s=$(median <"$2") p=$(median <"$3")
	r=$(ratio "$p" "$s")
	progress "bench: $1: stock $s, patched $p, ratio $r"
	echo "$s | $p | $r"
}

# Guests that count instructions (machine.sh --deterministic) run 1 ns of
# guest time per instruction: calls per guest second give instructions per
# call, nearly the same in every run: the rounds of a fresh guest differ by
# up to 1%, then settle on one figure, which 9 rounds make the median.  A
# round runs ICOUNT_MS of guest time; ICOUNT_ROUNDS rounds per guest (both
# may be set in the environment).
# shellcheck disable=SC2034 # ICOUNT_MS and ICOUNT_GUID are the drivers'
ICOUNT_MS=${ICOUNT_MS:-500} ICOUNT_ROUNDS=${ICOUNT_ROUNDS:-9} ICOUNT_GUID=6f726b73-6166-6500-0000-00000000b0b0

# icount_row LABEL STOCK PATCHED CMD...: the agent command CMD (which
# answers calls_per_s) ICOUNT_ROUNDS times on the guests STOCK and PATCHED,
# alternating; a table row "| LABEL | stock | patched | calls per
# instruction patched/stock | distinct figures |" from the medians.
icount_row() {
	local label=$1 stock=$2 patched=$3 r g s p c
	shift 3
	for ((r = 1; r <= ICOUNT_ROUNDS; r++)); do
		for g in "$stock" "$patched"; do
			c=$(guest_call "$g" -t 600 "$@" | agent_field calls_per_s) || true
			[[ "$c" =~ ^[1-9][0-9]*$ ]] || die "bench: $label: $g answered no calls_per_s to '$*'"
			awk -v c="$c" 'BEGIN { printf "%.1f\n", 1e9 / c }' >>"$RUN_DIR/icount-$g-$label"
		done
	done
	s=$(median <"$RUN_DIR/icount-$stock-$label") p=$(median <"$RUN_DIR/icount-$patched-$label")
	progress "bench: $label: stock $s, patched $p instructions per call (rounds: stock $(sort -n "$RUN_DIR/icount-$stock-$label" | tr '\n' ' ')patched $(sort -n "$RUN_DIR/icount-$patched-$label" | tr '\n' ' '))"
	echo "| $label | $s | $p | $(ratio "$s" "$p") | $(sort -u "$RUN_DIR/icount-$stock-$label" "$RUN_DIR/icount-$patched-$label" | wc -l) |"
}
