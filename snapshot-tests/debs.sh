#!/bin/bash
# The Debian packages an operator installs (make debs; guest/build-deb.sh):
# built twice into two build directories, the second under umask 077, they
# repeat byte for byte; each
# holds what it says (forksafe-guest: the static seed tool and hooks
# daemon, their units, the hooks of guest/fork.d/ as conffiles;
# libforksafe1: the shared library, SONAME libforksafe.so.1, exporting
# forksafe_* and nothing else; libforksafe-dev: forksafe.h, the static
# library, the .so link, libforksafe.pc and libforksafe(3)); a program
# built against the unpacked -dev package by `pkg-config libforksafe`,
# shared and --static, runs (no fork signal on this host: forksafe_open()
# says ENOENT, and the unchecked reference DRBG gives output); the manual
# pages format without a warning; lintian finds no error and no warning
# (the static programs' tag is overridden, with the reason, in the
# packages); build-deb.sh refuses a missing input with one line.  No QEMU.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
debs="forksafe-agent forksafe-openssl forksafe-guest libforksafe1 libforksafe-dev"

t_plan 13
t_check "make debs builds every package (a)" make --no-print-directory -s -C "$root" BUILD="$work/a" debs
# b under a umask that would make every file its owner's alone.
# shellcheck disable=SC2016 # the inner shell expands its own arguments
t_check "make debs builds every package (b, umask 077)" \
	bash -c 'umask 077 && exec make --no-print-directory -s -C "$1" BUILD="$2" debs' debs "$root" "$work/b"
same=0
for d in $debs; do cmp -s "$work/a/$d.deb" "$work/b/$d.deb" && same=$((same + 1)); done
t_eq "built twice, the second under umask 077, every package the same byte for byte" "$same" 5

# contents DEB: the paths it packs, one a line, without the leading dot.
contents() { dpkg-deb -c "$work/a/$1.deb" | awk '$1 !~ /^d/ { print $6 }' | sed 's/^\.//' | sort | tr '\n' ' '; }
t_eq "forksafe-guest holds the tools, their units and the hooks" "$(contents forksafe-guest)" \
	"/etc/forksafe/fork.d/10-clock /etc/forksafe/fork.d/12-identity /etc/forksafe/fork.d/15-dhcp /etc/forksafe/fork.d/20-wireguard /etc/forksafe/fork.d/30-seed /lib/systemd/system/forksafe-hooks.service /lib/systemd/system/forksafe-seed.service /usr/sbin/forksafe-hooks /usr/sbin/forksafe-seed /usr/share/doc/forksafe-guest/changelog.gz /usr/share/doc/forksafe-guest/copyright /usr/share/lintian/overrides/forksafe-guest /usr/share/man/man8/forksafe-hooks.8.gz /usr/share/man/man8/forksafe-seed.8.gz "
dpkg-deb -e "$work/a/forksafe-guest.deb" "$work/guest.control"
t_eq "the hooks are conffiles" "$(tr '\n' ' ' <"$work/guest.control/conffiles")" \
	"/etc/forksafe/fork.d/10-clock /etc/forksafe/fork.d/12-identity /etc/forksafe/fork.d/15-dhcp /etc/forksafe/fork.d/20-wireguard /etc/forksafe/fork.d/30-seed "
t_eq "libforksafe-dev holds the header, the libraries, pkg-config and the manual" "$(contents libforksafe-dev)" \
	"/usr/include/forksafe.h /usr/lib/x86_64-linux-gnu/libforksafe.a /usr/lib/x86_64-linux-gnu/libforksafe.so /usr/lib/x86_64-linux-gnu/pkgconfig/libforksafe.pc /usr/share/doc/libforksafe-dev/changelog.gz /usr/share/doc/libforksafe-dev/copyright /usr/share/man/man3/libforksafe.3.gz "

