#!/bin/bash
# forksafe-seed watch gives every clone a seed of its own.  A guest boots
# with a seed disk, loads its seed (forksafe-seed load) and keeps the
# watcher running (every 100 ms), and is forked by migrate-file: two
# clones with fresh GUIDs and a control with the original's, each on a
# copy of the disk as the snapshot left it, each powered off cleanly once
# its watcher wrote the new seed (a fresh clone, within SEED_TIMEOUT) or
# three times as long as the slowest fresh clone took (the control and the
# clones without the watcher: wait_as_positive).  Read back from each disk on the host (debugfs):
#  - each fresh-GUID clone's watcher saw the fork once and wrote a seed,
#    and that seed is on its disk, durable;
#  - the clones' seeds differ from each other and from the original's;
#  - the control saw no fork and its disk holds the original's seed
#    (negative control).
# Positive control: the same fork without the watcher leaves both
# clones the original's seed, which the comparison must report as shared.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
. "$(dirname "$0")/lib/measure.sh"
qemu_setup
for t in debugfs e2fsck; do command -v "$t" >/dev/null || die "seed_fork: $t not found: run 'make deps' (package e2fsprogs)"; done

kernel=$(kernel_path "$(test_kernels | awk '{ print $1 }')")
SEED_TIMEOUT=30
SEED_LAT_MS=0 # the slowest fresh clone's resume to its new seed
t_plan 10

# seed_refreshed NAME: NAME's watcher logged the fork and then a seed it wrote.
seed_refreshed() {
	sed -n '/VM fork: generation ID/,$p' "$(guest_dir "$1")/console.log" | grep -aq 'forksafe-seed: wrote'
}

# disk_seed DISK: "NAME ID" of the seed file on DISK as the next mount
# would see it (a copy's journal replayed: a disk snapshotted from a
# running guest has its last transactions there alone), "none" if none.
disk_seed() {
	local copy=$1.read name rc=0
	cp "$1" "$copy"
	e2fsck -fp "$copy" >/dev/null 2>&1 || rc=$?
	[ "$rc" -lt 4 ] || die "e2fsck found errors it could not fix on $1 (status $rc)"
	for name in seed.credit seed.no-credit; do
		if debugfs -R "stat $name" "$copy" 2>/dev/null | grep -q '^Inode:'; then
			echo "$name $(debugfs -R "cat $name" "$copy" 2>/dev/null | sha256sum | cut -c1-16)"
			rm -f "$copy"
			return
		fi
	done
	rm -f "$copy"
	echo none
}

# fork_seed TAG WATCH: boot, fork into TAG-a, TAG-b (fresh GUIDs) and
# TAG-control (the original's), each on its own copy of the disk; SEED[x]
# is what each disk holds afterwards and FORKS[x] how many forks each
# clone's watcher logged; SEED[orig] the original's seed at the snapshot.
declare -A SEED=() FORKS=()
fork_seed() {
	local tag=$1 seed=forksafe.seed=load dir=$RUN_DIR/$1 guid info c g t0
	[ "$2" = 1 ] && seed="forksafe.seed=load,watch forksafe.seedwatch=100"
	mkdir -p "$dir"
	seed_disk "$dir/orig.img" golden
	snap_boot migrate-file "$tag" "$kernel" 1 "$dir" --seed-disk "$dir/orig.img" --append "$seed"
	info=$(guest_call "$tag" info)
	guid=$(agent_field guid <<<"$info")
	[ -n "$guid" ] || die "the agent cannot read the generation ID: $(agent_field guid_error <<<"$info")"
	[ "$2" = 0 ] || t_diag "$tag: $(grep -a -m1 -o 'watching generation ID.*' "$(guest_dir "$tag")/console.log" | tr -d '\r')"
	snap_save migrate-file "$tag" "$dir"
	SEED[$tag-orig]=$(disk_seed "$dir/orig.img")
	for c in a b control; do
		g=auto
		[ "$c" = control ] && g=$guid
		cp "$dir/orig.img" "$dir/$c.img"
		t0=$(ms_now)
		snap_restore migrate-file "$tag" "$dir" "$tag-$c" "$kernel" 1 "$g" --seed-disk "$dir/$c.img" --append "$seed"
		if [ "$2:$c" = 1:a ] || [ "$2:$c" = 1:b ]; then
			wait_until "$SEED_TIMEOUT" seed_refreshed "$tag-$c" || t_diag "$tag-$c: no new seed within ${SEED_TIMEOUT}s"
			t0=$(($(ms_now) - t0))
			[ "$t0" -le "$SEED_LAT_MS" ] || SEED_LAT_MS=$t0
		else
			wait_as_positive_since "$t0" "$SEED_LAT_MS" 1000
		fi
		snap_end migrate-file "$tag-$c"
		SEED[$tag-$c]=$(disk_seed "$dir/$c.img")
		FORKS[$tag-$c]=$(grep -ac 'VM fork: generation ID' "$(guest_dir "$tag-$c")/console.log" || true)
		t_diag "$tag-$c: ${FORKS[$tag-$c]} forks logged, disk holds ${SEED[$tag-$c]}"
	done
}

fork_seed watched 1
t_diag "watched: the slowest fresh clone had its new seed ${SEED_LAT_MS} ms after its restore began"
t_diag "watched: the original's seed at the snapshot: ${SEED[watched-orig]}"
t_eq "the original had written its next seed before the snapshot" "${SEED[watched-orig]%% *}" seed.no-credit
for c in a b; do
	t_eq "clone $c's watcher saw the fork once" "${FORKS[watched-$c]}" 1
	last=$(sed -n 's/^forksafe-seed: wrote \([^ ]*\) \([0-9a-f]*\).*/\1 \2/p' \
		"$(guest_dir "watched-$c")/console.log" | tr -d '\r' | tail -n 1)
	t_eq "clone $c's refreshed seed is on its disk" "${SEED[watched-$c]}" "$last"
done
t_check "the clones' seeds differ from each other and from the original's" \
	test "$(printf '%s\n' "${SEED[watched-orig]}" "${SEED[watched-a]}" "${SEED[watched-b]}" | sort -u | wc -l)" = 3
t_eq "the control saw no fork" "${FORKS[watched-control]}" 0
t_eq "the control's disk holds the original's seed" "${SEED[watched-control]}" "${SEED[watched-orig]}"

fork_seed unwatched 0
for c in a b; do
	t_eq "without the watcher, clone $c keeps the original's seed (positive control)" \
		"${SEED[unwatched-$c]}" "${SEED[unwatched-orig]/#none/no seed on the original}"
done
t_done
