#!/bin/bash
# make check: each phase timed (the Debian packages, each kernel, the
# guest and the host tools), then run.sh, which times each scenario and
# prints every phase's time before its closing line, so that every CI log
# shows where the time went.  Under make check the packages are there, so
# a scenario that skips fails (SKIP_FAILS=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
phases=$(mktemp)
trap 'rm -f "$phases"' EXIT
export FORKSAFE_PHASES=$phases

# phase NAME COMMAND...: COMMAND, its time appended to the phase list.
phase() {
	local name=$1 start=$SECONDS
	shift
	echo "check: $name" >&2
	"$@"
	printf '%s\t%d\n' "$name" "$((SECONDS - start))" >>"$phases"
}

phase deps make -C "$root" --no-print-directory deps
for k in ${KERNELS:-patched stock} ${DEBUG_KERNEL:-debug-6.12}; do
	case "$k" in
	debian-image) phase image make -C "$root" --no-print-directory image ;;
	*) phase "kernel $k" "$root/kernel-patches/kernel.sh" build "$k" ;;
	esac
done
phase "guest and host tools" make -C "$root" --no-print-directory guest agent-deb tools
SKIP_FAILS=1 exec "$root/snapshot-tests/run.sh"
