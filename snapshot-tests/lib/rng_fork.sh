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

# fork_lines NAME [FROM]: how many times NAME's console (from byte FROM on)
# says the kernel reseeded for a VM fork (once per fork on both kernels;
# rng-exposure reads the same line).
fork_lines() {
	tail -c +"$((${2:-0} + 1))" "$(guest_dir "$1")/console.log" |
		grep -c 'crng reseeded due to virtual machine fork' || true
}
fork_logged() { [ "$(fork_lines "$1" "$2")" -gt 0 ]; }

# PREINIT_EXTRA (environment): more of the command line for such guests.
PREINIT_APPEND="forksafe.crng=nowait random.trust_cpu=off random.trust_bootloader=off${PREINIT_EXTRA:+ $PREINIT_EXTRA}"
EARLY_BITS=136

# The records per stream a SHAPE records after the snapshot, on KERNEL_NAME
# if given.  Debian's kernels read the clock in the vDSO (TSC), where the
# suite's builds go through the HPET, so a call with its record costs a
# fraction: 60,000 calls, 5 times as many, and 16 reads of 1 MiB were over
# before libvirt's or in-process snapshots stopped the guest.  An
# operator's image (IMAGE=) runs a distribution kernel too.
DEBIAN_RECORD_SCALE=10
# The library shapes: a python3 process answers each call, 4,000 a second
# here; past 65,536, OpenSSL's reseed interval for its public and private
# DRBGs.
LIBRARY_RECORDS=${LIBRARY_RECORDS:-70000}
# systemd-seed runs a program per record, 14 a second here: 16 seed files
# before the snapshot (one more, at times, before the guest stops), 6 or 5
# after.  No more: a control under systemd parts from its reference about
# half a second after the restore (from the 7th to the 12th save after it
# in 9 rows): other draws in the guest come at other times in each run
# and move a save to another step of the crng's key chain, where no save
# of the reference's was (getrandom-16 loops, a call at nearly every step,
# still find theirs).
SEED_RECORDS=${SEED_RECORDS:-22}
# The TLS shapes: a handshake of openssl s_server per record.
TLS_RECORDS=${TLS_RECORDS:-600}
# shape_records SHAPE [KERNEL_NAME [APPEND]]: the records per stream.
# Booted with vmgenid.map_id=0 the vDSO has no page and every call takes
# the system call, so vdso-16 records as many as getrandom-16: 600,000
# system calls a vCPU at 2 vCPUs outlast the control, which parts from
# its reference once another of the kernel's draws falls between other
# calls of a vCPU's crng (212,130 and 269,106 fresh records of 600,000,
# kunit-6.12, 2026-12-06).
shape_records() {
	local scale=1
	if [ "$1" = systemd-seed ]; then echo "$SEED_RECORDS"; return; fi
	case "$1" in openssl-tls-16 | openssl-fs-tls-16) echo "$TLS_RECORDS"; return ;; esac
	case "$1 ${3:-} " in vdso-16*" vmgenid.map_id=0 "*) set -- getrandom-16 "${2:-}" ;; esac
	if library_shape "$1"; then echo "$LIBRARY_RECORDS"; return; fi
	if distro_kernel "${2:-}"; then scale=$DEBIAN_RECORD_SCALE; fi
	case "$1" in
	getrandom-16 | insecure-16 | uuid) echo $((FORK_BLOCKS * scale)) ;;
	# No system call: 500,000 calls/s under TCG, 60,000 would be over
	# before the snapshot stops the guest.
	vdso-16 | drbg-16 | drbg-checked-16) echo $((FORK_BLOCKS * ${USER_RECORD_SCALE:-10})) ;;
	getrandom-16MiB) echo 12288 ;; # 3 calls of 4096 pages
	urandom-1MiB) echo $((4096 * scale)) ;; # 16 calls of 256 pages each
	exec) echo 300 ;;
	*) die "unknown shape '$1' (guest/protocol.h lists them)" ;;
	esac
}
# The shapes that draw through a library in user space (guest/recorder.c).
library_shape() {
	case "$1" in openssl-public-16 | openssl-private-16 | openssl-fs-public-16 | openssl-fs-private-16 | python-mt-16 | python-secrets-16 | arc4random-16 | libuuid-16 | systemd-seed | openssl-tls-16 | openssl-fs-tls-16) ;; *) return 1 ;; esac
}

