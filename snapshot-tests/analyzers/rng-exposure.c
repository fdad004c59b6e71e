// SPDX-License-Identifier: GPL-2.0
/*
 * rng-exposure: how much pre-fork RNG output clones produced after the fork.
 *
 *   rng-exposure [-w MIN_WINDOW] [-f PERMILLE] REF CONTROL CLONE...
 *
 * Each argument is NAME=DUMP[:CONSOLE]: a recorder dump from the guest agent
 * (a header "H SHAPE UNIT", then "R STREAM SEQ FP T_NS CHANGED" lines, see
 * guest/protocol.h) and optionally that guest's serial console.  REF and
 * CONTROL were restored with the original's GUID, each CLONE with a fresh
 * one.  All dumps must have one shape, one unit, the same streams and as
 * many records on each: anything else is not one snapshot's recording.
 *
 * The snapshot point of each stream is its first record whose timestamp
 * (or fingerprint) differs between REF and CONTROL: everything before it
 * was recorded before the snapshot and is the same memory in every clone.
 * After it, records are compared as sets, never by position: another
 * consumer of the same per-CPU crng takes a block at a different moment in
 * each clone and shifts one stream against another without making it any
 * less predictable.  Nothing stops counting at a run of fresh records:
 * state that comes back later is counted where it comes back.
 *
 *  - The control must stay REF's.  On every stream it needs MIN_WINDOW
 *    records after the snapshot point (-w; by default the shape's, see
 *    shape.h), at most ceil(window * PERMILLE / 1000) of them fresh (REF
 *    never produced them after the snapshot: a consumer that took one
 *    block in the control at another moment than in REF makes exactly
 *    one), and no record with CHANGED set.  PERMILLE (-f) is 1 unless
 *    said: a guest whose kernel draws from the same per-CPU crngs as it
 *    handles network traffic makes more such blocks, and its rows say how
 *    many per thousand they allow.  Otherwise the recording cannot tell a fork
 *    from no fork, and fork-report makes the row an error.
 *  - A clone's exposure, on each stream: every record from its first
 *    CHANGED one to the end that REF produced after the snapshot point,
 *    and the guest time from that first CHANGED record to the last such.
 *  - Its cross-clone exposure: for each other clone, the records from its
 *    first CHANGED one on that the other produced from its own first
 *    CHANGED one on; the most over the others, and with which.  Two clones
 *    that reseeded to one new state share nothing with REF and everything
 *    with each other.
 *  - diverged: more records from its first CHANGED one on are fresh, in
 *    neither REF's post-snapshot records nor another clone's, than the
 *    control would be allowed on a window as long (its fresh_bound).
 *
 * Prints one JSON object.  Exit 0, or 2 with one line on bad input.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "tool.h"
#include "dump.h"
#include "shape.h"

const char *tool_name = "rng-exposure";

#define USAGE "usage: rng-exposure [-w MIN_WINDOW] [-f PERMILLE] REF=DUMP CONTROL=DUMP CLONE=DUMP[:CONSOLE]..."
#define RESEED_LINE "crng reseeded due to virtual machine fork"

struct input {
	char *name, *dump_path, *console_path;
	struct dump d;
	uint32_t first[DUMP_MAX_STREAMS];	/* the first CHANGED record, or n */
};

/* ---- inputs -------------------------------------------------------------- */

