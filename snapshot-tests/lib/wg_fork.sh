# shellcheck shell=bash
# The WireGuard fork measurement.  Sourced by measure.sh; defines functions
# only.
#
#            vde_switch (user space, one per row)
#          /                                 \
#   peer: eth0 10.9.0.1                vm: eth0 10.9.0.2 --- filter-dump: CLONE.pcap
#         wg0  10.10.0.1 :51001  <===>     wg0  10.10.0.2 :51002
#         sink on :7000              stream "data" -> 10.10.0.1:7000 (through wg0)
#                                    stream "beat" -> 10.9.0.1:9 (beside wg0)
#
# A peer and a VM, joined by WireGuard over a user-space switch, are
# snapshotted together (migrate-file); each clone of the VM is restored
# next to a restore of the peer, so that every clone meets the peer as it
# was at the snapshot (a peer that had already seen one clone would reject
# the next one's first handshake as a replay: the clones' clocks all
# restart at the snapshot).  The peer keeps its GUID and sees no fork.  The
# VM's wire is captured and read by wg-detect; its heartbeat, every 5 ms
# beside the tunnel, marks the resume in the capture.
#
# TRAFFIC "masked" streams as "stream" does, with the VM's vmgenid
# notification (ACPI GPE 5) held back from before the snapshot, so that
# only what checks the ID itself sees the fork: the series' synchronous
# checks on the patched kernel, nothing on stock, where the keys never
# expire.  Each clone's GPE line says whether the event was raised and
# held ("STS").
# TRAFFIC "sibling" measures the other direction: the peer is restored
# as a sibling clone would act with the keys it shares, sending to the VM
# under the pre-fork session from another port (wg_sibling_measure).
#
# TRAFFIC "behind" streams as "stream" does, with the VM's wall clock set
# behind its last handshake before the snapshot; "live" lets the VM run on
# after a live snapshot; "both" restores clones side by side
# (wg_clock_row makes the three).
#
#   wg_rows, wg_row KERNEL_NAME TRAFFIC CLONES OUT.json (in the parent)
#   wg_measure KERNEL_NAME KERNEL TRAFFIC CLONES (in the row's child)

WG_WINDOW_S=${WG_WINDOW_S:-6}
WG_STREAM_US=${WG_STREAM_US:-10000} # through the tunnel: 100 datagrams/s
WG_BEAT_US=5000                      # on the wire: marks the resume in the capture
WG_BEAT_PORT=9                       # (UDP discard)
WG_PEER_PORT=51001 WG_VM_PORT=51002 WG_SINK_PORT=7000
WG_PEER_GUID=6f726b73-6166-6500-0000-00000000beef
WG_VM_GUID=6f726b73-6166-6500-0000-0000000000fe
WG_HANDSHAKE_TIMEOUT=20 # the tunnel's first handshake after wg-up
WG_FLOW_S=2             # the stream runs through the tunnel before we look
WG_SETTLE_S=1           # after the stream stops, before the snapshot

WG_CONTROLS=${WG_CONTROLS:-2}

# Fresh clones a row needs at least: a fork-safe kernel may initiate
# before a clone's first heartbeat, and wg-detect takes such an initiation
# for the clone's own only when no other clone sent it (one sealed before
# the snapshot is in every clone); with one clone its new session is never
# attributed, and the row says error where it should say safe.
WG_MIN_CLONES=2

# wg_rows DIR CLONES KERNEL_NAME...: a row per kernel and traffic
# (WG_TRAFFIC), in DIR/wg-KERNEL-TRAFFIC.json, appended to ROWS.
WG_TRAFFIC=${WG_TRAFFIC:-stream idle masked}
WG_VMGENID_GPE=5
wg_rows() {
	local dir=$1 n=$2 k traffic
	shift 2
	[ "$n" -ge "$WG_MIN_CLONES" ] || die "wg_rows: $n fresh clone(s) a row, not the $WG_MIN_CLONES or more a WireGuard row needs"
	for k in "$@"; do
		for traffic in $WG_TRAFFIC; do
			ROWS+=("$dir/wg-$k-$traffic.json")
			wg_row "$k" "$traffic" "$n" "${ROWS[-1]}" || true
		done
	done
}

# wg_row KERNEL_NAME TRAFFIC CLONES OUT.json: one row.  TRAFFIC "stream"
# keeps the VM sending through the tunnel across the snapshot; "idle" lets
# the tunnel fall silent after its handshake.  CLONES clones get a fresh
# GUID; WG_CONTROLS (2) controls keep the original's (and always stream,
# or nothing could be reused).
wg_row() {
	local kname=$1 traffic=$2 nclones=$3 out=$4
	row_run "$RUN_DIR/wg-$kname-$traffic" "$out" \
		"$(row_keys kind=wg kernel="$kname" traffic="$traffic")" \
		wg_measure "$kname" "$(kernel_path "$kname")" "$traffic" "$nclones"
}

