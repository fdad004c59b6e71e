#!/bin/bash
# The operator's report: fork-report -f html turns rows into one page that
# a browser shows with a picture of every row.  Rows are made from the
# known-answer inputs (analyzers/kat/): RNG rows of two kernels in one cell
# and one of another shape, a WireGuard row, a clock row of make wg-deploy
# (its time to a working tunnel marked) and one of its rows of clones side
# by side (a bar per run of datagrams the peer heard); the page is rendered by
# headless Chromium, whose DOM must name every row under a picture, and
# whose screenshot must hold more than a blank page's.  No QEMU.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/kat.sh"
kat_setup
BROWSER_TIMEOUT=60

command -v jq >/dev/null || t_skip "jq is missing: run 'make deps'"
command -v chromium >/dev/null || t_skip "chromium is missing: run 'make deps'"
t_plan 10
t_check "the host tools build" make --no-print-directory -C "$ROOT" BUILD="$BUILD" tools

# KERNEL CASE: one RNG row, migrate-file.
rng_row() {
	kat_rng "$2" "$WORK/$1-$2"
	kat_rng_row "$1" migrate-file "$WORK/$1-$2/result.json" >"$WORK/row-$1-$2.json"
}
rng_row stock some-escape
rng_row patched control-within
rng_row patched long-read-one-page
kat_wg two-clones "$WORK/wg-fresh"
kat_wg control-pair "$WORK/wg-control"
kat_wg_row stock "$WORK/wg-fresh/detect.json" "$WORK/wg-control/detect.json" >"$WORK/row-wg.json"
# A clock row (make wg-deploy's), judged by wg-clock.jq as the driver does.
clock=$KAT/clock/working/row.json
jq --arg v "$(jq -r -f "$ROOT/snapshot-tests/analyzers/wg-clock.jq" "$clock")" '. + {verdict: $v}' "$clock" >"$WORK/row-wg-clock.json"
# A row of clones side by side, judged by wg-both.jq: 4 runs, 2 per clone.
both=$KAT/both/all-heard/row.json
jq --arg v "$(jq -r -f "$ROOT/snapshot-tests/analyzers/wg-both.jq" "$both")" '. + {verdict: $v}' "$both" >"$WORK/row-wg-both.json"
rows=("$WORK"/row-*.json)

# shellcheck disable=SC2016 # expanded by the inner shell
t_check "fork-report writes the page" \
	bash -c '"$1" -f html "${@:2}" >"$0"' "$WORK/report.html" "$BUILD/fork-report" "${rows[@]}"

# Chromium as root needs --no-sandbox; it runs without a profile of ours.
browser() {
	timeout -k 5 "$BROWSER_TIMEOUT" chromium --headless --no-sandbox --disable-gpu \
		--user-data-dir="$WORK/profile" "$@" 2>>"$WORK/browser.log"
}
rc=0
browser --dump-dom "file://$WORK/report.html" >"$WORK/dom.html" || rc=$?
t_result "$rc" "Chromium renders the page"
[ "$rc" = 0 ] || t_diag "exit=$rc: $(tail -n 1 "$WORK/browser.log")"

# Every row under a picture: a figure per row, each with an svg, and its
# kernel and verdict in the caption.
t_eq "a figure per row" "$(grep -o '<figure>' "$WORK/dom.html" | wc -l)" "${#rows[@]}"
t_eq "a picture in each" "$(grep -o '<svg' "$WORK/dom.html" | wc -l)" "${#rows[@]}"
t_eq "every row named by kernel and verdict" \
	"$(grep -oE '<b>(stock|patched)(-6\.12)?</b>: (exposure window|fork-safe|exposed|safe|working|down|all heard)' "$WORK/dom.html" | sort | tr '\n' ';')" \
	"<b>patched</b>: all heard;<b>patched</b>: fork-safe;<b>patched</b>: fork-safe;<b>patched</b>: working;<b>stock</b>: exposed;<b>stock</b>: exposure window;"
# Its section, after the other rows, marks each clone's first answer.
t_eq "the clock row marks when each clone's tunnel worked" \
	"$(sed -n '/WireGuard clones beside a peer/,$p' "$WORK/dom.html" | grep -oE 'fill=.#ff7f0e' | wc -l)" 2
t_eq "the row of clones side by side has a bar per run the peer heard" \
	"$(sed -n '/side by side with one key/,$p' "$WORK/dom.html" | grep -oE 'fill=.#2ca02c' | wc -l)" 4
t_check "the verdict lines open the page" grep -q 'stock: RNG: not fork-safe' "$WORK/dom.html"

# The screenshot holds more than a blank page: a blank one at this size
# is a few KB of PNG, the report's pictures many times that.
browser --window-size=1200,1600 --screenshot="$WORK/blank.png" "about:blank" >/dev/null || true
browser --window-size=1200,1600 --screenshot="$WORK/report.png" "file://$WORK/report.html" >/dev/null || true
blank=$(stat -c %s "$WORK/blank.png" 2>/dev/null || echo 0)
shot=$(stat -c %s "$WORK/report.png" 2>/dev/null || echo 0)
t_diag "screenshot $shot bytes, blank page $blank bytes"
t_result "$([ "$blank" -gt 0 ] && [ "$shot" -gt $((blank * 4)) ]; echo $?)" \
	"the screenshot is not blank (over 4 times a blank page's PNG)"
[ -z "${REPORT_KEEP:-}" ] || cp "$WORK/report.html" "$WORK/report.png" "$REPORT_KEEP"/
t_done
