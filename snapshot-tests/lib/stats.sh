# shellcheck shell=bash
# Benchmark statistics.  Sourced; defines functions only.

# The median of the numbers on stdin (the lower one of an even count).
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

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
