#!/bin/bash
# The consumer shapes beyond getrandom() loops, one representative row each
# (make demo runs them all, on every method): a migrate-file fork with two
# fresh-GUID clones (one on stock, whose windows here are certain), the
# reference and the control, on each kernel.
#  - long reads in flight: a thread calling getrandom() for 16 MiB at a
#    time, the snapshot landing inside a call, every 4 KiB page recorded
#    with whether the ID had changed when the kernel wrote it;
#  - the kernel's own randomness before the crng is ready: programs exec'd
#    one after another (their AT_RANDOM, and their stack and mmap bases)
#    in a guest booted without a trusted cycle counter or RDRAND,
#    snapshotted in CRNG_EARLY, where get_random_bytes() and the batched
#    get_random_long() come from base_crng.key alone;
#  - on 6.12 kernels (KERNELS=...-6.12), the vDSO's getrandom(): output
#    made in user space from a key per thread, which the kernel renews only
#    when it reseeds (stock) or as soon as the ID changed (6.12's vDSO patch);
#    once more with clones whose GUIDs differ from the original's in the
#    last group only (RNG_GUIDS=tail), as operators who number their clones
#    give them: the first 8 bytes of the ID stay, and a check of those
#    alone (series v2's vDSO) leaves the stock window open; and on patched
#    6.12 kernels once more booted with vmgenid.map_id=0, the ID's page
#    kept out of user space: the vDSO must then take the system call (v2
#    left it a fast path without the check).
# Patched: no clone shares more than the page in flight with the reference
# or with another clone (fork-safe).  Stock: both windows are certain, not
# races (the in-flight call goes on from its state to its end; in
# CRNG_EARLY the notification does not rekey), so stock must show exposure
# in every row: that is the positive control, and a yardstick that finds
# none is blind.  Every row's control stays identical to its reference.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

kernels=$(test_kernels)
ROWS=()
# Stock's windows here are certain: one clone shows each.
for k in $kernels; do
	rng_rows "$RUN_DIR" "$(fresh_clones "$k" 2)" "$k" 1 migrate-file getrandom-16MiB ready
	rng_rows "$RUN_DIR" "$(fresh_clones "$k" 2)" "$k" 1 migrate-file exec early
done
# shellcheck disable=SC2086 # a list of words
vdso=$(shape_kernels vdso-16 $kernels)
if [ -n "$vdso" ]; then
	rng_rows "$RUN_DIR" 2 "$vdso" 1 migrate-file vdso-16 ready
	export RNG_GUIDS=tail
	rng_rows "$RUN_DIR" 2 "$vdso" 1 migrate-file vdso-16 ready
	export RNG_GUIDS=new
	for k in $vdso; do
		[ "$(kernel_role "$k")" = patched ] || continue
		ROWS+=("$RUN_DIR/$k-1cpu-migrate-file-vdso-16-ready-nomap.json")
		rng_row "$k" migrate-file 1 2 "${ROWS[-1]}" vdso-16 ready vmgenid.map_id=0 || true
	done
fi
t_plan $((${#ROWS[@]} * 3))
rows_judge "${ROWS[@]}"
i=0
# shellcheck disable=SC2034 # v and t_row read VERDICT
for VERDICT in "${ROW_VERDICTS[@]}"; do
	tag="$(v kernel) $(v shape), crng $(v crng)"
	case "${ROWS[i++]}" in *-tail.json) tag+=", $RNG_GUIDS_TAIL" ;; esac
	[ "$(v append)" = null ] || tag+=", booted with $(v append)"
	t_row "$tag: measured with an identical negative control" || { t_fail "$tag: every clone sees a new GUID"; t_fail "$tag: exposure as expected"; continue; }
	n=2
	[ "$(v shape)" = vdso-16 ] || n=$(fresh_clones "$(v kernel)" 2)
	t_eq "$tag: every clone sees a new GUID" "$(v guid_changed)" "$n"
	t_diag "$tag: $(v verdict); at most $(v exposure_bytes_max) bytes shared with the reference, $(v cross_clone_max) records with another clone"
	case "$(kernel_role "$(v kernel)")" in
	stock) t_check "$tag: stock shows its window (positive control)" test "$(v verdict)" = "exposure window" ;;
	*) t_eq "$tag: no clone shares more than the page in flight" "$(v verdict)" fork-safe ;;
	esac
done
t_done
