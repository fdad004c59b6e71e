#!/bin/bash
# The fork matrix, fast: every snapshot method on the fork-safe kernels,
# 2 vCPUs (FORK_TEST_VCPUS=), two fresh-GUID clones each; the yardsticks
# (stock) at migrate-file (FORK_TEST_STOCK_METHODS=), where their window
# is widest (make demo runs the full matrix, every method on every kernel).
# Patched and stock share that cell at 2 vCPUs, so that a patched row is
# judged where its positive control can see; the other methods differ
# from it only in how QEMU forks, which every row's GUID, reseed and
# control checks measure on the patched kernel.
#  - the negative control (a second clone with the original's GUID) is
#    identical to the reference for the whole window: the recording can
#    tell a fork from no fork; a control that diverges fails the test;
#  - restores into a new QEMU process (and libvirt's) change the GUID in
#    every clone, every clone ends up with RNG output different from the
#    reference, and each logs "crng reseeded due to virtual machine fork"
#    exactly once; the control, with an unchanged GUID, never does;
#  - loadvm inside the running process gives no fork signal (QEMU 7.2
#    keeps the process's GUID), and its clones stay identical;
#  - on the patched kernel no clone produces a single record from the
#    pre-fork state after its GUID changed, nor one that the other clone
#    produced after its own (the stock kernel's window is measured and
#    reported, not asserted: it is a race);
#  - a row where only some clones saw a new GUID (fork-report's "partial
#    fork signal") fails "every clone sees a new GUID";
#  - but stock must show exposure in at least one clone: if no row above
#    did, up to STOCK_RETRIES more stock rows (migrate-file, 2 vCPUs, where
#    the window is widest) are tried; a yardstick that never sees the
#    stock kernel's window is blind, and the test fails.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup

ROWS=()
for k in $(test_kernels); do
	methods=${FORK_TEST_METHODS:-$SNAP_METHODS}
	[ "$(kernel_role "$k")" != stock ] || methods=${FORK_TEST_STOCK_METHODS:-migrate-file}
	rng_rows "$RUN_DIR" 2 "$k" "${FORK_TEST_VCPUS:-2}" "$methods"
done
rows_judge "${ROWS[@]}"
# shellcheck disable=SC2034 # v and t_row read VERDICT
for VERDICT in "${ROW_VERDICTS[@]}"; do
	tag="$(v kernel) $(v vcpus)cpu $(v method)"
	t_row "$tag: measured with an identical negative control" || continue
	t_eq "$tag: an unchanged GUID logs no vmfork reseed" "$(v control_reseeds)" 0
	if snap_inproc "$(v method)"; then
		t_eq "$tag: no fork signal" "$(v verdict)" "no fork signal"
		t_eq "$tag: clones stay identical" "$(v diverged)" 0
		continue
	fi
	t_eq "$tag: every clone sees a new GUID" "$(v guid_changed)" 2
	t_eq "$tag: every clone produces output neither the reference nor the other clone did" "$(v diverged)" 2
	t_eq "$tag: each clone logs the vmfork reseed exactly once" "$(v reseeded_once)" 2
	if [ "$(kernel_role "$(v kernel)")" = patched ]; then
		# The series checks the live ID before producing any output.
		t_eq "$tag: not one record shared with the reference or the other clone after the GUID changed" \
			"$(v exposure_max) $(v cross_clone_max)" "0 0"
	else
		t_diag "$tag: $(v verdict), $(v exposure_max) records at most ($(v shape)), $(v cross_clone_max) shared between clones"
	fi
done

# The positive control, for each stock kernel.
STOCK_RETRIES=3
# stock_exposed KERNEL ROW...: did one of KERNEL's rows show a window?
stock_exposed() {
	local k=$1
	shift
	"$BUILD/fork-report" -f verdicts "$@" |
		jq -se --arg k "$k" '[.[] | select(.kernel == $k and .verdict == "exposure window")] | length > 0' >/dev/null
}
for k in $(test_kernels); do
	[ "$(kernel_role "$k")" = stock ] || continue
	tries=0
	while ! stock_exposed "$k" "${ROWS[@]}" && [ "$tries" -lt "$STOCK_RETRIES" ]; do
		tries=$((tries + 1))
		ROWS+=("$RUN_DIR/$k-retry-$tries.json")
		rng_row "$k" migrate-file 2 2 "${ROWS[-1]}" || true
	done
	t_diag "$k rows tried beyond the matrix for the positive control: $tries"
	t_check "$k shows its exposure window (the yardstick can see it)" stock_exposed "$k" "${ROWS[@]}"
done
t_done