# result.json: {"fresh", "control"}, wg-detect's reports with each
# clone's "delivered" datagrams added.
wg_measure() {
	local kname=$1 kernel=$2 traffic=$3 nclones=$4 dir=$ROW_DIR set n i
	local -a pcaps
	wg_snapshot "$kname" "$kernel" "$traffic" "$dir"
	case "$traffic" in
	sibling) wg_sibling_measure "$kernel" "$nclones" "$dir"; return ;;
	behind) wg_clock_measure "$kernel" "$nclones" "$dir"; return ;;
	live) wg_live_measure "$kernel" "$nclones" "$dir"; return ;;
	both) wg_both_measure "$kernel" "$nclones" "$dir"; return ;;
	esac
	for set in fresh control; do
		n=$nclones
		[ "$set" = fresh ] || n=$WG_CONTROLS
		pcaps=()
		for ((i = 1; i <= n; i++)); do
			progress "wg $kname $traffic: restoring $set$i"
			wg_restore_pair "$kernel" "$traffic" "$set" "$set$i" "$dir"
			pcaps+=("$dir/$set$i.pcap")
		done
		wg_detect "$dir/$set.detect.json" "$dir/orig.pcap" "${pcaps[@]}" >"$dir/$set.txt"
		jq --argjson d "$(for ((i = 1; i <= n; i++)); do cat "$dir/$set$i.delivered"; done | jq -s .)" \
			--argjson g "$(for ((i = 1; i <= n; i++)); do cat "$dir/$set$i.gpe"; done | jq -Rs 'split("\n")[:-1]')" \
			'.clones |= [range(0; length) as $i | .[$i] + {delivered: $d[$i], gpe: $g[$i]}]' \
			"$dir/$set.detect.json" >"$dir/$set.json"
	done
	jq -n --slurpfile f "$dir/fresh.json" --slurpfile c "$dir/control.json" \
		'{fresh: $f[0], control: $c[0]}' >"$dir/result.json"
}

# wg_switch NAME: a switch for a peer and a VM; WG_NETS holds the --net
# options of the peer (first two words) and of the VM (last two).
wg_switch() {
	switch_start "$1"
	WG_NETS=(--net "$SWITCH_DIR,52:54:00:f0:00:01" --net "$SWITCH_DIR,52:54:00:f0:00:02")
}

# wg_tunnel PEER VM: addresses on the wire, WireGuard keys drawn for this
# run, the tunnel between the two guests, and the peer's sink.
wg_tunnel() {
	local peer=$1 vm=$2 pkey vkey
	pkey=$(wg genkey) vkey=$(wg genkey)
	guest_call "$peer" net-up 10.9.0.1/24 >/dev/null &&
		guest_call "$peer" wg-up "$pkey" "$WG_PEER_PORT" 10.10.0.1/24 "$(wg pubkey <<<"$vkey")" \
			- 10.10.0.2/32 >/dev/null &&
		guest_call "$vm" net-up 10.9.0.2/24 >/dev/null &&
		guest_call "$vm" wg-up "$vkey" "$WG_VM_PORT" 10.10.0.2/24 "$(wg pubkey <<<"$pkey")" \
			"10.9.0.1:$WG_PEER_PORT" 10.10.0.1/32 >/dev/null &&
		guest_call "$peer" sink start "$WG_SINK_PORT" >/dev/null
}

# wg_stream VM NAME INTERVAL_US: datagrams through the tunnel to the sink.
wg_stream() {
	guest_call "$1" stream start "$2" 10.10.0.1 "$WG_SINK_PORT" "$3" >/dev/null
}

# What a guest's sink (the peer's; in the sibling row the VM's) has
# received so far.
wg_received() { guest_call "$1" sink stat | agent_field received; }

wg_handshaken() { [ "$(guest_call "$1" wg-show | agent_field latest_handshake)" != 0 ]; }

# wg_detect OUT.json ORIGINAL.pcap|none CAPTURE...: wg-detect on captures
# of the VM, its packets matched to the sessions of the original's capture
# (wg_snapshot's orig.pcap): pre-fork by matching, not by absence.  "none"
# only where a caller has no original and says why (absence then).
wg_detect() {
	local out=$1 orig=$2
	local -a o=()
	shift 2
	if [ "$orig" != none ]; then
		[ -s "$orig" ] || die "wg_detect: no capture of the original at $orig"
		o=(-o "$orig")
	fi
	"$BUILD/wg-detect" -p "$WG_VM_PORT" -m "$WG_BEAT_PORT" "${o[@]}" -j "$out" "$@"
}

