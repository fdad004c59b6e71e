#!/bin/bash
# forksafe's Debian packages, for an operator's own image:
#   build-deb.sh agent OUT.deb AGENT        forksafe-agent: the static agent
#                                           and its systemd unit (guest/deb/)
#   build-deb.sh openssl OUT.deb MODULE.so  forksafe-openssl: the OpenSSL 3
#                                           provider and an openssl.cnf that
#                                           selects it (guest/deb/openssl.cnf)
#   build-deb.sh guest OUT.deb BUILD        forksafe-guest: the seed tool, the
#                                           fork hooks' daemon, the hooks of
#                                           guest/fork.d/ and their units
#   build-deb.sh lib OUT.deb LIBDIR         libforksafe1: the shared library
#   build-deb.sh dev OUT.deb LIBDIR         libforksafe-dev: forksafe.h, the
#                                           static library, pkg-config, man
# The version names what it packs (a SHA-256), so an image says which
# build it carries.
set -euo pipefail
# Every file the packages hold is 0644 or 0755 whatever the caller's umask.
umask 022

kind=${1:-} out=${2:-} bin=${3:-}
die() { echo "build-deb: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
command -v dpkg-deb >/dev/null || die "dpkg-deb is missing (package dpkg)"
# static PROGRAM: a statically linked program, or one line and exit 1.
static() {
	[ -x "$1" ] || die "$1 is missing: run 'make guest'"
	file -L "$1" | grep -q 'statically linked' || die "$1 is not static"
}
case "$kind" in
agent) static "$bin" ;;
openssl) [ -f "$bin" ] || die "$bin is missing: run 'make openssl-deb'" ;;
guest) for p in forksafe-seed forksafe-hooks; do static "$bin/$p"; done ;;
lib | dev)
	for f in libforksafe.so.1 libforksafe.a; do
		[ -f "$bin/$f" ] || die "$bin/$f is missing: run 'make debs'"
	done
	;;
*) die "usage: build-deb.sh agent|openssl|guest|lib|dev OUT.deb BINARY-OR-DIR" ;;
esac

export SOURCE_DATE_EPOCH=1577836800 # 2020-01-01, as the guests' clocks
stage=$(mktemp -d)
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT
install -d "$stage/DEBIAN"
# DEB_MAINTAINER: who the packages name (example.org is RFC 2606's
# placeholder: an operator who ships them sets their own).
maintainer=${DEB_MAINTAINER:-forksafe developers <forksafe@example.org>}
# The version hashes what the package is made of, this script and the
# maintainer included.
case "$kind" in
agent) inputs=("$bin" "$here"/deb/forksafe-agent.{8,service} "$here"/deb/{postinst,prerm,postrm}) ;;
openssl) inputs=("$bin" "$here/deb/openssl.cnf") ;;
guest) inputs=("$bin/forksafe-seed" "$bin/forksafe-hooks" "$here"/fork.d/* \
	"$here"/deb/forksafe-{seed,hooks}.{service,8} "$here"/deb/guest-*) ;;
*) inputs=("$bin/libforksafe.so.1" "$bin/libforksafe.a" "$here/forksafe.h" "$here"/deb/libforksafe.{pc,3,map}) ;;
esac
version=0.1+$({ cat "${inputs[@]}" "$here/build-deb.sh"; echo "$maintainer"; } | sha256sum | cut -c1-12)
multiarch=usr/lib/x86_64-linux-gnu
# control FIELD...: DEBIAN/control, the fields every package has, then
# FIELD (one a line), then the description from stdin.
control() {
	{
		printf 'Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: %s\n' \
			"$package" "$version" "$maintainer"
		printf '%s\n' "$@"
		cat
	} >"$stage/DEBIAN/control"
}
# program SOURCE DEST [STATIC]: a program or library installed stripped
# (the build keeps its symbols; strip gives the same bytes each time) and,
# for a program, its manual page guest/deb/NAME.8.  STATIC: it is linked
# statically, as the suite's initramfs, which has no C library, runs the
# same binary; lintian is told so in the package's overrides.
program() {
	install -d "$stage/${2%/*}"
	strip --strip-unneeded --remove-section=.comment --remove-section=.note -o "$stage/$2" "$1"
	chmod "$([ "${2#usr/sbin/}" != "$2" ] && echo 0755 || echo 0644)" "$stage/$2"
	case "$2" in usr/sbin/*) manpage "${2##*/}.8" ;; esac
	[ -z "${3:-}" ] || {
		install -d "$stage/usr/share/lintian/overrides"
		printf '# static: the test initramfs, which has no C library, runs this binary too\n%s: statically-linked-binary [%s]\n' \
			"$package" "$2" >>"$stage/usr/share/lintian/overrides/$package"
	}
}
# manpage NAME.SECTION: guest/deb/NAME.SECTION, compressed, where man finds it.
manpage() {
	install -d "$stage/usr/share/man/man${1##*.}"
	gzip -9n <"$here/deb/$1" >"$stage/usr/share/man/man${1##*.}/$1.gz"
}
# docs: what Debian asks of every package, /usr/share/doc/PACKAGE/'s
# copyright (GPL-2.0, as every source file says) and changelog.
docs() {
	local doc=$stage/usr/share/doc/$package
	install -d "$doc"
	cat >"$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: forksafe

Files: *
Copyright: 2026 the forksafe developers
License: GPL-2
 On Debian systems, the complete text of the GNU General Public License
 version 2 can be found in /usr/share/common-licenses/GPL-2.
COPYRIGHT
	printf '%s (%s) unstable; urgency=medium\n\n  * Built from the forksafe tree: the version names what it packs.\n\n -- %s  %s\n' \
		"$package" "$version" "$maintainer" "$(date -u -R -d @"$SOURCE_DATE_EPOCH")" |
		gzip -9n >"$doc/changelog.gz"
}
# scripts PREFIX: the maintainer scripts guest/deb/PREFIXpostinst, ...
scripts() {
	for script in postinst prerm postrm; do
		install -m 0755 "$here/deb/$1$script" "$stage/DEBIAN/$script"
	done
}
if [ "$kind" = agent ]; then
	package=forksafe-agent
	program "$bin" usr/sbin/forksafe-agent static
	install -D -m 0644 "$here/deb/forksafe-agent.service" "$stage/lib/systemd/system/forksafe-agent.service"
	scripts ""
	control "Depends: init-system-helpers (>= 1.54~)" "Section: admin" "Priority: optional" <<CONTROL
