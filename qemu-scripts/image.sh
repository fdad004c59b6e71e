# shellcheck shell=bash
# A guest image: an operator's golden image (IMAGE=) or the suite's own
# (make image), read without booting it and never written.  Sourced by
# qemu.sh; defines functions only.
#
# The suite boots an image's own kernel and initramfs directly (-kernel),
# so it needs them as files: image_import finds the root filesystem (ext4,
# on a partition or the whole disk), takes /boot's newest kernel and its
# initramfs out with debugfs (no mount, no loop device), reads root= from
# /etc/fstab, and checks what the tests need, saying in one line what is
# missing.  The result is cached by the image's path, size and time:
#   disk         a symlink to the image;  disk.format  qcow2 or raw
#   vmlinuz, initrd.img, root (root=), kver, report (what was found)
#   root-native  root= for a kernel without an initramfs (image_with_kernel)
# Guests run on overlays over disk (machine.sh): the image is only read.
# The bootloader is not used, so its kernel parameters are not applied.

# image_dir IMAGE: where IMAGE's import is kept: by the image's path, size
# and time, and by this file (a change to the import imports again).
image_dir() {
	local real
	real=$(readlink -f "$1")
	echo "${FORKSAFE_CACHE:-/var/cache/forksafe}/imports/$({ stat -L -c '%n %s %Y' "$real"; cat "${BASH_SOURCE[0]}"; } |
		sha256sum | cut -c1-16)"
}

# image_import IMAGE: import IMAGE (once); its directory on stdout.
image_import() {
	local image=$1 dir tmp fmt info view off uuid found="" kver
	if [ ! -f "$image" ] || [ ! -r "$image" ]; then echo "image: cannot read $image" >&2; return 1; fi
	dir=$(image_dir "$image")
	if [ -f "$dir/vmlinuz" ]; then echo "$dir"; return 0; fi
	command -v debugfs >/dev/null || { echo "image: debugfs is missing: run 'make deps' (e2fsprogs)" >&2; return 1; }
	info=$(qemu-img info --output=json "$image" 2>&1) || { echo "image: $image: ${info##*$'\n'}" >&2; return 1; }
	fmt=$(jq -r .format <<<"$info")
	case "$fmt" in
	qcow2 | raw) ;;
	*) echo "image: $image is $fmt, not qcow2 or raw" >&2; return 1 ;;
	esac
	mkdir -p "$(dirname "$dir")"
	tmp=$(mktemp -d "$(dirname "$dir")/.import.XXXXXX")
	chmod 0755 "$tmp"
	view=$image
	if [ "$fmt" = qcow2 ]; then
		view=$tmp/view.raw
		if ! info=$(qemu-img convert -O raw "$image" "$view" 2>&1); then
			rm -rf "$tmp"
			echo "image: cannot read $image: ${info##*$'\n'}" >&2
			return 1
		fi
	fi
	# Partitions first (a cloud image's root is one), then the whole disk;
	# root-native is root= for a kernel without an initramfs.
	while read -r off uuid; do
		if image_get "$view" "$off" /etc/fstab "$tmp/fstab"; then
			found=$off
			if [ "$off" = 0 ]; then echo /dev/vda; else echo "PARTUUID=$uuid"; fi >"$tmp/root-native"
			break
		fi
	done < <(image_candidates "$view")
	if [ -z "$found" ]; then
		rm -rf "$tmp"
		echo "image: $image has no ext4 root filesystem with /etc/fstab (only ext2/3/4 roots are read)" >&2
		return 1
	fi
	image_extract "$view" "$found" "$tmp" || { rm -rf "$tmp"; return 1; }
	kver=$(cat "$tmp/kver")
	image_check "$view" "$found" "$kver" "$tmp" >"$tmp/report" || { rm -rf "$tmp"; return 1; }
	rm -f "$tmp/view.raw" "$tmp/fstab" "$tmp/config" "$tmp/agent" "$tmp/unit"
	ln -s "$(readlink -f "$image")" "$tmp/disk"
	echo "$fmt" >"$tmp/disk.format"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	echo "$dir"
}

# image_candidates VIEW: "OFFSET PARTUUID" of each partition (none when
# there is no partition table, which partx fails on), then "0 -".
image_candidates() {
	{ partx -g -o START,UUID "$1" 2>/dev/null || true; } | awk '{ print $1 * 512, $2 }'
	echo 0 -
}