# wg_snapshot KERNEL_NAME KERNEL TRAFFIC DIR [SHAPE]: boot the peer and the
# VM (WG_VM_VCPUS vCPUs), bring the tunnel up and snapshot both into
# DIR/peer and DIR/vm.  With SHAPE, the VM also records the RNG's output
# in that shape across the snapshot (as rng_original's guests do).  Sets
# WG_NETS (wg_switch).
WG_VM_VCPUS=1
wg_snapshot() {
	local kname=$1 kernel=$2 traffic=$3 dir=$4 shape=${5:-} tag="wg $1 $3"
	local -a hooks=()
	case "$traffic:$WG_CLOCK_STEP" in behind:hook | live:hook | both:hook | both:identity) hooks=(--append "forksafe.hooks=$WG_FORK_HOOKS") ;; esac
	mkdir -p "$dir/peer" "$dir/vm"
	wg_switch "${dir##*/}"
	progress "$tag: booting the peer and the VM"
	snap_boot migrate-file peer "$kernel" 1 "$dir/peer" --guid "$WG_PEER_GUID" "${WG_NETS[@]:0:2}"
	snap_boot migrate-file vm "$kernel" "$WG_VM_VCPUS" "$dir/vm" --guid "$WG_VM_GUID" "${WG_NETS[@]:2:2}" \
		--pcap "$dir/orig.pcap" "${hooks[@]}"
	wg_tunnel peer vm
	wg_peer_debug peer "$traffic"
	[ ${#hooks[@]} = 0 ] || wg_hooks_wait vm
	guest_call vm stream start beat 10.9.0.1 "$WG_BEAT_PORT" "$WG_BEAT_US" >/dev/null
	wg_stream vm data "$WG_STREAM_US"
	wait_until "$WG_HANDSHAKE_TIMEOUT" wg_handshaken vm ||
		die "the tunnel did not come up: no handshake in ${WG_HANDSHAKE_TIMEOUT}s"
	# Where the peer's log is read, it must show the handshake it just took.
	if wg_peer_logged "$traffic" && [ "$(wg_peer_log peer | jq .taken)" -lt 1 ]; then
		die "the peer logged no initiation of the tunnel's handshake: its log cannot tell refused from lost"
	fi
	sleep "$WG_FLOW_S"
	[ "$(wg_received peer)" -gt 0 ] || die "nothing came through the tunnel"
	if [ "$traffic" = sibling ]; then wg_sibling_prepare "$dir"; fi
	case "$traffic" in
	stream | behind | live | both) ;;
	masked) guest_call vm gpe "$WG_VMGENID_GPE" disable >/dev/null ;;
	*) guest_call vm stream stop data >/dev/null ;;
	esac
	sleep "$WG_SETTLE_S"
	if [ "$traffic" = sibling ]; then wg_received vm >"$dir/vm-sink.before"; fi
	if [ "$traffic" = behind ]; then wg_clock_back "$dir"; fi
	if [ "$traffic:$WG_CLOCK_STEP" = both:identity ]; then guest_call vm sh "$WG_IDENTITY/enable" >/dev/null; fi
	if [ -n "$shape" ]; then
		rng_require "$(guest_call vm info)" "$kname"
		rng_prepare vm migrate-file ready "$(guest_call vm info)" "$(record_age "$shape" "$kname")"
	fi
	# Nothing from before the snapshot may hide what the fork changes.
	guest_call vm reseed >/dev/null
	[ -z "$shape" ] || guest_call vm record start "$shape" "$(shape_records "$shape" "$kname")" >/dev/null
	progress "$tag: snapshot"
	if [ "$traffic" = live ]; then
		# A live snapshot: the VM runs on, its peer is never saved.
		SNAP_LIVE=1 snap_save migrate-file vm "$dir/vm"
		return
	fi
	snap_save migrate-file vm "$dir/vm"
	snap_save migrate-file peer "$dir/peer"
}

# The peer's own view of the VM's initiations: WireGuard's debug messages
# (CONFIG_DYNAMIC_DEBUG), turned on once the tunnel is configured and
# before its first handshake, read from the peer's kernel log.  The peer
# knows only the VM, so every initiation it logs is the VM's (or a
# clone's: they share its address).  An initiation it took is "Receiving
# handshake initiation"; one that passed the MAC (the sender knows the
# peer's key) but failed noise's checks is "Invalid handshake initiation":
# a timestamp not later than the last taken from that key, or a second
# one within 20 ms.  Neither for an initiation the capture shows sent: it
# never reached the peer.  These lines go through net_ratelimit(), whose
# 10 lines per 5 s every other rate-limited network message shares (a
# clone's stale data packets log "invalid nonce" by the hundred): the
# peer's net.core.message_cost=0 lifts that limit.  The clock rows and
# the rows of clones side by side read the log; there it must work.

# wg_peer_logged TRAFFIC: does a row of TRAFFIC read the peer's log?
wg_peer_logged() { case "$1" in behind | live | both) return 0 ;; esac; return 1; }

# wg_peer_debug PEER TRAFFIC: WireGuard's debug messages on in PEER's
# kernel log, unlimited; a row that reads the log dies without them.
wg_peer_debug() {
	guest_call "$1" sysctl net.core.message_cost 0 >/dev/null &&
		guest_call "$1" dyndbg "module wireguard +p" >/dev/null && return 0
	! wg_peer_logged "$2" ||
		die "the peer's WireGuard debug messages cannot be turned on (a kernel without CONFIG_DYNAMIC_DEBUG?)"
}

# wg_peer_log PEER: JSON, the VM's initiations PEER logged so far:
# {"invalid", "taken"}.
wg_peer_log() {
	local invalid taken
	if ! invalid=$(guest_call "$1" kmsg "Invalid handshake initiation from 10.9.0." | agent_field count) ||
		! taken=$(guest_call "$1" kmsg "Receiving handshake initiation from peer" | agent_field count); then
		die "the peer's kernel log cannot be read"
	fi
	jq -nc --argjson i "$invalid" --argjson t "$taken" '{invalid: $i, taken: $t}'
}

# wg_hooks_watching GUEST: its forksafe-hooks daemon waits for a fork.
wg_hooks_watching() { tr -d '\r' <"$(guest_dir "$1")/console.log" | grep -q 'forksafe-hooks: watching generation'; }

# wg_hooks_wait GUEST: until its forksafe-hooks watches, or the row dies.
wg_hooks_wait() {
	wait_until "$WG_HANDSHAKE_TIMEOUT" wg_hooks_watching "$1" ||
		die "forksafe-hooks never said it was watching: $(guest_console_tail "$1")"
}

# wg_restore KERNEL DIR NAME GUID: one clone of the VM, its wire captured
# in DIR/NAME.pcap.
wg_restore() {
	snap_restore migrate-file vm "$2/vm" "$3" "$1" "$WG_VM_VCPUS" "$4" "${WG_NETS[@]:2:2}" --pcap "$2/$3.pcap"
}

# wg_restore_peer KERNEL DIR NAME: the peer as it was at the snapshot.
wg_restore_peer() {
	snap_restore migrate-file peer "$2/peer" "$3" "$1" 1 "$WG_PEER_GUID" "${WG_NETS[@]:0:2}"
}

