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
# other consumer shapes (--shapes, default all: long reads, uuid reads,
# exec'd programs, reads before the crng is ready in CRNG_EMPTY and
# CRNG_EARLY, the vDSO's getrandom() on 6.12 kernels, a user-space
# DRBG without and, on patched kernels, with the /dev/vmgenid check, and
# in an image the libraries a long-lived process draws from: OpenSSL's
# public and private DRBGs, Python's random and secrets, glibc's
# arc4random; and the seed file systemd-random-seed saves) run
# on migrate-file, each as SHAPE[/CRNG][@VCPUS] (crng ready and 1 vCPU
# unless said).  uuid and exec run at 2 vCPUs: at 1, the
# stock kernel's notification work here mostly runs before the next call
# (the getrandom-16 rows show how often), so a row there rarely has a
# stock window to compare with; exec also runs in CRNG_EARLY, where the
# stock window is certain.  A kernel that cannot record a shape is left
# out of its rows with one line saying why (lib/rng_fork.sh,
# shape_kernels): on an image, exec and the states before the crng is
# ready.  libuuid-16 is not among the defaults: libuuid mixes the time of
# day into every UUID, so even a control leaves its reference and the row
# can only be an error (--shapes libuuid-16 shows it).
#
# A row per kernel forks a busy VM (lib/wg_fork.sh, load_row: getrandom()
# on both vCPUs and WireGuard traffic across the fork).
#
# KERNEL=/path/bzImage measures that kernel alone, IMAGE=/path/golden.qcow2
# that image alone.  Progress goes to
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
shapes="getrandom-16MiB urandom-1MiB uuid@2 exec@2 exec/early insecure-16/empty insecure-16/early
	vdso-16 drbg-16 drbg-checked-16 openssl-public-16 openssl-private-16 openssl-fs-public-16
	openssl-fs-private-16 python-mt-16
	python-secrets-16 arc4random-16 systemd-seed openssl-tls-16 openssl-fs-tls-16"
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

# shape_rows SHAPE[/CRNG][@VCPUS]...: the rows, or (DRY=1) only the checks.
shape_rows() {
	local s shape crng vcpus ks
	for s in "$@"; do
		crng=ready vcpus=1 shape=$s
		case "$shape" in *@*) vcpus=${shape#*@} shape=${shape%@*} ;; esac
		case "$shape" in */*) crng=${shape#*/} shape=${shape%/*} ;; esac
		opts_counts fork-matrix "--shapes' @VCPUS" "$vcpus"
		shape_records "$shape" >/dev/null
		case "$crng" in ready | empty | early) ;; *) die "fork-matrix: unknown crng state '$crng' in '$s' (ready, empty, early)" ;; esac
		[ -n "${DRY:-}" ] && continue
		# shellcheck disable=SC2086 # a list of words
		ks=$(shape_kernels "$shape/$crng" $kernels)
		[ -z "$ks" ] || rng_rows "$out/rows" "$nclones" "$ks" "$vcpus" migrate-file "$shape" "$crng"
	done
}
# shellcheck disable=SC2086 # a list of words
DRY=1 shape_rows $shapes

results_lock fork-matrix "$out"
mkdir -p "$out/rows"
ROWS=()
rng_rows "$out/rows" "$nclones" "$kernels" "$vcpus_list" "$methods"
# shellcheck disable=SC2086
shape_rows $shapes
# A fork of a busy VM (every vCPU recording, the tunnel streaming).
for k in $kernels; do
	ROWS+=("$out/rows/$k-load.json")
	load_row "$k" "$nclones" "${ROWS[-1]}" || true
done
rng=("${ROWS[@]}")
# WireGuard: migrate-file, 1 vCPU, the tunnel streaming, idle, and streaming
# with the vmgenid notification held back (masked).
ROWS=()
# shellcheck disable=SC2086 # a list of words
wg_rows "$out/rows" "$nclones" $kernels
wg=("${ROWS[@]}")
# A sibling sending to each clone under the pre-fork session.
sibling=()
for k in $kernels; do
	sibling+=("$out/rows/wg-$k-sibling.json")
	wg_sibling_row "$k" "$nclones" "${sibling[-1]}" || true
done
"$BUILD/fork-report" -f summary "${rng[@]}" "${wg[@]}" >"$out/verdicts.txt"
# Kernel state no fork renews, measured: the TCP secret (docs/threat-model.md).
tcp=()
for k in $kernels; do
	tcp+=("$out/rows/tcp-$k.json")
	tcp_row "$k" "$nclones" "${tcp[-1]}" || true
done
for r in "${sibling[@]}"; do
	echo "$(jq -r .kernel "$r"): WireGuard, a sibling sending under the pre-fork session: $(wg_sibling_verdict "$r")"
done >>"$out/verdicts.txt"
for r in "${tcp[@]}"; do
	echo "$(jq -r .kernel "$r"): TCP's secret (initial sequence numbers), which no fork renews: $(tcp_verdict "$r")"
done >>"$out/verdicts.txt"
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
	echo
	echo "### A sibling sending under the pre-fork session"
	echo
	echo "The peer's restore, with its GUID kept, listens on another port and streams to the clone under the session it had at the snapshot, as a sibling clone holding the same keys can; $nclones fresh clones and $WG_SIBLING_CONTROLS control (the original's GUID) per kernel, each read after the sibling sent $WG_SIBLING_OFFER datagrams."
	echo
	echo "| kernel | verdict |"
	echo "| --- | --- |"
	for r in "${sibling[@]}"; do
		echo "| $(jq -r .kernel "$r") | $(wg_sibling_verdict "$r") |"
	done
	echo
	echo "### TCP's secret across the fork"
	echo
	echo "Each clone's loopback connection (one fixed 4-tuple) gives its ISN minus the clock: the keyed hash of net_secret, drawn once per boot; the original's before the snapshot, and a boot that is no clone as the control. Hashes within 2^16 are one secret."
	echo
	echo "| kernel | original | clones | a boot that is no clone | verdict |"
	echo "| --- | --- | --- | --- | --- |"
	for r in "${tcp[@]}"; do
		echo "| $(jq -r '"\(.kernel) | \(.result.original // "") | \(.result.clones // [] | map(tostring) | join(", ")) | \(.result.cold // "")"' "$r") | $(tcp_verdict "$r") |"
	done
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
