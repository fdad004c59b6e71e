// SPDX-License-Identifier: GPL-2.0
/*
 * The RNG's cost, for make bench-rng: the synchronous generation-ID check
 * is what the patched kernel adds to every call, so it is measured the way
 * the fork matrix loads the RNG, one pinned thread per vCPU: getrandom() in
 * a tight loop, and get_random_u32() through the hook of the *-bench
 * kernels (kernel-patches/bench/).
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
/* The hooks of the *-bench kernels (kernel-patches/bench/). */
#define BENCH_U32_PATH "/proc/sys/kernel/random/bench_u32"
#define BENCH_RESEEDS_PATH "/proc/sys/kernel/random/bench_reseeds"

struct bench_thread {
	pthread_t tid;
	int cpu;
	uint64_t count;
	int error;
};

static size_t req_size;
static atomic_int stop;

static void pin(struct bench_thread *t)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		t->error = errno;
}

/* count = getrandom() calls until told to stop */
static void *getrandom_loop(void *arg)
{
	struct bench_thread *t = arg;
	unsigned char buf[MAX_SIZE];

	pin(t);
	while (!atomic_load_explicit(&stop, memory_order_relaxed) && !t->error) {
		if (getrandom(buf, req_size, 0) != (ssize_t)req_size)
			t->error = errno ? errno : EIO;
		t->count++;
	}
	return NULL;
}

/* One number from a hook: 0, or an errno. */
static int read_hook(const char *path, uint64_t *v)
{
	unsigned long long n;
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return errno;
	ok = fscanf(f, "%llu", &n) == 1;
	fclose(f);
	if (!ok)
		return EIO;
	*v = n;
	return 0;
}

/* count = get_random_u32() calls per second, as the kernel's hook timed them */
static void *u32_once(void *arg)
{
	struct bench_thread *t = arg;

	pin(t);
	if (!t->error)
		t->error = read_hook(BENCH_U32_PATH, &t->count);
	return NULL;
}

/*
 * One thread per online CPU running fn; with ms > 0 they are stopped after
 * ms milliseconds.  Sums their counts into *total.
 */
static int run_per_cpu(void *(*fn)(void *), unsigned int ms, uint64_t *total,
		       int *threads, char *err, size_t errlen)
{
	static struct bench_thread t[MAX_THREADS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	int i, n = 0, rc = 0;

	if (cpus < 1 || cpus > MAX_THREADS) {
		snprintf(err, errlen, "%ld CPUs, at most %d supported", cpus, MAX_THREADS);
		return -1;
	}
	atomic_store(&stop, 0);
	for (i = 0; i < cpus; i++, n++) {
		t[i] = (struct bench_thread){ .cpu = i };
		if (pthread_create(&t[i].tid, NULL, fn, &t[i]))
			break;
	}
	if (ms)
		nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	*total = 0;
	for (i = 0; i < n; i++) {
		pthread_join(t[i].tid, NULL);
		*total += t[i].count;
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

int bench_getrandom(size_t size, unsigned int ms, uint64_t *calls, int *threads,
		    char *err, size_t errlen)
{
	if (size < 1 || size > MAX_SIZE || ms < 1 || ms > 600000) {
		snprintf(err, errlen, "size must be 1..%d, ms 1..600000", MAX_SIZE);
		return -1;
	}
	req_size = size;
	return run_per_cpu(getrandom_loop, ms, calls, threads, err, errlen);
}

int bench_u32(uint64_t *calls_per_s, int *threads, char *err, size_t errlen)
{
	if (access(BENCH_U32_PATH, R_OK)) {
		snprintf(err, errlen, "%s: %s (boot a *-bench kernel)", BENCH_U32_PATH, strerror(errno));
		return -1;
	}
	return run_per_cpu(u32_once, 0, calls_per_s, threads, err, errlen);
}

int bench_reseeds(uint64_t *reseeds, char *err, size_t errlen)
{
	int rc = read_hook(BENCH_RESEEDS_PATH, reseeds);

	if (rc)
		snprintf(err, errlen, "%s: %s (boot a *-bench kernel)", BENCH_RESEEDS_PATH, strerror(rc));
	return rc ? -1 : 0;
}
