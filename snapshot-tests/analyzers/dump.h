/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_DUMP_H
#define FORKSAFE_DUMP_H
#include <stddef.h>
#include <stdint.h>
#include "protocol.h"

/* A recorder dump (guest/recorder.c, format in guest/protocol.h), parsed and checked. */

struct block {
	uint64_t fp;
	int64_t t_ns;
	int changed;
};

struct dump {
	int ncpus;
	uint32_t n[DUMP_MAX_STREAMS];
	struct block *b[DUMP_MAX_STREAMS];
	char error[256];
};

/*
 * Parse text of "R CPU SEQ FP T_NS CHANGED" lines.  Sequence numbers must
 * run from 0 without a gap on every CPU and CPUs from 0 without a gap: a
 * lost or garbled line is an error, never a shorter recording.  Returns 0,
 * or -1 with d->error set (and nothing to free).
 */
int dump_parse(struct dump *d, const char *text, size_t len, const char *name);
int dump_load(struct dump *d, const char *path);
void dump_free(struct dump *d);

#endif