static void parse_arg(struct input *in, char *arg)
{
	char *eq = strchr(arg, '='), *colon;
	uint32_t i;
	int s;

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
	for (s = 0; s < in->d.nstreams; s++) {
		for (i = 0; i < in->d.n[s] && !in->d.rec[s][i].changed; i++)
			;
		in->first[s] = i;
	}
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

/* One snapshot's recordings: one shape, one unit, the same streams and lengths. */
static void same_recording(const struct input *a, const struct input *b)
{
	int s;

	if (strcmp(a->d.shape, b->d.shape) || a->d.unit != b->d.unit)
		fail("%s is %s with %u-byte records, %s is %s with %u-byte records",
		     a->name, a->d.shape, a->d.unit, b->name, b->d.shape, b->d.unit);
	if (a->d.nstreams != b->d.nstreams)
		fail("%s has %d streams, %s has %d", a->name, a->d.nstreams, b->name, b->d.nstreams);
	for (s = 0; s < a->d.nstreams; s++)
		if (a->d.n[s] != b->d.n[s])
			fail("%s has %u records on stream %d, %s has %u",
			     a->name, a->d.n[s], s, b->name, b->d.n[s]);
}

static const struct shape *known_shape(const struct input *in)
{
	const struct shape *sh = shape_find(in->d.shape);

	if (!sh)
		fail("%s: unknown shape '%s' (known: %s)", in->name, in->d.shape, SHAPE_NAMES);
	if (sh->unit != in->d.unit)
		fail("%s: %s records stand for %u bytes, not %u", in->name, sh->name, sh->unit, in->d.unit);
	return sh;
}

/* ---- REF's post-snapshot records ----------------------------------------- */

/*
 * Membership, not position: a sorted array of REF's fingerprints from the
 * snapshot point of each stream on, all streams together.
 */
static uint64_t *ref_set;
static size_t ref_len;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void build_ref_set(const struct dump *ref, const uint32_t *snap)
{
	size_t total = 0;
	uint32_t i;
	int s;

	for (s = 0; s < ref->nstreams; s++)
		total += ref->n[s] - snap[s];
	ref_set = xcalloc(total, sizeof(*ref_set));
	for (s = 0; s < ref->nstreams; s++)
		for (i = snap[s]; i < ref->n[s]; i++)
			ref_set[ref_len++] = ref->rec[s][i].fp;
	qsort(ref_set, ref_len, sizeof(*ref_set), cmp_u64);
}

static int in_ref(uint64_t fp)
{
	return bsearch(&fp, ref_set, ref_len, sizeof(fp), cmp_u64) != NULL;
}

/* The snapshot point of each stream; fails if REF and CONTROL never differ. */
static void snapshot_points(const struct input *ref, const struct input *con, uint32_t *snap)
{
	const struct record *a, *b;
	int s;

	for (s = 0; s < ref->d.nstreams; s++) {
		a = ref->d.rec[s];
		b = con->d.rec[s];
		for (snap[s] = 0; snap[s] < ref->d.n[s]; snap[s]++)
			if (a[snap[s]].t_ns != b[snap[s]].t_ns || a[snap[s]].fp != b[snap[s]].fp)
				break;
		if (snap[s] == ref->d.n[s])
			fail("%s and %s never differ in time on stream %d: are they the same recording?",
			     ref->name, con->name, s);
	}
}

/* ---- the control ---------------------------------------------------------- */

/*
 * Fresh records a control may show on a stream of WINDOW records and stay
 * REF's: PERMILLE of the window, rounded up, so that a small window allows
 * as little as a large one in proportion (one shifted block where the
 * window is under a thousand records; a flat floor of 2 let 40% of a
 * 5-record window be fresh).
 */
static uint32_t fresh_permille = 1;

static uint32_t fresh_bound(uint64_t window)
{
	return (uint32_t)((window * fresh_permille + 999) / 1000);
}

static struct json_object *control_stream(const struct dump *d, int s, uint32_t snap,
					  uint32_t min_window, int64_t *over)
{
	struct json_object *o = json_object_new_object();
	uint32_t i, fresh = 0, window = d->n[s] - snap;

	for (i = snap; i < d->n[s]; i++)
		fresh += !in_ref(d->rec[s][i].fp);
	*over = (int64_t)fresh - fresh_bound(window);
	json_object_object_add(o, "stream", json_object_new_int(s));
	json_object_object_add(o, "window_records", json_object_new_int64(window));
	json_object_object_add(o, "window_ok", json_object_new_boolean(window >= min_window));
	json_object_object_add(o, "fresh_records", json_object_new_int64(fresh));
	json_object_object_add(o, "fresh_bound", json_object_new_int64(fresh_bound(window)));
	return o;
}

static int any_changed(const struct input *in)
{
	int s;

	for (s = 0; s < in->d.nstreams; s++)
		if (in->first[s] < in->d.n[s])
			return 1;
	return 0;
}

/*
 * Per stream, and in the summary the stream furthest over (or least under)
 * its bound: identical means every stream within its bound and no CHANGED
 * record anywhere.
 */
static struct json_object *judge_control(const struct input *con, const uint32_t *snap, uint32_t min_window)
{
	struct json_object *o = json_object_new_object(), *streams = json_object_new_array(), *st, *worst = NULL;
	int64_t over, worst_over = INT64_MIN;
	int s, window_ok = 1;

	for (s = 0; s < con->d.nstreams; s++) {
		st = control_stream(&con->d, s, snap[s], min_window, &over);
		json_object_array_add(streams, st);
		window_ok &= json_object_get_boolean(json_object_object_get(st, "window_ok"));
		if (over > worst_over) {
			worst_over = over;
			worst = st;
		}
	}
	json_object_object_add(o, "name", json_object_new_string(con->name));
	json_object_object_add(o, "guid_changed", json_object_new_boolean(any_changed(con)));
	if (con->console_path)
		json_object_object_add(o, "reseed_lines", json_object_new_int(reseed_lines(con->console_path)));
	json_object_object_add(o, "min_window", json_object_new_int64(min_window));
	json_object_object_add(o, "window_ok", json_object_new_boolean(window_ok));
	json_object_object_add(o, "worst_stream", json_object_get(json_object_object_get(worst, "stream")));
	json_object_object_add(o, "fresh_records", json_object_get(json_object_object_get(worst, "fresh_records")));
	json_object_object_add(o, "fresh_bound", json_object_get(json_object_object_get(worst, "fresh_bound")));
	json_object_object_add(o, "identical", json_object_new_boolean(worst_over <= 0 && !any_changed(con)));
	json_object_object_add(o, "streams", streams);
	return o;
}

/* ---- the clones' post-change records ---------------------------------------- */

/*
 * Every fingerprint each clone produced from its first CHANGED record on,
 * with the clone, sorted and without repeats: what a record has in common
 * with the other clones is one lookup, however many clones there are.
 */
struct owner {
	uint64_t fp;
	int clone;
};

static struct owner *owners;
static size_t nowners;

static int cmp_owner(const void *pa, const void *pb)
{
	const struct owner *a = pa, *b = pb;

	if (a->fp != b->fp)
		return a->fp < b->fp ? -1 : 1;
	return (a->clone > b->clone) - (a->clone < b->clone);
}

static void build_owners(const struct input *cl, int nc)
{
	size_t total = 0, i, n = 0;
	uint32_t r;
	int k, s;

	for (k = 0; k < nc; k++)
		for (s = 0; s < cl[k].d.nstreams; s++)
			total += cl[k].d.n[s] - cl[k].first[s];
	owners = xcalloc(total, sizeof(*owners));
	for (k = 0; k < nc; k++)
		for (s = 0; s < cl[k].d.nstreams; s++)
			for (r = cl[k].first[s]; r < cl[k].d.n[s]; r++)
				owners[n++] = (struct owner){ cl[k].d.rec[s][r].fp, k };
	if (n)
		qsort(owners, n, sizeof(*owners), cmp_owner);
	for (i = 0; i < n; i++)
		if (!nowners || cmp_owner(&owners[nowners - 1], &owners[i]))
			owners[nowners++] = owners[i];
}

/* Count FP for each clone but K that produced it after its fork; how many did. */
static int other_owners(uint64_t fp, int k, uint64_t *with)
{
	size_t lo = 0, hi = nowners, mid;
	int others = 0;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (owners[mid].fp < fp)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < nowners && owners[lo].fp == fp; lo++) {
		if (owners[lo].clone == k)
			continue;
		with[owners[lo].clone]++;
		others++;
	}
	return others;
}

