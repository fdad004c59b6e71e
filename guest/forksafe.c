// SPDX-License-Identifier: GPL-2.0
/*
 * libforksafe (see forksafe.h): /dev/vmgenid read, polled and mapped, and a
 * reference DRBG that checks the mapping before each output.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include "forksafe.h"
#include "sha256.h"

/* ---- the device ------------------------------------------------------------ */

/*
 * One per process, set up once by forksafe_open() before any thread uses
 * it.  live is the hypervisor's ID in the page the kernel mapped read-only.
 */
static int dev_fd = -1;
static const volatile uint64_t *live;

int forksafe_open(void)
{
	return forksafe_open_path(FORKSAFE_DEVICE);
}

int forksafe_open_path(const char *path)
{
	struct vmgenid_generation g;
	long page = sysconf(_SC_PAGESIZE);
	void *map;
	ssize_t n;
	int fd, err;

	if (dev_fd >= 0)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, &g, sizeof(g));
	if (n != (ssize_t)sizeof(g)) {
		err = n < 0 ? -errno : -EIO;
		goto fail;
	}
	if (g.id_len != FORKSAFE_ID_LEN || g.id_offset % 8 || g.id_offset > page - FORKSAFE_ID_LEN) {
		err = -EPROTO;
		goto fail;
	}
	map = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	live = (const volatile uint64_t *)((const char *)map + g.id_offset);
	dev_fd = fd;
	return 0;
fail:
	close(fd);
	return err;
}

int64_t forksafe_generation(void)
{
	struct vmgenid_generation g;
	ssize_t n;

	if (dev_fd < 0)
		return -EBADF;
	n = read(dev_fd, &g, sizeof(g));
	if (n != (ssize_t)sizeof(g))
		return n < 0 ? -errno : -EIO;
	return (int64_t)g.generation;
}

/*
 * The ID as two 8-byte loads, the way the hypervisor writes it.  The
 * acquire fence keeps every later load of the caller's state after them.
 */
static void read_live(struct forksafe_id *out)
{
	uint64_t w[2] = { live[0], live[1] };

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
