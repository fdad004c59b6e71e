# shellcheck shell=bash
# Seed files for guests, two ways.  Sourced by measure.sh; defines
# functions only.
#
#  - seed_disk: a small ext4 image that the guest's init mounts as the seed
#    tool's directory (machine.sh --seed-disk, guest/seed.c); it outlives
#    the guest, for the crash tests.  Byte for byte the same for the same
#    seed (fixed UUID, hash seed and times).
#  - seed_initramfs: the suite's initramfs with a seed file appended (the
#    kernel unpacks concatenated archives in turn), for the cold clones:
#    a disk's reads complete on QEMU's I/O threads, whenever the host runs
#    them, and that alone parts deterministic boots, while an initramfs is
#    unpacked by the guest's own instructions.

SEED_DISK_SIZE=8M
SEED_DISK_UUID=2b7d3e9a-5c11-4f00-8e6b-0a1b2c3d4e5f
SEED_DISK_TIME=1577836800 # 2020-01-01, the deterministic guests' RTC

# seed_bytes TAG: 512 bytes that stand for a golden image's seed, one set
# of bytes per TAG.
seed_bytes() {
	local s
	s=$(for i in $(seq 1 20); do printf 'forksafe %s image seed %03d\n' "$1" "$i"; done)
	printf '%s' "${s:0:512}"
}

# seed_disk OUT.img TAG: a seed disk holding TAG's seed as seed.credit
# (creditable: as an image builder provisions it).
seed_disk() {
	local out=$1 stage
	command -v mkfs.ext4 >/dev/null || die "seed: mkfs.ext4 not found: run 'make deps' (package e2fsprogs)"
	stage=$(mktemp -d "$RUN_DIR/seed-stage.XXXXXX")
	: >"$out" # mkfs.ext4 announces the files it creates
	seed_bytes "$2" >"$stage/seed.credit"
	chmod 0400 "$stage/seed.credit"
	touch -d "@$SEED_DISK_TIME" "$stage/seed.credit"
	E2FSPROGS_FAKE_TIME=$SEED_DISK_TIME mkfs.ext4 -q -F -U "$SEED_DISK_UUID" \
		-E "hash_seed=$SEED_DISK_UUID,root_owner=0:0" -d "$stage" "$out" "$SEED_DISK_SIZE" ||
		die "seed: mkfs.ext4 failed for $out"
	rm -rf "$stage"
}

# seed_initramfs OUT.cpio TAG: $INITRAMFS with TAG's seed as
# /var/lib/forksafe-seed/seed.credit.
seed_initramfs() {
	local out=$1 stage
	stage=$(mktemp -d "$RUN_DIR/seed-stage.XXXXXX")
	mkdir -p "$stage/var/lib/forksafe-seed"
	seed_bytes "$2" >"$stage/var/lib/forksafe-seed/seed.credit"
	chmod 0400 "$stage/var/lib/forksafe-seed/seed.credit"
	find "$stage" -exec touch -h -d "@$SEED_DISK_TIME" {} +
	initramfs_with "$out" "$stage" || die "seed: cpio failed for $out"
	rm -rf "$stage"
}

# seed_id TAG: how forksafe-seed's log names TAG's seed (its SHA-256's
# first 8 bytes).
seed_id() { seed_bytes "$1" | sha256sum | cut -c1-16; }

SEED_BOOT_TIMEOUT=${SEED_BOOT_TIMEOUT:-120} # a boot that runs the seed tool to its power-off

# seed_boot NAME KERNEL DISK APPEND [machine options]: boot with DISK as the
# seed disk and APPEND on the kernel command line (forksafe.seed=...),
# role none: the boot services run and the guest powers off.  The seed
# tool's lines, and init's about it, go to stdout.
seed_boot() {
	local name=$1 kernel=$2 disk=$3 append=$4
	shift 4
	guest_start "$name" "$kernel" --role none --seed-disk "$disk" --append "$append" "$@" || return 1
	guest_wait_exit "$name" "$SEED_BOOT_TIMEOUT" || {
		echo "seed: $name did not power off within ${SEED_BOOT_TIMEOUT}s: $(guest_console_tail "$name")" >&2
		guest_quit "$name"
		return 1
	}
	tr -d '\r' <"$(guest_dir "$name")/console.log" | grep -a -E 'forksafe-seed|forksafe-init: .*seed' || true
}
