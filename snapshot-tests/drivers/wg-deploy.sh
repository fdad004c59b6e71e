#!/bin/bash
# make wg-deploy: WireGuard clones as operators meet them (lib/wg_fork.sh).
#  - Live snapshots ("a live snapshot"): the original runs on, streaming,
#    for LIVE seconds after its snapshot (past 120 s it has rekeyed), then
#    clones take its place next to its live peer, one after another.
#  - Clocks that fell behind ("a clone whose clock is behind"): each
#    clone resumes BEHIND seconds behind the last handshake its peer
#    accepted, next to a restore of that peer.
#  - Clones alive side by side with one key ("two clones alive"): the
#    clones of one snapshot restored together next to one restore of the
#    peer for BOTH seconds: whom the peer heard, when, how often it went
#    from one to the other, and whether they reused (key, nonce) pairs.
#  - The same at scale ("clocks behind at scale", lib/wg_scale.sh): a VM
#    with SCALE peers on one hub, every one in use and kept alive (25 s),
#    its clones' clocks 3600 s behind: how many peers answered each clone,
#    and when the last did.
# For each kernel with nothing stepping the clock and, where the kernel
# has a fork signal, with the fork hooks a guest installs (guest/fork.d/:
# the clock from the RTC, the handshakes started over).  Per row: each
# clone's time from its resume to the first answer to one of its
# initiations (the tunnel works from there), the datagrams its peer
# received, its initiations and how many went unanswered (refused by the
# peer), its packets under a pre-fork key, how far its clock was behind
# the host's at the end, and why a clone had no tunnel.
#
#   wg-deploy.sh [--kernels "patched stock"] [--live "0 10 130"] [--behind "1 60 3600"]
#                [--both "20"] [--scale "50"] [--clones 2] [--window S] [--out DIR]
# An empty list leaves its case out (one case at least).
#
# The table goes to stdout and DIR/wg-deploy.md, the rows to
# DIR/wg-deploy/, a page with every clone on a time axis (fork-report -f
# html) to DIR/wg-deploy.html.  The run fails on an error row.
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"

kernels=$(test_kernels)
live_list="0 10 130"
behind_list="1 60 3600"
both_list=20
scale_list=50
nclones=2
window=8
out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse wg-deploy --kernels=kernels --live=live_list --behind=behind_list --both=both_list \
	--scale=scale_list --clones=nclones --window=window --out=out -- "$@"
[ -n "$live_list$behind_list$both_list$scale_list" ] ||
	die "wg-deploy: --live, --behind, --both and --scale are all empty: no case to run"
for l in $live_list; do
	case "$l" in 0) ;; '' | *[!0-9]* | 0*) die "wg-deploy: --live wants whole numbers of seconds, not '$l'" ;; esac
done
# shellcheck disable=SC2086 # lists of words
[ -z "$behind_list" ] || opts_counts wg-deploy --behind $behind_list
# shellcheck disable=SC2086
[ -z "$both_list" ] || opts_counts wg-deploy --both $both_list
# shellcheck disable=SC2086
[ -z "$scale_list" ] || opts_counts wg-deploy --scale $scale_list
for p in $scale_list; do
	[ "$p" -le "$SCALE_MAX_PEERS" ] || die "wg-deploy: --scale: at most $SCALE_MAX_PEERS peers, not $p"
done
opts_counts wg-deploy --clones "$nclones"
opts_counts wg-deploy --window "$window"
# shellcheck disable=SC2086
require_kernels wg-deploy $kernels
qemu_setup
results_lock wg-deploy "$out"
mkdir -p "$out/wg-deploy"
export WG_WINDOW_S=$window

# steps KERNEL_NAME CASE: what can step a clone's clock on that kernel (the
# fork hooks need its fork signal); clones side by side also get
# identities of their own from the hooks (12-identity).
steps() {
	if [ "$(kernel_role "$1")" != patched ]; then echo none; return; fi
	case "$2" in both) echo none hook identity ;; *) echo none hook ;; esac
}

rows=()
for k in $kernels; do
	for case in live behind both; do
		case "$case" in
		live) list=$live_list ;;
		behind) list=$behind_list ;;
		both) list=$both_list ;;
		esac
		for secs in $list; do
			for step in $(steps "$k" "$case"); do
				rows+=("$out/wg-deploy/$k-$case-$secs-$step.json")
				WG_CLOCK_STEP=$step wg_clock_row "$k" "$case" "$secs" "$nclones" "${rows[-1]}" || true
			done
		done
	done
done

