# shellcheck shell=bash
# Snapshot and restore by each method operators use.  Sourced after qemu.sh.
#
#   qcow2-newproc  savevm into a qcow2; each clone a new QEMU with -loadvm
#   migrate-file   migration into a file; each clone a new QEMU with -incoming
#   loadvm-inproc  savevm, then loadvm in the same QEMU process, per clone
#   libvirt-revert virsh snapshot-create-as, then snapshot-revert per clone
#   libvirt-save   virsh save, then virsh restore of the same image per clone
#
# A method is three functions: snap_boot_opts (what the original needs),
# snap_save (stop the original and write the snapshot) and snap_restore
# (bring up one clone with a given GUID, "auto" for a fresh one).

SNAP_METHODS="qcow2-newproc migrate-file loadvm-inproc libvirt-revert libvirt-save"
SAVE_TIMEOUT=${SAVE_TIMEOUT:-300}

snap_known() {
	case " $SNAP_METHODS " in *" $1 "*) return 0 ;; esac
	return 1
}

# Does a clone of METHOD run in its own QEMU process (or the original's)?
snap_inproc() { [ "$1" = loadvm-inproc ]; }

# snap_boot_opts METHOD SNAPDIR: options for guest_start of the original.
snap_boot_opts() {
	case "$1" in
	qcow2-newproc | loadvm-inproc)
		qemu-img create -q -f qcow2 -o cluster_size=2M "$2/vmstate.qcow2" 16M
		echo --disk "$2/vmstate.qcow2"
		;;
	esac
}

# HMP savevm/loadvm answer "" on success and an error text otherwise.
hmp() {
	local name=$1 cmd=$2 out
	out=$(guest_qmp "$name" -t "$SAVE_TIMEOUT" human-monitor-command \
		"{\"command-line\":\"$cmd\"}") || return 1
	if [ "$out" != '""' ]; then
		echo "qemu: '$cmd' failed: $out" >&2
		return 1
	fi
}

# Wait (up to SAVE_TIMEOUT) until NAME's run state is no longer STATE.
snap_wait_status() {
	local name=$1 from=$2 status="" i
	for ((i = 0; i < SAVE_TIMEOUT * 10; i++)); do
		status=$(guest_qmp "$name" query-status | sed -n 's/.*"status": *"\([a-z-]*\)".*/\1/p') || true
		[ -n "$status" ] && [ "$status" != "$from" ] && return 0
		guest_running "$name" || { echo "qemu: $name died while loading: $(guest_qemu_error "$name")" >&2; return 1; }
		sleep 0.1
	done
	echo "qemu: $name still '$from' after ${SAVE_TIMEOUT}s" >&2
	return 1
}

# snap_save METHOD ORIG SNAPDIR: stop ORIG at once, then write the snapshot.
snap_save() {
	local method=$1 name=$2 dir=$3 status i
	guest_qmp "$name" stop >/dev/null
	case "$method" in
	qcow2-newproc | loadvm-inproc)
		hmp "$name" "savevm fork" || return 1
		;;
	migrate-file)
		# QEMU 7.2 caps migration at 32 MiB/s by default; a file is no network.
		guest_qmp "$name" migrate-set-parameters '{"max-bandwidth":17179869184}' >/dev/null
		guest_qmp "$name" migrate "{\"uri\":\"exec:cat > $dir/vmstate.mig\"}" >/dev/null
		for ((i = 0; i < SAVE_TIMEOUT * 10; i++)); do
			status=$(guest_qmp "$name" query-migrate | sed -n 's/.*"status": *"\([a-z-]*\)".*/\1/p')
			case "$status" in
			completed) break ;;
			failed | cancelled) echo "qemu: migration to file $status" >&2; return 1 ;;
			esac
			sleep 0.1
		done
		[ "$status" = completed ] || { echo "qemu: migration to file timed out" >&2; return 1; }
		;;
	*) echo "qemu: method '$method' is not a QEMU method" >&2; return 1 ;;
	esac
	# The original is done; only loadvm-inproc clones live in its process.
	snap_inproc "$method" || guest_quit "$name"
}

# snap_restore METHOD ORIG SNAPDIR CLONE KERNEL SMP GUID
snap_restore() {
	local method=$1 orig=$2 dir=$3 clone=$4 kernel=$5 smp=$6 guid=$7
	case "$method" in
	qcow2-newproc)
		guest_start "$clone" "$kernel" --smp "$smp" --guid "$guid" \
			--disk "$dir/vmstate.qcow2" --loadvm fork
		;;
	migrate-file)
		[ -s "$dir/vmstate.mig" ] || { echo "qemu: no migration stream in $dir" >&2; return 1; }
		guest_start "$clone" "$kernel" --smp "$smp" --guid "$guid" \
			--incoming "exec:cat $dir/vmstate.mig" || return 1
		# The original was stopped before it migrated, so the clone stays
		# paused after loading, like the original: resume it.
		snap_wait_status "$clone" inmigrate || return 1
		guest_qmp "$clone" cont >/dev/null
		;;
	loadvm-inproc)
		# QEMU 7.2 keeps the process's GUID and refuses qom-set of guid
		# after realize: GUID is ignored here, which is the point.
		guest_qmp "$orig" stop >/dev/null
		hmp "$orig" "loadvm fork" || return 1
		guest_qmp "$orig" cont >/dev/null
		;;
	*) echo "qemu: method '$method' is not a QEMU method" >&2; return 1 ;;
	esac
}
