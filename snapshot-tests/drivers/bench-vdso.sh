#!/bin/bash
# make bench-vdso: what the 6.12 series' vDSO check (patch 0013) costs,
# stock-6.12 and patched-6.12 measured in the same run.  Instructions per
# call on guests that count instructions (machine.sh --deterministic,
# 1 vCPU, a vmgenid device: guest time advances 1 ns per instruction, so
# calls per guest second give instructions per call, the same in every
# run): the vDSO's getrandom() of 16 and 256 bytes, and the getrandom()
# system call of 16 bytes beside them; calls per instruction patched/stock
# (the target is at least 0.99).  The user-space loop is included.
# And what a fork() costs (6.12's 0017 drops the child's copy of the ID
# page's vvar entry once a page was given): fork() and wait of a process
# that used vDSO getrandom(), on stock-6.12, on patched-6.12, and on
# patched-6.12 booted with vmgenid.map_id=0 (no page given: no drop).
#   bench-vdso.sh [--out DIR]
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"
. "$(dirname "$0")/../lib/stats.sh"

out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse bench-vdso --out=out -- "$@"
qemu_setup
require_kernels bench-vdso stock-6.12 patched-6.12
results_lock bench-vdso "$out"
md=$out/bench-vdso.md

for k in stock-6.12 patched-6.12; do
	progress "bench: booting $k counting instructions"
	guest_boot "icount-$k" "$(kernel_path "$k")" --deterministic --guid "$ICOUNT_GUID"
done
progress "bench: booting patched-6.12 with vmgenid.map_id=0 counting instructions"
guest_boot icount-nopage "$(kernel_path patched-6.12)" --deterministic --guid "$ICOUNT_GUID" \
	--append vmgenid.map_id=0
FORKS=2000
{
	echo "## make bench-vdso"
	echo
	echo "Instructions per call, guests that count instructions (1 vCPU, a vmgenid device, $ICOUNT_ROUNDS rounds of $ICOUNT_MS ms of guest time, median; user-space loop included), and calls per instruction patched/stock (the target is at least 0.99):"
	echo
	echo "| call | stock-6.12 | patched-6.12 | patched/stock | distinct figures over all rounds |"
	echo "| --- | --- | --- | --- | --- |"
	for size in 16 256; do
		icount_row "vDSO getrandom $size B" icount-stock-6.12 icount-patched-6.12 bench "$size" "$ICOUNT_MS" vdso
	done
	icount_row "getrandom() syscall 16 B" icount-stock-6.12 icount-patched-6.12 bench 16 "$ICOUNT_MS"
	icount_row "fork() and wait, $FORKS per round" icount-stock-6.12 icount-patched-6.12 bench-fork "$FORKS"
	echo
	echo "A fork's child dropping the ID page's vvar entry (0017), the same kernel without and with a page given (instructions per fork() and wait):"
	echo
	echo "| call | patched-6.12, vmgenid.map_id=0 | patched-6.12 | with/without | distinct figures over all rounds |"
	echo "| --- | --- | --- | --- | --- |"
	icount_row "fork() and wait, $FORKS per round, no page or a page" icount-nopage icount-patched-6.12 bench-fork "$FORKS"
} >"$md.tmp"
for k in stock-6.12 patched-6.12 nopage; do guest_stop "icount-$k"; done
mv "$md.tmp" "$md"
cat "$md"
echo "bench-vdso: results in $md" >&2
