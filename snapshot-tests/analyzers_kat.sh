#!/bin/bash
# Known answers: the analyzers can report what they are there to report.
# rng-exposure and fork-report read small hand-made recordings, wg-detect
# small hand-made captures, cold-report.jq hand-made cold-clone rows,
# wg-sibling.jq hand-made sibling rows, tcp-secret.jq hand-made TCP
# secret rows, wg-clock.jq hand-made clock rows, wg-both.jq hand-made rows
# of clones side by side
# (snapshot-tests/analyzers/kat/, whose README
# says what each case is and how it is written), and every figure and
# verdict worked out by hand beside them is asserted exactly: a counter
# that always said 0, or stopped counting at the first fresh run, fails
# here and not only on the machine of someone reading a table.  No QEMU.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/kat.sh"
kat_setup

command -v jq >/dev/null || t_skip "jq is missing: run 'make deps'"
t_check "the host tools build" make --no-print-directory -C "$ROOT" BUILD="$BUILD" tools

# check CASE EXPECT ANSWERS.json: one assertion per "FILTER = VALUE" line
# of EXPECT, the jq FILTER over ANSWERS.json against VALUE.
check() {
	local name=$1 expect=$2 answers=$3 line filter n=0
	while IFS= read -r line; do
		case "$line" in '' | '#'*) continue ;; esac
		filter=${line%% = *}
		t_eq "$name: $filter" "$(jq -r "$filter" "$answers" 2>&1)" "${line#* = }"
		n=$((n + 1))
	done <"$expect"
	[ "$n" -gt 0 ] || t_fail "$name: $expect asserts nothing"
}

# One RNG case: its dumps made from CASE/records, rng-exposure's result
# and fork-report's verdict on a row of it, as {result, verdict}.
rng_case() {
	local dir=$1 name out
	name=rng/$(basename "$dir")
	out=$WORK/$name
	kat_read rng "$dir" rng-exposure || return 0
	kat_rng_row kat "$(basename "$dir")" "$out/result.json" >"$out/row.json"
	"$BUILD/fork-report" -f verdicts "$out/row.json" >"$out/verdict.json"
	jq -s '{result: .[0], verdict: .[1]}' "$out/result.json" "$out/verdict.json" >"$out/answers.json"
	check "$name" "$dir/expect" "$out/answers.json"
}

# One WireGuard case: its captures read by wg-detect, as {detect}.
wg_case() {
	local dir=$1 name out
	name=wg/$(basename "$dir")
	out=$WORK/$name
	kat_read wg "$dir" wg-detect || return 0
	jq '{detect: .}' "$out/detect.json" >"$out/answers.json"
	check "$name" "$dir/expect" "$out/answers.json"
}

# One summary case: rows made of the RNG cases' results (a line KERNEL
# CASE, in the cell "cell" at 1 vCPU, or KERNEL CASE@METHOD/VCPUS) and of
# the WireGuard cases' (KERNEL FRESH CONTROL), as CASE/rows names them,
# judged together by fork-report -f summary; CASE/expect has the lines it
# must print, in order.
summary_case() {
	local dir=$1 name out kernel case control cell i=0 line
	local -a rows=() want=()
	name=summary/$(basename "$dir")
	out=$WORK/$name
	mkdir -p "$out"
	while read -r kernel case control; do
		case "$kernel" in '' | '#'*) continue ;; esac
		rows+=("$out/$i.json")
		if [ -n "$control" ]; then
			kat_wg_row "$kernel" "$WORK/wg/$case/detect.json" "$WORK/wg/$control/detect.json" >"${rows[-1]}"
		else
			cell=cell/1
			case "$case" in *@*) cell=${case#*@} case=${case%@*} ;; esac
			kat_rng_row "$kernel" "${cell%/*}" "$WORK/rng/$case/result.json" "${cell#*/}" >"${rows[-1]}"
		fi
		i=$((i + 1))
	done <"$dir/rows"
	"$BUILD/fork-report" -f summary "${rows[@]}" >"$out/summary"
	mapfile -t want < <(grep -v '^#' "$dir/expect")
	i=0
	while IFS= read -r line; do
		t_eq "$name: line $((i + 1))" "$line" "${want[$i]:-(no more lines expected)}"
		i=$((i + 1))
	done <"$out/summary"
	t_eq "$name: lines" "$i" "${#want[@]}"
}

# One cold-clone case: cold-report.jq's three outputs on CASE/rows.json,
# as {table, controls, findings}, one array of lines each.
cold_case() {
	local dir=$1 name out f
	name=cold/$(basename "$dir")
	out=$WORK/$name
	mkdir -p "$out"
	for f in table controls findings; do
		jq -r --arg f "$f" -f "$ROOT/snapshot-tests/analyzers/cold-report.jq" "$dir/rows.json" >"$out/$f" ||
			{ t_fail "$name: cold-report.jq -f $f failed"; return 0; }
	done
	jq -Rn '[inputs]' "$out/table" >"$out/table.json"
	jq -Rn '[inputs]' "$out/controls" >"$out/controls.json"
	jq -Rn '[inputs]' "$out/findings" >"$out/findings.json"
	jq -s '{table: .[0], controls: .[1], findings: .[2]}' "$out/table.json" "$out/controls.json" \
		"$out/findings.json" >"$out/answers.json"
	check "$name" "$dir/expect" "$out/answers.json"
}

# One verdict case: a hand-made row (KIND/CASE/row.json) judged by the jq
# program that judges such rows, as {verdict}.
verdict_case() {
	local dir=$1 jq=$2 name out
	name=$(basename "$(dirname "$dir")")/$(basename "$dir")
	out=$WORK/$name
	mkdir -p "$out"
	jq -r -f "$ROOT/snapshot-tests/analyzers/$jq" "$dir/row.json" >"$out/verdict" ||
		{ t_fail "$name: $jq failed"; return 0; }
	jq -Rn '{verdict: input}' "$out/verdict" >"$out/answers.json"
	check "$name" "$dir/expect" "$out/answers.json"
}

for dir in "$KAT"/rng/*/; do rng_case "${dir%/}"; done
for dir in "$KAT"/wg/*/; do wg_case "${dir%/}"; done
for dir in "$KAT"/summary/*/; do summary_case "${dir%/}"; done
for dir in "$KAT"/cold/*/; do cold_case "${dir%/}"; done
for dir in "$KAT"/sibling/*/; do verdict_case "${dir%/}" wg-sibling.jq; done
for dir in "$KAT"/tcp/*/; do verdict_case "${dir%/}" tcp-secret.jq; done
for dir in "$KAT"/clock/*/; do verdict_case "${dir%/}" wg-clock.jq; done
for dir in "$KAT"/both/*/; do verdict_case "${dir%/}" wg-both.jq; done
for dir in "$KAT"/scale-clock/*/; do verdict_case "${dir%/}" wg-scale-clock.jq; done

# A row that failed before the analyzer ran still names its shape, its crng
# state and the kernel parameters it booted with.
jq -n '{kind: "rng", kernel: "k", method: "migrate-file", vcpus: 1, shape: "exec", crng: "early",
	append: "quiet", error: "why"}' >"$WORK/error-row.json"
line=$("$BUILD/fork-report" -f md "$WORK/error-row.json" | grep '^| migrate-file' || true)
t_eq "an error row names its shape and boot" "${line%% |  |*}" "| migrate-file | 1 | exec (crng early), booted with quiet"
t_done
