# shellcheck shell=bash
# WireGuard at scale.  Sourced by measure.sh; defines functions only.
#
#            vde_switch (one per row)
#          /                        \
#   hub: eth0 10.9.0.1              vm: eth0 10.9.0.2 --- filter-dump: CLONE.pcap
#        wg1 :51101 .. wgN :51100+N     wg0 :51002, N peers: peer I at
#        (each one peer: the VM)        10.9.0.1:51100+I, tunnel 10.12.x.y/32
#
# A VM with PEERS WireGuard peers, all of them on one other guest (the
# hub: one interface, key and port per peer, since a peer is a key).
# Before the snapshot the VM sends one packet to each of the first IN_USE
# peers, which sets up a session with each; the others stay idle (never
# contacted).  Then nothing flows through the tunnels: whatever handshake
# a clone starts after its restore, the fork started.  Each clone is
# restored next to a restore of the hub for SCALE_WINDOW_S, its wire
# captured; wg-detect names each peer by the port the VM sent an
# initiation to.  Expected of a kernel that rekeys at once (patched): every
# peer in use rekeys, no idle peer is contacted, and a control (the
# original's GUID) contacts nobody.
#
# With clocks behind (scale_behind_row, make wg-deploy --scale): every
# peer in use and kept alive (PersistentKeepalive, as roaming and NATed
# deployments run), the VM's wall clock set SCALE_BEHIND_S behind just
# before the snapshot, so that every initiation a clone stamps is earlier
# than the last the hub took from its key; WG_CLOCK_STEP (lib/wg_fork.sh)
# says whether the fork hooks step the clock and start the handshakes over
# (20-wireguard sets the peers again; each one's keepalive then initiates
# at once).  Judged by analyzers/wg-scale-clock.jq.
#
#   scale_row KERNEL_NAME PEERS IN_USE CLONES OUT.json   (in the parent)
#   scale_behind_row KERNEL_NAME PEERS CLONES OUT.json   (in the parent)
#   scale_measure KERNEL_NAME KERNEL PEERS IN_USE CLONES (in the row's child)
# result.json: {"peers", "in_use", "fresh": wg-detect's report of the
# fresh clones, "control": of the control}; scale_summary turns a row
# into the figures.

SCALE_PORT_BASE=51100
SCALE_WINDOW_S=${SCALE_WINDOW_S:-20}
SCALE_SETUP_TIMEOUT=600 # setting up 200 interfaces on the hub under TCG
SCALE_MAX_PEERS=1000
SCALE_BEHIND_S=${SCALE_BEHIND_S:-0}
SCALE_KEEPALIVE_S=${SCALE_KEEPALIVE_S:-}

scale_row() {
	local kname=$1 n=$2 used=$3 nclones=$4 out=$5
	row_run "$RUN_DIR/scale-$kname-$n-$used" "$out" \
		"$(row_keys kind=wg-scale kernel="$kname" peers="$n" in_use="$used")" \
		scale_measure "$kname" "$(kernel_path "$kname")" "$n" "$used" "$nclones"
}

# scale_behind_row KERNEL_NAME PEERS CLONES OUT.json: a row of kind
# wg-scale-behind, every peer in use, kept alive every 25 s, the clones'
# clocks SCALE_BEHIND_S behind, stepped by WG_CLOCK_STEP.
scale_behind_row() {
	local kname=$1 n=$2 nclones=$3 out=$4 keepalive=25
	case "$WG_CLOCK_STEP" in none | hook) ;; *) die "scale: WG_CLOCK_STEP=$WG_CLOCK_STEP: none or hook" ;; esac
	# For the row's own shell alone (a later scale_row keeps no keepalive).
	SCALE_KEEPALIVE_S=$keepalive row_run "$RUN_DIR/scale-$kname-$n-behind-$SCALE_BEHIND_S-$WG_CLOCK_STEP" "$out" \
		"$(row_keys kind=wg-scale-behind kernel="$kname" peers="$n" in_use="$n" behind="$SCALE_BEHIND_S" \
			step="$WG_CLOCK_STEP" keepalive_s="$keepalive")" \
		scale_measure "$kname" "$(kernel_path "$kname")" "$n" "$n" "$nclones"
}

# scale_clock_verdict ROW.json: one line, "VERDICT: why", by
# analyzers/wg-scale-clock.jq.
scale_clock_verdict() { jq -r -f "$FORKSAFE_ROOT/snapshot-tests/analyzers/wg-scale-clock.jq" "$1"; }

# The tunnel address of peer I (1..SCALE_MAX_PEERS).
scale_addr() { echo "10.12.$(($1 / 250)).$(($1 % 250 + 1))"; }

