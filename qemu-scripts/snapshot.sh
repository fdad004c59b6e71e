# shellcheck shell=bash
# Snapshot and restore by each method operators use.  Sourced after qemu.sh.
#
#   qcow2-newproc  savevm into a qcow2; each clone a new QEMU with -loadvm
#   migrate-file   migration into a file; each clone a new QEMU with -incoming
#   loadvm-inproc  savevm, then loadvm in the same QEMU process, per clone
#   libvirt-revert virsh snapshot-create-as, then snapshot-revert per clone
#   libvirt-save   virsh save, then virsh restore of the same image per clone
#
# A method is five steps: snap_boot (the original), snap_save (stop it and
# write the snapshot), snap_restore (one clone, with the original's GUID or
# "auto" for a fresh one), snap_end (done with a clone) and snap_finish
# (done with the method).  snap_clone_name says which guest a clone is:
# its own QEMU, or the original's QEMU or libvirt domain reused.

# shellcheck source=libvirt.sh
. "$(dirname "${BASH_SOURCE[0]}")/libvirt.sh"

SNAP_METHODS="qcow2-newproc migrate-file loadvm-inproc libvirt-revert libvirt-save"
SAVE_TIMEOUT=${SAVE_TIMEOUT:-300}

snap_known() {
	case " $SNAP_METHODS " in *" $1 "*) return 0 ;; esac
	return 1
}

# Does a clone of METHOD run in the original's QEMU process?
snap_inproc() { [ "$1" = loadvm-inproc ]; }

# Methods that restore into a new QEMU process of ours, which takes guest options.
snap_newproc() { case "$1" in qcow2-newproc | migrate-file) return 0 ;; esac; return 1; }
snap_libvirt() { case "$1" in libvirt-*) return 0 ;; esac; return 1; }

# snap_clone_name METHOD ORIG CLONE: the guest name a clone answers under.
snap_clone_name() {
	if snap_inproc "$1" || snap_libvirt "$1"; then echo "$2"; else echo "$3"; fi
}

# snap_boot METHOD NAME KERNEL VCPUS DIR: the original, agent answering.
snap_boot() {
	local method=$1 name=$2 kernel=$3 vcpus=$4 dir=$5
	shift 5
	case "$method" in
	qcow2-newproc | loadvm-inproc)
		# savevm needs a qcow2 to hold the VM state; no device uses it.
		qemu-img create -q -f qcow2 -o cluster_size=2M "$dir/vmstate.qcow2" 16M
		guest_boot "$name" "$kernel" --smp "$vcpus" --disk "$dir/vmstate.qcow2" "$@"
		;;
	migrate-file)
		guest_boot "$name" "$kernel" --smp "$vcpus" "$@"
		;;
	libvirt-*)
		qemu-img create -q -f qcow2 -o cluster_size=2M "$dir/vmstate.qcow2" 16M
		libvirt_boot "$name" "$kernel" --smp "$vcpus" --disk "$dir/vmstate.qcow2" "$@"
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

# qmp_status NAME COMMAND: the "status" of a query-status or query-migrate.
qmp_status() {
	guest_qmp "$1" "$2" | sed -n 's/.*"status": *"\([a-z-]*\)".*/\1/p'
}

# Wait (up to SAVE_TIMEOUT) until NAME's run state is no longer STATE.
snap_wait_status() {
	local name=$1 from=$2
	wait_until "$SAVE_TIMEOUT" status_left "$name" "$from" || {
		echo "qemu: $name still '$from' after ${SAVE_TIMEOUT}s" >&2
		return 1
	}
	guest_running "$name" || { echo "qemu: $name died while loading: $(guest_qemu_error "$name")" >&2; return 1; }
}

# The run state is something other than FROM, or QEMU has died.
status_left() {
	local status
	guest_running "$1" || return 0
	status=$(qmp_status "$1" query-status) || return 1
	[ -n "$status" ] && [ "$status" != "$2" ]
}

# The migration has ended, well or not.
migration_ended() {
	case "$(qmp_status "$1" query-migrate)" in completed | failed | cancelled) return 0 ;; esac
	return 1
}

# snap_save METHOD ORIG DIR: stop ORIG at once, then write the snapshot
# (migrate-file with SNAP_LIVE=1: then let ORIG run on).
snap_save() {
	local method=$1 name=$2 dir=$3 status dom
	dom=$(libvirt_dom "$name")
	case "$method" in
	qcow2-newproc | loadvm-inproc)
		guest_qmp "$name" stop >/dev/null
		hmp "$name" "savevm fork" || return 1
		# Clones open the same qcow2: the original must let go of it.
		snap_inproc "$method" || guest_quit "$name"
		;;
	migrate-file)
		guest_qmp "$name" stop >/dev/null
		# QEMU 7.2 caps migration at 32 MiB/s by default; a file is no network.
		guest_qmp "$name" migrate-set-parameters '{"max-bandwidth":17179869184}' >/dev/null
		guest_qmp "$name" migrate "{\"uri\":\"exec:cat > $dir/vmstate.mig\"}" >/dev/null
		wait_until "$SAVE_TIMEOUT" migration_ended "$name" ||
			{ echo "qemu: migration to file took more than ${SAVE_TIMEOUT}s" >&2; return 1; }
		status=$(qmp_status "$name" query-migrate)
		[ "$status" = completed ] || { echo "qemu: migration to file $status" >&2; return 1; }
		# SNAP_LIVE=1: the original runs on, as after a live snapshot.
		if [ -n "${SNAP_LIVE:-}" ]; then
			guest_qmp "$name" cont >/dev/null
		else
			guest_quit "$name"
		fi
		;;
	libvirt-revert)
		virsh_do suspend "$dom" >/dev/null || return 1
		virsh_do snapshot-create-as "$dom" fork >/dev/null || return 1
		virsh_do snapshot-dumpxml "$dom" fork >"$dir/snapshot.xml" || return 1
		;;
	libvirt-save)
		virsh_do suspend "$dom" >/dev/null || return 1
		virsh_do save "$dom" "$dir/vmstate.sav" >/dev/null || return 1
		virsh_do save-image-dumpxml "$dir/vmstate.sav" >"$dir/saved.xml" || return 1
		snap_root_copy "$(guest_dir "$name")/root.qcow2" "$dir/root-at-save.qcow2"
		;;
	esac
}

