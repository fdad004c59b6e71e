#!/bin/bash
# make storm: chained forks, a clone of a clone of a clone.  A guest is
# snapshotted by migrate-file and restored with a fresh GUID; that clone
# is snapshotted and restored again with another, DEPTH times.  At every
# level:
#  - the guest reads the new GUID, and logs exactly one "crng reseeded due
#    to virtual machine fork": each fork counted once, none lost, none
#    twice;
#  - its first output after the restore (the agent's `sample`, 32 bytes of
#    getrandom()) was never seen at an earlier level;
#  - no kernel warning, BUG or oops on its console;
#  - MemAvailable is recorded: level DEPTH may have at most MEM_BOUND_KB
#    less than level 1, or the chain leaks.
# Every CONTROL_EVERY levels (and at level 1) two more restores of the
# same snapshot keep the parent's GUID: their first outputs must be equal
# (the negative control: else a sample cannot tell a fork), and the fork's
# must differ from them on the patched kernel (the stock kernel's result is
# reported: its first output after a fork is the pre-fork state's when the
# asynchronous reseed has not run yet).
#
#   storm.sh [--kernels "patched stock"] [--depth 100] [--control-every 10] [--out DIR]
#
# KERNEL=/path/bzImage runs that kernel alone.  The table goes to stdout
# and DIR/storm.md, every level to DIR/storm.json.  The run fails when a
# patched level fails a check, or when a control pair differs (blind).
set -euo pipefail
. "$(dirname "$0")/../lib/measure.sh"
. "$(dirname "$0")/../lib/opts.sh"

kernels=$(test_kernels)
depth=100
every=10
out=${RESULTS:-$FORKSAFE_ROOT/results}
MEM_BOUND_KB=${MEM_BOUND_KB:-2048}
STORM_RUN_S=1 # a level runs this long after its sample before its console is read
opts_parse storm --kernels=kernels --depth=depth --control-every=every --out=out -- "$@"
opts_counts storm "--depth and --control-every" "$depth" "$every"
# shellcheck disable=SC2086 # a list of words
require_kernels storm $kernels
qemu_setup
results_lock storm "$out"
mkdir -p "$out/storm"

warnings() { grep -c -E 'WARNING:|BUG:|Oops|Call Trace' "$(guest_dir "$1")/console.log" || true; }
sample() { agent_field bytes <<<"$(guest_call "$1" sample)"; }

# control_pair K DIR PARENT_GUID LEVEL: two restores of DIR's snapshot with
# the parent's GUID; their first outputs, "A B".
control_pair() {
	local k=$1 dir=$2 guid=$3 level=$4 i s=""
	for i in 1 2; do
		snap_restore migrate-file "$k" "$dir" "$k-ctl$level-$i" "$(kernel_path "$k")" 1 "$guid"
		s+="$(sample "$k-ctl$level-$i") "
		guest_quit "$k-ctl$level-$i"
	done
	echo "$s"
}

# storm K: the chain on kernel K, one JSON line per level on stdout.
storm() {
	local k=$1 prev=$1 dir=$RUN_DIR/$1-0 next name info guid parent_guid s pair level
	mkdir -p "$dir"
	snap_boot migrate-file "$k" "$(kernel_path "$k")" 1 "$dir"
	parent_guid=$(agent_field guid <<<"$(guest_call "$k" info)")
	snap_save migrate-file "$k" "$dir"
	for level in $(seq 1 "$depth"); do
		name=$k-L$level next=$RUN_DIR/$k-$level
		mkdir -p "$next"
		snap_restore migrate-file "$prev" "$dir" "$name" "$(kernel_path "$k")" 1 auto
		s=$(sample "$name")
		sleep "$STORM_RUN_S"
		info=$(guest_call "$name" info)
		guid=$(agent_field guid <<<"$info")
		pair=""
		if [ "$level" = 1 ] || [ $((level % every)) = 0 ]; then
			pair=$(control_pair "$k" "$dir" "$parent_guid" "$level")
		fi
		snap_save migrate-file "$name" "$next"
		jq -nc --argjson level "$level" --arg guid "$guid" --arg parent "$parent_guid" --arg sample "$s" \
			--argjson forks "$(fork_lines "$name")" --argjson warnings "$(warnings "$name")" \
			--argjson mem "$(agent_field mem_available_kb <<<"$info")" --arg pair "$pair" \
			'{level: $level, guid: $guid, parent_guid: $parent, sample: $sample, forks: $forks,
			  warnings: $warnings, mem_available_kb: $mem,
			  control: ($pair | split(" ") | map(select(. != "")))}'
		progress "storm $k: level $level: $(fork_lines "$name") fork line(s), MemAvailable $(agent_field mem_available_kb <<<"$info") kB"
		rm -rf "$dir"
		dir=$next prev=$name parent_guid=$guid
	done
	rm -rf "$dir"
}

