#!/bin/bash
# A Debian 12 guest image, built from Debian's packages with mmdebstrap:
# systemd as PID 1, Debian's generic kernel (vmgenid driver built in),
# wireguard-tools, openssl, python3, and forksafe's packages (build-deb.sh)
# installed the way an operator installs them into a golden image,
# `apt-get install ./PACKAGE.deb` (dependencies and recommends from
# Debian): forksafe-agent (the agent as a systemd service), forksafe-guest
# (forksafe-seed.service, forksafe-hooks.service and the hooks of
# /etc/forksafe/fork.d), libforksafe1, and forksafe-openssl (the provider
# and /etc/forksafe/openssl.cnf, which only programs started with
# OPENSSL_CONF pointing at it use).
#   build-image.sh LINK DEBS_DIR [KERNEL.deb...]
# DEBS_DIR holds those four packages (make debs: build/).  KERNEL.deb (make
# kernel-deb: the patched kernel as bindeb-pkg packs it) is installed the
# same way beside Debian's kernel, its initramfs made by the image's own
# initramfs-tools; the newest kernel in /boot is the one the suite boots,
# so such an image runs the packaged kernel (make image-kernel,
# build/image-kernel; LINUX=6.12: build/image-kernel-6.12).
# The image is cached under $FORKSAFE_CACHE/images/, keyed by a hash of its
# inputs (this script and the packages), and LINK points at its directory:
#   disk.qcow2   shaped like a cloud image: a GPT disk whose first
#                partition is the root (ext4), mounted by UUID; no
#                bootloader (the suite boots the kernel in /boot directly,
#                qemu-scripts/image.sh), the suite reads it as it reads an
#                operator's IMAGE=
#   packages     what went in, name and version
# Downloaded packages are kept beside it and reused.
set -euo pipefail

link=${1:-} debs_dir=${2:-}
kernel_debs=("${@:3}")
forksafe_debs=(forksafe-agent forksafe-guest libforksafe1 forksafe-openssl)
cache=${FORKSAFE_CACHE:-/var/cache/forksafe}
suite=bookworm
size_mib=3072
packages=systemd-sysv,udev,dbus,linux-image-amd64,initramfs-tools,kmod,iproute2,wireguard-tools,openssl,python3,uuid-runtime,procps
die() { echo "image: $*" >&2; exit 1; }
log() { echo "image: $*" >&2; }

command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: run 'make deps'"
command -v mke2fs >/dev/null || die "mke2fs is missing: run 'make deps' (package e2fsprogs)"
command -v sfdisk >/dev/null || die "sfdisk is missing: run 'make deps' (package fdisk)"
{ [ -n "$link" ] && [ -d "$debs_dir" ]; } || die "usage: build-image.sh LINK DEBS_DIR [KERNEL.deb...]"
debs=()
for d in "${forksafe_debs[@]}"; do
	[ -f "$debs_dir/$d.deb" ] || die "$debs_dir/$d.deb is missing: run 'make debs'"
	debs+=("$debs_dir/$d.deb")
done
[ "$(id -u)" = 0 ] || die "mmdebstrap --mode=root needs root"

for k in "${kernel_debs[@]}"; do [ -f "$k" ] || die "$k is missing: run 'make kernel-deb'"; done
key=$(cat "$0" "${debs[@]}" "${kernel_debs[@]}" | sha256sum | cut -c1-16)
dest=$cache/images/debian-$suite-$key
if [ -f "$dest/disk.qcow2" ]; then
	log "cached ($dest)"
	ln -sfn "$dest" "$link"
	exit 0
fi
mkdir -p "$cache/images/debs"
tmp=$(mktemp -d "$cache/images/.build.XXXXXX")
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
log "building $dest (mmdebstrap $suite, a few minutes)"
mkdir "$tmp/debs"
cp "${debs[@]}" "${kernel_debs[@]}" "$tmp/debs/"
uuid=$(cat /proc/sys/kernel/random/uuid)

# The hooks: reuse and keep the downloaded packages; install forksafe's
# packages with apt as an operator would (what they pull in is downloaded
# and kept too); a root fstab, a host name, and an empty machine-id (each
# boot, and so each clone, makes its own).
# shellcheck disable=SC2016 # mmdebstrap's hooks expand $1, the new root
mmdebstrap --mode=root --variant=apt --include="$packages" \
	--skip=download/empty --skip=essential/unlink \
	--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
	--setup-hook="sync-in $cache/images/debs /var/cache/apt/archives/" \
	--customize-hook="copy-in $tmp/debs /tmp" \
	--customize-hook='chroot "$1" sh -c "apt-get install -y /tmp/debs/*.deb"' \
	--customize-hook='rm -rf "$1"/tmp/debs' \
	--customize-hook="sync-out /var/cache/apt/archives $cache/images/debs" \
	--customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb' \
	--customize-hook="echo 'UUID=$uuid / ext4 rw,errors=remount-ro 0 1' > \"\$1\"/etc/fstab" \
	--customize-hook='echo forksafe-guest > "$1"/etc/hostname' \
	--customize-hook=': > "$1"/etc/machine-id' \
	"$suite" "$tmp/root" >"$tmp/mmdebstrap.log" 2>&1 ||
	die "mmdebstrap failed: $(grep -m1 -E '^E:' "$tmp/mmdebstrap.log" || tail -n 1 "$tmp/mmdebstrap.log")"

find "$tmp/root/boot" -name 'vmlinuz-*' | grep -q . || die "no kernel in the image's /boot"
dpkg-query --admindir="$tmp/root/var/lib/dpkg" -W >"$tmp/packages"
for d in "${forksafe_debs[@]}"; do
	grep -q "^$d	" "$tmp/packages" || die "$d is not installed in the image, though apt-get install went through"
done
# The partition at 1 MiB, the filesystem made in place (mke2fs -E offset).
truncate -s "$((size_mib + 2))M" "$tmp/disk.raw"
printf 'label: gpt\nstart=2048, size=%d, type=L, name=root\n' "$((size_mib * 2048))" |
	sfdisk -q "$tmp/disk.raw" || die "sfdisk could not partition the disk"
mke2fs -q -t ext4 -L forksafe-root -U "$uuid" -E offset=1048576 -d "$tmp/root" \
	"$tmp/disk.raw" "${size_mib}M" >/dev/null || die "mke2fs could not make the root filesystem"
qemu-img convert -O qcow2 "$tmp/disk.raw" "$tmp/disk.qcow2"
rm -rf "$tmp/root" "$tmp/disk.raw" "$tmp/debs"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
ln -sfn "$dest" "$link"
log "built $dest ($(du -sh "$dest/disk.qcow2" | cut -f1), $(grep -c . "$dest/packages") packages)"