# At scale: an hour behind, each clone 40 s beside the hub: past the 25 s
# keepalive, which the hub's own keepalive just after the resume re-arms,
# so that a kernel keeping its pre-fork sessions shows them.
scale_rows=()
for k in $kernels; do
	for p in $scale_list; do
		for step in $(steps "$k" behind); do
			scale_rows+=("$out/wg-deploy/$k-scale-$p-$step.json")
			SCALE_BEHIND_S=3600 SCALE_WINDOW_S=40 WG_CLOCK_STEP=$step \
				scale_behind_row "$k" "$p" "$nclones" "${scale_rows[-1]}" || true
		done
	done
done

errors=0
# table_of JUDGE HEAD LINE WHY ROW...: a table of the ROWs under the header
# HEAD: a line each by the jq program LINE (given $v, the row's verdict
# line from the function JUDGE; each(f) joins f over the row's clones,
# step its stepping in words), then "Why, per row", each row named by the
# jq program WHY.  An error row counts in $errors.
table_of() {
	local judge=$1 head=$2 line=$3 why=$4 r verdict cols
	shift 4
	local defs='def each(f): [(.result.clones // .result.fresh.clones)[] | f] | map(tostring) | join(", ");
		def step: {hook: "fork hooks", identity: "fork hooks, identities of their own"}[.step] // "nothing";'
	cols=$(($(tr -cd '|' <<<"$head" | wc -c) - 1))
	echo "$head"
	printf '|'
	printf -- '---|%.0s' $(seq "$cols")
	echo
	for r in "$@"; do
		verdict=$("$judge" "$r")
		[ "${verdict%%:*}" != error ] || errors=$((errors + 1))
		jq -r --arg v "$verdict" "$defs $line" "$r"
	done
	echo
	echo "Why, per row:"
	echo
	for r in "$@"; do echo "- $(jq -r "$defs $why" "$r"): $("$judge" "$r")"; done
}

# rows_of KIND: the rows of that kind.
rows_of() {
	local r
	for r in "${rows[@]}"; do [ "$(jq -r .kind "$r")" != "$1" ] || echo "$r"; done
}

# table CASE WHAT: the table of the rows of CASE (live or behind); WHAT
# names their first column (live: seconds the original ran on, and
# whether it rekeyed meanwhile; behind: seconds behind).
table() {
	local -a of
	mapfile -t of < <(rows_of "wg-$1")
	# shellcheck disable=SC2016 # jq programs
	table_of wg_clock_verdict \
		"| kernel | $2 | clock stepped by | verdict | first answer to an initiation (ms, per clone) | datagrams the peer received | initiations (unanswered) | the peer's log: initiations taken/invalid | pre-fork-key packets | clock behind the host's at the end (s) |" \
		'"| \(.kernel) | \(if .live != null then "\(.live)\(if .result.original_rekeyed then ", rekeyed" else "" end)" else .behind end) | \(step) | " +
		if .error or ($v | startswith("error")) then "\($v) |||||||" else
		"\($v | split(":")[0]) | \(each(if .first_answer_us >= 0 then .first_answer_us / 1000 | floor else "never" end)) | \(each(.delivered)) | " +
		"\(each("\(.initiations) (\(.unanswered_initiations))")) | \(each("\(.peer_taken_initiations)/\(.peer_invalid_initiations)")) | " +
		"\(each(.prefork_packets)) | \(each(.behind_end_s)) |" end' \
		'"\(.kernel), \(if .live != null then "the original ran on \(.live) s" else "\(.behind) s behind" end), \(step)"' \
		"${of[@]}"
}

# table_both: the rows of clones side by side.
table_both() {
	local -a of
	mapfile -t of < <(rows_of wg-both)
	# shellcheck disable=SC2016 # jq programs
	table_of wg_both_verdict \
		"| kernel | side by side (s) | clock stepped by | verdict | first answer to an initiation (ms, per clone) | data packets on its wire, datagrams the peer received from it (per clone) | initiations (unanswered) | the peer's log: initiations taken/invalid (all clones) | the peer switched clones | pre-fork-key packets | nonce-reuse pairs |" \
		'"| \(.kernel) | \(.both) | \(step) | " +
		if .error or ($v | startswith("error")) then "\($v) ||||||||" else
		"\($v | split(":")[0]) | \(each(if .first_answer_us >= 0 then .first_answer_us / 1000 | floor else "never" end)) | " +
		"\(each("\(.data_sent) / \(.delivered)")) | \(each("\(.initiations) (\(.unanswered_initiations))")) | " +
		"\(.result.peer_taken_initiations)/\(.result.peer_invalid_initiations) | \(.result.switches) | \(each(.prefork_packets)) | \(.result.nonce_reuse_pairs) |" end' \
		'"\(.kernel), \(.both) s side by side, \(step)"' \
		"${of[@]}"
}

