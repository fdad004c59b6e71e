# shellcheck shell=bash
# The RNG fork measurement.  Sourced by measure.sh; defines functions only.
#
# One guest records the RNG's output (guest/recorder.c) in one SHAPE of use
# (guest/protocol.h: getrandom() loops on every vCPU by default, long reads,
# processes exec'd in a loop, GRND_INSECURE reads before the crng is ready)
# and is snapshotted mid-recording by METHOD (qemu-scripts/snapshot.sh).
# From the snapshot come a reference and a control, both with the
# original's GUID, and CLONES clones with a fresh one; each finishes the
# recording and its dump and console are collected.  rng-exposure then
# says how much each clone produced from the pre-fork state after its GUID
# changed, and whether the control stayed identical to the reference (if
# not, the recording cannot tell a fork, and the row is an error).
#
#   rng_rows, rng_row KERNEL_NAME METHOD VCPUS CLONES OUT.json [SHAPE [CRNG]]
#                                                          (in the parent)
#   rng_measure KERNEL_NAME KERNEL METHOD VCPUS CLONES SHAPE CRNG
#                                                          (in the row's child)
# CRNG is the crng's state at the snapshot: "ready" (the default), or, for a
# guest booted without a cycle counter it trusts, without RDRAND credit and
# without waiting for the crng, "empty" (nothing credited yet) or "early"
# (136 bits credited: CRNG_EARLY, whose output comes from one key alone).

FORK_BLOCKS=${FORK_BLOCKS:-60000}

# fork_lines NAME: how many times NAME's console says the kernel reseeded
# for a VM fork (once per fork on both kernels; rng-exposure reads the
# same line).
fork_lines() { grep -c 'crng reseeded due to virtual machine fork' "$(guest_dir "$1")/console.log" || true; }
# PREINIT_EXTRA (environment): more of the command line for such guests.
PREINIT_APPEND="forksafe.crng=nowait random.trust_cpu=off random.trust_bootloader=off${PREINIT_EXTRA:+ $PREINIT_EXTRA}"
EARLY_BITS=136

# The records per stream a SHAPE records after the snapshot.
shape_records() {
	case "$1" in
	getrandom-16 | insecure-16 | uuid) echo "$FORK_BLOCKS" ;;
	getrandom-16MiB) echo 12288 ;; # 3 calls of 4096 pages
	urandom-1MiB) echo 4096 ;;     # 16 calls of 256 pages
	exec) echo 300 ;;
	*) die "unknown shape '$1' (guest/protocol.h lists them)" ;;
	esac
}
# In its first two minutes the kernel reseeds every uptime/2 seconds on its
# own.  The original ages before it records, so that interval outlasts the
# recording even on a loaded host (10 s: every 5 s) and, for in-process
# loadvm, which does not rewind the guest clock, all the clones in a row.
FORK_UPTIME_S=${FORK_UPTIME_S:-10}
INPROC_UPTIME_S=${INPROC_UPTIME_S:-40}
RECORD_TIMEOUT=60  # a restored clone finishing its recording
DUMP_TIMEOUT=300   # a dump of up to 64 vCPUs x 60000 blocks over virtio-serial

# rng_row KERNEL_NAME METHOD VCPUS CLONES OUT.json [SHAPE [CRNG]]: one row.
rng_row() {
	local kname=$1 method=$2 vcpus=$3 nclones=$4 out=$5 shape=${6:-getrandom-16} crng=${7:-ready}
	row_run "$RUN_DIR/$kname-$method-$vcpus-$shape-$crng" "$out" \
		"$(row_keys kind=rng kernel="$kname" method="$method" vcpus="$vcpus" shape="$shape" crng="$crng")" \
		rng_measure "$kname" "$(kernel_path "$kname")" "$method" "$vcpus" "$nclones" "$shape" "$crng"
}

# rng_rows DIR CLONES "KERNEL_NAME..." "VCPUS..." "METHOD..." [SHAPE [CRNG]]:
# a row for each, kernel by kernel, in DIR/KERNEL-VCPUScpu-METHOD-SHAPE-CRNG.json,
# appended to ROWS.
rng_rows() {
	local dir=$1 n=$2 shape=${6:-getrandom-16} crng=${7:-ready} k v m
	for k in $3; do
		for v in $4; do
			for m in $5; do
				ROWS+=("$dir/$k-${v}cpu-$m-$shape-$crng.json")
				rng_row "$k" "$m" "$v" "$n" "${ROWS[-1]}" "$shape" "$crng" || true
			done
		done
	done
}

rng_measure() {
	local kname=$1 kernel=$2 method=$3 vcpus=$4 nclones=$5 shape=$6 crng=$7
	local tag="$1 ${4}cpu $3 $6" dir=$ROW_DIR orig info guid name clone g from i records
	local -a clones args boot=()
	snap_known "$method" || die "unknown method '$method' (known: $SNAP_METHODS)"
	records=$(shape_records "$shape")
	[ "$crng" = ready ] || boot=(--append "$PREINIT_APPEND")
	orig=$kname-$method-$vcpus
	progress "$tag: booting the original"
	snap_boot "$method" "$orig" "$kernel" "$vcpus" "$dir" "${boot[@]}"
	info=$(guest_call "$orig" info)
	rng_require "$info"
	guid=$(agent_field guid <<<"$info")
	rng_prepare "$orig" "$method" "$crng" "$info"
	guest_call "$orig" record start "$shape" "$records" >/dev/null
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

# rng_prepare NAME METHOD CRNG INFO: bring the crng to the state it must be
# in at the snapshot.  A ready crng reseeds every uptime/2 s in the first two
# minutes: the original first ages past the recording (in-process loadvm,
# which does not rewind the guest clock, past all the clones).
rng_prepare() {
	local name=$1 method=$2 crng=$3 info=$4 age=$FORK_UPTIME_S wait_ms state
	if [ "$crng" = ready ]; then
		if snap_inproc "$method"; then age=$INPROC_UPTIME_S; fi
		wait_ms=$((age * 1000 - $(agent_field uptime_ms <<<"$info")))
		if [ "$wait_ms" -gt 0 ]; then
			progress "$name: letting the guest age to ${age}s of uptime"
			sleep_ms "$wait_ms"
		fi
		return
	fi
	[ "$crng" != early ] || guest_call "$name" credit "$EARLY_BITS" >/dev/null
	state=$(guest_call "$name" info | agent_field crng_init)
	[ "$state" = "$crng" ] || die "$name: the crng is '$state' at the snapshot, not '$crng'"
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
	if ! status=$(guest_call "$1" record status 2>&1); then
		[ -z "$(agent_field error <<<"$status")" ] ||
			die "$1: the recorder failed: $(agent_field error <<<"$status")"
		die "$1: no recording status after the restore (QEMU: $(guest_state "$1"); $status)"
	fi
	[ "$(agent_field complete <<<"$status")" = 1 ]
}