# wg_restore_pair KERNEL TRAFFIC SET CLONE DIR: a clone next to a restore
# of the peer (wg_window).
wg_restore_pair() {
	wg_restore_peer "$1" "$5" "peer-$4"
	wg_window "$@" "peer-$4"
	guest_quit "peer-$4"
}

# wg_window KERNEL TRAFFIC SET CLONE DIR PEER: CLONE restored next to the
# running PEER for WG_WINDOW_S, then stopped; DIR/CLONE.delivered counts
# what reached PEER's sink meanwhile, DIR/CLONE.gpe is its GPE line, and
# for the clock rows DIR/CLONE.clock.json what wg_clock_seen saw.
wg_window() {
	local kernel=$1 traffic=$2 set=$3 clone=$4 dir=$5 peer=$6 before after guid=auto
	[ "$set" = fresh ] || guid=$WG_VM_GUID
	before=$(wg_received "$peer")
	wg_restore "$kernel" "$dir" "$clone" "$guid"
	# A control streams even in the idle case: reuse needs traffic.
	if [ "$traffic" = idle ] && [ "$set" = control ]; then
		wg_stream "$clone" data "$WG_STREAM_US"
	fi
	sleep "$WG_WINDOW_S"
	after=$(wg_received "$peer")
	echo "$((after - before))" >"$dir/$clone.delivered"
	guest_call "$clone" gpe "$WG_VMGENID_GPE" status | agent_field gpe >"$dir/$clone.gpe"
	case "$traffic" in behind | live) wg_clock_seen "$clone" "$peer" "$dir" >"$dir/$clone.clock.json" ;; esac
	guest_quit "$clone"
}

# ---- a sibling sending under the pre-fork session ------------------------------
# A sibling clone holds both halves of every pre-fork keypair, the
# receiving one included: it can seal packets as the peer would, with
# counters above any this clone has seen, from an address of its own.  A
# kernel that accepts them delivers forged traffic and moves its endpoint
# for the peer to the sender (wg_socket_set_peer_endpoint()).  The peer's
# restore plays that sibling: it keeps its GUID (no fork, its sessions
# live), listens on WG_SIBLING_PORT instead of its own port (so it hears
# none of the clone's new handshakes, as a sibling would not answer them)
# and streams to the VM's sink under the session it had at the snapshot.
# The VM's own stream stops before the snapshot, so that nothing it sends
# starts a handshake the sibling would answer.  A clone with the
# original's GUID is the live positive control: without a fork the same
# packets are accepted, so the kernel was asked.
WG_SIBLING_PORT=51003
WG_SIBLING_OFFER=${WG_SIBLING_OFFER:-100} # datagrams sent to each clone before its count is read
WG_SIBLING_TIMEOUT=30
WG_SIBLING_CONTROLS=${WG_SIBLING_CONTROLS:-1}

wg_sibling_sent() { guest_call "$1" stream stat rx | agent_field sent; }

# wg_sibling_prepare DIR: in the original, the peer streams to the VM's
# sink until the VM has received some, then stops (the restore restarts
# it), so that the sink's count is still when it is read before the
# snapshot.
wg_sibling_prepare() {
	guest_call vm sink start "$WG_SINK_PORT" >/dev/null
	guest_call peer stream start rx 10.10.0.2 "$WG_SINK_PORT" "$WG_STREAM_US" >/dev/null
	wait_until "$WG_HANDSHAKE_TIMEOUT" wg_sibling_delivered vm ||
		die "the peer's stream did not reach the VM through the tunnel"
	guest_call peer stream stop rx >/dev/null
}

# wg_sibling_delivered GUEST: its sink has received something.
wg_sibling_delivered() { [ "$(wg_received "$1")" -gt 0 ]; }

# wg_sibling_offered PEER SENT0: it has sent WG_SIBLING_OFFER since SENT0.
wg_sibling_offered() { [ "$(($(wg_sibling_sent "$1") - $2))" -ge "$WG_SIBLING_OFFER" ]; }

# wg_sibling_measure KERNEL CLONES DIR: CLONES fresh clones and
# WG_SIBLING_CONTROLS with the original's GUID, each next to a sibling.
# result.json: {"clones": [{"name", "set", "offered" (data packets that
# reached its wire while it ran), "accepted" (datagrams its sink received),
# "endpoint" (its endpoint for the peer at the end)}], "own_endpoint"}.
wg_sibling_measure() {
	local kernel=$1 nclones=$2 dir=$3 set n i clone sent0 before guid
	before=$(cat "$dir/vm-sink.before")
	for set in fresh control; do
		n=$nclones guid=auto
		[ "$set" = fresh ] || n=$WG_SIBLING_CONTROLS guid=$WG_VM_GUID
		for ((i = 1; i <= n; i++)); do
			clone=$set$i
			progress "wg sibling: restoring $clone next to a sibling"
			wg_restore_peer "$kernel" "$dir" "peer-$clone"
			guest_call "peer-$clone" wg-port "$WG_SIBLING_PORT" >/dev/null
			guest_call "peer-$clone" stream start rx 10.10.0.2 "$WG_SINK_PORT" "$WG_STREAM_US" >/dev/null
			wg_restore "$kernel" "$dir" "$clone" "$guid"
			sent0=$(wg_sibling_sent "peer-$clone")
			wait_until "$WG_SIBLING_TIMEOUT" wg_sibling_offered "peer-$clone" "$sent0" ||
				die "$clone: the sibling sent fewer than $WG_SIBLING_OFFER datagrams in ${WG_SIBLING_TIMEOUT}s"
			jq -n --arg name "$clone" --arg set "$set" \
				--argjson accepted "$(($(wg_received "$clone") - before))" \
				--arg endpoint "$(guest_call "$clone" wg-show | agent_field endpoint)" \
				'{name: $name, set: $set, accepted: $accepted, endpoint: $endpoint}' >"$dir/$clone.sibling.json"
			guest_quit "$clone"
			guest_quit "peer-$clone"
		done
	done
	wg_detect "$dir/sibling.detect.json" "$dir/orig.pcap" "$dir"/fresh*.pcap "$dir"/control*.pcap >/dev/null
	jq -s --slurpfile d "$dir/sibling.detect.json" --arg own "10.9.0.1:$WG_PEER_PORT" \
		'{own_endpoint: $own, clones: [range(0; length) as $i | .[$i] + {offered: $d[0].clones[$i].received.data}]}' \
		"$dir"/fresh*.sibling.json "$dir"/control*.sibling.json >"$dir/result.json"
}

