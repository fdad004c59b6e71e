#!/bin/bash
# /dev/vmgenid, the series' fork signal for user space, on each patched
# kernel:
#  - misuse gets a clear error: a read smaller than the structure EINVAL,
#    a writable or executable mapping EPERM (private on a read-only file,
#    shared on a file opened for writing), a second page EINVAL; on a file
#    root opened for writing, where the VFS leaves every answer to the
#    driver, write() EINVAL and mprotect() of a read-only mapping to write
#    or exec EACCES (the VM_MAYWRITE and VM_MAYEXEC the driver took away);
#    the read-only page holds the ID the hypervisor wrote (as /dev/mem
#    shows it);
#  - poll() wakes exactly once per fork and the count follows the forks:
#    it does not move without one; a watcher started in the original sees
#    1 wake, 1 uevent and the count 1 up in a fresh-GUID clone, 2 of each
#    in a clone of that clone, and none in a clone with the original's
#    GUID (negative control);
#  - the mapping changes before any output: a user-space DRBG that checks
#    it before each output (libforksafe's reference DRBG) shares nothing
#    between clones, while the same DRBG without the check goes on from
#    its pre-fork key in every clone (positive control: the window that no
#    kernel change can close without the check);
#  - booted with vmgenid.map_id=0, the page stays out of user space: the
#    mapping gets ENODEV (where the default boot's works: the control),
#    and the driver says so once on the console;
#  - booted with the ID's page marked busy (memmap=4K#PAGE: ACPI data,
#    which the kernel claims, as it would another driver's MMIO), the
#    driver cannot claim the page, so it does not map it: ENODEV, and one
#    console line that names the claim as the reason.
# Stock kernels have no /dev/vmgenid: the probe must say so.  Without
# KERNELS=, the debug lane's kernel (debug-6.12) is tested beside patched.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

EPERM=1 ENODEV=19 EACCES=13 EINVAL=22
declare -A ID_PHYS=()
RESUMED_S=2

# The debug lane's kernel too (make check: debug-6.12, the 6.12 series),
# unless one kernel or image was named.
kernels=$(test_kernels) lane=""
[ -n "${KERNEL:-}${IMAGE:-}" ] || lane=$(debug_kernel)
patched="" stock="" drbg=""
for k in $kernels $lane; do
	case "$(kernel_role "$k")" in stock) stock+=" $k" ;; *) patched+=" $k" ;; esac
done
# The DRBG rows measure libforksafe through the mapping, the same code on
# every kernel of the series: on KERNELS' patched kernels, not again on
# the debug lane's, which takes three times as long.
for k in $patched; do [ "$k" = "$lane" ] || drbg+=" $k"; done
[ -n "$patched" ] || die "fork_signal: KERNELS names no patched kernel: nothing to test"
# shellcheck disable=SC2086 # a list of names
require_kernels fork_signal $kernels $lane

# fork_clone FROM DIR CLONE KERNEL GUID: snapshot FROM into DIR (migrate-file) and
# restore CLONE from it.
fork_clone() {
	snap_save migrate-file "$1" "$2"
	snap_restore migrate-file "$1" "$2" "$3" "$4" 1 "$5"
}

probe_tests() {
	local k=$1 p=$2
	t_eq "$k: a read smaller than the structure gets EINVAL" "$(agent_field short_read <<<"$p")" "$EINVAL"
	t_eq "$k: root opens it for writing" "$(agent_field rw_open <<<"$p")" 0
	t_eq "$k: write() on a writable file gets EINVAL" "$(agent_field write <<<"$p")" "$EINVAL"
	t_eq "$k: the read-only mapping of one page works" "$(agent_field map_read <<<"$p")" 0
	t_eq "$k: a writable shared mapping gets EPERM" "$(agent_field map_shared_write <<<"$p")" "$EPERM"
	t_eq "$k: a writable private mapping gets EPERM" "$(agent_field map_private_write <<<"$p")" "$EPERM"
	t_eq "$k: an executable mapping gets EPERM" "$(agent_field map_exec <<<"$p")" "$EPERM"
	t_eq "$k: a mapping at page 1 gets EINVAL" "$(agent_field map_offset <<<"$p")" "$EINVAL"
	t_eq "$k: mprotect() to write, on a writable file, gets EACCES" "$(agent_field mprotect_write <<<"$p")" "$EACCES"
	t_eq "$k: mprotect() to exec, on a writable file, gets EACCES" "$(agent_field mprotect_exec <<<"$p")" "$EACCES"
	t_eq "$k: the mapping holds the live ID" "$(agent_field id_matches <<<"$p")" 1
}

