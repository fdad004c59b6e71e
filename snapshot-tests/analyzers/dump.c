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

static int append(struct dump *d, int stream, const struct record *r)
{
	uint32_t n = d->n[stream];
	struct record *nr;

	if ((n & (n - 1)) == 0) { /* grow at powers of two */
		nr = realloc(d->rec[stream], (n ? 2 * (size_t)n : 1024) * sizeof(*nr));
		if (!nr)
			return -1;
		d->rec[stream] = nr;
	}
	d->rec[stream][n] = *r;
	d->n[stream] = n + 1;
	return 0;
}

/*
 * The header "H SHAPE UNIT" says what a record stands for: without it two
 * dumps of different shapes would compare record by record as if they
 * measured the same thing.  The shape becomes a JSON string and a table
 * cell, so it is held to a short name of letters, digits and '-' (capitals
 * too: protocol.h names getrandom-16MiB and urandom-1MiB).
 */
static int shape_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-';
}

static int header(struct dump *d, const char *p, const char *eol, const char *name)
{
	uint64_t unit;
	size_t len = 0;

	if (eol - p < 2 || p[0] != 'H' || p[1] != ' ')
		return bad(d, name, 1, "no header line (H SHAPE UNIT) before the records");
	for (p += 2; p < eol && shape_char(*p); p++) {
		if (len == DUMP_SHAPE_MAX - 1)
			return bad(d, name, 1, "the shape is longer than %d characters", DUMP_SHAPE_MAX - 1);
		d->shape[len++] = *p;
	}
	d->shape[len] = '\0';
	if (!len || (p < eol && *p != ' '))
		return bad(d, name, 1, "garbled header: the shape is 1 to %d letters, digits or -",
			   DUMP_SHAPE_MAX - 1);
	if (field(&p, eol, 10, DUMP_UNIT_MAX, &unit) || p != eol || !unit)
		return bad(d, name, 1, "garbled header: the unit is 1 to %u bytes", DUMP_UNIT_MAX);
	d->unit = (uint32_t)unit;
	return 0;
}

/* One "R STREAM SEQ FP T_NS CHANGED" line, the next of its stream. */
static int record_line(struct dump *d, const char *p, const char *eol, const char *name, size_t line)
{
	uint64_t stream, seq, fp, t, changed;

	if (eol - p < 2 || p[0] != 'R' || p[1] != ' ')
		return bad(d, name, line, "not a record line");
	p += 1;
	if (field(&p, eol, 10, DUMP_MAX_STREAMS - 1, &stream) ||
	    field(&p, eol, 10, DUMP_MAX_RECORDS - 1, &seq) ||
	    field(&p, eol, 16, UINT64_MAX, &fp) ||
	    field(&p, eol, 10, INT64_MAX, &t) ||
	    field(&p, eol, 10, 1, &changed) || p != eol)
		return bad(d, name, line, "garbled record");
	if ((int)stream > d->nstreams)
		return bad(d, name, line, "stream %" PRIu64 " before stream %d", stream, d->nstreams);
	if ((int)stream == d->nstreams)
		d->nstreams++;
	if (seq != d->n[stream])
		return bad(d, name, line, "stream %" PRIu64 ": record %" PRIu64 " where %u was due (lost lines?)",
			   stream, seq, d->n[stream]);
	if (append(d, (int)stream, &(struct record){ .fp = fp, .t_ns = (int64_t)t, .changed = (int)changed }))
		return bad(d, name, line, "out of memory");
	return 0;
}

int dump_parse(struct dump *d, const char *text, size_t len, const char *name)
{
	const char *p = text, *end = text + len, *eol;
	size_t line = 0;
	int s;

	memset(d, 0, sizeof(*d));
	if (!len)
		return bad(d, name, 1, "empty: no header line (H SHAPE UNIT)");
	while (p < end) {
		line++;
		eol = memchr(p, '\n', end - p);
		if (!eol)
			return bad(d, name, line, "truncated: the last line has no newline");
		if (line == 1 ? header(d, p, eol, name) : record_line(d, p, eol, name, line))
			return -1;
		p = eol + 1;
	}
	if (!d->nstreams)
		return bad(d, name, line, "no records");
	for (s = 0; s < d->nstreams; s++)
		if (!d->n[s])
			return bad(d, name, line, "no records for stream %d", s);
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
	int s;

	for (s = 0; s < DUMP_MAX_STREAMS; s++) {
		free(d->rec[s]);
		d->rec[s] = NULL;
		d->n[s] = 0;
	}
	d->nstreams = 0;
	d->unit = 0;
	memset(d->shape, 0, sizeof(d->shape));
}
