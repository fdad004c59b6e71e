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
	series=$root/kernel-patches/$ver/series
	[ -s "$series" ] || continue
	want=$(grep -cv '^#\|^$' "$series")
	got=0
	while read -r result; do
		case "$result" in
		"ok "*) t_ok "checkpatch --strict: $ver/${result#ok }" ;;
		*) t_fail "checkpatch --strict: $ver/${result#not ok }" ;;
		esac
		got=$((got + 1))
	done < <("$root/kernel-patches/kernel.sh" checkpatch "$ver" 2>"$err" || true)
	sed 's/^/# /' "$err"
	# A checker that stopped early (no tree, no perl) printed less, not "ok".
	t_eq "checkpatch judged every patch of the $ver series" "$got" "$want"
done
t_done