signal_tests() {
	local k=$1 kernel dir guid info p g waited
	kernel=$(kernel_path "$k")
	dir=$RUN_DIR/$k
	mkdir -p "$dir/1" "$dir/2"
	snap_boot migrate-file "$k" "$kernel" 1 "$dir/1"
	p=$(guest_call "$k" vmgenid-probe)
	t_diag "$k: $(tr '\n' ' ' <<<"$p")"
	probe_tests "$k" "$p"
	info=$(guest_call "$k" info)
	guid=$(agent_field guid <<<"$info")
	# The firmware puts the ID at the same address in every boot of the
	# same machine: where claimed_tests marks the page busy.
	ID_PHYS[$k]=$(agent_field guid_phys <<<"$info")
	# 0 after a boot, unless KUnit suites forked at boot (the kunit builds).
	# A reseed without a fork (RNDRESEEDCRNG, answered before the next
	# call) must not count one; the count is read synchronously.
	g=$(agent_field generation <<<"$p")
	guest_call "$k" reseed >/dev/null
	t_eq "$k: the count does not move on a reseed without a fork" \
		"$(agent_field generation <<<"$(guest_call "$k" vmgenid-probe)")" "$g"
	guest_call "$k" vmgenid-watch start >/dev/null
	snap_save migrate-file "$k" "$dir/1"
	# The fresh-GUID clone first: how long its wake takes is what the
	# control then waits, three times over, before it may say "none".
	snap_restore migrate-file "$k" "$dir/1" "$k-a" "$kernel" 1 auto
	watch_until "$k-a" "1 1 $((g + 1))"
	waited=$WATCH_WAITED
	t_eq "$k: a fresh-GUID clone: one wake, one uevent, the count one up (${waited}s)" \
		"$(watch_status "$k-a")" "1 1 $((g + 1))"
	fork_clone "$k-a" "$dir/2" "$k-aa" "$kernel" auto
	watch_until "$k-aa" "2 2 $((g + 2))"
	t_eq "$k: a clone of that clone: two wakes, two uevents, the count two up" \
		"$(watch_status "$k-aa")" "2 2 $((g + 2))"
	snap_end migrate-file "$k-aa"
	# The control: a reseed round trip makes the kernel look at the ID
	# (a changed one would be counted before the call returns), then the
	# positive clone's wake time, three times over and at least RESUMED_S.
	snap_restore migrate-file "$k" "$dir/1" "$k-control" "$kernel" 1 "$guid"
	guest_call "$k-control" reseed >/dev/null
	wait_as_positive "$waited" "$RESUMED_S"
	guest_call "$k-control" ping >/dev/null
	t_eq "$k: a clone with the original's GUID: no wake, no uevent, the count unmoved" \
		"$(watch_status "$k-control")" "0 0 $g"
	snap_end migrate-file "$k-control"
}

# unmapped_tests NAME TAG APPEND REASON: a boot with APPEND on the command
# line, where the driver must refuse to map the ID's page for REASON.
unmapped_tests() {
	local k=$1 tag=$2 append=$3 reason=$4 p
	guest_boot "$k-$tag" "$(kernel_path "$k")" --append "$append"
	p=$(guest_call "$k-$tag" vmgenid-probe)
	t_eq "$k: booted with $append, the mapping gets ENODEV" "$(agent_field map_read <<<"$p")" "$ENODEV"
	t_eq "$k: and the driver says why ($reason), once" \
		"$(grep -c "the ID's page is not mapped into user space ($reason)" "$(guest_dir "$k-$tag")/console.log" || true)" 1
	guest_stop "$k-$tag"
}

# claimed_tests NAME: the ID's page marked ACPI data, a busy region, where
# signal_tests' boot of the same machine found the ID.
claimed_tests() {
	local k=$1 phys=${ID_PHYS[$1]:-}
	[[ "$phys" =~ ^0x[0-9a-f]+$ ]] || die "fork_signal: $k: the agent gave no address of the ID ('$phys')"
	unmapped_tests "$k" claimed "memmap=4K#$(printf '0x%x' $((phys & ~4095)))" \
		"the page is claimed by another driver or the firmware"
}

t_plan $(($(wc -w <<<"$patched") * 15 + $(wc -w <<<"$drbg") * 8 + $(wc -w <<<"$stock")))
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
for k in $drbg; do
	unmapped_tests "$k" nomap vmgenid.map_id=0 vmgenid.map_id=0
	claimed_tests "$k"
done

ROWS=()
for k in $drbg; do
	# The positive control needs one clone to show the window.
	rng_rows "$RUN_DIR" 1 "$k" 1 migrate-file drbg-16 ready
	rng_rows "$RUN_DIR" 2 "$k" 1 migrate-file drbg-checked-16 ready
done
ROW_VERDICTS=()
[ "${#ROWS[@]}" = 0 ] || rows_judge "${ROWS[@]}"
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
