#!/bin/bash
# WireGuard across VM forks: a peer and a VM with a tunnel between them are
# snapshotted, and the VM restored into new QEMU processes (migrate-file),
# each clone next to a restore of the peer; wg-detect reads each clone's
# wire and matches its packets to the sessions of the original's capture
# (a packet is pre-fork when its index is a session the original held
# keys for, post-fork when it belongs to a handshake the clone made after
# its resume, and unattributed otherwise: an error row, never safe)
# (lib/wg_fork.sh).  Per kernel, once with the tunnel streaming across
# the snapshot, once with it idle (stock idle only in make demo: it
# asserts nothing), and once with the peer's restore playing a sibling
# clone that sends to the VM under the pre-fork session.
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
#  - the sibling: a control clone (no fork) must accept its datagrams and
#    move its endpoint (else the row could not tell); patched, no fresh
#    clone accepts one or moves its endpoint; stock, they do (the hole
#    the series closes, shown on the same run).
set -euo pipefail
# Each clone runs 4 s (make demo and bench-wg: 6): the patched rekey comes
# within 40 ms, stock's first pre-fork packet within 110 ms, and the
# controls reuse hundreds of nonces in 4 s.  (Exported: rows read it.)
export WG_WINDOW_S=${WG_WINDOW_S:-4}
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

n=2
ROWS=()
for k in $(test_kernels); do
	traffic="stream idle"
	[ "$(kernel_role "$k")" = patched ] || traffic=stream
	WG_TRAFFIC=$traffic wg_rows "$RUN_DIR" "$n" "$k"
done
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
# The sibling's positive control, stock, needs one clone to show the hole.
for k in $(test_kernels); do
	row=$RUN_DIR/wg-$k-sibling.json
	wg_sibling_row "$k" "$(fresh_clones "$k" "$n")" "$row" || true
	verdict=$(wg_sibling_verdict "$row")
	tag="$k, a sibling sending under the pre-fork session"
	t_diag "$tag: $verdict"
	measured=$([ "${verdict%%:*}" != error ]; echo $?)
	t_result "$measured" "$tag: measured (its datagrams on every clone's wire, a control without a fork accepted them)"
	[ "$measured" = 0 ] || continue
	if [ "$(kernel_role "$k")" = patched ]; then
		t_eq "$tag: no fresh clone accepts a datagram or moves its endpoint" "${verdict%%:*}" refused
	else
		t_eq "$tag: fresh clones accept its datagrams (positive control)" "${verdict%%:*}" accepted
	fi
done
t_done
