// SPDX-License-Identifier: GPL-2.0
/*
 * getrandom() throughput, for make bench-rng: the cost of the synchronous
 * generation-ID check is what the patched kernel adds to every call, so it
 * is measured the way the fork matrix loads the RNG, one pinned thread per
 * vCPU in a tight loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include "bench.h"

#define MAX_THREADS 64
#define MAX_SIZE 4096

struct bench_thread {
	pthread_t tid;
	int cpu;
	uint64_t calls;
	int error;
};

static size_t req_size;
static atomic_int stop;

static void *bench_loop(void *arg)
{
	struct bench_thread *t = arg;
	unsigned char buf[MAX_SIZE];
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		t->error = errno;
	while (!atomic_load_explicit(&stop, memory_order_relaxed) && !t->error) {
		if (getrandom(buf, req_size, 0) != (ssize_t)req_size)
			t->error = errno ? errno : EIO;
		t->calls++;
	}
	return NULL;
}

int bench_getrandom(size_t size, unsigned int ms, uint64_t *calls, int *threads,
		    char *err, size_t errlen)
{
	static struct bench_thread t[MAX_THREADS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	int i, n = 0, rc = 0;

	if (size < 1 || size > MAX_SIZE || ms < 1 || ms > 600000 || cpus < 1 || cpus > MAX_THREADS) {
		snprintf(err, errlen, "size must be 1..%d, ms 1..600000, cpus 1..%d", MAX_SIZE, MAX_THREADS);
		return -1;
	}
	req_size = size;
	atomic_store(&stop, 0);
	for (i = 0; i < cpus; i++, n++) {
		t[i] = (struct bench_thread){ .cpu = i };
		if (pthread_create(&t[i].tid, NULL, bench_loop, &t[i]))
			break;
	}
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	*calls = 0;
	for (i = 0; i < n; i++) {
		pthread_join(t[i].tid, NULL);
		*calls += t[i].calls;
		if (t[i].error && !rc) {
			snprintf(err, errlen, "thread %d: %s", i, strerror(t[i].error));
			rc = -1;
		}
	}
	if (n < cpus && !rc) {
		snprintf(err, errlen, "started %d of %ld threads", n, cpus);
		rc = -1;
	}
	*threads = n;
	return rc;
}
