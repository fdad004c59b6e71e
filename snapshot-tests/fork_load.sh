#!/bin/bash
# A fork while every vCPU is busy: a 2-vCPU VM records getrandom() on both
# vCPUs, streams through a WireGuard tunnel to its peer and sends a
# heartbeat beside it every 5 ms (network interrupts, timers), across the
# snapshot and in every clone; each clone runs next to a restore of the
# peer (lib/wg_fork.sh, load_row).  Per kernel:
#  - the negative control (the original's GUID) stays the reference's: at
#    most 10 fresh records per thousand, since the kernel's own draws for
#    the traffic shift the recorder's blocks (rng-exposure -f 10; about 2
#    per thousand measured), or the row is blind and fails;
#  - every clone sees a new GUID, logs the fork once and diverges;
#  - patched: not one record shared with the reference or the other clone
#    after the GUID changed, not one packet under a pre-fork key, and
#    every clone completes a new handshake;
#  - stock, the positive control: at least one clone shows its window.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

n=2
ROWS=()
for k in $(test_kernels); do
	ROWS+=("$RUN_DIR/$k-load.json")
	load_row "$k" "$n" "${ROWS[-1]}" || true
done
rows_judge "${ROWS[@]}"
i=0
# shellcheck disable=SC2034 # v and t_row read VERDICT
for VERDICT in "${ROW_VERDICTS[@]}"; do
	row=${ROWS[$i]}
	i=$((i + 1))
	tag="$(v kernel), 2 vCPUs busy, tunnel streaming"
	t_row "$tag: measured with a negative control within its bound" || continue
	t_eq "$tag: every clone sees a new GUID and logs the fork once" \
		"$(v guid_changed) $(v reseeded_once)" "$n $n"
	t_eq "$tag: every clone diverges" "$(v diverged)" "$n"
	if [ "$(kernel_role "$(v kernel)")" = stock ]; then
		t_check "$tag: the positive control: a clone shows the stock window" test "$(v exposure_max)" -gt 0
		continue
	fi
	t_eq "$tag: not one record shared after the GUID changed" "$(v exposure_max) $(v cross_clone_max)" "0 0"
	# "No pre-fork packet" means something only where the capture saw the stream.
	t_eq "$tag: every clone's capture holds its stream's data packets" \
		"$(jq '[.result.wg.clones[] | select(.data_sent > 0)] | length' "$row")" "$n"
	t_eq "$tag: no packet under a pre-fork key" \
		"$(jq '[.result.wg.clones[].prefork_packets] | add' "$row")" 0
	t_eq "$tag: every clone completes a new handshake" \
		"$(jq '[.result.wg.clones[] | select(.postfork_sessions > 0)] | length' "$row")" "$n"
done
t_done
