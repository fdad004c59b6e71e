#!/bin/bash
# make check: each phase timed (the Debian packages, each kernel, the
# guest and the host tools), then run.sh, which times each scenario and
# prints every phase's time before its closing line, so that every CI log
# shows where the time went.  Under make check the packages are there, so
# a scenario that skips fails (SKIP_FAILS=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
phases=$(mktemp) fetch_log=$(mktemp) fetch_pid="" bg=$(mktemp -d) debug_pid=""
export FORKSAFE_PHASES=$phases FORKSAFE_BACKGROUND=$bg
# On the way out: each background job's whole group stopped.
# shellcheck disable=SC2317 # the EXIT trap calls it
stop_background() {
	local p
	for p in "$fetch_pid" "$debug_pid"; do
		[ -z "$p" ] || kill -- "-$p" 2>/dev/null || true
	done
	rm -rf "$phases" "$fetch_log" "$bg"
}
trap stop_background EXIT

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

# The debug lane's kernel (KASAN and lockdep: the longest build) comes
# beside everything else, at the lowest priority the scheduler has
# (SCHED_IDLE): it takes only the cores the other kernels and the
# scenarios leave idle, about half of them while guests run (a scenario
# waits on its guests' timers and consoles).  Its session (setsid) is an
# autogroup of its own where the kernel has them, which the scheduler
# weighs against the others before it looks at any policy inside: the
# group gets nice 19 too, else it takes half the cores from the start
# (measured 2026-12-07: 44 % of the CPU beside the 6.1 build, which ran
# at half its speed).  The scenarios that boot it
# come after the line "@debug-kernel" in settings, where run.sh waits for
# it; its own time is printed as a phase beside the others.
debug_kernel=${DEBUG_KERNEL:-debug-6.12}
# shellcheck disable=SC2016 # expanded by the inner bash
setsid bash -c 'start=$SECONDS rc=0
	[ ! -w /proc/self/autogroup ] || echo 19 >/proc/self/autogroup || true
	chrt --idle 0 nice -n 19 "$1/kernel-patches/kernel.sh" build "$2" || rc=$?
	[ "$rc" != 0 ] || printf "kernel %s\t%d\tbeside\n" "$2" $((SECONDS - start)) >>"$3"
	echo "$rc" >"$4/debug-kernel.status"' \
	debug "$root" "$debug_kernel" "$phases" "$bg" >"$bg/debug-kernel.log" 2>&1 &
debug_pid=$!
for k in ${KERNELS:-patched stock}; do
	case "$k" in
	debian-image) ;;
	*) phase "kernel $k" "$root/kernel-patches/kernel.sh" build "$k" ;;
	esac
done
# fetched: the background job's end, or one line saying why it failed.
# shellcheck disable=SC2317 # phase calls it
fetched() {
	local rc=0
	wait "$fetch_pid" || rc=$?
	fetch_pid=""
	[ "$rc" = 0 ] || echo "check: the image or Debian's kernel failed beside the kernels (status $rc): $(tail -n 1 "$fetch_log")" >&2
	rm -f "$fetch_log"
}
phase "image and Debian's kernel (the rest after the kernels)" fetched
rc=0
SKIP_FAILS=1 "$root/snapshot-tests/run.sh" || rc=$?
exit "$rc"
