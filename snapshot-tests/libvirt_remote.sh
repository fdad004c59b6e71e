#!/bin/bash
# LIBVIRT_URI: the libvirt methods against a libvirtd that the measurement
# does not start, as an operator points the suite at a hypervisor host of
# theirs.  Here the scenario runs that libvirtd itself (with a virtlogd),
# reachable only through a socket of its own in the run's directory
# (qemu+unix:///system?socket=...), so nothing reaches it by the default
# URI:
#  - a libvirt-revert row, 1 vCPU, 2 fresh-GUID clones, the reference and
#    the control, passes as the local rows do (control identical, every
#    clone a new GUID, fork-safe on a patched kernel), while the only
#    libvirtd is that one (libvirt_start would refuse to start its own
#    beside it, so the row could only pass through the URI);
#  - a URI of no known transport, a socket that is not there, and one the
#    user may not open (virsh as nobody) each fail with one line that
#    names LIBVIRT_URI and says why.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

kname=$(test_kernels | cut -d' ' -f1)
pid=$(pgrep -x libvirtd | head -n 1 || true)
[ -z "$pid" ] || die "libvirt_remote: a libvirtd not started by the suite is running (pid $pid); stop it first"
command -v libvirtd >/dev/null || die "libvirt_remote: libvirtd not found: run 'make deps'"
t_plan 9

# ---- the other libvirtd ----------------------------------------------------------
remote=$RUN_DIR/remote
mkdir -p "$remote"
chmod 0700 "$remote"
cat >"$remote/libvirtd.conf" <<EOF
unix_sock_dir = "$remote"
unix_sock_rw_perms = "0700"
unix_sock_ro_perms = "0700"
unix_sock_admin_perms = "0700"
EOF
declare -a REMOTE_PIDS=()
remote_stop() {
	local p
	for p in "${REMOTE_PIDS[@]}"; do stop_pid "$p"; done
	REMOTE_PIDS=()
}
CLEANUP_HOOKS+=(remote_stop)
libvirt_configure
virtlogd >"$remote/virtlogd.log" 2>&1 &
REMOTE_PIDS+=($!)
libvirtd -f "$remote/libvirtd.conf" -p "$remote/libvirtd.pid" >"$remote/libvirtd.log" 2>&1 &
REMOTE_PIDS+=($!)
uri="qemu+unix:///system?socket=$remote/libvirt-sock"
remote_up() { virsh -q -c "$uri" version >/dev/null 2>&1; }
wait_until "$LIBVIRTD_TIMEOUT" remote_up ||
	die "libvirt_remote: the second libvirtd did not come up: $(tail -n 1 "$remote/libvirtd.log")"

# ---- a row through it --------------------------------------------------------------
row=$RUN_DIR/$kname-remote-libvirt-revert.json
LIBVIRT_URI=$uri rng_row "$kname" libvirt-revert 1 2 "$row" || true
rows_judge "$row"
# shellcheck disable=SC2034 # v and t_row read VERDICT
VERDICT=${ROW_VERDICTS[0]}
tag="$kname libvirt-revert through LIBVIRT_URI"
if t_row "$tag: measured with an identical negative control"; then
	t_eq "$tag: every clone sees a new GUID" "$(v guid_changed)" 2
	case "$(kernel_role "$kname")" in
	stock) t_diag "$tag: $(v verdict) (stock: a race, not asserted)"; t_ok "$tag: measured" ;;
	*) t_eq "$tag: fork-safe" "$(v verdict)" fork-safe ;;
	esac
else
	t_fail "$tag: every clone sees a new GUID"
	t_fail "$tag: fork-safe"
fi
t_eq "no libvirtd but the other one ran" "$(pgrep -xc libvirtd || true)" 1

# ---- what an operator gets wrong ------------------------------------------------------
# connect_as USER URI: the suite's connection, as USER, in a shell of its own.
connect_as() {
	# shellcheck disable=SC2016 # expanded by the child shell
	runuser -u "$1" -- bash -c 'set -euo pipefail; RUN_DIR=$(mktemp -d); trap "rm -rf \"$RUN_DIR\"" EXIT
		. "$1"; LIBVIRT_URI=$2 libvirt_connect' _ "$FORKSAFE_ROOT/snapshot-tests/lib/measure.sh" "$2"
}
# one_line DESC PATTERN USER URI: fails, with one line saying PATTERN.
one_line() {
	expect_fail "$1" "$2" connect_as "$3" "$4"
	t_eq "$1: one line" "$(grep -c . "$RUN_DIR/expect.err")" 1
}
one_line "a URI of no known transport" "cannot use LIBVIRT_URI=nosuch:///system" root "nosuch:///system"
one_line "a socket that is not there" "No such file" root "qemu+unix:///system?socket=$remote/nothing-sock"
t_diag "(the last, as nobody, on the other libvirtd's socket: 0700, root's)"
expect_fail "no permission" "Permission denied" connect_as nobody "$uri"
t_done