sysroot=$work/root
for d in $debs; do dpkg-deb -x "$work/a/$d.deb" "$sysroot"; done
lib=$sysroot/usr/lib/x86_64-linux-gnu
t_eq "the library's SONAME" "$(objdump -p "$lib/libforksafe.so.1" | awk '$1 == "SONAME" { print $2 }')" libforksafe.so.1
t_eq "it exports forksafe_* alone" \
	"$(nm -D --defined-only "$lib/libforksafe.so.1" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | grep -cv '^forksafe_' || true)" 0

cat >"$work/use.c" <<'C'
#include <errno.h>
#include <stdio.h>
#include <forksafe.h>

int main(void)
{
	struct forksafe_drbg d;
	unsigned char out[16];
	int err = forksafe_open();

	if (forksafe_drbg_init(&d, 0) || forksafe_drbg_generate(&d, out, sizeof(out)))
		return 1;
	printf("%s %s\n", err == -ENOENT ? "ENOENT" : "opened", forksafe_source_name(forksafe_source()));
	return 0;
}
C
# pc FLAGS...: pkg-config on the unpacked package, its paths under the sysroot.
pc() { PKG_CONFIG_SYSROOT_DIR=$sysroot PKG_CONFIG_LIBDIR=$lib/pkgconfig pkg-config "$@" libforksafe; }
# A host with a fork signal of its own opens it.
want="ENOENT none"
for dev in /dev/vmgenid /dev/vmclock0 /dev/sysgenid; do
	[ ! -e "$dev" ] || want="opened ${dev#/dev/}"
done
[ "$want" != "opened vmclock0" ] || want="opened vmclock"
for link in shared static; do
	flags=()
	[ "$link" = shared ] || flags=(--static)
	rc=0
	# shellcheck disable=SC2046 # pkg-config's flags are words
	cc -Wall -Werror $(pc --cflags) -o "$work/use-$link" "$work/use.c" $(pc "${flags[@]}" --libs) \
		${flags[0]:+-static} 2>"$work/cc-$link.log" || rc=$?
	got=$([ "$rc" = 0 ] && LD_LIBRARY_PATH=$lib "$work/use-$link" 2>&1 || echo "build failed: $(head -n 1 "$work/cc-$link.log")")
	t_eq "a program built by pkg-config libforksafe ($link) runs" "$got" "$want"
done
pages="" warned=""
for page in "$sysroot"/usr/share/man/man*/*.gz; do
	pages="$pages ${page##*/}"
	[ -z "$(zcat "$page" | groff -man -ww -z -Tutf8 2>&1 | head -n 1)" ] || warned="$warned ${page##*/}"
done
t_eq "every manual page formats without a warning" "$pages -$warned" \
	" libforksafe.3.gz forksafe-agent.8.gz forksafe-hooks.8.gz forksafe-seed.8.gz -"
# lintian_findings: its errors, warnings and overridden tags, one a ";"; the
# overridden tags show that it read the packages.
lintian_findings() {
	local rc=0 out files=()
	command -v lintian >/dev/null || { echo "lintian is not installed (make deps)"; return; }
	for d in $debs; do files+=("$work/a/$d.deb"); done
	# Status 1: it could not run (2: a tag, and with --show-overrides also
	# an overridden one; the tags are compared below).
	out=$(lintian --fail-on error,warning --show-overrides "${files[@]}" 2>&1) || rc=$?
	[ "$rc" = 0 ] || [ "$rc" = 2 ] || { echo "lintian failed ($rc): $(tail -n 1 <<<"$out")"; return; }
	grep '^[EWO]: ' <<<"$out" | sort | tr '\n' ';' || true
}
t_eq "lintian finds no error and no warning, the static programs overridden" "$(lintian_findings)" \
	"O: forksafe-agent: statically-linked-binary [usr/sbin/forksafe-agent];O: forksafe-guest: statically-linked-binary [usr/sbin/forksafe-hooks];O: forksafe-guest: statically-linked-binary [usr/sbin/forksafe-seed];"
rc=0
err=$("$root/guest/build-deb.sh" lib "$work/x.deb" "$work/nowhere" 2>&1) || rc=$?
t_eq "build-deb.sh refuses a missing library with one line" "$rc $(wc -l <<<"$err")" "1 1"
t_done