/* ---- a clone ---------------------------------------------------------------- */

struct tally {
	uint64_t shared, exposed, fresh, window;
	int64_t us;
};

/*
 * A picture of stream S after the clone's GUID changed: TIMELINE_BINS bins
 * of equal guest time, each with the records shared (with the reference
 * or another clone's post-fork output) and the fresh ones.
 */
#define TIMELINE_BINS 60

struct timeline {
	int64_t bin_ns;
	uint32_t shared[TIMELINE_BINS], fresh[TIMELINE_BINS];
};

/* Guest ns from A to B, 0 if B is earlier or the difference overflows (a bad dump). */
static int64_t span_ns(int64_t a, int64_t b)
{
	int64_t d;

	return __builtin_sub_overflow(b, a, &d) || d < 0 ? 0 : d;
}

static struct json_object *timeline_json(const struct timeline *tl)
{
	struct json_object *o = json_object_new_object();
	struct json_object *sh = json_object_new_array(), *fr = json_object_new_array();
	int b;

	for (b = 0; b < TIMELINE_BINS; b++) {
		json_object_array_add(sh, json_object_new_int64(tl->shared[b]));
		json_object_array_add(fr, json_object_new_int64(tl->fresh[b]));
	}
	json_object_object_add(o, "bin_us", json_object_new_double(tl->bin_ns / 1000.0));
	json_object_object_add(o, "shared", sh);
	json_object_object_add(o, "fresh", fr);
	return o;
}

