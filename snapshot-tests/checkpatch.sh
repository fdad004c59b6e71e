#!/bin/bash
# Every patch of kernel-patches/series passes the tree's own
# scripts/checkpatch.pl --strict with no error, warning or check.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
err=$(mktemp)
trap 'rm -f "$err"' EXIT

[ -s "$root/kernel-patches/series" ] || t_skip "the series is empty"
while read -r result; do
	case "$result" in
	"ok "*) t_ok "checkpatch --strict: ${result#ok }" ;;
	*) t_fail "checkpatch --strict: ${result#not ok }" ;;
	esac
done < <("$root/kernel-patches/kernel.sh" checkpatch 2>"$err" || true)
sed 's/^/# /' "$err"
[ "$T_NUM" -gt 0 ] || t_fail "checkpatch ran on the series"
t_done
