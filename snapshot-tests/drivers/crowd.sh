#!/bin/bash
# make crowd: many clones of one snapshot alive at once.  A guest recording
# getrandom() output is snapshotted by migrate-file; a reference and a
# control (the original's GUID) are restored one after the other, then
# CLONES clones with fresh GUIDs are all loaded, paused, resumed together
# and run side by side on the host's cores until each has finished its
# recording (lib/rng_fork.sh, crowd_row).  Per kernel:
#  - rng-exposure's verdict over all of them: no clone may share a record
#    with the reference or with any other clone after its GUID changed
#    (patched), each logs the fork once, and the control must stay
#    identical to the reference (else the row is blind: an error);
#  - what it costs the host: seconds to load them all, from the first
#    resume to the last complete recording, the QEMUs' resident memory
#    together and per clone, and the drop of MemAvailable.
#
#   crowd.sh [--kernels "patched stock"] [--clones 16] [--out DIR]
#
# KERNEL=/path/bzImage runs that kernel alone.  The table goes to stdout
# and DIR/crowd.md, the rows to DIR/crowd/.  The run fails when a row is
# an error or a patched (or custom) kernel's row is not fork-safe.
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"

kernels=$(test_kernels)
nclones=16
out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse crowd --kernels=kernels --clones=nclones --out=out -- "$@"
opts_counts crowd --clones "$nclones"
[ "$nclones" -ge 2 ] || die "crowd: --clones wants at least 2 (clones are compared with each other)"
# shellcheck disable=SC2086 # a list of words
require_kernels crowd $kernels
qemu_setup
results_lock crowd "$out"
mkdir -p "$out/crowd"

rows=()
for k in $kernels; do
	rows+=("$out/crowd/$k-$nclones.json")
	crowd_row "$k" "$nclones" "${rows[-1]}" || true
done
{
	echo "## Many clones at once (make crowd)"
	echo
	echo "migrate-file, 1 vCPU, $nclones fresh-GUID clones of one snapshot loaded, resumed together and recording side by side on $(nproc) host cores; the reference and the control restored before them."
	"$BUILD/fork-report" "${rows[@]}"
	echo
	echo "| kernel | clones | load all (s) | first resume → last recording done (s) | QEMU RSS together (MiB) | per clone (MiB) | MemAvailable drop (MiB) |"
	echo "|---|---|---|---|---|---|---|"
	for r in "${rows[@]}"; do
		jq -r 'select(.result) | .kernel as $k | .together as $n | .result.crowd |
			"| \($k) | \($n) | \(.load_ms / 1000) | \(.run_ms / 1000) | \(.rss_kb / 1024 | floor) | \(.rss_kb / 1024 / $n | floor) | \((.mem_available_kb.before - .mem_available_kb.all_running) / 1024 | floor) |"' "$r"
	done
} >"$out/crowd.md.tmp"
mv "$out/crowd.md.tmp" "$out/crowd.md"
cat "$out/crowd.md"
echo "crowd: results in $out/crowd.md and $out/crowd/" >&2
verdicts=$("$BUILD/fork-report" -f verdicts "${rows[@]}" | jq -s .)
jq -e 'all(.[]; .verdict != "error")' <<<"$verdicts" >/dev/null ||
	die "crowd: a row failed: $(jq -r '[.[] | select(.verdict == "error") | "\(.kernel): \(.why)"] | join("; ")' <<<"$verdicts")"
jq -e --argjson n "$nclones" "all(.[] | select(.kernel | $STOCK_JQ | not);"'
	.verdict == "fork-safe" and .diverged == $n and .reseeded_once == $n)' <<<"$verdicts" >/dev/null ||
	die "crowd: the patched kernel shared output or missed a fork among $nclones clones (the table says which)"
