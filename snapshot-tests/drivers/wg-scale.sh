#!/bin/bash
# make wg-scale: a VM with many WireGuard peers is forked (lib/wg_scale.sh).
# For each number of peers, about half of them (at least one) have a
# session at the snapshot and the rest are idle; nothing flows after it.
# Per kernel and row:
#  - every peer in use rekeys in every fresh clone, and when (the median
#    and the last handshake after the resume: rekey time against the
#    number of peers), with the cookie replies that say the hub's rate
#    limit stepped in;
#  - no idle peer is contacted;
#  - the control (the original's GUID) contacts no peer at all, else the
#    row is blind (something other than the fork starts handshakes).
#
#   wg-scale.sh [--kernels "patched stock"] [--peers "1 10 50 200"] [--clones 2] [--out DIR]
#
# KERNEL=/path/bzImage runs that kernel alone.  The table goes to stdout
# and DIR/wg-scale.md, the rows to DIR/wg-scale/.  The run fails on an
# error row, a blind control, or a patched (or custom) row where a peer in
# use did not rekey or an idle one was contacted.
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"

kernels=$(test_kernels)
peers_list="1 10 50 200"
nclones=2
out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse wg-scale --kernels=kernels --peers=peers_list --clones=nclones --out=out -- "$@"
# shellcheck disable=SC2086 # a list of words
opts_counts wg-scale --peers $peers_list
opts_counts wg-scale --clones "$nclones"
for p in $peers_list; do
	[ "$p" -le "$SCALE_MAX_PEERS" ] || die "wg-scale: at most $SCALE_MAX_PEERS peers, not $p"
done
# shellcheck disable=SC2086
require_kernels wg-scale $kernels
qemu_setup
results_lock wg-scale "$out"
mkdir -p "$out/wg-scale"

rows=()
for k in $kernels; do
	for p in $peers_list; do
		rows+=("$out/wg-scale/$k-$p.json")
		scale_row "$k" "$p" "$(((p + 1) / 2))" "$nclones" "${rows[-1]}" || true
	done
done
summary=$(cat "${rows[@]}" | scale_summary | jq -s .)
{
	echo "## WireGuard with many peers (make wg-scale)"
	echo
	echo "migrate-file, 1 vCPU, $nclones fresh-GUID clones and a control per row, each next to a restore of the hub for ${SCALE_WINDOW_S} s; no traffic after the snapshot. Times: ms after the resume, over all clones' peers in use."
	echo
	echo "| kernel | peers | in use | in use rekeyed (fewest in a clone) | idle peers contacted | handshake median (ms) | last (ms) | cookie replies | control contacted |"
	echo "|---|---|---|---|---|---|---|---|---|"
	jq -r '.[] | if .error then "| \(.kernel) | \(.peers) | \(.in_use) | error: \(.error) |||||| " else
		"| \(.kernel) | \(.peers) | \(.in_use) | \(.rekeyed_min) | \(.idle_contacted_max) | \(.rekey_median_ms // "—") | \(.rekey_last_ms // "—") | \(.cookies) | \(.control_contacted) |" end' <<<"$summary"
} >"$out/wg-scale.md.tmp"
mv "$out/wg-scale.md.tmp" "$out/wg-scale.md"
cat "$out/wg-scale.md"
echo "$summary" >"$out/wg-scale.json.tmp"
mv "$out/wg-scale.json.tmp" "$out/wg-scale.json"
echo "wg-scale: results in $out/wg-scale.md and $out/wg-scale/" >&2
jq -e 'all(.[]; .error == null)' <<<"$summary" >/dev/null ||
	die "wg-scale: a row failed: $(jq -r '[.[] | select(.error) | "\(.kernel) \(.peers): \(.error)"] | join("; ")' <<<"$summary")"
jq -e 'all(.[]; .control_contacted == 0)' <<<"$summary" >/dev/null ||
	die "wg-scale: a control with the original's GUID contacted peers: the rows cannot tell a fork's handshakes"
jq -e "all(.[] | select(.kernel | $STOCK_JQ | not);"' .rekeyed_min == .in_use and .idle_contacted_max == 0)' <<<"$summary" >/dev/null ||
	die "wg-scale: on the patched kernel a peer in use did not rekey or an idle one was contacted (the table says which)"
