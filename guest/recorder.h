/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_RECORDER_H
#define FORKSAFE_RECORDER_H
#include <stddef.h>
#include <stdint.h>

/* ioctl(RNDRESEEDCRNG): 0 or -errno. */
int rng_reseed(void);

/* ioctl(RNDADDENTROPY) crediting BITS (1..256): 0 or -errno. */
int rng_credit(unsigned int bits);

/*
 * Reseed, then record N records per stream in the shape named (see
 * guest/protocol.h); returns once recording is under way on every stream.
 * 0, or -1 with err set.  One recording per boot.
 */
int recorder_start(const char *shape, unsigned long n, char *err, size_t errlen);

/*
 * Records so far and in all, over every stream.  Returns 0, or the errno
 * of a recording that failed, with the reason in why.
 */
int recorder_status(uint32_t *done, uint32_t *total, char *why, size_t whylen);

/* The header line, then every record (guest/protocol.h); -1 if none started. */
int recorder_dump(void (*out)(const char *line, void *ctx), void *ctx);

/*
 * A link of the exec shape's chain: the agent run again as
 * "EXEC_LINK_ARG MEMFD SYNC" records what it got from execve() and execs
 * the next link, or exits (main's status) once the recording is full.
 */
#define EXEC_LINK_ARG "--exec-link"
int recorder_exec_link(const char *memfd_arg, const char *sync_arg);

#endif
