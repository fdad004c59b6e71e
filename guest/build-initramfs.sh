#!/bin/bash
# Pack the guest initramfs: our init and programs, busybox-static, and
# wireguard-tools' wg with the shared libraries ldd names for it.
#   build-initramfs.sh OUT.cpio INIT PROGRAM...   (programs go to /bin)
set -euo pipefail

out=$1 init=$2
shift 2
die() { echo "initramfs: $*" >&2; exit 1; }
busybox=$(command -v busybox || true)
wg=$(command -v wg || true)
[ -n "$busybox" ] || die "busybox is missing: run 'make deps' (package busybox-static)"
[ -n "$wg" ] || die "wg is missing: run 'make deps' (package wireguard-tools)"
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
	die "$busybox is not static: install busybox-static"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,sbin,usr/bin,dev,proc,sys,tmp,etc,var/lib/forksafe-seed}
install -m 0755 "$init" "$stage/init"
for prog in "$@"; do
	install -m 0755 "$prog" "$stage/bin/$(basename "$prog")"
done
install -m 0755 "$busybox" "$stage/bin/busybox"
# fork_hooks' hooks (guest/test-hooks/): forksafe.hooks=/etc/forksafe/test-fork.d
mkdir -p "$stage/etc/forksafe/test-fork.d"
for hook in "$(dirname "$0")"/test-hooks/*; do
	install -m "$([ -x "$hook" ] && echo 0755 || echo 0644)" "$hook" "$stage/etc/forksafe/test-fork.d/"
done
# Scripts the scenarios run through the agent (guest/test-scripts/)
mkdir -p "$stage/etc/forksafe/test-scripts"
install -m 0755 "$(dirname "$0")"/test-scripts/* "$stage/etc/forksafe/test-scripts/"
# Clones side by side with identities of their own (guest/test-identity/)
mkdir -p "$stage/etc/forksafe/test-identity"
install -m 0755 "$(dirname "$0")"/test-identity/* "$stage/etc/forksafe/test-identity/"
# The fork hooks a guest installs (guest/fork.d/): forksafe.hooks=/etc/forksafe/fork.d
mkdir -p "$stage/etc/forksafe/fork.d"
install -m 0755 "$(dirname "$0")"/fork.d/* "$stage/etc/forksafe/fork.d/"
for applet in sh ip ping ls cat dmesg sleep echo mount grep wc date hwclock mktemp rm; do
	ln -s busybox "$stage/bin/$applet"
done
install -m 0755 "$wg" "$stage/usr/bin/wg"
# Libraries as ldd lists them: "name => /path (addr)" or "/path (addr)".
ldd "$wg" | grep -oE '/[^ ]+' | while read -r lib; do
	mkdir -p "$stage$(dirname "$lib")"
	cp -L "$lib" "$stage$lib"
done
(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) >"$out.tmp"
mv "$out.tmp" "$out"
