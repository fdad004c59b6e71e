// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for dump_parse(): a recorder dump is written by the
 * guest, so the host must survive any bytes in it.  Beyond the sanitizers'
 * memory checks, a parse that succeeds must hand back a well-formed dump
 * (its header included), and one that fails must leave nothing behind to
 * free.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The header as dump.h promises it: a NUL-terminated [A-Za-z0-9-]+ and a unit in range. */
static void check_header(const struct dump *d)
{
	size_t i, len = strnlen(d->shape, sizeof(d->shape));

	if (!len || len == sizeof(d->shape))
		abort();
	for (i = 0; i < len; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-", d->shape[i]))
			abort();
	if (d->unit < 1 || d->unit > DUMP_UNIT_MAX)
		abort();
}

static void check_ok(const struct dump *d)
{
	uint32_t i;
	int s;

	check_header(d);
	if (d->nstreams < 1 || d->nstreams > DUMP_MAX_STREAMS)
		abort();
	for (s = 0; s < d->nstreams; s++) {
		if (d->n[s] == 0 || d->n[s] > DUMP_MAX_RECORDS || !d->rec[s])
			abort();
		for (i = 0; i < d->n[s]; i++)
			if ((d->rec[s][i].changed != 0 && d->rec[s][i].changed != 1) ||
			    d->rec[s][i].t_ns < 0)
				abort();
	}
	for (; s < DUMP_MAX_STREAMS; s++)
		if (d->n[s] || d->rec[s])
			abort();
}

static void check_failed(const struct dump *d)
{
	int s;

	if (!d->error[0] || !memchr(d->error, '\0', sizeof(d->error)))
		abort();
	if (d->nstreams || d->unit || d->shape[0])
		abort();
	for (s = 0; s < DUMP_MAX_STREAMS; s++)
		if (d->n[s] || d->rec[s])
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
