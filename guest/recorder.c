// SPDX-License-Identifier: GPL-2.0
/*
 * The RNG recorder: what a clone's getrandom() produced around a fork.
 *
 * One thread per online CPU, pinned to it, calls getrandom() for 16-byte
 * blocks in a tight loop and records, for each block, its sequence number,
 * a 64-bit fingerprint of the output, CLOCK_MONOTONIC after the call, and
 * whether the live generation ID (read before the call) still equals the
 * one seen when recording started.  The host starts it just before the
 * snapshot; each clone resumes mid-loop, finishes the buffer and the host
 * dumps it.  Comparing clones block by block shows how many blocks a clone
 * produced from the pre-fork state after the hypervisor changed the ID.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/random.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include "genid.h"
#include "protocol.h"
#include "recorder.h"

/* Debian 12's headers have it; older ones may not. */
#ifndef GRND_INSECURE
#define GRND_INSECURE 0x0004
#endif

#define MAX_THREADS DUMP_MAX_STREAMS

struct record {
	uint64_t fp;
	int64_t t_ns;
	uint32_t seq;
	uint32_t changed;
};

struct recorder_thread {
	pthread_t tid;
	int cpu;
	struct record *rec;
	_Atomic uint32_t count;
	_Atomic int error;
};

static struct recorder_thread threads[MAX_THREADS];
static int nthreads;
static uint32_t blocks_per_thread;
static const volatile uint8_t *live_id;
static uint8_t start_id[GENID_LEN];

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *record_loop(void *arg)
{
	struct recorder_thread *t = arg;
	uint8_t id[GENID_LEN], out[RNG_BLOCK_BYTES];
	uint64_t a, b;
	cpu_set_t set;
	uint32_t i;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		t->error = errno;
	for (i = 0; i < blocks_per_thread && !t->error; i++) {
		genid_read(live_id, id);
		if (getrandom(out, sizeof(out), 0) != sizeof(out)) {
			t->error = errno ? errno : EIO;
			break;
		}
		memcpy(&a, out, 8);
		memcpy(&b, out + 8, 8);
		t->rec[i] = (struct record){
			.fp = a ^ b,
			.t_ns = mono_ns(),
			.seq = i,
			.changed = memcmp(id, start_id, GENID_LEN) != 0,
		};
		atomic_store_explicit(&t->count, i + 1, memory_order_release);
	}
	return NULL;
}

int rng_reseed(void)
{
	int fd = open("/dev/urandom", O_RDONLY), rc;

	if (fd < 0)
		return -errno;
	rc = ioctl(fd, RNDRESEEDCRNG) ? -errno : 0;
	close(fd);
	return rc;
}

/*
 * Credit BITS to the input pool, as a guest with an entropy source of its
 * own would: RNDADDENTROPY on /dev/random, over BITS/8 bytes (at least 8).
 * The bytes come from GRND_INSECURE, which never blocks; what is measured
 * is the credit (136 bits take a CRNG_EMPTY kernel to CRNG_EARLY).
 */
int rng_credit(unsigned int bits)
{
	size_t len = (bits + 7) / 8 < 8 ? 8 : (bits + 7) / 8;
	struct rand_pool_info *p = calloc(1, sizeof(*p) + len + 3); /* buf is __u32[] */
	int fd, rc;

	if (!p)
		return -ENOMEM;
	p->entropy_count = bits;
	p->buf_size = len;
	fd = open("/dev/random", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		rc = -errno;
	else if (getrandom(p->buf, len, GRND_INSECURE) != (ssize_t)len)
		rc = -EIO;
	else
		rc = ioctl(fd, RNDADDENTROPY, p) ? -errno : 0;
	if (fd >= 0)
		close(fd);
	free(p);
	return rc;
}

int recorder_start(uint32_t blocks, char *err, size_t errlen)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int i, rc;

	if (nthreads) {
		snprintf(err, errlen, "a recording already exists");
		return -1;
	}
	if (blocks < 1 || blocks > DUMP_MAX_RECORDS || cpus < 1 || cpus > MAX_THREADS) {
		snprintf(err, errlen, "blocks must be 1..%d and cpus 1..%d", DUMP_MAX_RECORDS, MAX_THREADS);
		return -1;
	}
	live_id = genid_map(err, errlen);
	if (!live_id)
		return -1;
	genid_read(live_id, start_id);
	/*
	 * In its first two minutes the kernel reseeds about every second on
	 * its own.  Reseeding here pushes the next one out past the window we
	 * record, so what the clones share is the state at the snapshot.
	 */
	rc = rng_reseed();
	if (rc) {
		snprintf(err, errlen, "RNDRESEEDCRNG: %s", strerror(-rc));
		return -1;
	}
	blocks_per_thread = blocks;
	for (i = 0; i < cpus; i++) {
		threads[i] = (struct recorder_thread){ .cpu = i };
		threads[i].rec = calloc(blocks, sizeof(struct record));
		if (!threads[i].rec ||
		    pthread_create(&threads[i].tid, NULL, record_loop, &threads[i])) {
			snprintf(err, errlen, "cannot start recorder thread %d", i);
			return -1;
		}
		nthreads = i + 1;
	}
	/* Recording is under way on every CPU before we answer. */
	for (i = 0; i < nthreads; i++)
		while (atomic_load(&threads[i].count) < 16 && !threads[i].error)
			sched_yield();
	return 0;
}

int recorder_status(uint32_t *done, uint32_t *total)
{
	int i, error = 0;

	*done = 0;
	*total = nthreads * blocks_per_thread;
	for (i = 0; i < nthreads; i++) {
		*done += atomic_load(&threads[i].count);
		if (threads[i].error)
			error = threads[i].error;
	}
	return error;
}

/* Text lines "R CPU SEQ FP T_NS CHANGED", emitted through out(). */
void recorder_dump(void (*out)(const char *line, void *ctx), void *ctx)
{
	char line[96];
	uint32_t i, n;
	int t;

	for (t = 0; t < nthreads; t++) {
		n = atomic_load_explicit(&threads[t].count, memory_order_acquire);
		for (i = 0; i < n; i++) {
			const struct record *r = &threads[t].rec[i];

			snprintf(line, sizeof(line), DUMP_RECORD_FMT, t, r->seq,
				 (unsigned long long)r->fp, (long long)r->t_ns, r->changed);
			out(line, ctx);
		}
	}
}
