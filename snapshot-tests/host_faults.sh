#!/bin/bash
# Faults on the host side end their row with one clear line, and the rows
# after it still run.  Three rows fail on purpose, each through the
# suite's own row machinery (lib/rows.sh), between two rows that must
# pass:
#  - a QEMU that crashes mid-restore (SIGKILL while it loads the stream);
#  - a full disk where the snapshot is written (a 16 MiB tmpfs);
#  - a libvirtd that dies mid-row (SIGKILL once the domain runs).
# Each failing row must be an error row whose reason names the fault,
# with no guest or daemon of it left running.  The last good row boots the
# dead libvirtd's domain again under a new libvirtd, which must first
# forget the definition the dead one kept.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

kernel=$(kernel_path "$(test_kernels | awk '{ print $1 }')")
export kernel
t_plan 9

# Measurements (run by row_run in a shell of their own; exported for it).
fault_none() {
	guest_boot ok "$kernel"
	guest_call ok ping >/dev/null
	echo '{"ok": true}' >"$ROW_DIR/result.json"
}
fault_qemu_crash() {
	snap_boot migrate-file orig "$kernel" 1 "$ROW_DIR"
	snap_save migrate-file orig "$ROW_DIR"
	guest_start clone "$kernel" --guid auto --incoming "exec:cat $ROW_DIR/vmstate.mig"
	kill -9 "${GUEST_PID[clone]}"
	snap_wait_status clone inmigrate
	echo '{"ok": true}' >"$ROW_DIR/result.json"
}
fault_disk_full() {
	mkdir -p "$ROW_DIR/small"
	mount -t tmpfs -o size=16m forksafe-full "$ROW_DIR/small"
	trap 'qemu_cleanup; umount "$ROW_DIR/small"' EXIT
	snap_boot migrate-file orig "$kernel" 1 "$ROW_DIR"
	snap_save migrate-file orig "$ROW_DIR/small"
	echo '{"ok": true}' >"$ROW_DIR/result.json"
}
fault_libvirt_after() {
	libvirt_boot orig "$kernel"
	guest_call orig ping >/dev/null
	echo '{"ok": true}' >"$ROW_DIR/result.json"
}
fault_libvirtd_dies() {
	libvirt_boot orig "$kernel"
	kill -9 "${LIBVIRT_PID[libvirtd]}"
	snap_save libvirt-save orig "$ROW_DIR"
	echo '{"ok": true}' >"$ROW_DIR/result.json"
}
export -f fault_none fault_qemu_crash fault_disk_full fault_libvirtd_dies fault_libvirt_after

# row NAME: run fault_NAME as a row; its JSON in ROW.
row() {
	ROW=$RUN_DIR/$1.json
	row_run "$RUN_DIR/$1" "$ROW" "$(row_keys kind=fault fault="$1")" "fault_${1//-/_}" 2>/dev/null || true
}

# Everything a row started is gone when it ends: no QEMU of this run, no
# libvirtd or virtlogd (the suite refuses to run beside one of another).
leftovers() { { pgrep -f "qemu-system.*$RUN_DIR/" || true; pgrep -f -- '-name guest=forksafe-' || true; pgrep -x libvirtd || true; pgrep -x virtlogd || true; } | sort -u | tr '\n' ' '; }

unmounted() { ! grep -q " $1 " /proc/mounts; }

row none
t_eq "a good row before the faults passes" "$(jq -r '.result.ok // .error' "$ROW")" true
for fault in qemu-crash:"died while loading" disk-full:"migration to file failed" \
	libvirtd-dies:"libvirt: libvirtd died"; do
	name=${fault%%:*} want=${fault#*:}
	row "$name"
	why=$(jq -r '.error // "no error"' "$ROW")
	t_diag "$name: $why"
	t_check "$name: an error row that names the fault ('$want')" grep -q -- "$want" <<<"$why"
	t_eq "$name: nothing of the row left running" "$(leftovers)" ""
	[ "$name" != disk-full ] || t_check "disk-full: the small disk is unmounted" unmounted "$RUN_DIR/disk-full/small"
done
# The dead libvirtd could not undefine its domain; the next run's
# libvirtd must forget it, or defining the same name fails.
row libvirt-after
t_eq "a libvirt row after the dead libvirtd defines the same domain and passes" \
	"$(jq -r '.result.ok // .error' "$ROW")" true
t_done
