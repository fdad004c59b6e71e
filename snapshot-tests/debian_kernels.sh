#!/bin/bash
# Debian's own kernels, as operators run them: downloaded once
# (kernel-patches/kernel.sh build debian-*), with the modules the guests
# need loaded by the guest's init.  A migrate-file fork each, two
# fresh-GUID clones, the reference and the control, for the rows
# DEBIAN_TEST_ROWS names as KERNEL:SHAPE (make check: debian-cloud-6.12's
# vDSO row, the 6.12 series' yardstick; all three with
# DEBIAN_TEST_ROWS="debian-cloud:getrandom-16 debian-cloud-6.12:getrandom-16
# debian-cloud-6.12:vdso-16", and in make demo KERNELS=debian-cloud ...):
#  - debian-cloud (linux-image-cloud-amd64, 6.1) is built without
#    CONFIG_VIRT_DRIVERS: no vmgenid driver, so its clones never reseed
#    and never part from the reference.  That whole window is certain:
#    the positive control, which a blind detector would miss.
#  - debian-cloud-6.12 (linux-image-6.12-cloud-amd64) has the driver
#    built in: each clone reseeds once and parts from the reference, for
#    getrandom() and for the vDSO's getrandom(); what a clone made before
#    that is its window.  For getrandom() a race whose size is reported,
#    not asserted; for the vDSO, which never enters the kernel until the
#    reseed has bumped its generation, an exposure window in every run:
#    the positive control of the 6.12 vDSO rows that fork_debug asserts
#    fork-safe on the series (make check's debug-6.12).
# Every row's control stays identical to its reference.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

rows=${DEBIAN_TEST_ROWS:-debian-cloud-6.12:vdso-16}
vdso_rows=0
for r in $rows; do
	case "$r" in
	debian-cloud:getrandom-16 | debian-cloud-6.12:getrandom-16) ;;
	debian-cloud-6.12:vdso-16) vdso_rows=$((vdso_rows + 1)) ;;
	*) die "DEBIAN_TEST_ROWS: no row '$r' here (debian-cloud:getrandom-16, debian-cloud-6.12:getrandom-16, debian-cloud-6.12:vdso-16)" ;;
	esac
done
# shellcheck disable=SC2086 # a list of words
for k in $(printf '%s\n' $rows | sed 's/:.*//' | sort -u); do
	progress "debian_kernels: $k"
	"$FORKSAFE_ROOT/kernel-patches/kernel.sh" build "$k" >"$RUN_DIR/fetch-$k.log" 2>&1 ||
		die "debian_kernels: cannot get $k: $(tail -n 1 "$RUN_DIR/fetch-$k.log")"
done
ROWS=()
for r in $rows; do rng_rows "$RUN_DIR" 2 "${r%%:*}" 1 migrate-file "${r#*:}" ready; done
t_plan $((${#ROWS[@]} * 4 + vdso_rows))
rows_judge "${ROWS[@]}"
# shellcheck disable=SC2034 # v and t_row read VERDICT
for VERDICT in "${ROW_VERDICTS[@]}"; do
	tag="$(v kernel) $(v shape)"
	t_row "$tag: measured with an identical negative control" || {
		t_fail "$tag: every clone sees a new GUID"
		t_fail "$tag: reseeds"
		t_fail "$tag: parts"
		[ "$(v shape)" != vdso-16 ] || t_fail "$tag: the vDSO goes on from its pre-fork state (positive control)"
		continue
	}
	t_eq "$tag: every clone sees a new GUID" "$(v guid_changed)" 2
	t_diag "$tag: $(v verdict); at most $(v exposure_bytes_max) bytes, $(v exposure_us_max) us shared with the reference"
	case "$(v kernel)" in
	debian-cloud)
		t_eq "$tag: no clone reseeds (no vmgenid driver)" "$(v reseeded_once)" 0
		t_eq "$tag: no clone ever parts from the reference (positive control)" "$(v diverged)" 0
		;;
	*)
		t_eq "$tag: every clone reseeds once" "$(v reseeded_once)" 2
		t_eq "$tag: every clone parts from the reference" "$(v diverged)" 2
		;;
	esac
	[ "$(v shape)" != vdso-16 ] ||
		t_eq "$tag: the vDSO goes on from its pre-fork state (positive control)" "$(v verdict)" "exposure window"
done
t_done
