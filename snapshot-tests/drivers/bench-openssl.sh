#!/bin/bash
# make bench-openssl: what forksafe-openssl costs per RAND_bytes(16), in
# instructions, stock OpenSSL measured in the same run.  The provider's
# check is a read of the mapped ID in user space, no system call, so the
# cost is all in the process: valgrind (callgrind) counts every
# instruction of guest/openssl-provider_bench.c making N and then 2N
# calls on OpenSSL's public DRBG, and (I(2N) - I(N)) / N is one call, the
# set-up cancelled out; the same on every run.  Three set-ups: OpenSSL's
# own CTR-DRBG (stock), the provider's DRBG with "check = 0" (its layer
# alone), and the provider checking a file laid out like /dev/vmgenid (as
# a guest with the series maps it).  The target: stock/check at least
# 0.99 in instructions.
#   bench-openssl.sh [--calls N] [--out DIR]
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"

calls=20000
out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse bench-openssl --calls=calls --out=out -- "$@"
opts_counts bench-openssl --calls "$calls"
command -v valgrind >/dev/null ||
	die "bench-openssl: valgrind is missing: apt-get install --no-install-recommends valgrind"
results_lock bench-openssl "$out"
md=$out/bench-openssl.md
scratch=$(mktemp -d "${TMPDIR:-/tmp}/bench-openssl.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# instructions SETUP N: what valgrind counted for a run of N calls.
instructions() {
	local got
	got=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BUILD/forksafe-openssl-bench" \
		"$BUILD/forksafe-openssl.so" "$scratch" "$1" "$2" 2>&1) ||
		die "bench-openssl: $1, $2 calls: $(tail -n 1 <<<"$got")"
	got=$(sed -n 's/.*Collected : \([0-9][0-9]*\).*/\1/p' <<<"$got")
	[ -n "$got" ] || die "bench-openssl: valgrind gave no instruction count for $1"
	echo "$got"
}

declare -A per
for s in stock nocheck check; do
	progress "bench-openssl: $s, $calls and $((2 * calls)) calls under valgrind"
	a=$(instructions "$s" "$calls")
	b=$(instructions "$s" "$((2 * calls))")
	per[$s]=$(((b - a) / calls))
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
{
	echo "## make bench-openssl"
	echo
	echo "Instructions per RAND_bytes(16) on OpenSSL's public DRBG (valgrind, (I(2N) - I(N)) / N with N = $calls; $(openssl version | cut -d' ' -f1-2)), and stock/set-up (the target for the check is at least 0.99):"
	echo
	echo "| set-up | instructions per call | stock/set-up |"
	echo "| --- | --- | --- |"
	echo "| OpenSSL's own CTR-DRBG (stock) | ${per[stock]} | 1.000 |"
	echo "| forksafe-openssl, check = 0 (its layer alone) | ${per[nocheck]} | $(ratio "${per[stock]}" "${per[nocheck]}") |"
	echo "| forksafe-openssl checking the mapped ID | ${per[check]} | $(ratio "${per[stock]}" "${per[check]}") |"
	echo
	echo "The check itself: $((per[check] - per[nocheck])) instructions a call; the provider's layer: $((per[nocheck] - per[stock]))."
} >"$md.tmp"
mv "$md.tmp" "$md"
cat "$md"
