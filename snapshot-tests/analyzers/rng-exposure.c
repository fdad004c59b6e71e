// SPDX-License-Identifier: GPL-2.0
/*
 * rng-exposure: how much pre-fork RNG output clones produced after the fork.
 *
 *   rng-exposure [-w MIN_WINDOW] REF CONTROL CLONE...
 *
 * Each argument is NAME=DUMP[:CONSOLE]: a recorder dump from the guest agent
 * ("R CPU SEQ FP T_NS CHANGED" lines, see guest/recorder.c) and optionally
 * the clone's serial console.  REF and CONTROL are two clones restored with
 * the original's GUID; the others are compared with REF block by block.
 *
 * The snapshot point on each CPU is the first block whose timestamp differs
 * between REF and CONTROL: everything before it was recorded before the
 * snapshot and is the same memory in every clone.  From there on:
 *  - CONTROL must produce exactly REF's blocks for at least MIN_WINDOW
 *    blocks in all, or the recording cannot tell a fork from no fork and
 *    the run is an error (a blind detector never passes);
 *  - a clone's exposure is the run of blocks, starting at the first block
 *    for which the clone already saw a new GUID, that equal REF's.
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
#include "dump.h"

#define RESEED_LINE "crng reseeded due to virtual machine fork"

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rng-exposure: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

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

/* Did the console log the vmgenid reseed?  -1 when no console was given. */
static int reseed_logged(const char *path)
{
	char line[1024];
	int found = 0;
	FILE *f;

	if (!path)
		return -1;
	f = fopen(path, "r");
	if (!f)
		fail("cannot read %s: %s", path, strerror(errno));
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, RESEED_LINE) != NULL;
	fclose(f);
	return found;
}

static void same_shape(const struct dump *a, const struct dump *b, const char *an, const char *bn)
{
	int c;

	if (a->ncpus != b->ncpus)
		fail("%s has %d CPUs, %s has %d", an, a->ncpus, bn, b->ncpus);
	for (c = 0; c < a->ncpus; c++)
		if (a->n[c] != b->n[c])
			fail("%s has %u blocks on CPU %d, %s has %u", an, a->n[c], c, bn, b->n[c]);
}

int main(int argc, char **argv)
{
	struct json_object *out, *clones, *obj, *ctrl, *snap;
	uint32_t min_window = 10000, s[DUMP_MAX_CPUS], i, window = 0, same = 0, diverge_at = 0;
	struct input *in;
	int opt, nin, k, c, ctrl_ok = 1;
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
	in = calloc(nin, sizeof(*in));
	if (!in)
		fail("out of memory");
	for (k = 0; k < nin; k++) {
		parse_arg(&in[k], argv[optind + k]);
		same_shape(&in[0].d, &in[k].d, in[0].name, in[k].name);
	}

	/* The snapshot point and the negative control. */
	const struct dump *ref = &in[0].d, *con = &in[1].d;

	snap = json_object_new_array();
	for (c = 0; c < ref->ncpus; c++) {
		for (s[c] = 0; s[c] < ref->n[c]; s[c]++)
			if (ref->b[c][s[c]].t_ns != con->b[c][s[c]].t_ns ||
			    ref->b[c][s[c]].fp != con->b[c][s[c]].fp)
				break;
		if (s[c] == ref->n[c])
			fail("%s and %s never differ in time on CPU %d: are they the same recording?",
			     in[0].name, in[1].name, c);
		json_object_array_add(snap, json_object_new_int64(s[c]));
		window += ref->n[c] - s[c];
		for (i = s[c]; i < ref->n[c]; i++, same++) {
			if (ref->b[c][i].fp != con->b[c][i].fp) {
				if (ctrl_ok)
					diverge_at = i;
				ctrl_ok = 0;
				break;
			}
		}
	}
	ctrl = json_object_new_object();
	json_object_object_add(ctrl, "name", json_object_new_string(in[1].name));
	json_object_object_add(ctrl, "identical_blocks", json_object_new_int64(same));
	json_object_object_add(ctrl, "window_blocks", json_object_new_int64(window));
	json_object_object_add(ctrl, "identical", json_object_new_boolean(ctrl_ok));
	if (!ctrl_ok)
		json_object_object_add(ctrl, "diverged_at_seq", json_object_new_int64(diverge_at));
	json_object_object_add(ctrl, "window_ok", json_object_new_boolean(window >= min_window));

	/* Each clone against the reference. */
	clones = json_object_new_array();
	for (k = 2; k < nin; k++) {
		const struct dump *d = &in[k].d;
		uint64_t exposed = 0, after = 0;
		int64_t us = 0;
		int changed = 0, diverged = 0;

		for (c = 0; c < d->ncpus; c++) {
			uint32_t first = s[c], j;

			while (first < d->n[c] && !d->b[c][first].changed)
				first++;
			if (first < d->n[c])
				changed = 1;
			for (j = s[c]; j < d->n[c] && d->b[c][j].fp == ref->b[c][j].fp; j++)
				after++;
			for (j = first; j < d->n[c] && d->b[c][j].fp == ref->b[c][j].fp; j++)
				exposed++;
			/* Guest time from the first post-fork block to the first new one. */
			if (j > first) {
				int64_t end_ns = d->b[c][j < d->n[c] ? j : j - 1].t_ns;

				if ((end_ns - d->b[c][first].t_ns) / 1000 > us)
					us = (end_ns - d->b[c][first].t_ns) / 1000;
			}
			if (d->n[c] && d->b[c][d->n[c] - 1].fp != ref->b[c][d->n[c] - 1].fp)
				diverged = 1;
		}
		obj = json_object_new_object();
		json_object_object_add(obj, "name", json_object_new_string(in[k].name));
		json_object_object_add(obj, "guid_changed", json_object_new_boolean(changed));
		if (in[k].console_path)
			json_object_object_add(obj, "reseed_logged",
					       json_object_new_boolean(reseed_logged(in[k].console_path)));
		json_object_object_add(obj, "identical_after_snapshot", json_object_new_int64(after));
		json_object_object_add(obj, "exposure_blocks", json_object_new_int64(exposed));
		json_object_object_add(obj, "exposure_bytes", json_object_new_int64(exposed * 16));
		json_object_object_add(obj, "exposure_us", json_object_new_int64(us));
		json_object_object_add(obj, "diverged", json_object_new_boolean(diverged));
		json_object_array_add(clones, obj);
	}

	/* Do the clones (not REF, not CONTROL) end up different from each other? */
	int pairs = 0, pairs_same = 0;

	for (k = 2; k < nin; k++)
		for (int m = k + 1; m < nin; m++, pairs++)
			for (c = 0; c < ref->ncpus; c++)
				if (in[k].d.b[c][ref->n[c] - 1].fp == in[m].d.b[c][ref->n[c] - 1].fp) {
					pairs_same++;
					break;
				}

	out = json_object_new_object();
	json_object_object_add(out, "cpus", json_object_new_int(ref->ncpus));
	json_object_object_add(out, "snapshot_seq", snap);
	json_object_object_add(out, "control", ctrl);
	json_object_object_add(out, "clones", clones);
	json_object_object_add(out, "clone_pairs", json_object_new_int(pairs));
	json_object_object_add(out, "clone_pairs_identical_at_end", json_object_new_int(pairs_same));
	puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	json_object_put(out);
	for (k = 0; k < nin; k++)
		dump_free(&in[k].d);
	free(in);
	return 0;
}
