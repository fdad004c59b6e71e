#!/bin/bash
# forksafe-openssl (guest/openssl-provider.c), the OpenSSL 3 provider, on
# the host under ASan and UBSan (guest/openssl-provider_test.c): OpenSSL
# configured by openssl.cnf as an operator does makes the provider's DRBG
# its public, private and primary one; a file laid out like /dev/vmgenid
# stands in for the device and a new ID written into it for the fork.
# Each DRBG reseeds once per fork before its next output, for real (the
# CTR-DRBG's own counter moves), and never without one; OpenSSL's own
# reseed interval and its reseed on fork() still act; threads draw while
# the ID changes.  Positive control: with "check = 0" a new ID reseeds
# nothing.  Without a device the provider says so in a parameter and
# OpenSSL's DRBG works as before.  No QEMU.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FORKSAFE_BUILD:-$root/build}

if ! make --no-print-directory -C "$root" BUILD="$build" "$build/forksafe-openssl-asan.so" \
	"$build/forksafe-openssl-test" "$build/forksafe-openssl.so" >&2; then
	t_plan 1
	t_fail "forksafe-openssl and its tests build"
	t_done
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/forksafe-openssl.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
rc=0
"$build/forksafe-openssl-test" "$build/forksafe-openssl-asan.so" "$scratch" || rc=$?
exit "$rc"
