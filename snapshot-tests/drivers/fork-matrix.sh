#!/bin/bash
# The fork matrix: for each kernel, vCPU count and snapshot method, restore
# clones of one recording guest and report whether, and for how long, they
# produced the same random numbers after their generation ID changed; then,
# per kernel, whether clones of a WireGuard tunnel sent under pre-fork keys,
# reused nonces, and how soon they rekeyed.
#
#   fork-matrix.sh [--kernels "patched stock"] [--methods "..."] [--vcpus "1 2"]
#                  [--clones N] [--out DIR]
#
# KERNEL=/path/bzImage measures that kernel alone.  Progress goes to stderr;
# the tables to stdout and, with JSON, to DIR/matrix.md and DIR/matrix.json.
# A row that fails is reported as an error and the others still run.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

kernels=$(test_kernels)
methods=$SNAP_METHODS
vcpus_list="1 2"
nclones=4
out=${RESULTS:-$FORKSAFE_ROOT/results}

while [ $# -gt 0 ]; do
	case "$1" in
	--kernels) kernels=$2; shift ;;
	--methods) methods=$2; shift ;;
	--vcpus) vcpus_list=$2; shift ;;
	--clones) nclones=$2; shift ;;
	--out) out=$2; shift ;;
	*) die "fork-matrix: unknown option '$1'" ;;
	esac
	shift || die "fork-matrix: $1 needs a value"
done
for m in $methods; do snap_known "$m" || die "fork-matrix: unknown method '$m' (known: $SNAP_METHODS)"; done
case "$nclones" in '' | *[!0-9]* | 0 | 1) die "fork-matrix: --clones wants a number of at least 2" ;; esac
for v in $vcpus_list; do
	case "$v" in '' | *[!0-9]* | 0) die "fork-matrix: --vcpus wants numbers of CPUs" ;; esac
done

mkdir -p "$out/rows"
rows=()
for k in $kernels; do
	kernel=$(kernel_path "$k")
	[ -f "$kernel" ] || die "fork-matrix: kernel $kernel not found (make kernel kernel-stock, or KERNEL=)"
	for v in $vcpus_list; do
		for m in $methods; do
			row=$out/rows/$k-${v}cpu-$m.json
			fork_run "$k" "$kernel" "$m" "$v" "$nclones" "$row" || true
			rows+=("$row")
		done
	done
done
"$BUILD/matrix-report" -m "$out/matrix.md" -j "$out/matrix.json" "${rows[@]}"

# WireGuard: migrate-file, 1 vCPU, the tunnel streaming and idle (lib.sh wg_run).
wg_rows=()
for k in $kernels; do
	for traffic in stream idle; do
		wg_rows+=("$out/rows/wg-$k-$traffic.json")
		WG_CONTROLS=2 wg_run "$k" "$(kernel_path "$k")" "$traffic" "$nclones" "${wg_rows[-1]}" || true
	done
done
{
	echo
	echo "### WireGuard across forks"
	echo
	echo "migrate-file, 1 vCPU, $nclones fresh-GUID clones and 2 pinned-GUID controls per row, each clone next to a restore of the peer for $WG_WINDOW_S s; read off each clone's wire by wg-detect."
	echo
	wg_table_head
	for r in "${wg_rows[@]}"; do wg_table_row "$r"; done
} | tee -a "$out/matrix.md"
jq -s . "${wg_rows[@]}" >"$out/wireguard.json"
echo "fork-matrix: results in $out/matrix.md, $out/matrix.json and $out/wireguard.json" >&2
