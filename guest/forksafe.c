// SPDX-License-Identifier: GPL-2.0
/*
 * libforksafe (see forksafe.h): the fork signal of /dev/vmgenid, vmclock or
 * /dev/sysgenid, read, polled and mapped, and a reference DRBG that checks
 * the mapping before each output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/random.h>
#include "forksafe.h"
#include "sha256.h"

/* ---- the sources ------------------------------------------------------------ */

/*
 * One per process, set up once by forksafe_open() before any thread uses
 * it.  page is the source's page, mapped read-only; live points into it at
 * what changes on a fork (the ID, or a counter).
 */
static enum forksafe_source source;
static int dev_fd = -1;
static long page_len;
static const volatile uint8_t *page;
static const volatile uint8_t *live;

static const char *const names[] = {
	[FORKSAFE_NONE] = "none",
	[FORKSAFE_VMGENID] = "vmgenid",
	[FORKSAFE_VMCLOCK] = "vmclock",
	[FORKSAFE_SYSGENID] = "sysgenid",
};

const char *forksafe_source_name(enum forksafe_source s)
{
	return s <= FORKSAFE_SYSGENID ? names[s] : "?";
}

enum forksafe_source forksafe_source(void)
{
	return source;
}

/* The zero-window sources first: their page is the hypervisor's. */
int forksafe_open(void)
{
	static const struct {
		enum forksafe_source source;
		const char *path;
	} order[] = {
		{ FORKSAFE_VMGENID, FORKSAFE_DEVICE },
		{ FORKSAFE_VMCLOCK, FORKSAFE_VMCLOCK_DEVICE },
		{ FORKSAFE_SYSGENID, FORKSAFE_SYSGENID_DEVICE },
	};
	size_t i;
	int err = -ENOENT, e;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		e = forksafe_open_source(order[i].source, order[i].path);
		if (!e)
			return 0;
		if (e != -ENOENT)
			err = e;
	}
	return err;
}

int forksafe_open_path(const char *path)
{
	return forksafe_open_source(FORKSAFE_VMGENID, path);
}

static uint64_t le64_at(const volatile uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32_at(const volatile uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * /dev/vmgenid's structure: the device has no file position (the series'
 * is a stream, where pread() fails with ESPIPE), a file laid out like it
 * for tests does.
 */
static ssize_t read_generation(int fd, struct vmgenid_generation *g)
{
	ssize_t n = pread(fd, g, sizeof(*g), 0);

	if (n < 0 && errno == ESPIPE)
		n = read(fd, g, sizeof(*g));
	return n;
}

/* Where in the page the fork shows, or -EPROTO / -ENOTSUP. */
static long live_offset(enum forksafe_source s, int fd, const volatile uint8_t *map, long len)
{
	struct vmgenid_generation g;
	ssize_t n;

	switch (s) {
	case FORKSAFE_VMGENID:
		n = read_generation(fd, &g);
		if (n != (ssize_t)sizeof(g))
			return n < 0 ? -errno : -EPROTO;
		if (g.id_len != FORKSAFE_ID_LEN || g.id_offset % 8 || g.id_offset > len - FORKSAFE_ID_LEN)
			return -EPROTO;
		return g.id_offset;
	case FORKSAFE_VMCLOCK:
		if (le32_at(map) != FORKSAFE_VMCLOCK_MAGIC ||
		    le32_at(map + FORKSAFE_VMCLOCK_SIZE_OFF) < FORKSAFE_VMCLOCK_GEN_OFF + 8)
			return -EPROTO;
		if (!(le64_at(map + FORKSAFE_VMCLOCK_FLAGS_OFF) & FORKSAFE_VMCLOCK_GEN_PRESENT))
			return -ENOTSUP;
		return FORKSAFE_VMCLOCK_GEN_OFF;
	case FORKSAFE_SYSGENID:
		return 0;
	default:
		return -EINVAL;
	}
}

int forksafe_open_source(enum forksafe_source s, const char *path)
{
	long len = sysconf(_SC_PAGESIZE), off;
	struct stat st;
	void *map;
	int fd;

	if (dev_fd >= 0)
		return 0;
	if (s != FORKSAFE_VMGENID && s != FORKSAFE_VMCLOCK && s != FORKSAFE_SYSGENID)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (s == FORKSAFE_SYSGENID)
		len = sizeof(uint32_t);
	/* A file that stands in for a device must hold what is mapped (else SIGBUS). */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size < len) {
		off = -EPROTO;
		goto fail;
	}
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		off = -errno;
		goto fail;
	}
	off = live_offset(s, fd, map, len);
	if (off < 0) {
		munmap(map, len);
		goto fail;
	}
	source = s;
	page = map;
	page_len = len;
	live = page + off;
	dev_fd = fd;
	return 0;
fail:
	close(fd);
	return (int)off;
}

void forksafe_close(void)
{
	if (dev_fd < 0)
		return;
	munmap((void *)page, page_len);
	close(dev_fd);
	dev_fd = -1;
	page = live = NULL;
	source = FORKSAFE_NONE;
}

/*
 * vmclock's counter under the page's seqcount: an odd count is an update
 * in progress, a count that moved is a torn read.  A hypervisor that
 * never finishes its update is no reason to hang: after many tries the
 * counter is reported as it is with the top bit flipped, which no saved
 * mark holds, so the caller errs towards a fork.
 */