# snap_restore METHOD ORIG DIR CLONE KERNEL VCPUS GUID: bring up one clone,
# running (migrate-file with SNAP_PAUSED=1: loaded, still paused).  GUID is the original's (the negative control) or "auto".
snap_restore() {
	local method=$1 orig=$2 dir=$3 clone=$4 kernel=$5 vcpus=$6 guid=$7 dom xml
	shift 7
	dom=$(libvirt_dom "$orig")
	if [ $# -gt 0 ] && ! snap_newproc "$method"; then
		echo "qemu: $method takes no extra guest options ($*)" >&2
		return 1
	fi
	snap_clone_root "$orig" "$clone" || return 1
	case "$method" in
	qcow2-newproc)
		guest_start "$clone" "$kernel" --smp "$vcpus" --guid "$guid" \
			--disk "$dir/vmstate.qcow2" --loadvm fork "$@"
		;;
	migrate-file)
		[ -s "$dir/vmstate.mig" ] || { echo "qemu: no migration stream in $dir" >&2; return 1; }
		guest_start "$clone" "$kernel" --smp "$vcpus" --guid "$guid" \
			--incoming "exec:cat $dir/vmstate.mig" "$@" || return 1
		# The original was stopped before it migrated, so the clone stays
		# paused after loading, like the original: resume it (unless the
		# caller resumes it itself: SNAP_PAUSED=1).
		snap_wait_status "$clone" inmigrate || return 1
		[ -n "${SNAP_PAUSED:-}" ] || guest_qmp "$clone" cont >/dev/null
		;;
	loadvm-inproc)
		# QEMU 7.2 keeps the process's GUID and refuses qom-set of guid
		# after realize: GUID is ignored here, which is the point.
		guest_qmp "$orig" stop >/dev/null
		hmp "$orig" "loadvm fork" || return 1
		guest_qmp "$orig" cont >/dev/null
		;;
	libvirt-revert)
		# The snapshot's own domain XML decides the GUID: redefine it with
		# or without the pin before each revert.
		xml=$dir/snapshot.xml
		if [ "$guid" != auto ]; then
			libvirt_pin_guid "$dir/snapshot.xml" "$dir/snapshot-pinned.xml" "$guid" || return 1
			xml=$dir/snapshot-pinned.xml
		fi
		virsh_do snapshot-create "$dom" "$xml" --redefine >/dev/null || return 1
		virsh_do snapshot-revert "$dom" fork --running >/dev/null || return 1
		;;
	libvirt-save)
		local -a alt=()
		if [ "$guid" != auto ]; then
			libvirt_pin_guid "$dir/saved.xml" "$dir/saved-pinned.xml" "$guid" || return 1
			alt=(--xml "$dir/saved-pinned.xml")
		fi
		"${VIRSH[@]}" destroy "$dom" >/dev/null 2>&1 || true
		# The same saved RAM each time, so the disk as it was at the save.
		snap_root_copy "$dir/root-at-save.qcow2" "$(guest_dir "$orig")/root.qcow2"
		virsh_do restore "$dir/vmstate.sav" "${alt[@]}" --running >/dev/null || return 1
		;;
	esac
}

# An image's guest (machine.sh) has a root disk, which a clone must see as
# it was when the RAM was saved.  snap_clone_root ORIG CLONE: a clone in a
# new QEMU starts from a copy of its original's (qcow2-newproc: with the
# snapshot inside).  libvirt-save restores into the original's domain, so
# the disk is kept at the save and put back before each restore;
# libvirt-revert's internal snapshot holds the disk itself.
snap_clone_root() {
	[ "$1" = "$2" ] || snap_root_copy "$(guest_dir "$1")/root.qcow2" "$(guest_dir "$2")/root.qcow2"
}

# snap_root_copy FROM TO: FROM copied to TO, if there is a FROM.
snap_root_copy() {
	[ -f "$1" ] || return 0
	mkdir -p "$(dirname "$2")"
	cp --sparse=always "$1" "$2"
}

# snap_end METHOD CLONE: a clone in its own QEMU is powered off.
snap_end() {
	snap_inproc "$1" || snap_libvirt "$1" || guest_stop "$2"
}

# snap_finish METHOD ORIG: what the original left running goes away.
snap_finish() {
	local dom
	if snap_libvirt "$1"; then
		dom=$(libvirt_dom "$2")
		"${VIRSH[@]}" destroy "$dom" >/dev/null 2>&1 || true
		"${VIRSH[@]}" undefine "$dom" --snapshots-metadata >/dev/null 2>&1 || true
	else
		guest_stop "$2"
	fi
}
