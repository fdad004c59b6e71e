#!/bin/bash
# Many clones of one snapshot at once (make crowd runs 16): CROWD clones
# with fresh GUIDs are loaded, resumed together and record side by side
# while the host's cores are shared among them (lib/rng_fork.sh,
# crowd_row).  Per kernel:
#  - the negative control (restored with the original's GUID) is identical
#    to the reference, or the row is blind and fails;
#  - every clone sees a new GUID, logs the fork once and diverges from the
#    reference and from every other clone;
#  - patched: not one record shared with the reference or another clone
#    after the GUID changed;
#  - stock, the positive control: crowding widens its asynchronous window,
#    and at least one clone must show it, or the yardstick is blind here.
# What the crowd costs (load time, RSS) is reported, not asserted.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

CROWD=${CROWD:-6}
kernels=$(test_kernels)
ROWS=()
for k in $kernels; do
	ROWS+=("$RUN_DIR/$k-crowd.json")
	crowd_row "$k" "$CROWD" "${ROWS[-1]}" || true
done
rows_judge "${ROWS[@]}"
# shellcheck disable=SC2034 # v and t_row read VERDICT
for VERDICT in "${ROW_VERDICTS[@]}"; do
	tag="$(v kernel), $CROWD clones at once"
	t_row "$tag: measured with an identical negative control" || continue
	t_eq "$tag: every clone sees a new GUID and logs the fork once" \
		"$(v guid_changed) $(v reseeded_once)" "$CROWD $CROWD"
	t_eq "$tag: every clone diverges from the reference and the others" "$(v diverged)" "$CROWD"
	if [ "$(kernel_role "$(v kernel)")" = stock ]; then
		t_check "$tag: the positive control: a clone shows the stock window" test "$(v exposure_max)" -gt 0
	else
		t_eq "$tag: not one record shared after the GUID changed" \
			"$(v exposure_max) $(v cross_clone_max)" "0 0"
	fi
done
for r in "${ROWS[@]}"; do
	jq -r 'select(.result) | "\(.kernel): \(.together) clones: loaded in \(.result.crowd.load_ms) ms, recorded in \(.result.crowd.run_ms) ms, \(.result.crowd.rss_kb / 1024 | floor) MiB RSS together"' "$r" |
		while read -r line; do t_diag "$line"; done
done
t_done
