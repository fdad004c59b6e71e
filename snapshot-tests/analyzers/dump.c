// SPDX-License-Identifier: GPL-2.0
/* The recorder dump parser: everything in it comes from a guest. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dump.h"

static int bad(struct dump *d, const char *name, size_t line, const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(d->error, sizeof(d->error), "%s:%zu: %s", name, line, why);
	dump_free(d);
	return -1;
}

/* Parse an unsigned decimal or hex field ending at a space or the end. */
static int field(const char **p, const char *end, int base, uint64_t max, uint64_t *out)
{
	uint64_t v = 0, digit;
	const char *q = *p;

	while (q < end && *q == ' ')
		q++;
	if (q == end || *q == ' ')
		return -1;
	for (; q < end && *q != ' '; q++) {
		if (*q >= '0' && *q <= '9')
			digit = *q - '0';
		else if (base == 16 && *q >= 'a' && *q <= 'f')
			digit = *q - 'a' + 10;
		else
			return -1;
		if (digit > max || v > (max - digit) / base)
			return -1;
		v = v * base + digit;
	}
	*p = q;
	*out = v;
	return 0;
}

static int append(struct dump *d, int cpu, const struct block *blk)
{
	uint32_t n = d->n[cpu];
	struct block *nb;

	if ((n & (n - 1)) == 0) { /* grow at powers of two */
		nb = realloc(d->b[cpu], (n ? 2 * (size_t)n : 1024) * sizeof(*nb));
		if (!nb)
			return -1;
		d->b[cpu] = nb;
	}
	d->b[cpu][n] = *blk;
	d->n[cpu] = n + 1;
	return 0;
}

int dump_parse(struct dump *d, const char *text, size_t len, const char *name)
{
	const char *p = text, *end = text + len, *eol;
	uint64_t cpu, seq, fp, t, changed;
	size_t line = 0;
	int c;

	memset(d, 0, sizeof(*d));
	while (p < end) {
		line++;
		eol = memchr(p, '\n', end - p);
		if (!eol)
			return bad(d, name, line, "truncated: the last line has no newline");
		if (eol - p < 2 || p[0] != 'R' || p[1] != ' ')
			return bad(d, name, line, "not a record line");
		p += 1;
		if (field(&p, eol, 10, DUMP_MAX_STREAMS - 1, &cpu) ||
		    field(&p, eol, 10, DUMP_MAX_RECORDS - 1, &seq) ||
		    field(&p, eol, 16, UINT64_MAX, &fp) ||
		    field(&p, eol, 10, INT64_MAX, &t) ||
		    field(&p, eol, 10, 1, &changed) || p != eol)
			return bad(d, name, line, "garbled record");
		if ((int)cpu > d->ncpus)
			return bad(d, name, line, "CPU %" PRIu64 " before CPU %d", cpu, d->ncpus);
		if ((int)cpu == d->ncpus)
			d->ncpus++;
		if (seq != d->n[cpu])
			return bad(d, name, line, "CPU %" PRIu64 ": block %" PRIu64 " where %u was due (lost lines?)",
				   cpu, seq, d->n[cpu]);
		if (append(d, (int)cpu, &(struct block){ .fp = fp, .t_ns = (int64_t)t, .changed = (int)changed }))
			return bad(d, name, line, "out of memory");
		p = eol + 1;
	}
	if (!d->ncpus)
		return bad(d, name, line, "no records");
	for (c = 0; c < d->ncpus; c++)
		if (!d->n[c])
			return bad(d, name, line, "no records for CPU %d", c);
	return 0;
}

int dump_load(struct dump *d, const char *path)
{
	char *buf = NULL;
	size_t cap = 0, len = 0, got;
	FILE *f = fopen(path, "r");
	int rc;

	memset(d, 0, sizeof(*d));
	if (!f) {
		snprintf(d->error, sizeof(d->error), "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	do {
		if (len == cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 1 << 20);

			if (!nb) {
				free(buf);
				fclose(f);
				snprintf(d->error, sizeof(d->error), "%s: out of memory", path);
				return -1;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
	} while (got);
	fclose(f);
	rc = dump_parse(d, buf ? buf : "", len, path);
	free(buf);
	return rc;
}

void dump_free(struct dump *d)
{
	int c;

	for (c = 0; c < DUMP_MAX_STREAMS; c++) {
		free(d->b[c]);
		d->b[c] = NULL;
		d->n[c] = 0;
	}
	d->ncpus = 0;
}