# wg_sibling_row KERNEL_NAME CLONES OUT.json: the sibling measurement as
# a row of its own kind (fork-report judges "wg" rows; this one is judged
# by wg_sibling_verdict).
wg_sibling_row() {
	row_run "$RUN_DIR/wg-$1-sibling" "$3" "$(row_keys kind=wg-sibling kernel="$1")" \
		wg_measure "$1" "$(kernel_path "$1")" sibling "$2"
}

# wg_sibling_verdict ROW.json: one line, "VERDICT: why" (refused,
# accepted or error), by analyzers/wg-sibling.jq.
wg_sibling_verdict() { jq -r -f "$FORKSAFE_ROOT/snapshot-tests/analyzers/wg-sibling.jq" "$1"; }

# ---- a clone whose clock is behind -------------------------------------------
# WireGuard stamps each handshake initiation with the wall clock (TAI64N),
# and a peer refuses one not later than the last it accepted from that
# key.  A clone's clock resumes where the snapshot left it: when its peer
# has since accepted a later initiation from the same key (the original's,
# running on after a live snapshot, or another clone's), every initiation
# the clone sends is refused until its clock passes that time, and the
# fork-safe kernel, which expired the pre-fork sessions, has no tunnel.
# The row sets the VM's clock WG_BEHIND_S seconds behind its last
# handshake just before the snapshot (the peer keeps that handshake's
# timestamp; the RTC keeps the true time), so that every clone resumes
# that far behind.  WG_CLOCK_STEP says what steps it:
#   none  nothing: the tunnel stays down until the clock catches up
#   hook  the fork hooks a guest installs (guest/fork.d/), run by
#         forksafe-hooks on the fork signal: 10-clock sets the clock from
#         the RTC, 20-wireguard sets each interface's peers again so that
#         the next packet initiates at once
# Only fresh clones: a control keeps its pre-fork session, which needs no
# handshake.
WG_BEHIND_S=${WG_BEHIND_S:-3600}
WG_CLOCK_STEP=${WG_CLOCK_STEP:-none}
WG_FORK_HOOKS=/etc/forksafe/fork.d

# wg_clock_row KERNEL_NAME CASE SECONDS CLONES OUT.json: a row of kind
# wg-CASE: CASE behind, the clones' clocks SECONDS behind (WG_BEHIND_S);
# live, the original ran on SECONDS after a live snapshot (WG_LIVE_S,
# below), both judged by wg_clock_verdict; both, the clones side by side
# for SECONDS (WG_BOTH_S, below), judged by wg_both_verdict.
# WG_CLOCK_STEP says what steps their clocks.
wg_clock_row() {
	local kname=$1 case=$2 secs=$3 nclones=$4 out=$5
	case "$WG_CLOCK_STEP:$case" in none:* | hook:* | identity:both) ;;
	*) die "wg clock: WG_CLOCK_STEP=$WG_CLOCK_STEP: none or hook (identity: clones side by side alone)" ;;
	esac
	# Exported: the row's measurement runs in a shell of its own.
	case "$case" in
	behind) export WG_BEHIND_S=$secs ;;
	live) export WG_LIVE_S=$secs ;;
	both) export WG_BOTH_S=$secs ;;
	*) die "wg clock: $case: behind, live or both" ;;
	esac
	row_run "$RUN_DIR/wg-$kname-$case-$secs-$WG_CLOCK_STEP" "$out" \
		"$(row_keys kind="wg-$case" kernel="$kname" "$case=$secs" step="$WG_CLOCK_STEP")" \
		wg_measure "$kname" "$(kernel_path "$kname")" "$case" "$nclones"
}

# wg_clock_verdict ROW.json: one line, "VERDICT: why" (working, down or
# error), by analyzers/wg-clock.jq.
wg_clock_verdict() { jq -r -f "$FORKSAFE_ROOT/snapshot-tests/analyzers/wg-clock.jq" "$1"; }

# wg_clock_back DIR: the original VM's wall clock WG_BEHIND_S seconds
# before its last handshake (whole seconds: never less behind than said);
# DIR/peer.handshake, the peer's last handshake with it, by the peer's clock.
wg_clock_back() {
	local at
	at=$(guest_call vm wg-show | agent_field latest_handshake)
	[ "$at" -gt "$WG_BEHIND_S" ] || die "wg clock: the VM's last handshake ($at) is no time to be behind"
	guest_call peer wg-show | agent_field latest_handshake >"$1/peer.handshake"
	wg_peer_log peer >"$1/peer.log.json"
	guest_call vm clock set "$((at - WG_BEHIND_S))" >/dev/null
}