# shape_kernels SHAPE[/CRNG] KERNEL...: those of the kernels that can
# record SHAPE (in that crng state, ready unless said); why the others
# cannot on stderr, one line.  vdso-16 needs the vDSO's getrandom() (Linux
# 6.11+: the -6.12 builds, or a KERNEL= or IMAGE= of the operator's, who
# knows), drbg-checked-16 the series' /dev/vmgenid, the library shapes an
# image's python3 and libraries.  An image cannot fork before the crng is
# ready (under systemd it is ready before the agent starts) nor record
# exec (its control leaves the reference within a few programs, as
# systemd-seed's does within a second: shape_records).
shape_kernels() {
	local shape=${1%/*} crng=ready k fits=() why
	case "$1" in */*) crng=${1#*/} ;; esac
	shift
	for k in "$@"; do
		why=
		if image_guest "$k"; then
			case "$shape:$crng" in
			*:empty | *:early) why="the crng is ready before an image's agent starts" ;;
			exec:*) why="under systemd a control leaves its reference within a few programs" ;;
			esac
		elif library_shape "$shape"; then
			why="the libraries and python3 are in an image: KERNELS=debian-image, IMAGE="
		fi
		case "$shape" in
		vdso-16) case "$k" in *-6.12 | custom | image) ;; *) why=${why:-"no vDSO getrandom() before Linux 6.11"} ;; esac ;;
		drbg-checked-16) [ "$(kernel_role "$k")" = patched ] || why=${why:-"no /dev/vmgenid without the series"} ;;
		esac
		if [ -z "$why" ]; then
			fits+=("$k")
		elif [ "$crng" = ready ]; then
			progress "$shape: not on $k ($why)"
		else
			progress "$shape/$crng: not on $k ($why)"
		fi
	done
	echo "${fits[*]}"
}

# In its first two minutes the kernel reseeds every uptime/2 seconds on its
# own.  The original ages before it records, so that interval outlasts the
# recording even on a loaded host (10 s: every 5 s) and, for in-process
# loadvm, which does not rewind the guest clock, all the clones in a row.
# LONG_SHAPES record for longer (600,000 calls of the vDSO or a user-space
# DRBG: 1.2 s on an idle host, 4 s and more on a loaded one; three 16 MiB
# reads, which a reseed between two would part) and age to LONG_UPTIME_S.
FORK_UPTIME_S=${FORK_UPTIME_S:-10}
# The library shapes record for 20 s and more (a python3 process answers
# each call): at 80 s of uptime the kernel's next timed reseed is 40 s out.
LIBRARY_UPTIME_S=${LIBRARY_UPTIME_S:-80}
INPROC_UPTIME_S=${INPROC_UPTIME_S:-40}
LONG_SHAPES="vdso-16 drbg-16 drbg-checked-16 getrandom-16MiB" LONG_UPTIME_S=${LONG_UPTIME_S:-40}
RECORD_TIMEOUT=60  # a restored clone finishing its recording
DUMP_TIMEOUT=300   # a dump of up to 64 vCPUs x 60000 blocks over virtio-serial

# rng_row KERNEL_NAME METHOD VCPUS CLONES OUT.json [SHAPE [CRNG [APPEND]]]:
# one row; APPEND, kernel parameters the original boots with, is a key of
# the row (a positive control: initcall_blacklist=vmgenid_driver_init, a
# kernel that never learns of a fork, as Debian 12's cloud kernel).
# RNG_GUIDS (exported, a key of the row when set): what the fresh clones'
# GUIDs are; "new" (the default) QEMU's guid=auto, a new random one each;
# "tail" the original's with only its last group changed (clone N's XOR
# N), as operators who number their clones do: bytes 10-15 of the ID
# change, its first 8 stay.
RNG_GUIDS=${RNG_GUIDS:-new}
# rng_guids_suffix: what RNG_GUIDS adds to a row's file names ("-tail"; ""
# for new); RNG_GUIDS_TAIL, how a tag says it.
rng_guids_suffix() { [ "$RNG_GUIDS" = new ] || echo "-$RNG_GUIDS"; }
# shellcheck disable=SC2034 # for the scenarios
RNG_GUIDS_TAIL="GUIDs new in the last group only"
rng_row() {
	local kname=$1 method=$2 vcpus=$3 nclones=$4 out=$5 shape=${6:-getrandom-16} crng=${7:-ready} append=${8:-}
	local -a keys=(kind=rng kernel="$kname" method="$method" vcpus="$vcpus" shape="$shape" crng="$crng")
	[ -z "$append" ] || keys+=(append="$append")
	case "$RNG_GUIDS" in
	new) ;;
	tail) keys+=(guids="$RNG_GUIDS") ;;
	*) die "RNG_GUIDS is new or tail, not '$RNG_GUIDS'" ;;
	esac
	row_run "$RUN_DIR/$kname-$method-$vcpus-$shape-$crng${append:+-${append//[^a-z0-9_]/-}}$(rng_guids_suffix)" "$out" \
		"$(row_keys "${keys[@]}")" \
		rng_measure "$kname" "$(kernel_path "$kname")" "$method" "$vcpus" "$nclones" "$shape" "$crng" "$append"
}

