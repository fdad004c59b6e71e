#!/bin/bash
# make image-openssl: what an operator's install gives a long-lived
# OpenSSL process across a fork.  The Debian 12 image of make image-kernel
# (every package of make debs installed with apt, and the patched kernel
# packaged by bindeb-pkg, which the image boots) is forked on migrate-file
# with fresh GUIDs, a reference and a control, once per OpenSSL consumer
# shape (lib/rng_fork.sh): the public and private DRBG (RAND_bytes,
# RAND_priv_bytes from python3, past OpenSSL's own reseed interval) and a
# TLS server (openssl s_server answering one fixed ClientHello), each with
# OpenSSL's own DRBG and with forksafe-openssl selected by
# OPENSSL_CONF=/etc/forksafe/openssl.cnf (the -fs- shapes).  The claim:
# every row with the provider is fork-safe and every row without it
# shares the window (its positive control); a row that says otherwise,
# or is an error, makes the run fail.
#
#   image-openssl.sh [--clones N] [--shapes "..."] [--out DIR]
#
# IMAGE= (the Makefile sets build/image-kernel[-6.12]/disk.qcow2) is the
# image; its newest kernel is the one booted (KERNELS=image).  The table
# goes to stdout and DIR/image-openssl.md, the rows to DIR/image-openssl/.
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"

nclones=2
shapes="openssl-public-16 openssl-fs-public-16 openssl-private-16 openssl-fs-private-16
	openssl-tls-16 openssl-fs-tls-16"
out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse image-openssl --clones=nclones --shapes=shapes --out=out -- "$@"
opts_counts image-openssl --clones "$nclones"
[ -n "${IMAGE:-}" ] || die "image-openssl: IMAGE= names no image (make image-openssl sets it)"
for s in $shapes; do
	case "$s" in openssl-*) shape_records "$s" >/dev/null ;; *) die "image-openssl: '$s' is no OpenSSL shape" ;; esac
done
export KERNELS=image
require_kernels image-openssl image
qemu_setup
results_lock image-openssl "$out"
mkdir -p "$out/image-openssl"
ROWS=()
for s in $shapes; do
	rng_rows "$out/image-openssl" "$nclones" image 1 migrate-file "$s" ready
done
mapfile -t ROW_VERDICTS < <("$BUILD/fork-report" -f verdicts "${ROWS[@]}")

# expected SHAPE: what the claim says of the row.
expected() { case "$1" in openssl-fs-*) echo fork-safe ;; *) echo "exposure window" ;; esac; }
bad=0
{
	echo "## OpenSSL in the Debian image on the packaged kernel"
	echo
	echo "$IMAGE (its packages: $(grep -E '^(linux-image-[0-9]|forksafe-|libforksafe)' "$(dirname "$IMAGE")/packages" 2>/dev/null | tr '\t\n' '= ' || true)), migrate-file, 1 vCPU, $nclones fresh-GUID clones per row, a reference and a control. Exposure: records shared with the reference after the GUID changed."
	"$BUILD/fork-report" "${ROWS[@]}"
	echo
	# shellcheck disable=SC2034 # v reads VERDICT
	for VERDICT in "${ROW_VERDICTS[@]}"; do
		got=$(v verdict) want=$(expected "$(v shape)")
		if [ "$got" = "$want" ]; then
			echo "- $(v shape): $got, as expected"
		else
			echo "- $(v shape): $got, NOT the expected $want"
			bad=$((bad + 1))
		fi
	done
} >"$out/image-openssl.md.tmp"
mv "$out/image-openssl.md.tmp" "$out/image-openssl.md"
cat "$out/image-openssl.md"
[ "$bad" = 0 ] || die "image-openssl: $bad row(s) not as expected"
