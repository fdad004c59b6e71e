#!/bin/bash
# Every patch of kernel-patches/series passes the tree's own
# scripts/checkpatch.pl --strict with no error, warning or check.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

[ -s "$FORKSAFE_ROOT/kernel-patches/series" ] || t_skip "the series is empty"
while read -r result; do
	case "$result" in
	"ok "*) t_ok "checkpatch --strict: ${result#ok }" ;;
	*) t_fail "checkpatch --strict: ${result#not ok }" ;;
	esac
done < <("$FORKSAFE_ROOT/kernel-patches/kernel.sh" checkpatch 2>"$RUN_DIR/checkpatch.err" || true)
sed 's/^/# /' "$RUN_DIR/checkpatch.err"
[ "$T_NUM" -gt 0 ] || t_fail "checkpatch ran on the series"
t_done
