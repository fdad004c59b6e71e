#!/bin/bash
# libforksafe (guest/forksafe.h), the fork signal's C library, on the host
# under ASan and UBSan (guest/forksafe_test.c): errors for a missing or
# malformed device, one fork per change of the mapped ID (a torn write
# included), the reference DRBG's known answers, and a checked DRBG that
# reseeds before its first output in a clone while an unchecked copy goes
# on from the same key (positive control).  No QEMU: a file laid out like
# /dev/vmgenid stands in for it.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
t_exec_host_test forksafe-test
