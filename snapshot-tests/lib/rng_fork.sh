# shellcheck shell=bash
# The RNG fork measurement.  Sourced by measure.sh; defines functions only.
#
# One guest records getrandom() output on every vCPU (guest/recorder.c)
# and is snapshotted mid-recording by METHOD (qemu-scripts/snapshot.sh).
# From the snapshot come a reference and a control, both with the
# original's GUID, and CLONES clones with a fresh one; each finishes the
# recording and its dump and console are collected.  rng-exposure then
# says how much each clone produced from the pre-fork state after its GUID
# changed, and whether the control stayed identical to the reference (if
# not, the recording cannot tell a fork, and the row is an error).
#
#   rng_rows, rng_row KERNEL_NAME METHOD VCPUS CLONES OUT.json (in the parent)
#   rng_measure KERNEL_NAME KERNEL METHOD VCPUS CLONES (in the row's child)

FORK_BLOCKS=${FORK_BLOCKS:-60000}
# In its first two minutes the kernel reseeds every uptime/2 seconds on its
# own.  The original ages before it records, so that interval outlasts the
# recording even on a loaded host (10 s: every 5 s) and, for in-process
# loadvm, which does not rewind the guest clock, all the clones in a row.
FORK_UPTIME_S=${FORK_UPTIME_S:-10}
INPROC_UPTIME_S=${INPROC_UPTIME_S:-40}
RECORD_TIMEOUT=60  # a restored clone finishing its recording
DUMP_TIMEOUT=300   # a dump of up to 64 vCPUs x 60000 blocks over virtio-serial

# rng_row KERNEL_NAME METHOD VCPUS CLONES OUT.json: one row of the matrix.
rng_row() {
	local kname=$1 method=$2 vcpus=$3 nclones=$4 out=$5
	row_run "$RUN_DIR/$kname-$method-$vcpus" "$out" \
		"$(row_keys kind=rng kernel="$kname" method="$method" vcpus="$vcpus")" \
		rng_measure "$kname" "$(kernel_path "$kname")" "$method" "$vcpus" "$nclones"
}

# rng_rows DIR CLONES "KERNEL_NAME..." "VCPUS..." "METHOD...": a row for
# each, kernel by kernel, in DIR/KERNEL-VCPUScpu-METHOD.json, appended to ROWS.
rng_rows() {
	local dir=$1 n=$2 k v m
	for k in $3; do
		for v in $4; do
			for m in $5; do
				ROWS+=("$dir/$k-${v}cpu-$m.json")
				rng_row "$k" "$m" "$v" "$n" "${ROWS[-1]}" || true
			done
		done
	done
}

rng_measure() {
	local kname=$1 kernel=$2 method=$3 vcpus=$4 nclones=$5
	local tag="$1 ${4}cpu $3" dir=$ROW_DIR orig info guid name clone g from age wait_ms i
	local -a clones args
	snap_known "$method" || die "unknown method '$method' (known: $SNAP_METHODS)"
	orig=$kname-$method-$vcpus
	progress "$tag: booting the original"
	snap_boot "$method" "$orig" "$kernel" "$vcpus" "$dir"
	info=$(guest_call "$orig" info)
	rng_require "$info"
	guid=$(agent_field guid <<<"$info")
	age=$FORK_UPTIME_S
	if snap_inproc "$method"; then age=$INPROC_UPTIME_S; fi
	wait_ms=$((age * 1000 - $(agent_field uptime_ms <<<"$info")))
	if [ "$wait_ms" -gt 0 ]; then
		progress "$tag: letting the guest age to ${age}s of uptime"
		sleep_ms "$wait_ms"
	fi
	guest_call "$orig" record start "$FORK_BLOCKS" >/dev/null
	progress "$tag: snapshot"
	snap_save "$method" "$orig" "$dir"

	clones=(ref control)
	for ((i = 1; i <= nclones; i++)); do clones+=("c$i"); done
	for clone in "${clones[@]}"; do
		progress "$tag: restoring $clone"
		name=$(snap_clone_name "$method" "$orig" "$clone-$orig")
		g=auto
		case "$clone" in ref | control) g=$guid ;; esac
		from=$(stat -c %s "$(guest_dir "$name")/console.log" 2>/dev/null || echo 0)
		snap_restore "$method" "$orig" "$dir" "$name" "$kernel" "$vcpus" "$g"
		rng_collect "$name" "$dir/$clone" "$from"
		snap_end "$method" "$name"
		args+=("$clone=$dir/$clone.dump:$dir/$clone.console")
	done
	snap_finish "$method" "$orig"
	"$BUILD/rng-exposure" "${args[@]}" >"$dir/result.json"
}

# The guest must see its generation ID for the measurement to mean anything.
rng_require() {
	local info=$1
	case "$(agent_field vmgenid_driver <<<"$info")" in
	bound) ;;
	unbound) die "the kernel has no vmgenid driver bound (CONFIG_VMGENID missing?)" ;;
	*) die "the guest has no vmgenid device" ;;
	esac
	[ -n "$(agent_field guid <<<"$info")" ] ||
		die "the agent cannot read the generation ID: $(agent_field guid_error <<<"$info")"
}

# rng_collect NAME BASE FROM: wait for the recording to fill, then fetch it
# to BASE.dump and the console since byte FROM to BASE.console.
rng_collect() {
	local name=$1 base=$2 from=$3
	wait_until "$RECORD_TIMEOUT" recording_complete "$name" ||
		die "$name: the recording did not complete within ${RECORD_TIMEOUT}s" \
			"(QEMU: $(guest_state "$name"); console: $(guest_console_tail "$name"))"
	guest_call "$name" -t "$DUMP_TIMEOUT" record dump >"$base.dump"
	tail -c +"$((from + 1))" "$(guest_dir "$name")/console.log" >"$base.console"
}

recording_complete() {
	local status
	status=$(guest_call "$1" record status) ||
		die "$1: no recording status after the restore (QEMU: $(guest_state "$1"))"
	[ "$(agent_field complete <<<"$status")" = 1 ]
}
