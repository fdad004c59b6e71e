#!/bin/bash
# forksafe's Debian packages, for an operator's own image:
#   build-deb.sh agent OUT.deb AGENT        forksafe-agent: the static agent
#                                           and its systemd unit (guest/deb/)
#   build-deb.sh openssl OUT.deb MODULE.so  forksafe-openssl: the OpenSSL 3
#                                           provider and an openssl.cnf that
#                                           selects it (guest/deb/openssl.cnf)
# The version names the binary (its SHA-256), so an image says which one
# it carries.
set -euo pipefail

kind=${1:-} out=${2:-} bin=${3:-}
die() { echo "build-deb: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
command -v dpkg-deb >/dev/null || die "dpkg-deb is missing (package dpkg)"
case "$kind" in
agent)
	[ -x "$bin" ] || die "$bin is missing: run 'make guest'"
	file -L "$bin" | grep -q 'statically linked' || die "$bin is not static"
	;;
openssl) [ -f "$bin" ] || die "$bin is missing: run 'make openssl-deb'" ;;
*) die "usage: build-deb.sh agent|openssl OUT.deb BINARY" ;;
esac

export SOURCE_DATE_EPOCH=1577836800 # 2020-01-01, as the guests' clocks
stage=$(mktemp -d)
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT
install -d "$stage/DEBIAN"
version=0.1+$(sha256sum "$bin" | cut -c1-12)
if [ "$kind" = agent ]; then
	package=forksafe-agent
	install -D -m 0755 "$bin" "$stage/usr/sbin/forksafe-agent"
	install -D -m 0644 "$here/deb/forksafe-agent.service" "$stage/lib/systemd/system/forksafe-agent.service"
	for script in postinst prerm postrm; do
		install -m 0755 "$here/deb/$script" "$stage/DEBIAN/$script"
	done
	cat >"$stage/DEBIAN/control" <<CONTROL
Package: $package
Version: $version
Architecture: amd64
Maintainer: forksafe <forksafe@localhost>
Depends: init-system-helpers
Section: admin
Priority: optional
Description: forksafe guest agent for VM fork tests
 Answers the forksafe host suite on the virtio-serial port
 org.forksafe.agent: records the guest's RNG output around a snapshot,
 reads the VM generation ID and powers the VM off when asked.  Install it
 only into images that are tested (it answers whoever holds the port).
CONTROL
else
	package=forksafe-openssl
	install -D -m 0644 "$bin" "$stage/usr/lib/x86_64-linux-gnu/ossl-modules/forksafe-openssl.so"
	install -D -m 0644 "$here/deb/openssl.cnf" "$stage/etc/forksafe/openssl.cnf"
	echo /etc/forksafe/openssl.cnf >"$stage/DEBIAN/conffiles"
	cat >"$stage/DEBIAN/control" <<CONTROL
Package: $package
Version: $version
Architecture: amd64
Maintainer: forksafe <forksafe@localhost>
Depends: libc6 (>= 2.36), libssl3 (>= 3.0.0)
Section: libs
Priority: optional
Description: OpenSSL 3 provider whose DRBG reseeds when the VM is forked
 FORKSAFE-DRBG is OpenSSL's CTR-DRBG behind a check of the VM fork
 signal (/dev/vmgenid of the forksafe kernel series, vmclock, or
 /dev/sysgenid) before every output: a clone of a VM snapshot reseeds
 before it produces anything.  /etc/forksafe/openssl.cnf selects it; point
 OPENSSL_CONF at it, or copy its sections into /etc/ssl/openssl.cnf.
CONTROL
fi
# The same agent gives the same package, byte for byte: the image that
# carries it is cached by its hash (build-image.sh), and a package stamped
# with the time of the build would make every clone build its own image.
find "$stage" -exec touch -h -d @"$SOURCE_DATE_EPOCH" {} +
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out.tmp" >/dev/null
mv "$out.tmp" "$out"
echo "build-deb: $out ($package $version)"