# rng_rows DIR CLONES "KERNEL_NAME..." "VCPUS..." "METHOD..." [SHAPE [CRNG]]:
# a row for each, kernel by kernel, in DIR/KERNEL-VCPUScpu-METHOD-SHAPE-CRNG.json,
# appended to ROWS.
rng_rows() {
	local dir=$1 n=$2 shape=${6:-getrandom-16} crng=${7:-ready} k v m
	for k in $3; do
		for v in $4; do
			for m in $5; do
				ROWS+=("$dir/$k-${v}cpu-$m-$shape-$crng$(rng_guids_suffix).json")
				rng_row "$k" "$m" "$v" "$n" "${ROWS[-1]}" "$shape" "$crng" || true
			done
		done
	done
}

rng_measure() {
	local kname=$1 kernel=$2 method=$3 vcpus=$4 nclones=$5 shape=$6 crng=$7 clone i
	local -a clones=(ref)
	rng_original "$@"
	# The control last: its console is judged after the fresh clones showed
	# how long a reseed line takes to come (rng_clone_finish).
	for ((i = 1; i <= nclones; i++)); do clones+=("c$i"); done
	for clone in "${clones[@]}" control; do rng_clone "$clone"; done
	snap_finish "$method" "$RNG_ORIG"
	"$BUILD/rng-exposure" "${RNG_ARGS[@]}" >"$ROW_DIR/result.json"
}

# rng_original KERNEL_NAME KERNEL METHOD VCPUS CLONES SHAPE CRNG [APPEND]:
# boot the original, start its recording and snapshot it.  Sets RNG_ORIG,
# RNG_GUID, RNG_TAG and RNG_ARGS (rng-exposure's arguments, filled by
# rng_clone) for rng_clone.
rng_original() {
	local kname=$1 kernel=$2 method=$3 vcpus=$4 shape=$6 crng=$7 append=${8:-} info records
	local -a boot=()
	snap_known "$method" || die "unknown method '$method' (known: $SNAP_METHODS)"
	records=$(shape_records "$shape" "$kname" "$append")
	[ "$crng" = ready ] || append="$PREINIT_APPEND${append:+ $append}"
	[ -z "$append" ] || boot=(--append "$append")
	RNG_ORIG=$kname-$method-$vcpus RNG_TAG="$1 ${4}cpu $3 $6" RNG_ARGS=() RNG_LOG_MS=0
	RNG_KERNEL=$kernel RNG_METHOD=$method RNG_VCPUS=$vcpus RNG_CRNG=$crng
	progress "$RNG_TAG: booting the original"
	snap_boot "$method" "$RNG_ORIG" "$kernel" "$vcpus" "$ROW_DIR" "${boot[@]}"
	info=$(guest_call "$RNG_ORIG" info)
	rng_require "$info" "$kname"
	RNG_GUID=$(agent_field guid <<<"$info")
	rng_prepare "$RNG_ORIG" "$method" "$crng" "$info" "$(record_age "$shape" "$kname")"
	guest_call "$RNG_ORIG" record start "$shape" "$records" >/dev/null
	progress "$RNG_TAG: snapshot"
	snap_save "$method" "$RNG_ORIG" "$ROW_DIR"
}

# guid_tail GUID N: GUID with its last group XOR N.
guid_tail() { printf '%s-%012x\n' "${1%-*}" "$((0x${1##*-} ^ $2))"; }