# scale_stage DIR PEERS IN_USE: keys drawn for this row and the scripts of
# both guests, in DIR/scale/ (packed into the initramfs as /scale/).
scale_stage() {
	local st=$1/scale n=$2 used=$3 i vkey hkey vpub
	mkdir -p "$st"
	vkey=$(wg genkey)
	vpub=$(wg pubkey <<<"$vkey")
	printf '[Interface]\nPrivateKey = %s\nListenPort = %s\n' "$vkey" "$WG_VM_PORT" >"$st/vm.conf"
	for ((i = 1; i <= n; i++)); do
		hkey=$(wg genkey)
		printf '[Interface]\nPrivateKey = %s\nListenPort = %s\n[Peer]\nPublicKey = %s\nAllowedIPs = 10.10.0.2/32\n' \
			"$hkey" "$((SCALE_PORT_BASE + i))" "$vpub" >"$st/hub-$i.conf"
		printf '[Peer]\nPublicKey = %s\nEndpoint = 10.9.0.1:%s\nAllowedIPs = %s/32\n' \
			"$(wg pubkey <<<"$hkey")" "$((SCALE_PORT_BASE + i))" "$(scale_addr "$i")" >>"$st/vm.conf"
		[ -z "$SCALE_KEEPALIVE_S" ] || printf 'PersistentKeepalive = %s\n' "$SCALE_KEEPALIVE_S" >>"$st/vm.conf"
	done
	cat >"$st/hub-up.sh" <<-EOF
		set -e
		i=1
		while [ \$i -le $n ]; do
		        ip link add wg\$i type wireguard
		        wg setconf wg\$i /scale/hub-\$i.conf
		        ip link set wg\$i up
		        i=\$((i + 1))
		done
	EOF
	cat >"$st/vm-up.sh" <<-EOF
		set -e
		ip link add wg0 type wireguard
		wg setconf wg0 /scale/vm.conf
		ip addr add 10.10.0.2/32 dev wg0
		ip link set wg0 up
		ip route add 10.12.0.0/16 dev wg0
	EOF
	# One ping each (nobody answers it: the hub's interfaces have no
	# address) sets up a session with each peer in use.
	{
		for ((i = 1; i <= used; i++)); do echo "ping -c 1 -W 1 $(scale_addr "$i") >/dev/null 2>&1 &"; done
		echo "wait; exit 0"
	} >"$st/kick.sh"
	# How many peers have a session: their latest handshake is not 0.
	printf '%s\n' "wg show wg0 latest-handshakes | grep -vc '	0\$' || true" >"$st/sessions.sh"
}

