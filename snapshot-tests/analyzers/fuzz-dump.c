// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for dump_parse(): a recorder dump is written by the
 * guest, so the host must survive any bytes in it.  Beyond the sanitizers'
 * memory checks, a parse that succeeds must hand back a well-formed dump,
 * and one that fails must leave nothing behind to free.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ok(const struct dump *d)
{
	uint32_t i;
	int c;

	if (d->ncpus < 1 || d->ncpus > DUMP_MAX_STREAMS)
		abort();
	for (c = 0; c < d->ncpus; c++) {
		if (d->n[c] == 0 || d->n[c] > DUMP_MAX_RECORDS || !d->b[c])
			abort();
		for (i = 0; i < d->n[c]; i++)
			if ((d->b[c][i].changed != 0 && d->b[c][i].changed != 1) ||
			    d->b[c][i].t_ns < 0)
				abort();
	}
	for (; c < DUMP_MAX_STREAMS; c++)
		if (d->n[c] || d->b[c])
			abort();
}

static void check_failed(const struct dump *d)
{
	int c;

	if (!d->error[0] || !memchr(d->error, '\0', sizeof(d->error)))
		abort();
	if (d->ncpus)
		abort();
	for (c = 0; c < DUMP_MAX_STREAMS; c++)
		if (d->n[c] || d->b[c])
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dump d;

	if (dump_parse(&d, (const char *)data, size, "fuzz")) {
		check_failed(&d);
		return 0;
	}
	check_ok(&d);
	dump_free(&d);
	return 0;
}