# rng_clone CLONE: restore one clone of rng_original's snapshot ("ref" and
# "control" keep the original's GUID, others get a fresh one), let it
# finish the recording, collect it and end it.
rng_clone() {
	rng_clone_start "$1"
	rng_clone_finish "$1" "$RNG_NAME"
}

# rng_clone_start CLONE: restore it, running (or still paused, with
# SNAP_PAUSED=1); its guest name in RNG_NAME.  The console's size at the
# restore goes to ROW_DIR/CLONE.from.
rng_clone_start() {
	local clone=$1 g=auto
	RNG_NAME=$(snap_clone_name "$RNG_METHOD" "$RNG_ORIG" "$clone-$RNG_ORIG")
	case "$clone:$RNG_GUIDS" in
	ref:* | control:*) g=$RNG_GUID ;;
	c*:tail) g=$(guid_tail "$RNG_GUID" "${clone#c}") ;;
	esac
	# A clone in a QEMU of its own writes its console from the start, over
	# what an earlier row's guest of the same name left there.
	[ "$RNG_NAME" = "$RNG_ORIG" ] || rm -f "$(guest_dir "$RNG_NAME")/console.log"
	stat -c %s "$(guest_dir "$RNG_NAME")/console.log" >"$ROW_DIR/$clone.from" 2>/dev/null ||
		echo 0 >"$ROW_DIR/$clone.from"
	progress "$RNG_TAG: restoring $clone"
	snap_restore "$RNG_METHOD" "$RNG_ORIG" "$ROW_DIR" "$RNG_NAME" "$RNG_KERNEL" "$RNG_VCPUS" "$g"
}

# rng_clone_finish CLONE NAME: collect the recording of CLONE, guest NAME.
# A fresh clone's kernel logs its reseed from a work item, which a busy
# vCPU may run after a short recording ended: with the crng ready (before,
# no kernel logs one), its console is taken once the line is there, or
# after FORK_LOG_TIMEOUT (a kernel that never reseeds, whose count then
# says 0).  The control, which must log none, is taken no sooner than
# three times the slowest fresh clone's line (RNG_LOG_MS, wait_as_positive
# in qemu.sh), so that a late line cannot miss its count.
FORK_LOG_TIMEOUT=15
rng_clone_finish() {
	local clone=$1 name=$2 from t0
	from=$(cat "$ROW_DIR/$clone.from")
	t0=$(ms_now)
	case "$clone:$RNG_CRNG" in
	*:empty | *:early | ref:*) ;;
	control:*) wait_as_positive_since "$t0" "$RNG_LOG_MS" 1000 ;;
	*)
		wait_until "$FORK_LOG_TIMEOUT" fork_logged "$name" "$from" || true
		t0=$(($(ms_now) - t0))
		[ "$t0" -le "$RNG_LOG_MS" ] || RNG_LOG_MS=$t0
		;;
	esac
	rng_collect "$name" "$ROW_DIR/$clone" "$from"
	snap_end "$RNG_METHOD" "$name"
	# rng-exposure takes the reference first, the control second.
	if [ "$clone" = control ]; then
		RNG_ARGS=("${RNG_ARGS[0]}" "$clone=$ROW_DIR/$clone.dump:$ROW_DIR/$clone.console" "${RNG_ARGS[@]:1}")
	else
		RNG_ARGS+=("$clone=$ROW_DIR/$clone.dump:$ROW_DIR/$clone.console")
	fi
}

# ---- many clones at once ------------------------------------------------------
# crowd_row KERNEL_NAME CLONES OUT.json: a migrate-file row whose fresh
# clones are all alive together.  The reference and the control are
# restored one after the other as in any row; then the CLONES clones are
# all loaded, paused, and resumed one right after the other, so that they
# run and finish their recordings side by side on the host's cores.
# result.json is rng-exposure's, with "crowd": the seconds to load them
# all, from the first resume until every recording was complete, the
# QEMUs' resident memory together and the host's MemAvailable before and
# with all of them running (kB).
crowd_row() {
	local kname=$1 nclones=$2 out=$3
	row_run "$RUN_DIR/$kname-crowd$nclones" "$out" \
		"$(row_keys kind=rng kernel="$kname" method=migrate-file vcpus=1 shape=getrandom-16 crng=ready together="$nclones")" \
		crowd_measure "$kname" "$(kernel_path "$kname")" "$nclones"
}