#define VMCLOCK_TRIES 1000

static uint64_t vmclock_counter(void)
{
	uint32_t seq;
	uint64_t gen;
	int i;

	for (i = 0; i < VMCLOCK_TRIES; i++) {
		seq = le32_at(page + FORKSAFE_VMCLOCK_SEQ_OFF);
		atomic_thread_fence(memory_order_acquire);
		gen = le64_at(live);
		atomic_thread_fence(memory_order_acquire);
		if (!(seq & 1) && seq == le32_at(page + FORKSAFE_VMCLOCK_SEQ_OFF))
			return gen;
	}
	return gen ^ (1ULL << 63);
}

int64_t forksafe_generation(void)
{
	struct vmgenid_generation g;
	ssize_t n;

	if (dev_fd < 0)
		return -EBADF;
	switch (source) {
	case FORKSAFE_VMCLOCK:
		return (int64_t)(vmclock_counter() & INT64_MAX);
	case FORKSAFE_SYSGENID:
		return le32_at(live);
	default:
		break;
	}
	n = read_generation(dev_fd, &g);
	if (n != (ssize_t)sizeof(g))
		return n < 0 ? -errno : -EIO;
	return (int64_t)g.generation;
}

/*
 * What changed on a fork, as a 16-byte mark: the ID as two 8-byte loads,
 * the way the hypervisor writes it, or a counter in the first 8 bytes.
 * The acquire fence keeps every later load of the caller's state after
 * them.
 */
static void read_live(struct forksafe_id *out)
{
	uint64_t w[2] = { 0, 0 };

	switch (source) {
	case FORKSAFE_VMGENID:
		w[0] = ((const volatile uint64_t *)live)[0];
		w[1] = ((const volatile uint64_t *)live)[1];
		break;
	case FORKSAFE_VMCLOCK:
		w[0] = vmclock_counter();
		break;
	case FORKSAFE_SYSGENID:
		w[0] = le32_at(live);
		break;
	default:
		break;
	}
	atomic_thread_fence(memory_order_acquire);
	memcpy(out->id, w, sizeof(w));
}

void forksafe_mark(struct forksafe_id *saved)
{
	if (live)
		read_live(saved);
	else
		memset(saved, 0, sizeof(*saved));
}

int forksafe_forked(struct forksafe_id *saved)
{
	struct forksafe_id now;

	if (!live)
		return -EBADF;
	read_live(&now);
	if (!memcmp(&now, saved, sizeof(now)))
		return 0;
	*saved = now;
	return 1;
}

int forksafe_wait(uint64_t seen, int timeout_ms)
{
	struct pollfd p = { .fd = dev_fd, .events = POLLIN };
	int64_t g;
	int n;

	if (dev_fd < 0)
		return -EBADF;
	for (;;) {
		g = forksafe_generation();
		if (g < 0)
			return (int)g;
		if ((uint64_t)g != seen)
			return 1;
		n = poll(&p, 1, timeout_ms);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n == 0)
			return 0;
	}
}

/* ---- the reference DRBG ---------------------------------------------------- */

/*
 * Fast key erasure: each request hashes the key with a counter into
 * output blocks, then replaces the key, so that the state after a request
 * says nothing about what it returned.
 */
static void block(const struct forksafe_drbg *d, uint64_t n, char tag, uint8_t out[SHA256_LEN])
{
	struct sha256 h;

	sha256_init(&h);
	sha256_update(&h, d->key, sizeof(d->key));
	sha256_update(&h, &n, sizeof(n));
	sha256_update(&h, &tag, 1);
	sha256_final(&h, out);
}

/*
 * The key from getrandom(), hashed with the generation ID: on a kernel
 * that checks the ID itself, getrandom() alone differs in every clone; on
 * one that does not yet, the ID at least makes the clones' keys differ
 * from each other (not secret: the ID is no key).
 */
static int reseed(struct forksafe_drbg *d)
{
	uint8_t seed[32];
	struct sha256 h;
	ssize_t n = getrandom(seed, sizeof(seed), 0);

	if (n != (ssize_t)sizeof(seed))
		return n < 0 ? -errno : -EIO;
	sha256_init(&h);
	sha256_update(&h, seed, sizeof(seed));
	sha256_update(&h, d->seen.id, sizeof(d->seen.id));
	sha256_final(&h, d->key);
	memset(seed, 0, sizeof(seed));
	d->counter = 0;
	return 0;
}

int forksafe_drbg_init(struct forksafe_drbg *d, int check)
{
	memset(d, 0, sizeof(*d));
	d->check = check;
	if (check) {
		if (!live)
			return -EBADF;
		forksafe_mark(&d->seen);
	}
	return reseed(d);
}

int forksafe_drbg_generate(struct forksafe_drbg *d, void *out, size_t len)
{
	uint8_t b[SHA256_LEN];
	size_t take;
	int err;

	if (d->check && forksafe_forked(&d->seen) == 1) {
		err = reseed(d);
		if (err)
			return err;
		d->reseeds++;
	}
	while (len) {
		block(d, d->counter++, 'o', b);
		take = len < sizeof(b) ? len : sizeof(b);
		memcpy(out, b, take);
		out = (char *)out + take;
		len -= take;
	}
	block(d, d->counter++, 'k', d->key);
	memset(b, 0, sizeof(b));
	return 0;
}
