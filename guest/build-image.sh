#!/bin/bash
# A Debian 12 guest image, built from Debian's packages with mmdebstrap:
# systemd as PID 1, Debian's generic kernel (vmgenid driver built in),
# wireguard-tools, openssl, python3, and the forksafe agent installed from
# its package (build-deb.sh) as a systemd service, the way an operator
# would install it into a golden image.
#   build-image.sh LINK AGENT.deb
# The image is cached under $FORKSAFE_CACHE/images/, keyed by a hash of its
# inputs (this script and the package), and LINK points at its directory:
#   root.qcow2   the root filesystem (ext4 on the whole disk, /dev/vda)
#   vmlinuz, initrd.img   the image's own kernel and initramfs, for -kernel
#   packages     what went in, name and version
# Downloaded packages are kept beside it and reused.
set -euo pipefail

link=$1 deb=$2
cache=${FORKSAFE_CACHE:-/var/cache/forksafe}
suite=bookworm
size=3G
packages=systemd-sysv,udev,dbus,linux-image-amd64,initramfs-tools,kmod,iproute2,wireguard-tools,openssl,python3,uuid-runtime,procps
die() { echo "image: $*" >&2; exit 1; }
log() { echo "image: $*" >&2; }

command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: run 'make deps'"
command -v mke2fs >/dev/null || die "mke2fs is missing: run 'make deps' (package e2fsprogs)"
[ -f "$deb" ] || die "$deb is missing: run 'make agent-deb'"
[ "$(id -u)" = 0 ] || die "mmdebstrap --mode=root needs root"

key=$(cat "$0" "$deb" | sha256sum | cut -c1-16)
dest=$cache/images/debian-$suite-$key
if [ -f "$dest/root.qcow2" ]; then
	log "cached ($dest)"
	ln -sfn "$dest" "$link"
	exit 0
fi
mkdir -p "$cache/images/debs"
tmp=$(mktemp -d "$cache/images/.build.XXXXXX")
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
log "building $dest (mmdebstrap $suite, a few minutes)"
cp "$deb" "$tmp/forksafe-agent.deb"

# The hooks: reuse and keep the downloaded packages; install the agent's
# package with dpkg as an operator would; a root fstab, a host name, and
# an empty machine-id (each boot, and so each clone, makes its own).
# shellcheck disable=SC2016 # mmdebstrap's hooks expand $1, the new root
mmdebstrap --mode=root --variant=apt --include="$packages" \
	--skip=download/empty --skip=essential/unlink \
	--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
	--setup-hook="sync-in $cache/images/debs /var/cache/apt/archives/" \
	--customize-hook="sync-out /var/cache/apt/archives $cache/images/debs" \
	--customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb' \
	--customize-hook="copy-in $tmp/forksafe-agent.deb /tmp" \
	--customize-hook='chroot "$1" dpkg -i /tmp/forksafe-agent.deb' \
	--customize-hook='rm -f "$1"/tmp/forksafe-agent.deb' \
	--customize-hook='echo "/dev/vda / ext4 rw,errors=remount-ro 0 1" > "$1"/etc/fstab' \
	--customize-hook='echo forksafe-guest > "$1"/etc/hostname' \
	--customize-hook=': > "$1"/etc/machine-id' \
	"$suite" "$tmp/root" >"$tmp/mmdebstrap.log" 2>&1 ||
	die "mmdebstrap failed: $(grep -m1 -E '^E:' "$tmp/mmdebstrap.log" || tail -n 1 "$tmp/mmdebstrap.log")"

kernel=$(find "$tmp/root/boot" -name 'vmlinuz-*' | sort | tail -n 1)
initrd=$(find "$tmp/root/boot" -name 'initrd.img-*' | sort | tail -n 1)
if [ -z "$kernel" ] || [ -z "$initrd" ]; then die "no kernel or initramfs in the image's /boot"; fi
dpkg-query --admindir="$tmp/root/var/lib/dpkg" -W >"$tmp/packages"
cp "$kernel" "$tmp/vmlinuz"
cp "$initrd" "$tmp/initrd.img"
mke2fs -q -t ext4 -L forksafe-root -d "$tmp/root" "$tmp/root.raw" "$size" >/dev/null ||
	die "mke2fs could not make the root filesystem"
qemu-img convert -O qcow2 "$tmp/root.raw" "$tmp/root.qcow2"
rm -rf "$tmp/root" "$tmp/root.raw" "$tmp/forksafe-agent.deb"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
ln -sfn "$dest" "$link"
log "built $dest ($(du -sh "$dest/root.qcow2" | cut -f1), kernel $(basename "$kernel"))"
