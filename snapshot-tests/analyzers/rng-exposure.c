// SPDX-License-Identifier: GPL-2.0
/*
 * rng-exposure: how much pre-fork RNG output clones produced after the fork.
 *
 *   rng-exposure [-w MIN_WINDOW] REF CONTROL CLONE...
 *
 * Each argument is NAME=DUMP[:CONSOLE]: a recorder dump from the guest agent
 * (a header "H SHAPE UNIT", then "R STREAM SEQ FP T_NS CHANGED" lines, see
 * guest/protocol.h; every dump of one run has the same shape and unit) and optionally
 * the clone's serial console.  REF and CONTROL are two clones restored with
 * the original's GUID; the others are compared with REF block by block.
 *
 * The snapshot point on each CPU is the first block whose timestamp differs
 * between REF and CONTROL: everything before it was recorded before the
 * snapshot and is the same memory in every clone.  After it, a block is
 * "shared" if REF produced the same block after the snapshot, at any
 * position: another consumer of the same crng (a kernel user, another
 * process) can shift a clone's stream by a block without making it any
 * less predictable from REF.  From there on:
 *  - CONTROL must never diverge from REF (a run of 16 blocks REF never
 *    produced), over at least MIN_WINDOW blocks, or the recording cannot
 *    tell a fork from no fork and the run is an error (a blind detector
 *    never passes);
 *  - a clone's exposure is the number of shared blocks from the first block
 *    for which the clone already saw a new GUID up to its divergence.
 * Prints one JSON object.  Exit 0, or 2 with one line on bad input.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "tool.h"
#include "dump.h"

const char *tool_name = "rng-exposure";

#define RESEED_LINE "crng reseeded due to virtual machine fork"

struct input {
	char *name, *dump_path, *console_path;
	struct dump d;
};

static void parse_arg(struct input *in, char *arg)
{
	char *eq = strchr(arg, '='), *colon;

	if (!eq || eq == arg)
		fail("'%s' is not NAME=DUMP[:CONSOLE]", arg);
	*eq = '\0';
	in->name = arg;
	in->dump_path = eq + 1;
	colon = strchr(in->dump_path, ':');
	if (colon) {
		*colon = '\0';
		in->console_path = colon + 1;
	}
	if (dump_load(&in->d, in->dump_path))
		fail("%s", in->d.error);
}

/*
 * How often the console logged the vmgenid reseed after the restore:
 * exactly once per fork, never without one.  -1 when no console was given.
 */
