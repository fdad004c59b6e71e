#!/bin/bash
# make check: each phase timed (the Debian packages, each kernel, the
# guest and the host tools), then run.sh, which times each scenario and
# prints every phase's time before its closing line, so that every CI log
# shows where the time went.  Under make check the packages are there, so
# a scenario that skips fails (SKIP_FAILS=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
phases=$(mktemp) fetch_log=$(mktemp) fetch_pid=""
export FORKSAFE_PHASES=$phases
# On the way out (not on run.sh's exec, which reads the phases): the
# background job's whole group stopped.
trap 'rm -f "$phases" "$fetch_log"; [ -z "$fetch_pid" ] || kill -- "-$fetch_pid" 2>/dev/null || true' EXIT

# phase NAME COMMAND...: COMMAND, its time appended to the phase list.
phase() {
	local name=$1 start=$SECONDS
	shift
	echo "check: $name" >&2
	"$@"
	printf '%s\t%d\n' "$name" "$((SECONDS - start))" >>"$phases"
}

phase deps make -C "$root" --no-print-directory deps
phase "guest and host tools" make -C "$root" --no-print-directory guest debs tools

# The Debian image and Debian's 6.12 cloud kernel (debian_image's and
# debian_kernels') come beside the kernel builds: mostly downloads and
# unpacking, where a compile leaves the cores idle part of the time.  Their
# scenarios find them cached, or build them again and say why not.
# shellcheck disable=SC2016 # expanded by the inner bash
setsid bash -c 'make -C "$1" --no-print-directory image && "$1/kernel-patches/kernel.sh" build debian-cloud-6.12' \
	fetch "$root" >"$fetch_log" 2>&1 &
fetch_pid=$!
for k in ${KERNELS:-patched stock} ${DEBUG_KERNEL:-debug-6.12}; do
	case "$k" in
	debian-image) ;;
	*) phase "kernel $k" "$root/kernel-patches/kernel.sh" build "$k" ;;
	esac
done
# fetched: the background job's end, or one line saying why it failed.
fetched() {
	local rc=0
	wait "$fetch_pid" || rc=$?
	fetch_pid=""
	[ "$rc" = 0 ] || echo "check: the image or Debian's kernel failed beside the kernels (status $rc): $(tail -n 1 "$fetch_log")" >&2
	rm -f "$fetch_log"
}
phase "image and Debian's kernel (the rest after the kernels)" fetched
SKIP_FAILS=1 exec "$root/snapshot-tests/run.sh"
