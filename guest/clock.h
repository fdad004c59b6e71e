/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_CLOCK_H
#define FORKSAFE_CLOCK_H
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns: what the recorder, the streams and bench time by. */
static inline int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