static int reseed_lines(const char *path)
{
	char line[1024];
	int n = 0;
	FILE *f;

	if (!path)
		return -1;
	f = fopen(path, "r");
	if (!f)
		fail("cannot read %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		n += strstr(line, RESEED_LINE) != NULL;
	fclose(f);
	return n;
}

static void same_shape(const struct dump *a, const struct dump *b, const char *an, const char *bn)
{
	int c;

	if (strcmp(a->shape, b->shape) || a->unit != b->unit)
		fail("%s is %s with %u-byte records, %s is %s with %u-byte records",
		     an, a->shape, a->unit, bn, b->shape, b->unit);
	if (a->nstreams != b->nstreams)
		fail("%s has %d streams, %s has %d", an, a->nstreams, bn, b->nstreams);
	for (c = 0; c < a->nstreams; c++)
		if (a->n[c] != b->n[c])
			fail("%s has %u records on stream %d, %s has %u", an, a->n[c], c, bn, b->n[c]);
}

/* REF's blocks after the snapshot point, sorted, to look fingerprints up. */
static uint64_t *ref_set;
static size_t ref_set_len;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void build_ref_set(const struct dump *ref, const uint32_t *s)
{
	size_t total = 0;
	uint32_t i;
	int c;

	for (c = 0; c < ref->nstreams; c++)
		total += ref->n[c] - s[c];
	ref_set = malloc(sizeof(*ref_set) * (total ? total : 1));
	if (!ref_set)
		fail("out of memory");
	for (c = 0; c < ref->nstreams; c++)
		for (i = s[c]; i < ref->n[c]; i++)
			ref_set[ref_set_len++] = ref->rec[c][i].fp;
	qsort(ref_set, ref_set_len, sizeof(*ref_set), cmp_u64);
}

static int shared(uint64_t fp)
{
	return bsearch(&fp, ref_set, ref_set_len, sizeof(fp), cmp_u64) != NULL;
}

/*
 * Where a stream stops being REF's: the start of the first run of
 * DIVERGED_RUN blocks that REF never produced (a reseed makes every later
 * block fresh), or n.  A lone fresh block is a block some other consumer
 * took from the crng in REF's run, not a divergence.  *shared_before
 * counts the shared blocks before that point.
 */
#define DIVERGED_RUN 16

static uint32_t divergence(const struct dump *d, int c, uint32_t from, uint64_t *shared_before)
{
	uint32_t i, run = 0;
	uint64_t same = 0;

	for (i = from; i < d->n[c] && run < DIVERGED_RUN; i++) {
		if (shared(d->rec[c][i].fp)) {
			same++;
			run = 0;
		} else {
			run++;
		}
	}
	*shared_before = same;
	return run >= DIVERGED_RUN ? i - run : d->n[c];
}

/* The snapshot point of each CPU; fails if REF and CONTROL never differ. */
static void snapshot_points(const struct input *ref, const struct input *con, uint32_t *s)
{
	int c;

	for (c = 0; c < ref->d.nstreams; c++) {
		for (s[c] = 0; s[c] < ref->d.n[c]; s[c]++)
			if (ref->d.rec[c][s[c]].t_ns != con->d.rec[c][s[c]].t_ns ||
			    ref->d.rec[c][s[c]].fp != con->d.rec[c][s[c]].fp)
				break;
		if (s[c] == ref->d.n[c])
			fail("%s and %s never differ in time on stream %d: are they the same recording?",
			     ref->name, con->name, c);
	}
}

static struct json_object *judge_control(const struct input *con, const uint32_t *s, uint32_t min_window)
{
	const struct dump *d = &con->d;
	struct json_object *o = json_object_new_object();
	uint64_t same = 0, n;
	uint32_t i, at, window = 0, diverged_at = 0;
	int c, ok = 1, changed = 0;

	for (c = 0; c < d->nstreams; c++) {
		window += d->n[c] - s[c];
		for (i = s[c]; i < d->n[c]; i++)
			changed |= d->rec[c][i].changed;
		at = divergence(d, c, s[c], &n);
		same += n;
		if (at < d->n[c] && ok) {
			ok = 0;
			diverged_at = at;
		}
	}
	json_object_object_add(o, "name", json_object_new_string(con->name));
	json_object_object_add(o, "guid_changed", json_object_new_boolean(changed));
	if (con->console_path)
		json_object_object_add(o, "reseed_lines",
				       json_object_new_int(reseed_lines(con->console_path)));
	json_object_object_add(o, "identical_blocks", json_object_new_int64(same));
	json_object_object_add(o, "shifted_blocks", json_object_new_int64(ok ? window - same : 0));
	json_object_object_add(o, "window_blocks", json_object_new_int64(window));
	json_object_object_add(o, "identical", json_object_new_boolean(ok && !changed));
	if (!ok)
		json_object_object_add(o, "diverged_at_seq", json_object_new_int64(diverged_at));
	json_object_object_add(o, "window_ok", json_object_new_boolean(window >= min_window));
	return o;
}

static struct json_object *judge_clone(const struct input *in, const uint32_t *s)
{
	const struct dump *d = &in->d;
	struct json_object *o = json_object_new_object();
	uint64_t exposed = 0, after = 0, n;
	int64_t us = 0, end_ns;
	uint32_t first, j;
	int c, changed = 0, diverged = 0;

	for (c = 0; c < d->nstreams; c++) {
		for (first = s[c]; first < d->n[c] && !d->rec[c][first].changed; first++)
			;
		changed |= first < d->n[c];
		divergence(d, c, s[c], &n);
		after += n;
		j = divergence(d, c, first, &n);
		exposed += n;
		/* Guest time from the first post-fork block to the first fresh run. */
		if (n) {
			end_ns = d->rec[c][j < d->n[c] ? j : j - 1].t_ns;
			if ((end_ns - d->rec[c][first].t_ns) / 1000 > us)
				us = (end_ns - d->rec[c][first].t_ns) / 1000;
		}
		diverged |= j < d->n[c];
	}
	json_object_object_add(o, "name", json_object_new_string(in->name));
	json_object_object_add(o, "guid_changed", json_object_new_boolean(changed));
	if (in->console_path) {
		json_object_object_add(o, "reseed_logged",
				       json_object_new_boolean(reseed_lines(in->console_path) > 0));
		json_object_object_add(o, "reseed_lines",
				       json_object_new_int(reseed_lines(in->console_path)));
	}
	json_object_object_add(o, "identical_after_snapshot", json_object_new_int64(after));
	json_object_object_add(o, "exposure_blocks", json_object_new_int64(exposed));
	json_object_object_add(o, "exposure_bytes", json_object_new_int64(exposed * d->unit));
	json_object_object_add(o, "exposure_us", json_object_new_int64(us));
	json_object_object_add(o, "diverged", json_object_new_boolean(diverged));
	return o;
}

/* Does A's last block on some CPU appear among B's blocks after the snapshot? */
static int ends_shared(const struct dump *a, const struct dump *b, const uint32_t *s)
{
	uint32_t i;
	int c;

	for (c = 0; c < a->nstreams; c++)
		for (i = s[c]; i < b->n[c]; i++)
			if (b->rec[c][i].fp == a->rec[c][a->n[c] - 1].fp)
				return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct json_object *out, *clones, *snap;
	uint32_t min_window = 10000, s[DUMP_MAX_STREAMS];
	struct input *in;
	int opt, nin, k, m, c, pairs = 0, pairs_same = 0;
	char *end;

	while ((opt = getopt(argc, argv, "w:")) != -1) {
		if (opt != 'w')
			fail("usage: rng-exposure [-w MIN_WINDOW] REF=DUMP CONTROL=DUMP CLONE=DUMP[:CONSOLE]...");
		errno = 0;
		min_window = strtoul(optarg, &end, 10);
		if (errno || *end || !min_window)
			fail("-w wants a positive number of blocks, not '%s'", optarg);
	}
	nin = argc - optind;
	if (nin < 2)
		fail("usage: rng-exposure [-w MIN_WINDOW] REF=DUMP CONTROL=DUMP CLONE=DUMP[:CONSOLE]...");
	in = xcalloc(nin, sizeof(*in));
	for (k = 0; k < nin; k++) {
		parse_arg(&in[k], argv[optind + k]);
		same_shape(&in[0].d, &in[k].d, in[0].name, in[k].name);
	}

	snapshot_points(&in[0], &in[1], s);
	build_ref_set(&in[0].d, s);
	snap = json_object_new_array();
	for (c = 0; c < in[0].d.nstreams; c++)
		json_object_array_add(snap, json_object_new_int64(s[c]));
	clones = json_object_new_array();
	for (k = 2; k < nin; k++)
		json_object_array_add(clones, judge_clone(&in[k], s));
	for (k = 2; k < nin; k++)
		for (m = k + 1; m < nin; m++, pairs++)
			pairs_same += ends_shared(&in[k].d, &in[m].d, s);

	out = json_object_new_object();
	json_object_object_add(out, "cpus", json_object_new_int(in[0].d.nstreams));
	json_object_object_add(out, "snapshot_seq", snap);
	json_object_object_add(out, "control", judge_control(&in[1], s, min_window));
	json_object_object_add(out, "clones", clones);
	json_object_object_add(out, "clone_pairs", json_object_new_int(pairs));
	json_object_object_add(out, "clone_pairs_identical_at_end", json_object_new_int(pairs_same));
	puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	json_object_put(out);
	for (k = 0; k < nin; k++)
		dump_free(&in[k].d);
	free(in);
	free(ref_set);
	return 0;
}