# image_with_kernel IMPORT KERNEL NAME: IMPORT's disk booted with KERNEL
# (one of the suite's, which has what it needs built in: no initramfs)
# instead of its own; its directory, IMPORT+NAME, on stdout.
image_with_kernel() {
	local import=$1 kernel=$2 dir=$1+$3
	mkdir -p "$dir"
	ln -sfn "$(readlink -f "$import/disk")" "$dir/disk"
	ln -sfn "$(readlink -f "$kernel")" "$dir/vmlinuz"
	cp "$import/disk.format" "$dir/disk.format"
	cp "$import/root-native" "$dir/root"
	echo "$dir"
}

# image_get VIEW OFFSET PATH OUT: a file of the filesystem at OFFSET of
# VIEW, to OUT; 1 if there is no such file or filesystem.
image_get() {
	rm -f "$4"
	debugfs -R "dump $3 $4" "$1?offset=$2" >/dev/null 2>&1 || true
	[ -f "$4" ]
}

# image_extract VIEW OFFSET DIR: the newest kernel of /boot, its initramfs,
# and root= from /etc/fstab, into DIR.
image_extract() {
	local view=$1 off=$2 dir=$3 kver root
	kver=$(debugfs -R 'ls -p /boot' "$view?offset=$off" 2>/dev/null |
		awk -F/ '$6 ~ /^vmlinuz-/ { sub(/^vmlinuz-/, "", $6); print $6 }' | sort -V | tail -n 1)
	[ -n "$kver" ] || { echo "image: no /boot/vmlinuz-* in the root filesystem (a separate /boot is not read)" >&2; return 1; }
	image_get "$view" "$off" "/boot/vmlinuz-$kver" "$dir/vmlinuz" ||
		{ echo "image: cannot read /boot/vmlinuz-$kver" >&2; return 1; }
	image_get "$view" "$off" "/boot/initrd.img-$kver" "$dir/initrd.img" ||
		{ echo "image: no /boot/initrd.img-$kver beside its kernel" >&2; return 1; }
	root=$(awk '$1 !~ /^#/ && $2 == "/" { print $1; exit }' "$dir/fstab")
	[ -n "$root" ] || { echo "image: /etc/fstab mounts nothing on /" >&2; return 1; }
	echo "$kver" >"$dir/kver"
	echo "$root" >"$dir/root"
}

# image_check VIEW OFFSET KVER DIR: what the tests need, or one line on
# what is missing.  Prints what was found.  No vmgenid driver is not an
# error: that is what the rows then show (the clones never reseed).
image_check() {
	local view=$1 off=$2 kver=$3 dir=$4 driver
	image_get "$view" "$off" /usr/sbin/forksafe-agent "$dir/agent" ||
		{ echo "image: no forksafe agent: install build/forksafe-agent.deb into it (make agent-deb)" >&2; return 1; }
	image_get "$view" "$off" /etc/systemd/system/multi-user.target.wants/forksafe-agent.service "$dir/unit" ||
		{ echo "image: the forksafe agent is installed but its service is not enabled (systemctl enable forksafe-agent)" >&2; return 1; }
	image_get "$view" "$off" "/boot/config-$kver" "$dir/config" ||
		{ echo "image: no /boot/config-$kver: cannot tell whether its kernel has virtio-serial and vmgenid" >&2; return 1; }
	grep -Eq '^CONFIG_VIRTIO_CONSOLE=[ym]' "$dir/config" ||
		{ echo "image: its kernel $kver has no virtio-serial (CONFIG_VIRTIO_CONSOLE): the agent cannot reach the host" >&2; return 1; }
	grep -Eq '^CONFIG_VIRTIO_BLK=[ym]' "$dir/config" ||
		{ echo "image: its kernel $kver has no virtio disk (CONFIG_VIRTIO_BLK): it cannot find its root" >&2; return 1; }
	driver=$(sed -n 's/^CONFIG_VMGENID=\([ym]\)$/\1/p' "$dir/config")
	echo "kernel=$kver"
	echo "vmgenid_driver=${driver:-none}"
	[ -n "$driver" ] ||
		echo "image: its kernel $kver has no vmgenid driver (CONFIG_VMGENID): it never learns of a fork; the rows will show it" >&2
}