# table_scale: the rows at scale.
table_scale() {
	# shellcheck disable=SC2016 # jq programs
	table_of scale_clock_verdict \
		"| kernel | peers | behind (s) | clock stepped by | verdict | peers answered (per clone) | last answer (ms, per clone) | initiations (unanswered) | pre-fork-key packets |" \
		'.in_use as $n | def answered: [.peers[] | select(.handshake_us >= 0)];
		"| \(.kernel) | \(.peers) | \(.behind) | \(step) | " +
		if .error or ($v | startswith("error")) then "\($v) |||||" else
		"\($v | split(":")[0]) | \(each("\(answered | length) of \($n)")) | " +
		"\(each(if (answered | length) > 0 then [answered[].handshake_us] | max / 1000 | floor else "never" end)) | " +
		"\(each("\(.initiations) (\(.unanswered_initiations))")) | \(each(.prefork_packets)) |" end' \
		'"\(.kernel), \(.peers) peers, \(.behind) s behind, \(step)"' \
		"${scale_rows[@]}"
}

{
	echo "## WireGuard clones as operators make them (make wg-deploy)"
	echo
	echo "migrate-file, 1 vCPU, $nclones fresh-GUID clones per row, each streaming 100 datagrams/s through the tunnel for $window s. Times: ms from the clone's first heartbeat. \"fork hooks\": guest/fork.d/ run by forksafe-hooks on /dev/vmgenid (only a patched kernel has it). QEMU's RTC follows the host's clock."
	if [ -n "$live_list" ]; then
		echo
		echo "### Live snapshots"
		echo
		echo "The original runs on after its snapshot, streaming to its live peer, for the row's seconds of its own clock (\"rekeyed\": it made a new handshake meanwhile); then it stops and the clones take its place next to that peer, one after another."
		echo
		table live "original ran on (s)"
	fi
	if [ -n "$behind_list" ]; then
		echo
		echo "### Clocks behind"
		echo
		echo "Each clone's wall clock resumes the row's seconds behind the last handshake its peer accepted; each clone runs next to a restore of the peer."
		echo
		table behind "behind (s)"
	fi
	if [ -n "$both_list" ]; then
		echo
		echo "### Two clones alive with one key"
		echo
		echo "The clones of one snapshot restored one after another next to one restore of the peer and left side by side for the row's seconds, all streaming: one static key, address, port and MAC. Each datagram names its sender (the tail of its live GUID); the peer's sink keeps the runs of one sender in order. \"Switched\": how often the next datagram the peer received came from another sender than the last."
		echo
		table_both
	fi
	if [ -n "$scale_list" ]; then
		echo
		echo "### Clocks behind at scale"
		echo
		echo "A VM with the row's WireGuard peers on one hub guest (lib/wg_scale.sh), every peer in use and kept alive every 25 s, no other traffic; each clone's wall clock resumes 3600 s behind the last initiation the hub took from its key, next to a restore of the hub for 40 s. A peer answered: the clone's capture holds its answer to one of the clone's own initiations."
		echo
		table_scale
	fi
} >"$out/wg-deploy.md.tmp"
mv "$out/wg-deploy.md.tmp" "$out/wg-deploy.md"
cat "$out/wg-deploy.md"

# The page: each row with its jq program's line as its verdict, every
# clone on a time axis (from its resume to its tunnel working; side by
# side, the runs the peer heard from it).
judged=()
for r in "${rows[@]}"; do
	judged+=("${r%.json}.judged.json")
	if [ "$(jq -r .kind "$r")" = wg-both ]; then v=$(wg_both_verdict "$r"); else v=$(wg_clock_verdict "$r"); fi
	jq --arg v "$v" '. + {verdict: $v}' "$r" >"${judged[-1]}"
done
if [ ${#judged[@]} -gt 0 ]; then
	"$BUILD/fork-report" -f html "${judged[@]}" >"$out/wg-deploy.html.tmp"
	mv "$out/wg-deploy.html.tmp" "$out/wg-deploy.html"
	echo "wg-deploy: the page is $out/wg-deploy.html" >&2
fi
[ "$errors" = 0 ] || die "wg-deploy: $errors row(s) could not be measured (see the table)"
