#!/bin/bash
# The parsers of untrusted input (recorder dumps from guests, lines off the
# QMP and agent sockets, pcap captures of guests' wire) survive FUZZ_SECONDS of libFuzzer each under ASan
# and UBSan without a crash, a leak or undefined behaviour.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

command -v clang >/dev/null || t_skip "clang is missing: run 'make deps'"
log=$RUN_DIR/fuzz.log
if make --no-print-directory -C "$FORKSAFE_ROOT" fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-10}" >"$log" 2>&1; then
	t_ok "fuzz-dump, fuzz-read-line and fuzz-wg-detect found no crash"
else
	t_fail "fuzz-dump, fuzz-read-line and fuzz-wg-detect found no crash"
	grep -E 'ERROR|SUMMARY|artifact' "$log" | head -n 5 | sed 's/^/# /'
fi
grep -E '^stat::number_of_executed_units' "$log" | sed 's/^/# executions: /' || true
t_done
