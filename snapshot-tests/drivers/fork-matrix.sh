#!/bin/bash
# make demo: the fork matrix.  For each kernel, vCPU count and snapshot
# method, restore clones of one recording guest and report whether, and
# for how long, they produced the same random numbers after their
# generation ID changed (lib/rng_fork.sh); then, per kernel, whether clones
# of a WireGuard tunnel sent under pre-fork keys, reused nonces, and how
# soon they rekeyed (lib/wg_fork.sh).
#
#   fork-matrix.sh [--kernels "patched stock"] [--methods "..."] [--vcpus "1 2"]
#                  [--clones N] [--shapes "..."] [--out DIR]
#
# --methods and --vcpus apply to getrandom() loops (getrandom-16); the
# other consumer shapes (--shapes, default all: long reads, exec'd
# processes, reads before the crng is ready in CRNG_EMPTY and CRNG_EARLY)
# run on migrate-file at 1 vCPU.
#
# KERNEL=/path/bzImage measures that kernel alone.  Progress goes to
# stderr; the tables to stdout and DIR/matrix.md, the rows with their
# verdicts to DIR/matrix.json.  A row that fails is an error row with its
# reason, and the others still run.  The run ends with one verdict line per
# kernel for the RNG and for WireGuard (fork-report -f summary), also at
# the top of DIR/matrix.md and in DIR/verdicts.txt; DIR/report.html has
# those lines and a picture of every row (fork-report -f html).
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"

kernels=$(test_kernels)
methods=$SNAP_METHODS
vcpus_list="1 2"
nclones=4
shapes="getrandom-16MiB urandom-1MiB exec insecure-16/empty insecure-16/early"
out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse fork-matrix --kernels=kernels --methods=methods --vcpus=vcpus_list \
	--clones=nclones --shapes=shapes --out=out -- "$@"
qemu_setup
for m in $methods; do snap_known "$m" || die "fork-matrix: unknown method '$m' (known: $SNAP_METHODS)"; done
# shellcheck disable=SC2086 # lists of words
opts_counts fork-matrix --vcpus $vcpus_list
opts_counts fork-matrix --clones "$nclones"
# shellcheck disable=SC2086
require_kernels fork-matrix $kernels

mkdir -p "$out/rows"
ROWS=()
rng_rows "$out/rows" "$nclones" "$kernels" "$vcpus_list" "$methods"
for shape in $shapes; do
	crng=ready
	case "$shape" in */*) crng=${shape#*/} shape=${shape%/*} ;; esac
	rng_rows "$out/rows" "$nclones" "$kernels" 1 migrate-file "$shape" "$crng"
done
rng=("${ROWS[@]}")
# WireGuard: migrate-file, 1 vCPU, the tunnel streaming and idle.
ROWS=()
# shellcheck disable=SC2086 # a list of words
wg_rows "$out/rows" "$nclones" $kernels
wg=("${ROWS[@]}")
"$BUILD/fork-report" -f summary "${rng[@]}" "${wg[@]}" >"$out/verdicts.txt"
{
	echo "## Verdicts"
	echo
	sed 's/^/- /' "$out/verdicts.txt"
	echo
	echo "## Fork matrix"
	echo
	echo "Exposure: blocks of 16 bytes (and guest µs) that a clone produced from the pre-fork state after its GUID had changed, min/median/max over the clones that saw a new GUID. Shared: the fewest blocks any clone produced after the snapshot point that equal the reference clone's (with no fork signal, the whole window)."
	"$BUILD/fork-report" "${rng[@]}"
	echo
	echo "### WireGuard across forks"
	echo
	echo "migrate-file, 1 vCPU, $nclones fresh-GUID clones and 2 pinned-GUID controls per row, each clone next to a restore of the peer for $WG_WINDOW_S s; read off each clone's wire by wg-detect. Times in ms after the resume, counts: min/median/max (clones where it happened)."
	"$BUILD/fork-report" "${wg[@]}"
} >"$out/matrix.md.tmp"
mv "$out/matrix.md.tmp" "$out/matrix.md"
cat "$out/matrix.md"
"$BUILD/fork-report" -f html "${rng[@]}" "${wg[@]}" >"$out/report.html.tmp"
mv "$out/report.html.tmp" "$out/report.html"
"$BUILD/fork-report" -f json "${rng[@]}" "${wg[@]}" >"$out/matrix.json.tmp"
mv "$out/matrix.json.tmp" "$out/matrix.json"
echo "fork-matrix: results in $out/matrix.md, $out/matrix.json and $out/report.html (open it in a browser)" >&2
echo
cat "$out/verdicts.txt"
