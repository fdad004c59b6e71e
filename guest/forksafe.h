/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_H
#define FORKSAFE_H
/*
 * libforksafe: the VM fork signal for user space, from whichever source
 * the kernel offers, the zero-window one first:
 *
 *   /dev/vmgenid    the forksafe series ("virt: vmgenid: add a fork signal
 *                   for user space"): the hypervisor's 16-byte generation
 *                   ID mapped read-only, a fork count by read(), poll()
 *   /dev/vmclock0   vmclock (Linux 7.0; Firecracker 1.15+): the
 *                   hypervisor's vm_generation_counter at offset 0x68 of
 *                   its page, under the page's seqcount, poll()
 *   /dev/sysgenid   the SysGenID proposal (never merged; AWS-LC reads it):
 *                   a 4-byte counter the guest kernel bumps when it
 *                   handles the notification, poll()
 *
 * The first two are written by the hypervisor before the VM runs again, so
 * a check of them has no window; the third moves only once the guest
 * kernel has handled the hypervisor's notification (docs/kernel-patches.md
 * has the table).
 *
 *   forksafe_open()                 once per process, before the rest
 *   forksafe_source()               which source it found
 *   forksafe_generation()           a number that moves on every fork
 *                                   (the series' count of forks, or the
 *                                   hypervisor's or kernel's counter)
 *   forksafe_mark(&saved)           remember the VM as it is now
 *   forksafe_forked(&saved)         1 if the VM forked since saved, then
 *                                   saved moves on; no system call
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
#define FORKSAFE_VMCLOCK_DEVICE "/dev/vmclock0"
#define FORKSAFE_SYSGENID_DEVICE "/dev/sysgenid"
#define FORKSAFE_ID_LEN 16

/* What read() of /dev/vmgenid returns (the series' uapi linux/vmgenid.h). */
struct vmgenid_generation {
	uint64_t generation;
	uint32_t id_offset;
	uint32_t id_len;
};

/* The parts of vmclock's page (uapi linux/vmclock-abi.h) that a fork check reads. */
#define FORKSAFE_VMCLOCK_MAGIC 0x4b4c4356	/* "VCLK" */
#define FORKSAFE_VMCLOCK_SIZE_OFF 0x04
#define FORKSAFE_VMCLOCK_SEQ_OFF 0x0c
#define FORKSAFE_VMCLOCK_FLAGS_OFF 0x18
#define FORKSAFE_VMCLOCK_GEN_OFF 0x68
#define FORKSAFE_VMCLOCK_GEN_PRESENT (1ULL << 8)

enum forksafe_source {
	FORKSAFE_NONE,
	FORKSAFE_VMGENID,
	FORKSAFE_VMCLOCK,
	FORKSAFE_SYSGENID,
};

struct forksafe_id {
	uint8_t id[FORKSAFE_ID_LEN];
};

/*
 * 0, or -errno (-ENOENT: none of the three devices).  The first source that
 * opens wins, in the order above.
 */
int forksafe_open(void);
/* /dev/vmgenid's layout from another file (for tests). */
int forksafe_open_path(const char *path);
/* One source from PATH: -EPROTO if the file is not laid out as it says, -ENOTSUP if a vmclock has no generation counter. */
int forksafe_open_source(enum forksafe_source source, const char *path);
/* Forget the source (for tests: the next open starts afresh). */
void forksafe_close(void);
enum forksafe_source forksafe_source(void);
const char *forksafe_source_name(enum forksafe_source source);
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
