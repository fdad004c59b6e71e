#!/bin/bash
# The agent as a Debian package for an operator's own image: the static
# agent and its systemd unit (guest/deb/), nothing else.
#   build-deb.sh OUT.deb AGENT
# The version names the agent binary (its SHA-256), so an image says which
# agent it carries.
set -euo pipefail

out=$1 agent=$2
die() { echo "agent-deb: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
command -v dpkg-deb >/dev/null || die "dpkg-deb is missing (package dpkg)"
[ -x "$agent" ] || die "$agent is missing: run 'make guest'"
file -L "$agent" | grep -q 'statically linked' || die "$agent is not static"

export SOURCE_DATE_EPOCH=1577836800 # 2020-01-01, as the guests' clocks
stage=$(mktemp -d)
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT
install -D -m 0755 "$agent" "$stage/usr/sbin/forksafe-agent"
install -D -m 0644 "$here/deb/forksafe-agent.service" "$stage/lib/systemd/system/forksafe-agent.service"
install -d "$stage/DEBIAN"
for script in postinst prerm postrm; do
	install -m 0755 "$here/deb/$script" "$stage/DEBIAN/$script"
done
version=0.1+$(sha256sum "$agent" | cut -c1-12)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: forksafe-agent
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
# The same agent gives the same package, byte for byte: the image that
# carries it is cached by its hash (build-image.sh), and a package stamped
# with the time of the build would make every clone build its own image.
find "$stage" -exec touch -h -d @"$SOURCE_DATE_EPOCH" {} +
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out.tmp" >/dev/null
mv "$out.tmp" "$out"
echo "agent-deb: $out (forksafe-agent $version)"