# wg_clock_seen CLONE PEER DIR: JSON, how far CLONE's clock is behind the
# host's now (seconds; the RTC QEMU gives a guest follows the host's
# clock), whether PEER took a handshake from it (the peer's view: its last
# handshake moved since the snapshot's), the initiations PEER logged
# since then (wg_peer_log: "peer_invalid_initiations",
# "peer_taken_initiations"), and what CLONE's fork hooks said.
wg_clock_seen() {
	local clone host before after
	clone=$(guest_call "$1" clock get | agent_field realtime_s)
	host=$(date +%s)
	before=$(cat "$3/peer.handshake")
	after=$(guest_call "$2" wg-show | agent_field latest_handshake)
	tr -d '\r' <"$(guest_dir "$1")/console.log" |
		{ grep -E 'forksafe-hooks: generation [0-9]+: [^:]+: |^(clock|wireguard): ' || true; } |
		jq -Rs --argjson behind "$((host - clone))" --argjson took "$([ "$after" -gt "$before" ] && echo true || echo false)" \
			--slurpfile l0 "$3/peer.log.json" --argjson l "$(wg_peer_log "$2")" \
			'{behind_end_s: $behind, peer_took_handshake: $took,
			  peer_invalid_initiations: ($l.invalid - $l0[0].invalid),
			  peer_taken_initiations: ($l.taken - $l0[0].taken), hooks: split("\n")[:-1]}'
}

# wg_clock_measure KERNEL CLONES DIR: CLONES fresh clones, each next to a
# restore of the peer for WG_WINDOW_S.  result.json: wg_clock_result's,
# with "behind_s" and "step".
wg_clock_measure() {
	local kernel=$1 nclones=$2 dir=$3 i
	for ((i = 1; i <= nclones; i++)); do
		progress "wg clock $WG_BEHIND_S s behind, step $WG_CLOCK_STEP: restoring fresh$i"
		wg_restore_pair "$kernel" behind fresh "fresh$i" "$dir"
	done
	wg_clock_result "$dir" "$nclones" \
		"$(jq -nc --argjson behind "$WG_BEHIND_S" --arg step "$WG_CLOCK_STEP" '{behind_s: $behind, step: $step}')"
}

# wg_clock_result DIR CLONES HEAD: DIR/result.json, the object HEAD with
# "clones": wg-detect's report of DIR/fresh1 .. CLONES, matched to the
# original's sessions, each with its "delivered" datagrams and what
# wg_clock_seen saw ("behind_end_s", "peer_took_handshake", "hooks").
wg_clock_result() {
	local dir=$1 nclones=$2 head=$3 i
	local -a pcaps=()
	for ((i = 1; i <= nclones; i++)); do pcaps+=("$dir/fresh$i.pcap"); done
	wg_detect "$dir/clock.detect.json" "$dir/orig.pcap" "${pcaps[@]}" >"$dir/clock.txt"
	jq --argjson head "$head" \
		--slurpfile d <(for ((i = 1; i <= nclones; i++)); do cat "$dir/fresh$i.delivered"; done) \
		--slurpfile k <(for ((i = 1; i <= nclones; i++)); do cat "$dir/fresh$i.clock.json"; done) \
		'$head + {clones: [.clones | range(0; length) as $i | .[$i] + {delivered: $d[$i]} + $k[$i]]}' \
		"$dir/clock.detect.json" >"$dir/result.json"
}

# ---- a live snapshot -----------------------------------------------------------
# Most "snapshot a running instance" paths (libvirt's snapshot-create of a
# running domain, a QMP migrate to a file and then cont, cloud snapshots)
# leave the original running.  It keeps its tunnel, its nonce counters move
# on, and after REKEY_AFTER_TIME (120 s) of sending it rekeys, with a
# timestamp later than any a clone restored from the snapshot will send.
# The row snapshots the VM alone (SNAP_LIVE) and lets it stream on for
# WG_LIVE_S seconds of its own clock next to its live peer; then the
# original stops and a clone takes its place next to that same peer (a
# rollback; a clone beside the original is the both-alive case), its
# wall clock where the snapshot left it.  CLONES clones one after another,
# each meeting the peer as the ones before left it.  WG_CLOCK_STEP as in
# the clock rows; wg_clock_row CASE live makes the row.
WG_LIVE_S=${WG_LIVE_S:-10}

# wg_ran_on GUEST T0 S: GUEST's wall clock is S seconds past T0.
wg_ran_on() { [ "$(guest_call "$1" clock get | agent_field realtime_s)" -ge "$(($2 + $3))" ]; }

# wg_live_measure KERNEL CLONES DIR: the original runs on, then CLONES
# fresh clones in turn next to the live peer.  result.json:
# wg_clock_result's, with "live_s", "step" and "original_rekeyed" (its
# last handshake moved while it ran on).
wg_live_measure() {
	local kernel=$1 nclones=$2 dir=$3 t0 hs0 hs1 i
	t0=$(guest_call vm clock get | agent_field realtime_s)
	hs0=$(guest_call vm wg-show | agent_field latest_handshake)
	progress "wg live: the original runs on for ${WG_LIVE_S}s"
	wait_until "$((2 * WG_LIVE_S + 60))" wg_ran_on vm "$t0" "$WG_LIVE_S" ||
		die "wg live: the original's clock did not run ${WG_LIVE_S}s"
	hs1=$(guest_call vm wg-show | agent_field latest_handshake)
	guest_quit vm
	for ((i = 1; i <= nclones; i++)); do
		progress "wg live ${WG_LIVE_S}s, step $WG_CLOCK_STEP: restoring fresh$i next to the live peer"
		guest_call peer wg-show | agent_field latest_handshake >"$dir/peer.handshake"
		wg_peer_log peer >"$dir/peer.log.json"
		wg_window "$kernel" live fresh "fresh$i" "$dir" peer
	done
	wg_clock_result "$dir" "$nclones" \
		"$(jq -nc --argjson live "$WG_LIVE_S" --arg step "$WG_CLOCK_STEP" \
			--argjson rekeyed "$([ "$hs1" -gt "$hs0" ] && echo true || echo false)" \
			'{live_s: $live, step: $step, original_rekeyed: $rekeyed}')"
}

