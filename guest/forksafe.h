/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_H
#define FORKSAFE_H
/*
 * libforksafe: the VM fork signal for user space, from /dev/vmgenid (the
 * forksafe kernel series, "virt: vmgenid: add a fork signal for user space").
 *
 *   forksafe_open()                 once per process, before the rest
 *   forksafe_generation()           forks the kernel counted since boot
 *   forksafe_mark(&saved)           remember the VM as it is now
 *   forksafe_forked(&saved)         1 if the VM forked since saved, then
 *                                   saved moves on; no system call, and no
 *                                   window: it reads the generation ID the
 *                                   hypervisor rewrote before the VM ran
 *   forksafe_wait(seen, timeout)    sleep until the generation is not seen
 *
 * A cache of anything derived from random bytes (a DRBG, session keys,
 * nonces) checks forksafe_forked() before each use and starts afresh when
 * it says 1.  forksafe_wait() is for a thread that does housekeeping after
 * a fork (a seed file, a log line); it wakes when the kernel has handled
 * the hypervisor's notification, which is later, so it is no substitute
 * for the check.
 *
 * The reference DRBG below does exactly that: fast key erasure over
 * SHA-256, reseeded from getrandom() before output when the check fires.
 * With check = 0 it is what most user-space DRBGs are today, for
 * measuring their window.
 */
#include <stddef.h>
#include <stdint.h>

#define FORKSAFE_DEVICE "/dev/vmgenid"
#define FORKSAFE_ID_LEN 16

/* What read() of /dev/vmgenid returns (the series' uapi linux/vmgenid.h). */
struct vmgenid_generation {
	uint64_t generation;
	uint32_t id_offset;
	uint32_t id_len;
};

struct forksafe_id {
	uint8_t id[FORKSAFE_ID_LEN];
};

/* 0, or -errno (-ENOENT: a kernel without the series or without vmgenid). */
int forksafe_open(void);
/* The same from another file laid out like the device (for tests). */
int forksafe_open_path(const char *path);
int64_t forksafe_generation(void);
void forksafe_mark(struct forksafe_id *saved);
int forksafe_forked(struct forksafe_id *saved);
/* 1 when the generation is no longer seen, 0 on timeout, -errno. */
int forksafe_wait(uint64_t seen, int timeout_ms);

/* ---- the reference DRBG -------------------------------------------------- */
struct forksafe_drbg {
	uint8_t key[32];
	uint64_t counter;
	struct forksafe_id seen;
	int check;
	uint64_t reseeds;	/* by a fork the check saw */
};

/* 0, or -errno: seeds from getrandom(); check needs forksafe_open(). */
int forksafe_drbg_init(struct forksafe_drbg *d, int check);
int forksafe_drbg_generate(struct forksafe_drbg *d, void *out, size_t len);

#endif
