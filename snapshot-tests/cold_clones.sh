#!/bin/bash
# Cold clones, one representative row per question (make cold-clones has
# the matrix): two deterministic boots per row of one kernel and image.
#  - the control (nothing set) is identical at every moment, and fresh
#    GUIDs make boots differ from the first read: without both, the
#    comparison is blind (analyzers/cold-report.jq);
#  - a domain copied with its <genid> (a fixed GUID) boots identical clones;
#  - the image's seed credited gives identical clones once the crng is
#    ready, and makes it ready sooner than without a seed;
#  - a seed written to /dev/urandom without credit before the crng is ready
#    changes the very next output (write against write-other: the same
#    boot, another seed).
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

k=$(test_kernels | awk '{ print $1 }')
report=$FORKSAFE_ROOT/snapshot-tests/analyzers/cold-report.jq
declare -A row=()
for r in control:absent,none fixed:fixed,none fresh:fresh,none credit:absent,credit \
	write:absent,write write-other:absent,write-other; do
	row[${r%%:*}]=$RUN_DIR/${r%%:*}.json
	IFS=, read -r genid seed <<<"${r#*:}"
	cold_row "${row[${r%%:*}]}" "$k" 2 det "$genid" "$seed" qemu64 no || true
done
all=("${row[control]}" "${row[fixed]}" "${row[fresh]}" "${row[credit]}" "${row[write]}" "${row[write-other]}")
t_plan 5
jq -rs --arg f table -f "$report" "${all[@]}" | sed 's/^/# /'

# same ROW MOMENT: the row's clones gave one output at MOMENT.
same() { jq -e --arg m "$2" '[.result.clones[][$m].bytes] | (unique | length) == 1 and .[0] != null' "${row[$1]}" >/dev/null; }
# sample ROW MOMENT FIELD: the first clone's FIELD at MOMENT.
sample() { jq -r --arg m "$2" --arg f "$3" '.result.clones[0][$m][$f] // "missing"' "${row[$1]}"; }

controls=$(jq -rs --arg f controls -f "$report" "${all[@]}")
t_check "control identical and fresh-GUID clones different: not blind" test "${controls%% *}" = ok
t_diag "$controls"
same_from() {
	local m
	for m in "${@:2}"; do same "$1" "$m" || { echo "$1: the clones differ at $m" >&2; return 1; }; done
}
t_check "a fixed <genid> boots identical clones (every moment)" same_from fixed first seeded init later
t_check "clones crediting one seed are identical once the crng is ready" same_from credit init later
none_ms=$(sample control init t_ms) credit_ms=$(sample credit init t_ms)
t_diag "first blocking getrandom() returned at $none_ms ms without a seed, at $credit_ms ms with it credited"
t_check "a credited seed makes the crng ready sooner" test "$credit_ms" -lt "$none_ms"
t_diag "write: first $(sample write first bytes | cut -c1-16), seeded $(sample write seeded bytes | cut -c1-16); write-other: first $(sample write-other first bytes | cut -c1-16), seeded $(sample write-other seeded bytes | cut -c1-16)"
t_check "an uncredited seed write before init changes the next output (and nothing before it)" \
	test "$(sample write first bytes)" = "$(sample write-other first bytes)" -a \
	"$(sample write seeded bytes)" != "$(sample write-other seeded bytes)"
t_done
