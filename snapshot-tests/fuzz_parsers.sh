#!/bin/bash
# The parsers of untrusted input (recorder dumps from guests, lines off the
# QMP and agent sockets, pcap captures of guests' wire) survive FUZZ_SECONDS
# of libFuzzer each under ASan and UBSan without a crash, a leak or
# undefined behaviour.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

command -v clang >/dev/null || t_skip "clang is missing: run 'make deps'"
t_plan 1
fuzz() { make --no-print-directory -C "$root" fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-10}" >"$log" 2>&1; }
t_check "fuzz-dump, fuzz-read-line and fuzz-wg-detect found no crash" fuzz
grep -E 'ERROR|SUMMARY|artifact' "$log" | head -n 5 | sed 's/^/# /' || true
grep -E '^stat::number_of_executed_units' "$log" | sed 's/^/# executions: /' || true
t_done
