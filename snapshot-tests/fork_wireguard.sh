#!/bin/bash
# WireGuard across VM forks: a peer and a VM with a tunnel between them are
# snapshotted, and the VM restored into new QEMU processes (migrate-file),
# each clone next to a restore of the peer; wg-detect reads each clone's
# wire and matches its packets to the sessions of the original's capture
# (a packet is pre-fork when its index is a session the original held
# keys for, post-fork when it belongs to a handshake the clone made after
# its resume, and unattributed otherwise: an error row, never safe)
# (lib/wg_fork.sh).  Per kernel, once with the tunnel streaming across
# the snapshot, once with it idle.
#  - the negative control (two clones with the original GUID) must show
#    nonce reuse, two plaintexts under one key and counter; a detector
#    that finds none is blind, and the test fails;
#  - patched: no fresh clone sends one packet under a pre-fork key, no two
#    share a nonce, each completes a new handshake, with traffic and
#    without, and the stream reaches the peer again after the fork;
#  - stock: the same is measured and reported, not asserted (the window
#    is a race), except that it rekeys once traffic asks for it and that,
#    streaming, its clones send under the original's session after the
#    resume (the positive control of the matching: stock's notifier
#    expires the keys only once the notification was handled).
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

n=2
ROWS=()
# shellcheck disable=SC2046 # a list of words
wg_rows "$RUN_DIR" "$n" $(test_kernels)
rows_judge "${ROWS[@]}"
# shellcheck disable=SC2034 # v and t_row read VERDICT
for VERDICT in "${ROW_VERDICTS[@]}"; do
	tag="$(v kernel), tunnel $(v traffic)"
	t_row "$tag: measured with a negative control (the controls reuse nonces)" || continue
	if [ "$(kernel_role "$(v kernel)")" = patched ]; then
		t_eq "$tag: no packet under a pre-fork key" "$(v prefork_packets)" 0
		t_eq "$tag: no nonce reuse between fresh clones" "$(v nonce_reuse_pairs)" 0
		t_eq "$tag: every clone completes a new handshake" "$(v rekeyed)" "$n"
		if [ "$(v traffic)" = stream ]; then
			t_eq "$tag: the stream reaches the peer again in every clone" "$(v delivering)" "$n"
		fi
	elif [ "$(v traffic)" = stream ]; then
		t_eq "$tag: every clone rekeys once traffic asks" "$(v rekeyed)" "$n"
		t_check "$tag: clones send under the original's session after the resume (positive control)" \
			test "$(v prefork_packets)" -gt 0
	else
		t_diag "$tag: $(v rekeyed) of $n clones rekeyed without traffic"
	fi
done
t_done