crowd_measure() {
	local kname=$1 kernel=$2 nclones=$3 i t0 t1 t2 avail_before avail_all rss=0 pid
	local -a names=()
	rng_original "$kname" "$kernel" migrate-file 1 "$nclones" getrandom-16 ready
	rng_clone ref
	avail_before=$(mem_available_kb)
	t0=$(date +%s%N)
	for ((i = 1; i <= nclones; i++)); do
		SNAP_PAUSED=1 rng_clone_start "c$i"
		names+=("$RNG_NAME")
	done
	t1=$(date +%s%N)
	progress "$RNG_TAG: resuming $nclones clones"
	for i in "${!names[@]}"; do guest_qmp "${names[$i]}" cont >/dev/null; done
	for i in "${!names[@]}"; do
		wait_until "$RECORD_TIMEOUT" recording_complete "${names[$i]}" ||
			die "${names[$i]}: the recording did not complete within ${RECORD_TIMEOUT}s"
	done
	t2=$(date +%s%N)
	avail_all=$(mem_available_kb)
	for i in "${!names[@]}"; do
		pid=${GUEST_PID[${names[$i]}]}
		rss=$((rss + $(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")))
	done
	for i in "${!names[@]}"; do rng_clone_finish "c$((i + 1))" "${names[$i]}"; done
	rng_clone control
	"$BUILD/rng-exposure" "${RNG_ARGS[@]}" |
		jq --argjson load "$(((t1 - t0) / 1000000))" --argjson run "$(((t2 - t1) / 1000000))" \
			--argjson rss "$rss" --argjson before "$avail_before" --argjson all "$avail_all" \
			'. + {crowd: {load_ms: $load, run_ms: $run, rss_kb: $rss,
				mem_available_kb: {before: $before, all_running: $all}}}' >"$ROW_DIR/result.json"
}

mem_available_kb() { awk '/^MemAvailable:/ { print $2 }' /proc/meminfo; }

# record_age SHAPE KERNEL_NAME: the uptime in s the original ages to before
# it records SHAPE: LIBRARY_UPTIME_S for the library shapes but
# systemd-seed, whose 2 s recording needs no more than LONG_UPTIME_S;
# LONG_UPTIME_S for LONG_SHAPES, on Debian's kernels, whose recordings are
# longer (shape_records), and on the debug builds, whose are slower
# (lockdep and KASAN: on debug-6.12 a getrandom() control at 10 s left its
# reference), else FORK_UPTIME_S.
record_age() {
	if [ "$1" = systemd-seed ]; then echo "$LONG_UPTIME_S"; return; fi
	if library_shape "$1"; then echo "$LIBRARY_UPTIME_S"; return; fi
	# An image boots systemd, which draws at its own times, past the
	# suite's short age: its guests age as long as a distribution's.
	if distro_kernel "$2" || image_guest "$2"; then echo "$LONG_UPTIME_S"; return; fi
	case " $LONG_SHAPES :$2" in
	*" $1 "* | *:debug | *:debug-*) echo "$LONG_UPTIME_S" ;;
	*) echo "$FORK_UPTIME_S" ;;
	esac
}

# rng_prepare NAME METHOD CRNG INFO [AGE]: bring the crng to the state it
# must be in at the snapshot.  A ready crng reseeds every uptime/2 s in the
# first two minutes: the original first ages to AGE s (record_age), past
# the recording (in-process loadvm, which does not rewind the guest clock,
# past all the clones).
rng_prepare() {
	local name=$1 method=$2 crng=$3 info=$4 age=${5:-$FORK_UPTIME_S} wait_ms state
	if [ "$crng" = ready ]; then
		if snap_inproc "$method" && [ "$INPROC_UPTIME_S" -gt "$age" ]; then age=$INPROC_UPTIME_S; fi
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
# rng_require INFO KERNEL_NAME: a kernel of the suite's without the driver
# is a broken build; a distribution's (debian-*) or an operator's (custom)
# is measured as it is: it does not reseed on a fork at all.
rng_require() {
	local info=$1 kname=${2:-}
	case "$(agent_field vmgenid_driver <<<"$info")" in
	bound) ;;
	unbound)
		if distro_kernel "$kname" || [ "$kname" = custom ]; then
			progress "$kname: no vmgenid driver: this kernel never learns of a fork"
		else
			die "the kernel has no vmgenid driver bound (CONFIG_VMGENID missing?)"
		fi
		;;
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