for k in $kernels; do
	storm "$k" >"$out/storm/$k.jsonl.tmp"
	mv "$out/storm/$k.jsonl.tmp" "$out/storm/$k.jsonl"
done
# One summary per kernel, from its levels.
summary=$(for k in $kernels; do
	jq -s -c --arg k "$k" --argjson bound "$MEM_BOUND_KB" '
		def distinct: (unique | length) == length;
		[.[] | select(.control | length == 2)] as $ctl |
		{kernel: $k, levels: length,
		 one_fork_each: ([.[] | select(.forks != 1)] | length == 0),
		 bad_fork_levels: [.[] | select(.forks != 1) | "\(.level): \(.forks)"],
		 new_guid_each: ([.[] | select(.guid == .parent_guid or .guid == "")] | length == 0),
		 guids_distinct: (map(.guid) + [.[0].parent_guid] | distinct),
		 samples_distinct: (map(.sample) | distinct),
		 warnings: (map(.warnings) | add),
		 mem_first_kb: .[0].mem_available_kb, mem_last_kb: .[-1].mem_available_kb,
		 mem_lost_kb: (.[0].mem_available_kb - .[-1].mem_available_kb),
		 mem_bound_kb: $bound,
		 controls: ($ctl | length),
		 controls_equal: ([$ctl[] | select(.control[0] == .control[1])] | length),
		 forks_differ: ([$ctl[] | select(.sample != .control[0])] | length)}' \
		"$out/storm/$k.jsonl"
done | jq -s .)
echo "$summary" >"$out/storm.json.tmp"
mv "$out/storm.json.tmp" "$out/storm.json"
{
	echo "## Chained forks (make storm)"
	echo
	echo "migrate-file, 1 vCPU, $depth levels per kernel, each level a restore of the last with a fresh GUID; a pair of restores with the parent's GUID every $every levels and at level 1."
	echo
	echo "| kernel | levels | one fork logged at each | GUIDs all new | first outputs all new | warnings | MemAvailable level 1 → $depth (kB) | controls equal | fork's output differs from the controls |"
	echo "|---|---|---|---|---|---|---|---|---|"
	jq -r '.[] | "| \(.kernel) | \(.levels) | \(if .one_fork_each then "yes" else "no: " + (.bad_fork_levels | join(", ")) end) | \(.guids_distinct and .new_guid_each) | \(.samples_distinct) | \(.warnings) | \(.mem_first_kb) → \(.mem_last_kb) (\(.mem_lost_kb) lost, bound \(.mem_bound_kb)) | \(.controls_equal) of \(.controls) | \(.forks_differ) of \(.controls) |"' <<<"$summary"
} >"$out/storm.md.tmp"
mv "$out/storm.md.tmp" "$out/storm.md"
cat "$out/storm.md"
echo "storm: results in $out/storm.md, $out/storm.json and $out/storm/" >&2
# Blind: a control pair that differs.  Failed: a patched (or custom) level.
jq -e 'all(.[]; .controls_equal == .controls)' <<<"$summary" >/dev/null ||
	die "storm: a control pair differed: a first output cannot tell a fork here"
jq -e 'all(.[] | select(.kernel != "stock"); .one_fork_each and .new_guid_each and .guids_distinct
	and .samples_distinct and .warnings == 0 and .mem_lost_kb <= .mem_bound_kb
	and .forks_differ == .controls)' <<<"$summary" >/dev/null ||
	die "storm: the patched kernel failed a check (the table says which)"