/* Stream S of clone K from its snapshot point on; adds to *t and to with[]. */
static struct json_object *clone_stream(const struct input *in, int k, int s, uint32_t snap,
					uint64_t *with, struct tally *t)
{
	const struct record *r = in->d.rec[s];
	struct json_object *o = json_object_new_object();
	uint32_t i, first = in->first[s], last = first;
	uint64_t exposed = 0, fresh = 0;
	struct timeline tl = { 0 };
	int64_t us = 0, bin;
	int ref, others;

	if (first < in->d.n[s])
		tl.bin_ns = span_ns(r[first].t_ns, r[in->d.n[s] - 1].t_ns) / TIMELINE_BINS + 1;
	for (i = snap; i < in->d.n[s]; i++)
		t->shared += in_ref(r[i].fp);
	for (i = first; i < in->d.n[s]; i++) {
		ref = in_ref(r[i].fp);
		if (ref) {
			exposed++;
			last = i;
		}
		others = other_owners(r[i].fp, k, with);
		if (!others && !ref)
			fresh++;
		bin = span_ns(r[first].t_ns, r[i].t_ns) / tl.bin_ns;
		if (bin < TIMELINE_BINS) {
			if (ref || others)
				tl.shared[bin]++;
			else
				tl.fresh[bin]++;
		}
	}
	if (exposed)
		us = span_ns(r[first].t_ns, r[last].t_ns) / 1000;
	if (us > t->us)
		t->us = us;
	t->exposed += exposed;
	t->fresh += fresh;
	t->window += in->d.n[s] > first ? in->d.n[s] - first : 0;
	json_object_object_add(o, "stream", json_object_new_int(s));
	json_object_object_add(o, "first_changed_seq",
			       json_object_new_int64(first < in->d.n[s] ? (int64_t)first : -1));
	json_object_object_add(o, "exposure_records", json_object_new_int64(exposed));
	json_object_object_add(o, "exposure_us", json_object_new_int64(us));
	json_object_object_add(o, "fresh_records", json_object_new_int64(fresh));
	json_object_object_add(o, "timeline", timeline_json(&tl));
	return o;
}

static void add_records(struct json_object *o, const char *what, uint64_t n, uint32_t unit)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_records", what);
	json_object_object_add(o, key, json_object_new_int64((int64_t)n));
	snprintf(key, sizeof(key), "%s_bytes", what);
	json_object_object_add(o, key, json_object_new_int64((int64_t)(n * unit)));
}

static struct json_object *judge_clone(const struct input *cl, int nc, int k, const uint32_t *snap)
{
	const struct input *in = &cl[k];
	struct json_object *o = json_object_new_object(), *streams = json_object_new_array();
	uint64_t *with = xcalloc(nc, sizeof(*with));
	struct tally t = { 0 };
	int s, m, most = -1;

