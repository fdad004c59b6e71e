#!/bin/bash
# Every shell script of the project passes shellcheck (.shellcheckrc: each
# file on its own, sourced libraries checked as files of their own), and
# the linter is not blind: an unquoted expansion planted in a copy of one
# script must be flagged.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v shellcheck >/dev/null || t_fail "shellcheck is installed (make deps)"
planted=$(mktemp -d)
trap 'rm -rf "$planted"' EXIT

# The .sh files, CI's entry, and the scripts without the suffix: the
# packages' maintainer scripts, fork_hooks' hooks and the fork hooks
# guests install.
mapfile -t scripts < <(git ls-files '*.sh' .ci/run 'guest/deb/post*' 'guest/deb/pre*' 'guest/test-hooks/*' 'guest/fork.d/*')
[ "${#scripts[@]}" -gt 0 ] || t_fail "there are scripts to check"
for f in "${scripts[@]}"; do
	if out=$(timeout 60 shellcheck "$f" 2>&1); then
		t_ok "shellcheck $f"
	else
		head -n 20 <<<"$out" | sed 's/^/# /'
		t_fail "shellcheck $f"
	fi
done
cat .ci/run - >"$planted/run" <<'PLANTED'
ls $planted
PLANTED
out=$(timeout 60 shellcheck "$planted/run" 2>&1 || true)
if grep -q SC2086 <<<"$out"; then
	t_ok "shellcheck flags an unquoted expansion (SC2086)"
else
	t_fail "shellcheck flags an unquoted expansion (SC2086)"
fi
t_done
