#!/bin/bash
# make cold-clones: boot clones of one image and compare their RNG output
# at the first read, after the image's seed, when the crng is ready and 2 s
# later (lib/cold.sh says how, and what each factor of a row means).
#
#   cold-clones.sh [--kernels "patched stock"] [--clones N] [--rows "ROW ..."]
#                  [--full] [--out DIR]
#
# A ROW is CLOCK,GENID,SEED,CPU,RNG.  The default rows change one factor
# at a time from the control (det,absent,none,qemu64,no), write-other beside
# write (what the seed's bytes change), then the golden
# image copied with its <genid> and seed, with a fresh <genid>, and the
# same under ordinary TCG timing; --full runs every combination (72 rows
# per kernel, about an hour).  Per kernel, the control's clones must be
# identical at every moment and fresh-GUID clones must differ, or the
# table cannot tell identity from divergence and the run fails
# (analyzers/cold-report.jq, which also states what the rows answer about
# the seed documents' questions).
#
# KERNEL=/path/bzImage measures that kernel alone.  The table goes to
# stdout and DIR/cold-clones.md, the rows to DIR/cold-clones.json.
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"

kernels=$(test_kernels)
nclones=3
rows="det,absent,none,qemu64,no det,fixed,none,qemu64,no det,fresh,none,qemu64,no
	det,absent,credit,qemu64,no det,absent,write,qemu64,no det,absent,write-other,qemu64,no
	det,absent,none,max,no det,absent,none,max-trusted,no det,absent,none,qemu64,yes
	det,absent,none,no-tsc,no tcg,absent,none,no-tsc,no
	det,fixed,credit,qemu64,no det,fresh,credit,qemu64,no
	tcg,absent,none,qemu64,no tcg,fixed,credit,qemu64,no"
full=""
out=${RESULTS:-$FORKSAFE_ROOT/results}
opts_parse cold-clones --kernels=kernels --clones=nclones --rows=rows --full=full=1 --out=out -- "$@"
opts_counts cold-clones --clones "$nclones"
[ "$nclones" -ge 2 ] || die "cold-clones: --clones wants at least 2 (one boot has nothing to be identical to)"
if [ -n "$full" ]; then
	rows=""
	for clock in det tcg; do for genid in absent fixed fresh; do for seed in none credit write; do
		for cpu in qemu64 max; do for rng in no yes; do
			rows+=" $clock,$genid,$seed,$cpu,$rng"
		done; done
	done; done; done
fi
# Every row's words are checked before the first boot.
for r in $rows; do
	IFS=, read -r -a f <<<"$r"
	[ "${#f[@]}" = 5 ] || die "cold-clones: a row is CLOCK,GENID,SEED,CPU,RNG, not '$r'"
	cold_opts "${f[@]}"
done
# shellcheck disable=SC2086 # a list of words
require_kernels cold-clones $kernels
qemu_setup
results_lock cold-clones "$out"
mkdir -p "$out/cold"
ROWS=()
for k in $kernels; do
	for r in $rows; do
		IFS=, read -r -a f <<<"$r"
		ROWS+=("$out/cold/$k-${r//,/-}.json")
		cold_row "${ROWS[-1]}" "$k" "$nclones" "${f[@]}" || true
	done
done
report=$FORKSAFE_ROOT/snapshot-tests/analyzers/cold-report.jq
jq -s . "${ROWS[@]}" >"$out/cold-clones.json.tmp"
mv "$out/cold-clones.json.tmp" "$out/cold-clones.json"
{
	echo "## Cold clones"
	echo
	echo "$nclones boots per row of one kernel and initramfs (the golden image, with its seed file). Each cell: whether the boots' RNG output was identical, at the first read (GRND_INSECURE), after the seed, at the first blocking getrandom() (crng ready) and 2 s later. \"(≠ ref)\": identical, but not the output of the row's reference (the control, the first row; for write-other, the write row). crng init: the kernel's \"crng init done\", median."
	echo
	jq -rs --arg f table -f "$report" "${ROWS[@]}"
	echo
	jq -rs --arg f controls -f "$report" "${ROWS[@]}" | sed 's/^/- /'
	jq -rs --arg f findings -f "$report" "${ROWS[@]}" | sed 's/^/- /'
} >"$out/cold-clones.md.tmp"
mv "$out/cold-clones.md.tmp" "$out/cold-clones.md"
cat "$out/cold-clones.md"
echo "cold-clones: results in $out/cold-clones.md and $out/cold-clones.json" >&2
errors=$(jq '[.[] | select(has("error"))] | length' "$out/cold-clones.json")
[ "$errors" = 0 ] || die "cold-clones: $errors rows could not be measured (their errors are in the table)"
! jq -rs --arg f controls -f "$report" "${ROWS[@]}" | grep -q '^blind'
