#!/bin/bash
# Every patch of each series (kernel-patches/VERSION/series) passes its
# tree's own scripts/checkpatch.pl --strict with no error, warning or check.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
err=$(mktemp)
trap 'rm -f "$err"' EXIT

[ -s "$root/kernel-patches/6.1/series" ] || t_fail "the 6.1 series is empty"
for ver in 6.1 6.12; do
	[ -s "$root/kernel-patches/$ver/series" ] || continue
	while read -r result; do
		case "$result" in
		"ok "*) t_ok "checkpatch --strict: $ver/${result#ok }" ;;
		*) t_fail "checkpatch --strict: $ver/${result#not ok }" ;;
		esac
	done < <("$root/kernel-patches/kernel.sh" checkpatch "$ver" 2>"$err" || true)
	sed 's/^/# /' "$err"
done
[ "$T_NUM" -gt 0 ] || t_fail "checkpatch ran on the series"
t_done