# scale_snapshot KERNEL_NAME KERNEL PEERS IN_USE DIR: boot the hub and the
# VM with DIR/initramfs.cpio, set up the peers and the sessions, snapshot
# both into DIR/hub and DIR/vm.  Sets WG_NETS and SCALE_INITRAMFS.
scale_snapshot() {
	local kname=$1 kernel=$2 n=$3 used=$4 dir=$5 tag="scale $1 $3 peers" sessions now
	local -a hooks=()
	[ "$WG_CLOCK_STEP" != hook ] || hooks=(--append "forksafe.hooks=$WG_FORK_HOOKS")
	mkdir -p "$dir/hub" "$dir/vm" "$dir/stage"
	scale_stage "$dir/stage" "$n" "$used"
	SCALE_INITRAMFS=$dir/initramfs.cpio
	initramfs_with "$SCALE_INITRAMFS" "$dir/stage" || die "cannot append to $INITRAMFS"
	wg_switch "${dir##*/}"
	progress "$tag: booting the hub and the VM"
	INITRAMFS=$SCALE_INITRAMFS snap_boot migrate-file hub "$kernel" 1 "$dir/hub" --guid "$WG_PEER_GUID" "${WG_NETS[@]:0:2}"
	INITRAMFS=$SCALE_INITRAMFS snap_boot migrate-file vm "$kernel" 1 "$dir/vm" --guid "$WG_VM_GUID" "${WG_NETS[@]:2:2}" \
		--pcap "$dir/orig.pcap" "${hooks[@]}"
	[ ${#hooks[@]} = 0 ] || wg_hooks_wait vm
	guest_call hub net-up 10.9.0.1/24 >/dev/null
	guest_call vm net-up 10.9.0.2/24 >/dev/null
	progress "$tag: $n interfaces on the hub"
	guest_call hub -t "$SCALE_SETUP_TIMEOUT" sh /scale/hub-up.sh >/dev/null
	guest_call vm -t "$SCALE_SETUP_TIMEOUT" sh /scale/vm-up.sh >/dev/null
	guest_call vm stream start beat 10.9.0.1 "$WG_BEAT_PORT" "$WG_BEAT_US" >/dev/null
	progress "$tag: sessions with $used of them"
	guest_call vm -t "$SCALE_SETUP_TIMEOUT" sh /scale/kick.sh >/dev/null
	wait_until "$SCALE_SETUP_TIMEOUT" scale_sessions_are "$used" ||
		die "$tag: $(scale_sessions) of $used sessions came up within ${SCALE_SETUP_TIMEOUT}s"
	sessions=$(scale_sessions)
	[ "$sessions" = "$used" ] || die "$tag: $sessions sessions, not $used: an idle peer was contacted before the snapshot"
	sleep "$WG_SETTLE_S"
	if [ "$SCALE_BEHIND_S" -gt 0 ]; then
		now=$(guest_call vm clock get | agent_field realtime_s)
		guest_call vm clock set "$((now - SCALE_BEHIND_S))" >/dev/null
	fi
	guest_call vm reseed >/dev/null
	progress "$tag: snapshot"
	snap_save migrate-file vm "$dir/vm"
	snap_save migrate-file hub "$dir/hub"
}

scale_sessions() { guest_call vm sh /scale/sessions.sh | agent_field out; }
scale_sessions_are() { [ "$(scale_sessions)" -ge "$1" ]; }

scale_measure() {
	local kname=$1 kernel=$2 n=$3 used=$4 nclones=$5 dir=$ROW_DIR set count i guid clone
	local -a pcaps
	[ "$n" -le "$SCALE_MAX_PEERS" ] || die "scale: at most $SCALE_MAX_PEERS peers, not $n"
	[ "$used" -le "$n" ] || die "scale: $used peers in use of $n"
	scale_snapshot "$kname" "$kernel" "$n" "$used" "$dir"
	for set in fresh control; do
		count=$nclones guid=auto
		[ "$set" = fresh ] || count=1 guid=$WG_VM_GUID
		pcaps=()
		for ((i = 1; i <= count; i++)); do
			clone=$set$i
			progress "scale $kname $n peers: restoring $clone"
			INITRAMFS=$SCALE_INITRAMFS snap_restore migrate-file hub "$dir/hub" "hub-$clone" "$kernel" 1 \
				"$WG_PEER_GUID" "${WG_NETS[@]:0:2}"
			INITRAMFS=$SCALE_INITRAMFS snap_restore migrate-file vm "$dir/vm" "$clone" "$kernel" 1 \
				"$guid" "${WG_NETS[@]:2:2}" --pcap "$dir/$clone.pcap"
			sleep "$SCALE_WINDOW_S"
			guest_quit "$clone"
			guest_quit "hub-$clone"
			pcaps+=("$dir/$clone.pcap")
		done
		wg_detect "$dir/$set.json" "$dir/orig.pcap" "${pcaps[@]}" >/dev/null
	done
	jq -n --argjson n "$n" --argjson u "$used" --slurpfile f "$dir/fresh.json" --slurpfile c "$dir/control.json" \
		'{peers: $n, in_use: $u, fresh: $f[0], control: $c[0]}' >"$dir/result.json"
}

# scale_summary < ROW.json: per row, the figures: for the fresh clones, the
# fewest peers in use that rekeyed in a clone, the most idle peers a clone
# contacted, the median and the latest time (ms after the resume) of a
# peer's handshake over all clones, the cookie replies they received (the
# hub's answer when it is under load: WireGuard's own rate limit); for the
# control, the peers it sent an initiation to.  An error row passes through as {error}.
scale_summary() {
	jq -c --argjson base "$SCALE_PORT_BASE" '
		if .error then {kernel, peers, in_use, error} else
		.result as $r | ($base + $r.in_use) as $last |
		[$r.fresh.clones[] | [.peers[] | select(.port > $base and .port <= $last and .handshake_us >= 0)]] as $done |
		([$done[][] | .handshake_us / 1000] | sort) as $t |
		{kernel, peers, in_use, clones: ($r.fresh.clones | length),
		 rekeyed_min: ([$done[] | length] | min),
		 idle_contacted_max: ([$r.fresh.clones[] | [.peers[] | select(.port > $last)] | length] | max),
		 rekey_median_ms: (if ($t | length) > 0 then $t[(($t | length) - 1) / 2 | floor] else null end),
		 rekey_last_ms: ($t | max),
		 cookies: ([$r.fresh.clones[].received.cookie] | add),
		 control_contacted: ([$r.control.clones[].peers[]] | length)}
		end'
}
