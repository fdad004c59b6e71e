# shellcheck shell=bash
# Kernel state that no fork renews, measured: the TCP secret.  Sourced by
# measure.sh; defines functions only.
#
# Linux makes a connection's initial sequence number a keyed hash of its
# 4-tuple plus the clock (secure_tcp_seq(): siphash with net_secret, drawn
# once at first use, + ktime_get_real_ns() >> 6).  The agent's tcp-isn
# makes a loopback connection with a fixed 4-tuple and gives back its ISN
# minus the clock it read just before connect(): the hash, up to the few
# µs between the two reads.  Clones that share net_secret give the
# original's hash; a kernel that renewed it on a fork would not.  A boot
# of the same kernel that is no clone (its own secret) is the control: if
# it gives the original's hash too, the measurement cannot tell.
#
#   tcp_row KERNEL_NAME CLONES OUT.json (in the parent)
#   tcp_measure KERNEL_NAME KERNEL CLONES (in the row's child)
TCP_ISN_PORT=7100
TCP_GUID=6f726b73-6166-6500-0000-0000000007cf

tcp_row() {
	row_run "$RUN_DIR/tcp-$1" "$3" "$(row_keys kind=tcp-secret kernel="$1")" \
		tcp_measure "$1" "$(kernel_path "$1")" "$2"
}

# tcp_hash NAME: the hash NAME's kernel gives the loopback 4-tuple.
tcp_hash() { guest_call "$1" tcp-isn "$TCP_ISN_PORT" | agent_field hash; }

# result.json: {"original": HASH, "clones": [HASH...], "cold": HASH}; the
# original's hash is taken before the snapshot, so that its secret exists
# in every clone, as in a server that had connections before.
tcp_measure() {
	local kname=$1 kernel=$2 nclones=$3 dir=$ROW_DIR i orig cold
	local -a hashes=()
	mkdir -p "$dir/orig"
	progress "tcp $kname: booting the original"
	snap_boot migrate-file tcp "$kernel" 1 "$dir/orig" --guid "$TCP_GUID"
	orig=$(tcp_hash tcp)
	snap_save migrate-file tcp "$dir/orig"
	for ((i = 1; i <= nclones; i++)); do
		progress "tcp $kname: restoring c$i"
		snap_restore migrate-file tcp "$dir/orig" "tcp-c$i" "$kernel" 1 auto
		hashes+=("$(tcp_hash "tcp-c$i")")
		guest_quit "tcp-c$i"
	done
	snap_finish migrate-file tcp
	progress "tcp $kname: a boot that is no clone"
	guest_boot tcp-cold "$kernel"
	cold=$(tcp_hash tcp-cold)
	guest_stop tcp-cold
	jq -n --argjson o "$orig" --argjson c "$cold" '{original: $o, cold: $c, clones: $ARGS.positional | map(tonumber)}' \
		--args "${hashes[@]}" >"$dir/result.json"
}

# tcp_verdict ROW.json: one line, "VERDICT: why", by analyzers/tcp-secret.jq.
tcp_verdict() { jq -r -f "$FORKSAFE_ROOT/snapshot-tests/analyzers/tcp-secret.jq" "$1"; }
