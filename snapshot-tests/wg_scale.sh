#!/bin/bash
# A VM with many WireGuard peers forked (make wg-scale runs up to 200):
# 20 peers on one hub guest, 10 of them with a session at the snapshot,
# nothing flowing after it (lib/wg_scale.sh).  Per kernel, two fresh
# clones and one control (the original's GUID), each next to a restore of
# the hub, their wire read by wg-detect, which names a peer by its port
# and matches each handshake to the original's capture (two fresh clones:
# an initiation a clone sent before its first heartbeat is its own only
# if the other did not send it too):
#  - the negative control contacts no peer, else the row is blind;
#  - no idle peer is contacted by a fresh clone (on any kernel);
#  - patched: every peer in use rekeys (the rekey starts at the fork, not
#    at the next packet);
#  - stock, the positive control: it rekeys only when traffic asks, so
#    without traffic its peers in use do not all rekey, and the check
#    above must be able to say so.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

peers=20 used=10
export SCALE_WINDOW_S=10 # the row runs in a shell of its own
for k in $(test_kernels); do
	scale_row "$k" "$peers" "$used" 2 "$RUN_DIR/$k.json" || true
	s=$(scale_summary <"$RUN_DIR/$k.json")
	tag="$k, $peers peers, $used in use"
	if [ "$(jq -r '.error // empty' <<<"$s")" ]; then
		t_fail "$tag: measured"
		t_diag "$(jq -r .error <<<"$s")"
		continue
	fi
	t_ok "$tag: measured"
	t_eq "$tag: the control (unchanged GUID) contacts no peer" "$(jq .control_contacted <<<"$s")" 0
	t_eq "$tag: no idle peer is contacted" "$(jq .idle_contacted_max <<<"$s")" 0
	if [ "$(kernel_role "$k")" = stock ]; then
		t_check "$tag: the positive control: without traffic, not every peer in use rekeys" \
			test "$(jq .rekeyed_min <<<"$s")" -lt "$used"
	else
		t_eq "$tag: every peer in use rekeys" "$(jq .rekeyed_min <<<"$s")" "$used"
	fi
	t_diag "$tag: $(jq -r '"\(.rekeyed_min) rekeyed, median \(.rekey_median_ms // "-") ms, last \(.rekey_last_ms // "-") ms, \(.cookies) cookie replies"' <<<"$s")"
done
t_done
