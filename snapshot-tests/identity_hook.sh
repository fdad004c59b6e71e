#!/bin/bash
# The identity fork hook (guest/fork.d/12-identity) on the host, each run
# in a network namespace of its own whose eth0 is a device made for it
# (veth, or dummy), so that the real ip (busybox sh runs its own applet
# whatever PATH says) changes that device and nothing of the host's; wg is
# replaced by a fake that logs what it is asked.  Without its
# configuration it does nothing and succeeds; with it, each NIC named in
# MACS gets a random unicast, locally administered MAC (another on each
# run), each interface in WIREGUARD a new private key (the public key it
# reports is the new key's), and PROVISION runs last with both in its
# environment; a key that cannot be set fails the hook before
# PROVISION runs, and so does PROVISION's own failure.  Run under bash's
# sh and busybox sh (the test initramfs' shell).  No QEMU.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
hook=$root/guest/fork.d/12-identity
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
real_ip=$(command -v ip) || t_fail "ip (iproute2) is installed"

# wg: genkey prints KEY-N (N counting up), pubkey prints PUB(its input),
# set logs and fails for the interface "bad".
cat >"$work/bin/wg" <<'SH'
#!/bin/sh
case "$1" in
genkey) n=$(($(cat "$FAKE_LOG.n" 2>/dev/null || echo 0) + 1)); echo "$n" >"$FAKE_LOG.n"; echo "KEY-$n" ;;
pubkey) echo "PUB($(cat))" ;;
set) echo "wg set $2 $3 $(cat "$4")" >>"$FAKE_LOG"; [ "$2" != bad ] ;;
*) exit 2 ;;
esac
SH
cat >"$work/provision" <<'SH'
#!/bin/sh
echo "provision MACS=$FORKSAFE_MACS KEYS=$FORKSAFE_WG_KEYS" >>"$FAKE_LOG"
exit "${FAKE_PROVISION_STATUS:-0}"
SH
chmod +x "$work/bin/wg" "$work/provision"

# run CONF: the hook under $shell (words) with CONF as its configuration,
# in a network namespace of its own with an eth0 made for it; its status
# in $rc, the fakes' log in $work/log, eth0's MAC before and after in
# $work/mac.
run() {
	rm -f "$work/log" "$work/log.n" "$work/mac"
	: >"$work/log"
	rc=0
	# shellcheck disable=SC2016 # expanded by the inner bash
	PATH="$work/bin:$PATH" FAKE_LOG=$work/log FORKSAFE_IDENTITY_CONF=$1 REAL_IP=$real_ip unshare -n bash -c '
		mac() { "$REAL_IP" -o link show eth0 | sed -n "s|.*link/ether \([0-9a-f:]*\) .*|\1|p"; }
		"$REAL_IP" link add eth0 type veth 2>/dev/null || "$REAL_IP" link add eth0 type dummy 2>/dev/null || exit 97
		mac >"$2"
		rc=0
		$3 "$4" >"$5" 2>&1 || rc=$?
		mac >>"$2"
		exit "$rc"' identity_hook "$1" "$work/mac" "$shell" "$hook" "$work/out" || rc=$?
	[ "$rc" != 97 ] || t_fail "no network namespace with a device of its own (unshare -n, veth or dummy)"
}
printf 'MACS="eth0"\nWIREGUARD="wg0 wg1"\nPROVISION=%s\n' "$work/provision" >"$work/all.conf"
printf 'WIREGUARD="wg0 bad"\nPROVISION=%s\n' "$work/provision" >"$work/bad.conf"
printf 'WIREGUARD="wg0"\nPROVISION=%s\n' "$work/provision" >"$work/fails.conf"

for shell in sh "busybox sh"; do
	tag="under $shell"
	run "$work/none.conf"
	t_eq "$tag: without its configuration: status 0, nothing asked" "$rc $(wc -l <"$work/log")" "0 0"

	run "$work/all.conf"
	t_eq "$tag: configured: status 0" "$rc" 0
	before=$(sed -n 1p "$work/mac") mac=$(sed -n 2p "$work/mac")
	t_check "$tag: eth0 gets a new MAC ($before, then $mac)" test "${mac:-none}" != "$before"
	first=${mac:0:2}
	t_eq "$tag: the MAC is unicast and locally administered (first byte & 3 = 2)" "$((0x${first:-01} & 3))" 2
	t_eq "$tag: each interface gets a new key, then PROVISION runs with both" \
		"$(cat "$work/log")" \
		"$(printf 'wg set wg0 private-key KEY-1\nwg set wg1 private-key KEY-2\nprovision MACS=eth0=%s KEYS=wg0=PUB(KEY-1) wg1=PUB(KEY-2)' "$mac")"
	t_check "$tag: it says each new identity" grep -qx "identity: wg1: new key PUB(KEY-2)" "$work/out"
	run "$work/all.conf"
	mac2=$(sed -n 2p "$work/mac")
	t_check "$tag: another run, another MAC ($mac, $mac2)" test "$mac" != "$mac2"
	first=${mac2:0:2}
	t_eq "$tag: that one unicast and locally administered too" "$((0x${first:-01} & 3))" 2

	run "$work/bad.conf"
	t_eq "$tag: a key that cannot be set fails the hook, PROVISION not run" \
		"$rc $(grep -c '^provision' "$work/log" || true)" "1 0"
	FAKE_PROVISION_STATUS=3 run "$work/fails.conf"
	t_check "$tag: PROVISION's failure fails the hook" test "$rc" != 0
done

# Where ip cannot set a MAC (busybox's ip without AF_PACKET), ifconfig
# does; where neither can, the hook fails before PROVISION.  Under sh
# alone: busybox sh would run its own applets.
mkdir -p "$work/noip"
cat >"$work/noip/ip" <<'SH'
#!/bin/sh
echo "ip: socket: Address family not supported by protocol" >&2
exit 2
SH
cat >"$work/noip/ifconfig" <<'SH'
#!/bin/sh
echo "ifconfig $*" >>"$FAKE_LOG"
SH
chmod +x "$work/noip/ip" "$work/noip/ifconfig"
shell="sh"
PATH="$work/noip:$PATH" run "$work/all.conf"
t_eq "ip cannot: status 0" "$rc" 0
t_check "ip cannot: ifconfig sets the MAC" grep -qE '^ifconfig eth0 hw ether ([0-9a-f]{2}:){5}[0-9a-f]{2}$' "$work/log"
printf '#!/bin/sh\nexit 1\n' >"$work/noip/ifconfig"
PATH="$work/noip:$PATH" run "$work/all.conf"
t_eq "neither can: the hook fails, PROVISION not run" "$rc $(grep -c '^provision' "$work/log" || true)" "1 0"
t_check "neither can: it says why in one line" grep -q '^identity: eth0: could not set a new MAC: ip: socket: Address family not supported' "$work/out"
t_done
