#!/bin/bash
# The agent's sink (guest/net.c) on the host under ASan and UBSan
# (guest/net_test.c): datagrams with chosen senders over loopback, and the
# runs of one sender, the switches and the dropped runs it reports, which
# make wg-deploy's rows of clones side by side read as who the peer heard.
# No QEMU.
set -euo pipefail
. "$(dirname "$0")/lib/ktap.sh"
t_exec_host_test net-test