Description: forksafe guest agent for VM fork tests
 Answers the forksafe host suite on the virtio-serial port
 org.forksafe.agent: records the guest's RNG output around a snapshot,
 reads the VM generation ID and powers the VM off when asked.  Install it
 only into images that are tested (it answers whoever holds the port).
CONTROL
elif [ "$kind" = guest ]; then
	package=forksafe-guest
	for p in forksafe-seed forksafe-hooks; do
		program "$bin/$p" "usr/sbin/$p" static
	done
	for unit in forksafe-seed.service forksafe-hooks.service; do
		install -D -m 0644 "$here/deb/$unit" "$stage/lib/systemd/system/$unit"
	done
	for hook in "$here"/fork.d/*; do
		install -D -m 0755 "$hook" "$stage/etc/forksafe/fork.d/${hook##*/}"
		echo "/etc/forksafe/fork.d/${hook##*/}" >>"$stage/DEBIAN/conffiles"
	done
	scripts guest-
	control "Depends: init-system-helpers (>= 1.54~)" "Recommends: util-linux-extra" "Suggests: wireguard-tools, forksafe-openssl" "Section: admin" "Priority: optional" <<CONTROL
Description: what a clone of a VM snapshot does once it knows it is one
 forksafe-hooks sleeps on the VM fork signal (/dev/vmgenid of the
 forksafe kernel series, vmclock, or /dev/sysgenid) and runs
 /etc/forksafe/fork.d/ once per fork: the wall clock stepped from the
 hypervisor's RTC (hwclock), WireGuard handshakes started over, the seed
 file written again.  forksafe-seed keeps the kernel's seed file across
 crashes and forks.
CONTROL
elif [ "$kind" = lib ]; then
	package=libforksafe1
	program "$bin/libforksafe.so.1" "$multiarch/libforksafe.so.1"
	echo "libforksafe 1 libforksafe1 (>= 0.1)" >"$stage/DEBIAN/shlibs"
	control "Depends: libc6 (>= 2.36)" "Section: libs" "Priority: optional" <<CONTROL
Description: VM fork signal for user space (library)
 libforksafe tells a process that the VM it runs in was forked (restored
 from a snapshot more than once), from /dev/vmgenid of the forksafe
 kernel series, vmclock's generation counter or /dev/sysgenid, the
 zero-window source first.
CONTROL
	echo "activate-noawait ldconfig" >"$stage/DEBIAN/triggers"
elif [ "$kind" = dev ]; then
	package=libforksafe-dev
	install -D -m 0644 "$here/forksafe.h" "$stage/usr/include/forksafe.h"
	install -D -m 0644 "$bin/libforksafe.a" "$stage/$multiarch/libforksafe.a"
	ln -s libforksafe.so.1 "$stage/$multiarch/libforksafe.so"
	install -D -m 0644 "$here/deb/libforksafe.pc" "$stage/$multiarch/pkgconfig/libforksafe.pc"
	manpage libforksafe.3
	control "Depends: libforksafe1 (= $version)" "Section: libdevel" "Priority: optional" <<CONTROL
Description: VM fork signal for user space (development files)
 forksafe.h, the static library, the pkg-config file (libforksafe) and
 the manual page libforksafe(3).
CONTROL
else
	package=forksafe-openssl
	program "$bin" "$multiarch/ossl-modules/forksafe-openssl.so"
	install -D -m 0644 "$here/deb/openssl.cnf" "$stage/etc/forksafe/openssl.cnf"
	echo /etc/forksafe/openssl.cnf >"$stage/DEBIAN/conffiles"
	control "Depends: libc6 (>= 2.36), libssl3 (>= 3.0.0)" "Section: libs" "Priority: optional" <<CONTROL
Description: OpenSSL 3 provider whose DRBG reseeds when the VM is forked
 FORKSAFE-DRBG is OpenSSL's CTR-DRBG behind a check of the VM fork
 signal (/dev/vmgenid of the forksafe kernel series, vmclock, or
 /dev/sysgenid) before every output: a clone of a VM snapshot reseeds
 before it produces anything.  /etc/forksafe/openssl.cnf selects it; point
 OPENSSL_CONF at it, or copy its sections into /etc/ssl/openssl.cnf.
CONTROL
fi
docs
# The same agent gives the same package, byte for byte: the image that
# carries it is cached by its hash (build-image.sh), and a package stamped
# with the time of the build would make every clone build its own image.
find "$stage" -exec touch -h -d @"$SOURCE_DATE_EPOCH" {} +
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out.tmp" >/dev/null
mv "$out.tmp" "$out"
echo "build-deb: $out ($package $version)"