# ---- two clones alive with one key ----------------------------------------------
# Clones restored side by side share the VM's static key, address, port
# and MAC: the peer can hold a session with one of them at a time, and a
# switch delivers what the peer sends to whichever clone sent last.  Each
# datagram names its sender (the last 8 hex digits of its live GUID,
# guest/net.h), and the peer's sink keeps the runs of datagrams from one
# sender in order (agent "sink runs"): which clone the peer heard, from
# when to when, and how often it went from one to the other.  Whether they
# reused (key, nonce) pairs meanwhile is wg-detect's, across the clones'
# captures.  WG_CLOCK_STEP as in the clock rows, or "identity": the fork
# hooks with 12-identity enabled before the snapshot (guest/test-identity/):
# each clone takes a MAC, a WireGuard key and addresses of its own and
# says its key and tunnel address on its console, which the host gives
# the peer (as an operator's controller would).  wg_clock_row CASE both
# makes the row, wg_both_verdict judges it.
WG_BOTH_S=${WG_BOTH_S:-20} # the clones side by side: 4 of WireGuard's 5 s retries
WG_IDENTITY=/etc/forksafe/test-identity
WG_PROVISION_TIMEOUT=30

# wg_provisioned CLONE: the line CLONE's provisioning said ("KEY ADDRESS").
wg_provisioned() {
	tr -d '\r' <"$(guest_dir "$1")/console.log" | sed -n 's/^provision: \([A-Za-z0-9+\/=]\{44\}\) \(10\.10\.0\.[0-9]*\)$/\1 \2/p' | head -n 1
}
wg_provision_said() { [ -n "$(wg_provisioned "$1")" ]; }

# wg_provision PEER CLONE DIR: CLONE's new key given to PEER for its new
# tunnel address; DIR/identities (a line "CLONE KEY ADDRESS" each) keeps
# them, and a second clone with an address already taken is an error.
wg_provision() {
	local peer=$1 clone=$2 dir=$3 key addr
	wait_until "$WG_PROVISION_TIMEOUT" wg_provision_said "$clone" ||
		die "wg both: $clone said no new identity in ${WG_PROVISION_TIMEOUT}s: $(guest_console_tail "$clone")"
	read -r key addr <<<"$(wg_provisioned "$clone")"
	if [ -f "$dir/identities" ] && awk -v a="$addr" '$3 == a { f = 1 } END { exit !f }' "$dir/identities"; then
		die "wg both: $clone drew $addr, which another clone has (1 in 200: run again)"
	fi
	echo "$clone $key $addr" >>"$dir/identities"
	guest_call "$peer" sh "$WG_IDENTITY/peer-add" "$key" "$addr" >/dev/null
}

# wg_both_verdict ROW.json: one line, "VERDICT: why", by analyzers/wg-both.jq.
wg_both_verdict() { jq -r -f "$FORKSAFE_ROOT/snapshot-tests/analyzers/wg-both.jq" "$1"; }

