/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_BENCH_H
#define FORKSAFE_BENCH_H
#include <stddef.h>
#include <stdint.h>

/*
 * getrandom() throughput: one thread per online CPU, pinned, calling
 * getrandom(SIZE) for MS milliseconds.  Returns 0 and the calls made by
 * all threads and their number, or -1 with err set.
 */
int bench_getrandom(size_t size, unsigned int ms, uint64_t *calls, int *threads,
		    char *err, size_t errlen);

#endif
