#!/bin/bash
# The agent's sink (guest/net.c) on the host under ASan and UBSan
# (guest/net_test.c): datagrams with chosen senders over loopback, and the
# runs of one sender, the switches and the dropped runs it reports, which
# make wg-deploy's rows of clones side by side read as who the peer heard.
# No QEMU.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FORKSAFE_BUILD:-$root/build}

if ! make --no-print-directory -C "$root" BUILD="$build" "$build/net-test" >&2; then
	t_plan 1
	t_fail "net-test builds"
	t_done
fi
exec "$build/net-test"