# wg_both_runs PEER CLONE...: JSON, what the peer's sink kept since its
# reset ("switches", "runs_dropped", "senders_dropped", "senders": each
# sender's total, "runs": in order), each sender named: a CLONE (by the
# tail of its GUID), "original" (the snapshot's GUID: sent before the
# fork) or the tail itself.
wg_both_runs() {
	local peer=$1 c tail names='{}'
	shift
	for c in "$@"; do
		tail=$(guest_qmp_guid "$c" | tail -c 9) || tail=""
		[[ "$tail" =~ ^[0-9a-f]{8}$ ]] || die "wg both: $c's GUID cannot be read from QEMU ('$tail')"
		names=$(jq -c --arg t "$tail" --arg c "$c" '. + {($t): $c}' <<<"$names")
	done
	guest_call "$peer" sink runs | jq -Rs --argjson names "$names" --arg orig "${WG_VM_GUID: -8}" '
		def run: split(" ") | {sender: ($names[.[0]] // (if .[0] == $orig then "original" else .[0] end)),
			count: (.[1] | tonumber), first_us: (.[2] | tonumber), last_us: (.[3] | tonumber)};
		split("\n")[:-1] | map(capture("^(?<k>[a-z_]+)=(?<v>.*)$")) as $l |
		{switches: ($l[] | select(.k == "switches") | .v | tonumber),
		 runs_dropped: ($l[] | select(.k == "runs_dropped") | .v | tonumber),
		 senders_dropped: ($l[] | select(.k == "senders_dropped") | .v | tonumber),
		 senders: [$l[] | select(.k == "sender") | .v | run],
		 runs: [$l[] | select(.k == "run") | .v | run]}'
}

# wg_both_measure KERNEL CLONES DIR: CLONES fresh clones restored one after
# another next to one restore of the peer, side by side for WG_BOTH_S.
# result.json: wg-detect's report of their captures (matched to the
# original's sessions), each clone with "delivered" (its datagrams the
# peer received, by the sink's total for it); wg_both_runs's report of
# the peer's sink, and the initiations the peer logged meanwhile from any
# clone ("peer_invalid_initiations", "peer_taken_initiations": the clones
# share an address); "both_s" and "step".
wg_both_measure() {
	local kernel=$1 nclones=$2 dir=$3 i
	local -a clones=() pcaps=()
	wg_restore_peer "$kernel" "$dir" both-peer
	guest_call both-peer sink reset >/dev/null
	wg_peer_log both-peer >"$dir/peer.log.json"
	for ((i = 1; i <= nclones; i++)); do
		clones+=("fresh$i") pcaps+=("$dir/fresh$i.pcap")
		progress "wg both, step $WG_CLOCK_STEP: restoring fresh$i beside the others"
		wg_restore "$kernel" "$dir" "fresh$i" auto
		[ "$WG_CLOCK_STEP" != identity ] || wg_provision both-peer "fresh$i" "$dir"
	done
	sleep "$WG_BOTH_S"
	# Each clone answers (it ran the whole window) before the peer is read.
	for i in "${clones[@]}"; do guest_call "$i" ping >/dev/null; done
	wg_both_runs both-peer "${clones[@]}" >"$dir/runs.json"
	wg_peer_log both-peer >"$dir/peer.log.end.json"
	# The peer's last lines on handshakes, to read beside the row.
	guest_call both-peer kmsg handshake >"$dir/peer.handshakes.txt" || true
	for i in "${clones[@]}"; do guest_quit "$i"; done
	guest_quit both-peer
	wg_detect "$dir/both.detect.json" "$dir/orig.pcap" "${pcaps[@]}" >"$dir/both.txt"
	[ -f "$dir/identities" ] || : >"$dir/identities"
	jq --slurpfile r "$dir/runs.json" --slurpfile l0 "$dir/peer.log.json" --slurpfile l "$dir/peer.log.end.json" \
		--argjson both "$WG_BOTH_S" --arg step "$WG_CLOCK_STEP" \
		--argjson ids "$(jq -Rs 'split("\n")[:-1] | map(split(" ") | {clone: .[0], key: .[1], address: .[2]})' "$dir/identities")" '
		$r[0] as $r | {both_s: $both, step: $step, identities: $ids,
			peer_invalid_initiations: ($l[0].invalid - $l0[0].invalid),
			peer_taken_initiations: ($l[0].taken - $l0[0].taken)} + $r + . +
		{clones: [.clones[] | .name as $n | . + {delivered: ([$r.senders[] | select(.sender == $n) | .count] | add // 0)}]}' \
		"$dir/both.detect.json" >"$dir/result.json"
}

# ---- a fork under load --------------------------------------------------------
# load_row KERNEL_NAME CLONES OUT.json: the RNG measurement of a VM that is
# busy on every front when it is snapshotted and when each clone resumes:
# the recorder calls getrandom() on both of its 2 vCPUs, the tunnel
# streams through WireGuard to the peer, the heartbeat goes out beside it
# every 5 ms (network interrupts) and the timers tick.  Each clone
# (reference and control with the VM's GUID, CLONES with fresh ones) runs
# next to a restore of the peer until its recording is complete and
# WG_WINDOW_S has passed.  result.json is rng-exposure's, with "wg":
# wg-detect's report of the fresh clones' wire.  The kernel draws from the
# same per-CPU crngs as the recorder while it handles the traffic, at
# moments that differ between the reference and the control, so the
# control may show LOAD_FRESH_PERMILLE fresh records per thousand (about
# 2 measured here) instead of 1 and still count as identical.
LOAD_FRESH_PERMILLE=10
load_row() {
	local kname=$1 nclones=$2 out=$3
	row_run "$RUN_DIR/$kname-load" "$out" \
		"$(row_keys kind=rng kernel="$kname" method=migrate-file vcpus=2 shape=getrandom-16 crng=ready load=WireGuard)" \
		load_measure "$kname" "$(kernel_path "$kname")" "$nclones"
}

load_measure() {
	local kname=$1 kernel=$2 nclones=$3 dir=$ROW_DIR clone guid i
	local -a clones=(ref control) args=() pcaps=()
	WG_VM_VCPUS=2
	wg_snapshot "$kname" "$kernel" stream "$dir" getrandom-16
	for ((i = 1; i <= nclones; i++)); do clones+=("c$i"); done
	for clone in "${clones[@]}"; do
		guid=auto
		case "$clone" in ref | control) guid=$WG_VM_GUID ;; *) pcaps+=("$dir/$clone.pcap") ;; esac
		progress "load $kname: restoring $clone"
		wg_restore_peer "$kernel" "$dir" "peer-$clone"
		wg_restore "$kernel" "$dir" "$clone" "$guid"
		SECONDS=0
		rng_collect "$clone" "$dir/$clone" 0
		[ "$SECONDS" -ge "$WG_WINDOW_S" ] || sleep "$((WG_WINDOW_S - SECONDS))"
		guest_quit "$clone"
		guest_quit "peer-$clone"
		args+=("$clone=$dir/$clone.dump:$dir/$clone.console")
	done
	wg_detect "$dir/wg.json" "$dir/orig.pcap" "${pcaps[@]}" >/dev/null
	"$BUILD/rng-exposure" -f "$LOAD_FRESH_PERMILLE" "${args[@]}" | jq --slurpfile wg "$dir/wg.json" '. + {wg: $wg[0]}' >"$dir/result.json"
}
