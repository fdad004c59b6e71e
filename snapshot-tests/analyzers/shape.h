/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_SHAPE_H
#define FORKSAFE_SHAPE_H
#include <stdint.h>
#include <string.h>
#include "protocol.h"

/*
 * What the host makes of each recorder shape (guest/protocol.h).  A shape
 * not listed here has no agreed window or allowance, so rng-exposure
 * refuses its dumps and fork-report its rows: a new shape is judged only
 * once someone has said here what a fork-safe clone of it may show.
 *
 * min_window: records per stream that the control must have after the
 * snapshot point before its agreement with the reference means anything.
 * The getrandom() and uuid loops record 60000 calls a stream (FORK_BLOCKS in
 * snapshot-tests/lib/rng_fork.sh): 10000 of them.  A long read records a
 * page per 4 KiB, 12288 or 4096 of them (shape_records there): 1024 pages,
 * 4 MiB, a quarter of one getrandom-16MiB call.  exec records one program
 * per record, 300 a stream (a few ms each, so that the recording ends
 * before the kernel's next timed reseed): 150.  systemd-seed records one
 * saved seed file per record, 6 or 5 after the snapshot (a control under
 * systemd stays with its reference for about half a second): 5.  The
 * default is the shape's so that every caller gets the same; rng-exposure
 * -w overrides it.
 *
 * allowance: records a clone that saw its new GUID may still share with
 * the reference or with another clone and be fork-safe.  A call of 16
 * bytes either starts after the kernel saw the fork or it does not, so
 * none.  A long read writes page after page; the one page in flight when
 * the VM resumed was produced before the kernel could see the fork, and
 * the recorder marks it changed when it first sees it: one page.
 *
 * user_state: the output comes from state kept in user space that nothing
 * checks against the fork signal (drbg-16, a DRBG seeded once; OpenSSL's
 * DRBGs and Python's Mersenne Twister): every kernel shows its window, so
 * its rows do not count towards a kernel's verdict and are summed up
 * apart, as what only user space can fix.  The libraries that ask the
 * kernel for every output (Python's secrets, glibc's arc4random, libuuid)
 * are the kernel's to judge, like getrandom-16.
 */
struct shape {
	const char *name;
	uint32_t unit;
	uint32_t min_window;
	uint32_t allowance;
	int user_state;
};

static const struct shape shapes[] = {
	{ "getrandom-16", RNG_BLOCK_BYTES, 10000, 0, 0 },
	{ "insecure-16", RNG_BLOCK_BYTES, 10000, 0, 0 },
	{ "vdso-16", RNG_BLOCK_BYTES, 10000, 0, 0 },
	{ "drbg-16", RNG_BLOCK_BYTES, 10000, 0, 1 },
	{ "drbg-checked-16", RNG_BLOCK_BYTES, 10000, 0, 0 },
	{ "uuid", RNG_BLOCK_BYTES, 10000, 0, 0 },
	{ "exec", RNG_BLOCK_BYTES, 150, 0, 0 },
	{ "getrandom-16MiB", RNG_PAGE_BYTES, 1024, 1, 0 },
	{ "urandom-1MiB", RNG_PAGE_BYTES, 1024, 1, 0 },
	{ "openssl-public-16", RNG_BLOCK_BYTES, 10000, 0, 1 },
	{ "openssl-private-16", RNG_BLOCK_BYTES, 10000, 0, 1 },
	{ "openssl-fs-public-16", RNG_BLOCK_BYTES, 10000, 0, 0 },
	{ "openssl-fs-private-16", RNG_BLOCK_BYTES, 10000, 0, 0 },
	{ "python-mt-16", RNG_BLOCK_BYTES, 10000, 0, 1 },
	{ "python-secrets-16", RNG_BLOCK_BYTES, 10000, 0, 0 },
	{ "arc4random-16", RNG_BLOCK_BYTES, 10000, 0, 0 },
	{ "libuuid-16", RNG_BLOCK_BYTES, 10000, 0, 0 },
	{ "systemd-seed", SEED_FILE_BYTES, 5, 0, 0 },
	{ "openssl-tls-16", RNG_BLOCK_BYTES, 100, 0, 1 },
	{ "openssl-fs-tls-16", RNG_BLOCK_BYTES, 100, 0, 0 },
};

#define SHAPE_NAMES "getrandom-16, insecure-16, vdso-16, drbg-16, drbg-checked-16, uuid, exec, getrandom-16MiB, " \
	"urandom-1MiB, openssl-public-16, openssl-private-16, openssl-fs-public-16, openssl-fs-private-16, python-mt-16, python-secrets-16, arc4random-16, libuuid-16, systemd-seed, " \
	"openssl-tls-16, openssl-fs-tls-16"

static inline const struct shape *shape_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (!strcmp(shapes[i].name, name))
			return &shapes[i];
	return NULL;
}

#endif
