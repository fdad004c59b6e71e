/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_BENCH_H
#define FORKSAFE_BENCH_H
#include <stddef.h>
#include <stdint.h>

/*
 * getrandom() throughput: one thread per online CPU, pinned, calling
 * getrandom(SIZE) (through the vDSO if VDSO) for MS milliseconds.  Returns
 * 0 and the calls made by all threads and their number, or -1 with err set.
 */
int bench_getrandom(size_t size, unsigned int ms, int vdso, uint64_t *calls, int *threads,
		    char *err, size_t errlen);

/*
 * get_random_u32() calls per second, summed over one pinned thread per
 * online CPU, each timing 2^20 calls in the kernel (the *-bench kernels'
 * kernel/random/bench_u32); -1 with err set on a kernel without the hook.
 */
int bench_u32(uint64_t *calls_per_s, int *threads, char *err, size_t errlen);

/*
 * COUNT fork()s of the caller, each child exiting at once and waited for,
 * after one vDSO getrandom() call where there is one (so that the vvar
 * area's entries are faulted in, as in a process that used it): the
 * guest's clock over the loop, in ns, or -1 with err set.
 */
int bench_fork(unsigned int count, uint64_t *ns, char *err, size_t errlen);

/* crng reseeds since boot (kernel/random/bench_reseeds); -1 with err set. */
int bench_reseeds(uint64_t *reseeds, char *err, size_t errlen);

/*
 * COUNT datagrams of 32 bytes to DST:PORT through DEV (the tunnel) as fast
 * as the socket takes them, and the guest's clock from the first until
 * DEV has sent the last: start and end (CLOCK_MONOTONIC), the idle time
 * over all CPUs in between (ns, /proc/timer_list), the context switches
 * (/proc/stat) and what DEV sent.  DEV
 * is a network device, or a file holding a counter of packets sent (a path:
 * the bench kernels' WireGuard sink).  -1 with err set if DEV sent fewer
 * than COUNT within 30 s of guest time.
 */
struct burst {
	uint64_t start_ns, end_ns, idle_ns, sent, ctxt;
};

int bench_burst(const char *dev, const char *dst, unsigned int port, uint64_t count,
		struct burst *b, char *err, size_t errlen);

/*
 * COUNT packets through the bench kernels' WireGuard send path in place
 * (wireguard.bench_xmit: staged, encrypted and sunk one at a time in the
 * caller's context, to DEV's first peer), and the kernel's time for them
 * in ns; -1 with err set.
 */
int bench_xmit(const char *dev, uint64_t count, uint64_t *ns, char *err, size_t errlen);

#endif
