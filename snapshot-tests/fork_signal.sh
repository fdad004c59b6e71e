#!/bin/bash
# /dev/vmgenid, the series' fork signal for user space, on each patched
# kernel:
#  - misuse gets a clear error: a read smaller than the structure EINVAL,
#    write() EBADF, a writable or executable mapping EPERM (shared on a
#    file opened for writing, or private), a second page EINVAL, mprotect()
#    to write or exec EACCES; the read-only page holds the ID the
#    hypervisor wrote (as /dev/mem shows it);
#  - poll() wakes exactly once per fork and the count follows the forks:
#    it does not move without one; a watcher started in the original sees
#    1 wake, 1 uevent and the count 1 up in a fresh-GUID clone, 2 of each
#    in a clone of that clone, and none in a clone with the original's
#    GUID (negative control);
#  - the mapping changes before any output: a user-space DRBG that checks
#    it before each output (libforksafe's reference DRBG) shares nothing
#    between clones, while the same DRBG without the check goes on from
#    its pre-fork key in every clone (positive control: the window that no
#    kernel change can close without the check).
# Stock kernels have no /dev/vmgenid: the probe must say so.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

EPERM=1 EBADF=9 EACCES=13 EINVAL=22
RESUMED_S=2

kernels=$(test_kernels)
patched="" stock=""
for k in $kernels; do
	case "$(kernel_role "$k")" in stock) stock+=" $k" ;; *) patched+=" $k" ;; esac
done
[ -n "$patched" ] || die "fork_signal: KERNELS names no patched kernel: nothing to test"

# watch_status NAME: "WAKES UEVENTS GENERATION" of NAME's watcher.
watch_status() {
	local out
	out=$(guest_call "$1" vmgenid-watch status) || return 1
	echo "$(agent_field wakes <<<"$out") $(agent_field uevents <<<"$out") $(agent_field generation <<<"$out")"
}

# fork_clone FROM DIR CLONE KERNEL GUID: snapshot FROM into DIR (migrate-file) and
# restore CLONE from it, running for RESUMED_S.
fork_clone() {
	snap_save migrate-file "$1" "$2"
	snap_restore migrate-file "$1" "$2" "$3" "$4" 1 "$5"
	sleep "$RESUMED_S"
}

probe_tests() {
	local k=$1 p=$2
	t_eq "$k: a read smaller than the structure gets EINVAL" "$(agent_field short_read <<<"$p")" "$EINVAL"
	t_eq "$k: write() gets EBADF" "$(agent_field write <<<"$p")" "$EBADF"
	t_eq "$k: the read-only mapping of one page works" "$(agent_field map_read <<<"$p")" 0
	t_eq "$k: a writable shared mapping gets EPERM" "$(agent_field map_shared_write <<<"$p")" "$EPERM"
	t_eq "$k: a writable private mapping gets EPERM" "$(agent_field map_private_write <<<"$p")" "$EPERM"
	t_eq "$k: an executable mapping gets EPERM" "$(agent_field map_exec <<<"$p")" "$EPERM"
	t_eq "$k: a mapping at page 1 gets EINVAL" "$(agent_field map_offset <<<"$p")" "$EINVAL"
	t_eq "$k: mprotect() to write gets EACCES" "$(agent_field mprotect_write <<<"$p")" "$EACCES"
	t_eq "$k: mprotect() to exec gets EACCES" "$(agent_field mprotect_exec <<<"$p")" "$EACCES"
	t_eq "$k: the mapping holds the live ID" "$(agent_field id_matches <<<"$p")" 1
}

signal_tests() {
	local k=$1 kernel dir guid p g
	kernel=$(kernel_path "$k")
	dir=$RUN_DIR/$k
	mkdir -p "$dir/1" "$dir/2"
	snap_boot migrate-file "$k" "$kernel" 1 "$dir/1"
	p=$(guest_call "$k" vmgenid-probe)
	t_diag "$k: $(tr '\n' ' ' <<<"$p")"
	probe_tests "$k" "$p"
	# 0 after a boot, unless KUnit suites forked at boot (the kunit builds).
	g=$(agent_field generation <<<"$p")
	sleep 1
	t_eq "$k: the count does not move without a fork" \
		"$(agent_field generation <<<"$(guest_call "$k" vmgenid-probe)")" "$g"
	guid=$(agent_field guid <<<"$(guest_call "$k" info)")
	guest_call "$k" vmgenid-watch start >/dev/null
	snap_save migrate-file "$k" "$dir/1"
	snap_restore migrate-file "$k" "$dir/1" "$k-control" "$kernel" 1 "$guid"
	sleep "$RESUMED_S"
	t_eq "$k: a clone with the original's GUID: no wake, no uevent, the count unmoved" \
		"$(watch_status "$k-control")" "0 0 $g"
	snap_end migrate-file "$k-control"
	snap_restore migrate-file "$k" "$dir/1" "$k-a" "$kernel" 1 auto
	sleep "$RESUMED_S"
	t_eq "$k: a fresh-GUID clone: one wake, one uevent, the count one up" \
		"$(watch_status "$k-a")" "1 1 $((g + 1))"
	fork_clone "$k-a" "$dir/2" "$k-aa" "$kernel" auto
	t_eq "$k: a clone of that clone: two wakes, two uevents, the count two up" \
		"$(watch_status "$k-aa")" "2 2 $((g + 2))"
	snap_end migrate-file "$k-aa"
}

t_plan $(($(wc -w <<<"$patched") * 18 + $(wc -w <<<"$stock")))
for k in $stock; do
	kernel=$(kernel_path "$k")
	guest_boot "$k" "$kernel"
	out=$(guest_call "$k" vmgenid-probe 2>&1 || true)
	t_check "$k: no /dev/vmgenid ($(agent_field error <<<"$out"))" grep -q 'No such file' <<<"$out"
	guest_stop "$k"
done
for k in $patched; do
	signal_tests "$k"
done

ROWS=()
for k in $patched; do
	rng_rows "$RUN_DIR" 2 "$k" 1 migrate-file drbg-16 ready
	rng_rows "$RUN_DIR" 2 "$k" 1 migrate-file drbg-checked-16 ready
done
rows_judge "${ROWS[@]}"
# shellcheck disable=SC2034 # v and t_row read VERDICT
for VERDICT in "${ROW_VERDICTS[@]}"; do
	tag="$(v kernel) $(v shape)"
	t_row "$tag: measured with an identical negative control" || { t_fail "$tag: as expected"; continue; }
	t_diag "$tag: $(v verdict); at most $(v exposure_bytes_max) bytes shared with the reference"
	case "$(v shape)" in
	drbg-16) t_check "$tag: without the check the DRBG goes on from its pre-fork key (positive control)" \
		test "$(v verdict)" = "exposure window" ;;
	*) t_eq "$tag: with the check no clone shares a DRBG output" "$(v verdict)" fork-safe ;;
	esac
done
t_done
