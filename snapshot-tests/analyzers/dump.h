/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_DUMP_H
#define FORKSAFE_DUMP_H
#include <stddef.h>
#include <stdint.h>
#include "protocol.h"

/* A recorder dump (guest/recorder.c, format in guest/protocol.h), parsed and checked. */

/* The most bytes one record may stand for: a 1 MiB read, as urandom-1MiB's. */
#define DUMP_UNIT_MAX (1u << 20)

struct record {
	uint64_t fp;
	int64_t t_ns;
	int changed;
};

struct dump {
	char shape[DUMP_SHAPE_MAX];	/* how the RNG was used: [A-Za-z0-9-]+ */
	uint32_t unit;			/* bytes of output a record stands for */
	int nstreams;
	uint32_t n[DUMP_MAX_STREAMS];
	struct record *rec[DUMP_MAX_STREAMS];
	char error[256];
};

/*
 * Parse a header line "H SHAPE UNIT", then "R STREAM SEQ FP T_NS CHANGED"
 * lines.  Sequence numbers must run from 0 without a gap on every stream
 * and streams from 0 without a gap: a lost or garbled line is an error,
 * never a shorter recording, and a dump without its header is an error,
 * never a guess at what its records stand for.  Returns 0, or -1 with
 * d->error set to one line "NAME:LINE: why" (and nothing to free).
 */
int dump_parse(struct dump *d, const char *text, size_t len, const char *name);
int dump_load(struct dump *d, const char *path);
void dump_free(struct dump *d);

#endif