	for (s = 0; s < in->d.nstreams; s++)
		json_object_array_add(streams, clone_stream(in, k, s, snap[s], with, &t));
	for (m = 0; m < nc; m++)
		if (m != k && with[m] && (most < 0 || with[m] > with[most]))
			most = m;
	json_object_object_add(o, "name", json_object_new_string(in->name));
	json_object_object_add(o, "guid_changed", json_object_new_boolean(any_changed(in)));
	if (in->console_path) {
		json_object_object_add(o, "reseed_logged",
				       json_object_new_boolean(reseed_lines(in->console_path) > 0));
		json_object_object_add(o, "reseed_lines",
				       json_object_new_int(reseed_lines(in->console_path)));
	}
	json_object_object_add(o, "shared_after_snapshot", json_object_new_int64(t.shared));
	add_records(o, "exposure", t.exposed, in->d.unit);
	json_object_object_add(o, "exposure_us", json_object_new_int64(t.us));
	add_records(o, "cross_clone", most < 0 ? 0 : with[most], in->d.unit);
	json_object_object_add(o, "cross_clone_with",
			       most < 0 ? NULL : json_object_new_string(cl[most].name));
	json_object_object_add(o, "fresh_records", json_object_new_int64(t.fresh));
	/* As the control may be, by as many: fresh beyond its own window's bound. */
	json_object_object_add(o, "fresh_bound", json_object_new_int64(fresh_bound(t.window)));
	json_object_object_add(o, "diverged", json_object_new_boolean(t.fresh > fresh_bound(t.window)));
	json_object_object_add(o, "streams", streams);
	free(with);
	return o;
}

/* ---- main ------------------------------------------------------------------- */

/* OPT's whole-number argument ARG, from 1 to MAX. */
static uint32_t parse_count(int opt, const char *arg, unsigned long max, const char *what)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-' || !v || v > max)
		fail("-%c wants %s from 1 to %lu, not '%s'", opt, what, max, arg);
	return (uint32_t)v;
}

static struct json_object *reference_json(const struct input *ref)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(ref->name));
	json_object_object_add(o, "guid_changed", json_object_new_boolean(any_changed(ref)));
	return o;
}

int main(int argc, char **argv)
{
	struct json_object *out, *clones, *snaps;
	uint32_t min_window = 0, snap[DUMP_MAX_STREAMS];
	const struct shape *sh;
	struct input *in;
	int opt, nin, k, s;

	while ((opt = getopt(argc, argv, "w:f:")) != -1) {
		if (opt == 'w')
			min_window = parse_count(opt, optarg, DUMP_MAX_RECORDS, "a number of records per stream");
		else if (opt == 'f')
			fresh_permille = parse_count(opt, optarg, 1000, "fresh control records per thousand");
		else
			fail(USAGE);
	}
	nin = argc - optind;
	if (nin < 2)
		fail(USAGE);
	in = xcalloc(nin, sizeof(*in));
	for (k = 0; k < nin; k++) {
		parse_arg(&in[k], argv[optind + k]);
		same_recording(&in[0], &in[k]);
	}
	sh = known_shape(&in[0]);
	if (!min_window)
		min_window = sh->min_window;

	snapshot_points(&in[0], &in[1], snap);
	build_ref_set(&in[0].d, snap);
	build_owners(in + 2, nin - 2);
	snaps = json_object_new_array();
	for (s = 0; s < in[0].d.nstreams; s++)
		json_object_array_add(snaps, json_object_new_int64(snap[s]));
	clones = json_object_new_array();
	for (k = 2; k < nin; k++)
		json_object_array_add(clones, judge_clone(in + 2, nin - 2, k - 2, snap));

	out = json_object_new_object();
	json_object_object_add(out, "shape", json_object_new_string(in[0].d.shape));
	json_object_object_add(out, "unit", json_object_new_int64(in[0].d.unit));
	json_object_object_add(out, "streams", json_object_new_int(in[0].d.nstreams));
	json_object_object_add(out, "snapshot_seq", snaps);
	json_object_object_add(out, "reference", reference_json(&in[0]));
	json_object_object_add(out, "control", judge_control(&in[1], snap, min_window));
	json_object_object_add(out, "clones", clones);
	puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	if (fflush(stdout))
		fail("cannot write the result: %s", strerror(errno));
	json_object_put(out);
	for (k = 0; k < nin; k++)
		dump_free(&in[k].d);
	free(in);
	free(ref_set);
	free(owners);
	return 0;
}
