#!/bin/bash
# WireGuard across VM forks: a peer and a VM with a tunnel between them are
# snapshotted, and the VM restored into new QEMU processes (migrate-file),
# each clone next to a restore of the peer; wg-detect reads each clone's
# wire.  Per kernel, once with the tunnel streaming across the snapshot,
# once with it idle.
#  - the negative control (two clones with the original GUID) must show
#    nonce reuse, two plaintexts under one key and counter; a detector
#    that finds none is blind, and the test fails;
#  - patched: no fresh clone sends one packet under a pre-fork key, no two
#    share a nonce, each completes a new handshake, with traffic and
#    without, and the stream reaches the peer again after the fork;
#  - stock: the same is measured and reported, not asserted (the window
#    is a race), except that it rekeys once traffic asks for it.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

n=2
for k in $(test_kernels); do
	for traffic in stream idle; do
		r=$RUN_DIR/wg-$k-$traffic.json
		tag="$k, tunnel $traffic"
		if ! wg_run "$k" "$(kernel_path "$k")" "$traffic" "$n" "$r"; then
			t_fail "$tag: measured with a negative control"
			t_diag "$tag: $(jq -r .error "$r")"
			continue
		fi
		q() { jq -r "$1" "$r"; }
		t_diag "$tag: fresh $(q '[.fresh.clones[] | "prefork=\(.prefork_packets) initiation_us=\(.first_initiation_us) handshake_us=\(.handshake_us) new_data_us=\(.first_new_data_us) delivered=\(.delivered)"] | join("; ")'), reuse pairs $(q .fresh.nonce_reuse_pairs)"
		t_diag "$tag: control $(q '[.control.clones[] | "prefork=\(.prefork_packets)"] | join("; ")'), reuse pairs $(q .control.nonce_reuse_pairs)"
		if [ "$(q .control.nonce_reuse_pairs)" -gt 0 ]; then
			t_ok "$tag: measured with a negative control (the control reuses nonces)"
		else
			t_fail "$tag: measured with a negative control (the control reuses nonces)"
			t_diag "$tag: the detector found no reuse between clones that share everything: blind"
			continue
		fi
		rekeyed=$(q '[.fresh.clones[] | select(.handshake_us >= 0)] | length')
		if [ "$k" = patched ]; then
			t_eq "$tag: no packet under a pre-fork key" "$(q '[.fresh.clones[].prefork_packets] | add')" 0
			t_eq "$tag: no nonce reuse between fresh clones" "$(q .fresh.nonce_reuse_pairs)" 0
			t_eq "$tag: every clone completes a new handshake" "$rekeyed" "$n"
			if [ "$traffic" = stream ]; then
				t_eq "$tag: the stream reaches the peer again in every clone" \
					"$(q '[.fresh.clones[] | select(.delivered > 0)] | length')" "$n"
			fi
		elif [ "$traffic" = stream ]; then
			t_eq "$tag: every clone rekeys once traffic asks" "$rekeyed" "$n"
		else
			t_diag "$tag: $rekeyed of $n clones rekeyed without traffic"
		fi
	done
done
t_done
