/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_RECORDER_H
#define FORKSAFE_RECORDER_H
#include <stddef.h>
#include <stdint.h>

/* ioctl(RNDRESEEDCRNG): 0 or -errno. */
int rng_reseed(void);

/* ioctl(RNDADDENTROPY) crediting BITS (1..256): 0 or -errno. */
int rng_credit(unsigned int bits);

/* Reseed, then record BLOCKS getrandom() blocks on every CPU.  0 or -1 + err. */
int recorder_start(uint32_t blocks, char *err, size_t errlen);

/* Blocks recorded so far and in all; returns a thread's errno, or 0. */
int recorder_status(uint32_t *done, uint32_t *total);

/* Every record as a text line "R CPU SEQ FP T_NS CHANGED". */
void recorder_dump(void (*out)(const char *line, void *ctx), void *ctx);

#endif
