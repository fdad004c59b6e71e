#!/bin/bash
# A short storm (make storm runs 100 levels): a clone of a clone of a
# clone, five migrate-file levels, each restored with a fresh GUID and
# each recorded (snapshot-tests/drivers/storm.sh).  Per kernel:
#  - every level logs exactly one fork and reads a new GUID, with no
#    kernel warning;
#  - each level is a row judged by fork-report: its control (restored with
#    the parent's GUID) stays the reference's within its bound, every
#    stream recorded its window after the snapshot and the reference kept
#    the parent's GUID, or the level is an error and the chain fails;
#  - patched: no level produced a block of its parent's state after the
#    GUID changed; stock, the positive control: some level did.  The stock
#    window is a race the reseed sometimes wins: 26 of 33 recorded levels
#    of make storm showed it, and a chain of two showed none in one run of
#    make check; of five, none would be about 1 in 2500.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

STORM_DEPTH=${STORM_DEPTH:-5}
rc=0
"$FORKSAFE_ROOT/snapshot-tests/drivers/storm.sh" --depth "$STORM_DEPTH" --control-every 1 \
	--out "$RUN_DIR" >"$RUN_DIR/storm.md" 2>"$RUN_DIR/storm.err" || rc=$?
[ -s "$RUN_DIR/storm-migrate-file.json" ] ||
	t_fail "storm ran (status $rc: $(tail -n 1 "$RUN_DIR/storm.err"))"
t_eq "the storm's own checks pass (memory bound, new first outputs, no blind control)" \
	"$rc$([ "$rc" = 0 ] || echo ": $(tail -n 1 "$RUN_DIR/storm.err")")" 0
# s FIELD: FIELD of kernel $k's summary.
s() { jq -r --arg k "$k" ".[] | select(.kernel == \$k) | $1" "$RUN_DIR/storm-migrate-file.json"; }
while read -r k; do
	tag="$k, $STORM_DEPTH chained levels"
	t_eq "$tag: one fork logged and a new GUID at each, no warning" \
		"$(s '.one_fork_each and .new_guid_each and .guids_distinct') $(s .warnings)" "true 0"
	t_eq "$tag: every level's recording can tell a fork (no error row)" \
		"$(s .controls_equal)$(s '.errors | if length > 0 then ": " + .[0] else "" end')" "$STORM_DEPTH"
	t_eq "$tag: every level diverges from its parent" "$(s .forks_diverged)" "$STORM_DEPTH"
	if [ "$(kernel_role "$k")" = stock ]; then
		t_check "$tag: the positive control: a level shows the stock window" test "$(s .exposed_levels)" -gt 0
	else
		t_eq "$tag: no level exposed its parent's state" "$(s .exposed_levels)" 0
	fi
done < <(jq -r '.[].kernel' "$RUN_DIR/storm-migrate-file.json")
t_done
