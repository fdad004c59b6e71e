#!/bin/bash
# The DHCP fork hook (guest/fork.d/15-dhcp) on the host, with the clients
# it drives replaced by fakes that log what they are asked: it asks
# systemd-networkd to renew each link networkd configured and no other;
# it stops each running dhclient (found by ifupdown's pid files, IPv4 and
# IPv6, and only if that pid is a dhclient) without a release and starts
# it again in the background with its own arguments, -nw once, and under
# systemd in a scope of its own (systemd-run); a stale pid file's process
# is left alone; a renewal that fails makes the hook fail after the
# others ran; with no client it says so and succeeds.  No QEMU.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
hook=$root/guest/fork.d/15-dhcp
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/bin" "$work/run"

# networkctl: `list` prints LINKS (IDX LINK TYPE OPERATIONAL SETUP a line),
# `renew LINK` logs it and fails for a link named "bad".
cat >"$work/bin/networkctl" <<'SH'
#!/bin/sh
case "$1" in
--no-legend) printf '%b' "$LINKS" ;;
renew) echo "renew $2" >>"$FAKE_LOG"; [ "$2" != bad ] ;;
*) exit 2 ;;
esac
SH
chmod +x "$work/bin/networkctl"
# systemd-run: logs its arguments and runs the command after its options.
cat >"$work/bin/systemd-run" <<'SH'
#!/bin/sh
echo "systemd-run $*" >>"$FAKE_LOG"
while [ $# -gt 0 ] && [ "$1" != dhclient ]; do shift; done
exec "$@"
SH
chmod +x "$work/bin/systemd-run"
# dhclient: with -nw (or -r, -x: a release, a stop) first it logs its
# arguments and returns, as a client that went to the background; else it
# waits to be stopped, as a running client does (its name must be dhclient in /proc/PID/comm: a program,
# not a script).
cat >"$work/dhclient.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	FILE *log;

	if (argc < 2 || (strcmp(argv[1], "-nw") && strcmp(argv[1], "-r") && strcmp(argv[1], "-x")))
		for (;;)
			pause();
	log = fopen(getenv("FAKE_LOG"), "a");
	if (!log)
		return 1;
	for (int i = 1; i < argc; i++)
		fprintf(log, "%s%s", argv[i], i + 1 < argc ? " " : "\n");
	return fclose(log) ? 1 : 0;
}
C
cc -Wall -Wextra -Werror -o "$work/bin/dhclient" "$work/dhclient.c"

# hook LINKS: run it with the fakes; "STATUS|its output" (lines joined by ;).
hook() {
	local rc=0 out
	out=$(PATH=$work/bin:$PATH FORKSAFE_RUN=$work/run LINKS=$1 FAKE_LOG=$work/log timeout 10 "$hook" 2>&1) || rc=$?
	echo "$rc|$(tr '\n' ';' <<<"$out")"
}
asked() { tr '\n' ';' <"$work/log" 2>/dev/null; }

t_plan 9
networkd='1 lo loopback carrier unmanaged\n2 eth0 ether routable configured\n3 eth1 ether routable configuring\n4 wg0 wireguard routable unmanaged\n'
: >"$work/log"
got=$(hook "$networkd")
t_eq "networkd: renewal asked for each link it configured, and no other" "$(asked)" "renew eth0;renew eth1;"
t_eq "networkd: the hook says so and exits 0" "$got" \
	"0|dhcp: eth0: renewal asked of systemd-networkd;dhcp: eth1: renewal asked of systemd-networkd;"

: >"$work/log"
# start_client PIDFILE ARGS...: a running client with its pid file.
start_client() {
	local pidfile=$1
	shift
	"$work/bin/dhclient" "$@" &
	pids+=("$!")
	echo "$!" >"$pidfile"
	# It must be running under its name before the hook looks.
	for _ in $(seq 50); do [ "$(cat "/proc/$!/comm" 2>/dev/null)" = dhclient ] && break; sleep 0.1; done
}
v4=$work/run/dhclient.eth0.pid v6=$work/run/dhclient6.eth0.pid
start_client "$v4" -4 -pf "$v4" -lf /var/lib/dhcp/dhclient.eth0.leases eth0
clients=("${pids[@]}")
# One the hook started before: -nw on its command line already.
start_client "$v6" -6 -nw -pf "$v6" -lf /var/lib/dhcp/dhclient6.eth0.leases eth0
clients+=("${pids[-1]}")
sleep 1000 &
stale=$!
pids+=("$stale")
echo "$stale" >"$work/run/dhclient.eth9.pid"
got=$(hook "")
t_eq "dhclient: each (IPv4, IPv6) started again in the background with its own arguments, -nw once, nothing released" "$(asked)" \
	"-nw -4 -pf $v4 -lf /var/lib/dhcp/dhclient.eth0.leases eth0;-nw -6 -pf $v6 -lf /var/lib/dhcp/dhclient6.eth0.leases eth0;"
t_eq "dhclient: the running clients were stopped" \
	"$(for p in "${clients[@]}"; do kill -0 "$p" 2>/dev/null && echo running || echo stopped; done | tr '\n' ' ')" "stopped stopped "
t_eq "dhclient: a stale pid file's process (not a dhclient) is left alone" \
	"$(kill -0 "$stale" 2>/dev/null && echo running || echo stopped)" running
t_eq "dhclient: the hook exits 0" "${got%%|*}" 0
rm -f "$work/run"/*.pid

: >"$work/log"
mkdir -p "$work/run/systemd/system"
start_client "$v4" -4 -pf "$v4" eth0
got=$(hook "")
t_eq "under systemd: started again in a scope of its own, not in the hooks' service" "${got%%|*} $(asked)" \
	"0 systemd-run --scope --quiet --collect --description=dhclient started again by forksafe at a fork dhclient -nw -4 -pf $v4 eth0;-nw -4 -pf $v4 eth0;"
rm -rf "$work/run"/*.pid "$work/run/systemd"

: >"$work/log"
got=$(hook '2 bad ether routable configured\n3 eth0 ether routable configured\n')
t_eq "a failed renewal fails the hook, after the other links were asked" "${got%%|*} $(asked)" "1 renew bad;renew eth0;"
got=$(hook "")
t_eq "no client: the hook says so and exits 0" "$got" "0|dhcp: no DHCP client running (systemd-networkd, dhclient);"
t_done
