// SPDX-License-Identifier: GPL-2.0
/*
 * fork-report: the one place that turns measured rows into verdicts.
 *
 *   fork-report [-f md|json|verdicts|summary|html] ROW.json...
 *
 * A row is what snapshot-tests/lib/rows.sh wrote for one measurement: its
 * keys ("kind" and, for "rng", "kernel", "method", "vcpus"; for "wg",
 * "kernel", "traffic"), and either "error" or "result":
 *  - rng: rng-exposure's output for one snapshot's reference, control and
 *    fresh clones;
 *  - wg: {"fresh", "control"}, wg-detect's reports of the fresh-GUID clones
 *    and of the original-GUID controls, each clone with "delivered", the
 *    datagrams that reached the peer;
 *  - wg-behind, wg-live: {"clones"}, wg-detect's reports of clones resumed
 *    beside a peer that took later handshakes, and "verdict", the line of
 *    analyzers/wg-clock.jq, which judges them (working, down or error);
 *  - wg-both: {"clones", "runs", "switches"}, clones alive side by side
 *    with one key, wg-detect's reports and the runs of one sender the
 *    peer received, and "verdict", the line of analyzers/wg-both.jq
 *    (exposed, all heard, some heard, none heard or error).
 *
 * RNG verdicts:
 *   error               the row failed, its reference saw a new GUID, its
 *                       control is not identical within its bound, or a
 *                       stream recorded too little after the snapshot (a
 *                       blind detector never passes)
 *   no fork signal      no clone saw a new GUID
 *   partial fork signal some clones saw a new GUID, not all (never a pass)
 *   fork-safe           every clone saw a new GUID, and after it shared with
 *                       the reference and with each other clone at most the
 *                       shape's allowance (shape.h): 0 records for the
 *                       per-call shapes, the page in flight for long reads
 *   exposure window     every clone saw a new GUID, some shared more
 * WireGuard verdicts:
 *   error            the row failed, or the controls reused no nonce (blind)
 *   exposed          a fresh clone sent under a pre-fork key or reused a nonce
 *   (error)          else, a packet under a session wg-detect -o could not
 *                    attribute to either side of the fork
 *   not rekeyed      nothing exposed, but a fresh clone never completed a
 *                    new handshake
 *   safe             nothing exposed and every fresh clone rekeyed
 *
 * -f md (the default) prints Markdown tables, RNG rows grouped by kernel,
 * then the WireGuard rows; -f json the rows with "verdict" and "why"
 * added, as one array; -f verdicts one JSON object per line and row, the
 * verdict and the figures tests assert on, by name; -f summary one line
 * per kernel and kind of row, the verdict an operator reads first; -f html
 * a self-contained page with those lines and a picture of each row.  Exit 0, or 2 with one
 * line on bad usage or a row that is not a JSON object.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "tool.h"
#include "shape.h"

const char *tool_name = "fork-report";

/* ---- reading rows -------------------------------------------------------- */

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static long long num(struct json_object *o, const char *key)
{
	return json_object_get_int64(get(o, key));
}

static int flag(struct json_object *o, const char *key)
{
	return json_object_get_boolean(get(o, key));
}

static struct json_object *array(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	return v && json_object_is_type(v, json_type_array) ? v : NULL;
}

/* ---- spreads over clones ------------------------------------------------- */

/* min/median/max over n values (sorted here), and how many. */
struct spread {
	long long min, med, max;
	size_t n;
};

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

static struct spread spread_of(long long *v, size_t n)
{
	struct spread s = { -1, -1, -1, n };

	if (n) {
		qsort(v, n, sizeof(*v), cmp_ll);
		s.min = v[0];
		s.med = v[(n - 1) / 2];
		s.max = v[n - 1];
	}
	return s;
}

/*
 * The spread of KEY / DIV over the clones of ARR; with only_if, over the
 * clones where that flag is true; with nonneg, over the values >= 0 (the
 * others mean "never").
 */
static struct spread clone_spread(struct json_object *arr, const char *key, long long div,
				  const char *only_if, int nonneg)
{
	size_t i, n = 0, len = arr ? json_object_array_length(arr) : 0;
	long long *v = xcalloc(len, sizeof(*v)), x;
	struct spread s;

	for (i = 0; i < len; i++) {
		struct json_object *c = json_object_array_get_idx(arr, i);

		if (only_if && !flag(c, only_if))
			continue;
		x = num(c, key);
		if (nonneg && x < 0)
			continue;
		v[n++] = x / div;
	}
	s = spread_of(v, n);
	free(v);
	return s;
}

static const char *fmt_spread(char *buf, size_t len, struct spread s, int count)
{
	if (!s.n)
		snprintf(buf, len, count ? "never" : "-");
	else if (count)
		snprintf(buf, len, "%lld/%lld/%lld (%zu)", s.min, s.med, s.max, s.n);
	else
		snprintf(buf, len, "%lld/%lld/%lld", s.min, s.med, s.max);
	return buf;
}

static long long clone_sum(struct json_object *arr, const char *key)
{
	size_t i, len = arr ? json_object_array_length(arr) : 0;
	long long s = 0;

	for (i = 0; i < len; i++)
		s += num(json_object_array_get_idx(arr, i), key);
	return s;
}

static int clone_count(struct json_object *arr, const char *key, long long above)
{
	size_t i, len = arr ? json_object_array_length(arr) : 0;
	int n = 0;

	for (i = 0; i < len; i++)
		n += num(json_object_array_get_idx(arr, i), key) > above;
	return n;
}

/* ---- verdicts ------------------------------------------------------------ */

struct row {
	struct json_object *json, *result, *clones, *control;
	const char *kind, *kernel, *verdict;
	char why[256];
	/* rng */
	const char *shape;
	int changed, diverged, reseeded, reseeded_once, control_reseeds;
	long long shared, exposure_max, cross_max, allowance, control_fresh, control_bound;
	/* wg */
	long long prefork, reuse, control_reuse, unattributed;
	int rekeyed, delivering;
};

static int __attribute__((format(printf, 2, 3))) error_row(struct row *r, const char *fmt, ...)
{
	va_list ap;

	r->verdict = "error";
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return 1;
}

/* What every row has; 1 when it is already an error row. */
static int judge_common(struct row *r)
{
	r->kind = str(r->json, "kind");
	r->kernel = str(r->json, "kernel");
	if (!r->kind || !r->kernel) {
		r->kind = r->kind ? r->kind : "?";
		r->kernel = r->kernel ? r->kernel : "?";
		return error_row(r, "row lacks its kind or kernel");
	}
	if (str(r->json, "error"))
		return error_row(r, "%s", str(r->json, "error"));
	r->result = get(r->json, "result");
	if (!r->result)
		return error_row(r, "row has neither a result nor an error");
	return 0;
}

static const char *key_str(const struct row *r, const char *key)
{
	const char *s = str(r->json, key);

	return s ? s : "?";
}

/* The analyzer's shape, or for a row that has no result the row's key. */
static const char *row_shape(const struct row *r)
{
	const char *s = r->shape ? r->shape : str(r->json, "shape");

	return s ? s : "";
}

/*
 * A recording vouches for itself only through its reference and control,
 * both restored with the original's GUID: neither may see a new one, the
 * control may produce no more fresh records on any stream than its bound
 * (one per thousand, at least 2: rng-exposure), and every stream must have
 * recorded its minimum window after the snapshot.  Else: 1, the row an error.
 */
static int rng_blind(struct row *r)
{
	struct json_object *streams = array(r->control, "streams"), *st;
	size_t i;

	if (flag(get(r->result, "reference"), "guid_changed"))
		return error_row(r, "the reference saw a new GUID: it cannot stand for the snapshot");
	if (flag(r->control, "guid_changed"))
		return error_row(r, "the control saw a new GUID: the recording cannot tell a fork (blind detector)");
	/*
	 * In CRNG_EMPTY every read extracts from the input pool with the cycle
	 * counter, so a control diverges as much as a clone: nothing is shared,
	 * and nothing can be shown to be.  Said so, neither pass nor error.
	 */
	if (!flag(r->control, "identical") && !strcmp(key_str(r, "crng"), "empty")) {
		r->verdict = "no shared state";
		snprintf(r->why, sizeof(r->why),
			 "the control diverged too (%lld fresh records): in CRNG_EMPTY every read draws on the pool",
			 r->control_fresh);
		return 1;
	}
	if (!flag(r->control, "identical"))
		return error_row(r, "control: %lld fresh records on stream %lld, more than its bound of %lld: "
				 "the recording cannot tell a fork (blind detector)",
				 r->control_fresh, num(r->control, "worst_stream"), r->control_bound);
	if (!streams || !json_object_array_length(streams))
		return error_row(r, "the control has no streams");
	for (i = 0; i < json_object_array_length(streams); i++) {
		st = json_object_array_get_idx(streams, i);
		if (!flag(st, "window_ok"))
			return error_row(r, "stream %lld: only %lld records after the snapshot, %lld wanted",
					 num(st, "stream"), num(st, "window_records"), num(r->control, "min_window"));
	}
	return 0;
}

static void judge_rng(struct row *r)
{
	const struct shape *sh;
	int i, n;

	r->clones = array(r->result, "clones");
	r->control = get(r->result, "control");
	if (!r->clones || !r->control) {
		error_row(r, "row has no analyzer result");
		return;
	}
	r->shape = str(r->result, "shape");
	sh = shape_find(r->shape);
	if (!sh) {
		error_row(r, "no allowance for shape '%s' (known: %s)", r->shape ? r->shape : "", SHAPE_NAMES);
		return;
	}
	r->allowance = sh->allowance;
	n = (int)json_object_array_length(r->clones);
	for (i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(r->clones, i);

		r->changed += flag(c, "guid_changed");
		r->diverged += flag(c, "diverged");
		r->reseeded += flag(c, "reseed_logged");
		r->reseeded_once += num(c, "reseed_lines") == 1;
		if (!i || num(c, "shared_after_snapshot") < r->shared)
			r->shared = num(c, "shared_after_snapshot");
	}
	r->control_reseeds = (int)num(r->control, "reseed_lines");
	r->control_fresh = num(r->control, "fresh_records");
	r->control_bound = num(r->control, "fresh_bound");
	r->exposure_max = clone_spread(r->clones, "exposure_records", 1, "guid_changed", 0).max;
	r->cross_max = clone_spread(r->clones, "cross_clone_records", 1, "guid_changed", 0).max;
	if (rng_blind(r))
		return;
	if (!r->changed) {
		r->verdict = "no fork signal";
	} else if (r->changed < n) {
		r->verdict = "partial fork signal";
		snprintf(r->why, sizeof(r->why), "only %d of %d clones saw a new GUID", r->changed, n);
	} else if (r->exposure_max <= r->allowance && r->cross_max <= r->allowance) {
		r->verdict = "fork-safe";
	} else {
		r->verdict = "exposure window";
		snprintf(r->why, sizeof(r->why),
			 "up to %lld records shared with the reference, %lld with another clone (%lld allowed)",
			 r->exposure_max, r->cross_max, r->allowance);
	}
}

static void judge_wg(struct row *r)
{
	struct json_object *fresh = get(r->result, "fresh");

	r->clones = array(fresh, "clones");
	r->control = get(r->result, "control");
	if (!r->clones || !array(r->control, "clones")) {
		error_row(r, "row has no detector result");
		return;
	}
	r->prefork = clone_sum(r->clones, "prefork_packets");
	r->reuse = num(fresh, "nonce_reuse_pairs");
	r->unattributed = clone_sum(r->clones, "unattributed_packets");
	r->control_reuse = num(r->control, "nonce_reuse_pairs");
	r->rekeyed = clone_count(r->clones, "handshake_us", -1);
	r->delivering = clone_count(r->clones, "delivered", 0);
	if (r->control_reuse == 0)
		error_row(r, "no nonce reuse between controls that share everything: the detector is blind");
	else if (r->prefork || r->reuse)
		r->verdict = "exposed";
	else if (r->unattributed)
		error_row(r, "%lld packets under sessions neither pre-fork nor post-fork (wg-detect -o): "
			  "the row cannot say safe", r->unattributed);
	else if (r->rekeyed < (int)json_object_array_length(r->clones))
		r->verdict = "not rekeyed";
	else
		r->verdict = "safe";
}

/*
 * Clones resumed beside a peer that took later handshakes than they can
 * send (lib/wg_fork.sh's wg_clock_row: kinds wg-behind and wg-live), and
 * clones alive side by side with one key (kind wg-both).  A jq program
 * judges each (analyzers/wg-clock.jq, analyzers/wg-both.jq); its line,
 * which the driver puts in the row as "verdict", is taken as it is.
 */
static int wg_clock_kind(const char *kind)
{
	return !strcmp(kind, "wg-behind") || !strcmp(kind, "wg-live");
}

static int wg_both_kind(const char *kind)
{
	return !strcmp(kind, "wg-both");
}

static void judge_wg_line(struct row *r, const char *const *verdicts, size_t n, const char *jq)
{
	const char *line = str(r->json, "verdict");
	size_t i, len;

	r->clones = array(r->result, "clones");
	for (i = 0; line && i < n; i++) {
		len = strlen(verdicts[i]);
		if (!strncmp(line, verdicts[i], len) && !strncmp(line + len, ": ", 2)) {
			r->verdict = verdicts[i];
			snprintf(r->why, sizeof(r->why), "%s", line + len + 2);
			return;
		}
	}
	error_row(r, "row not judged: analyzers/%s gives its verdict, not '%s'", jq, line ? line : "");
}

static void judge_wg_clock(struct row *r)
{
	static const char *const verdicts[] = { "working", "down", "error" };

	judge_wg_line(r, verdicts, sizeof(verdicts) / sizeof(verdicts[0]), "wg-clock.jq");
}

static void judge_wg_both(struct row *r)
{
	static const char *const verdicts[] = { "exposed", "all heard", "some heard", "none heard", "error" };

	judge_wg_line(r, verdicts, sizeof(verdicts) / sizeof(verdicts[0]), "wg-both.jq");
}

static void judge(struct row *r)
{
	if (judge_common(r))
		return;
	if (!strcmp(r->kind, "rng"))
		judge_rng(r);
	else if (!strcmp(r->kind, "wg"))
		judge_wg(r);
	else if (wg_clock_kind(r->kind))
		judge_wg_clock(r);
	else if (wg_both_kind(r->kind))
		judge_wg_both(r);
	else
		error_row(r, "unknown kind of row");
}

/* ---- kernels ------------------------------------------------------------- */

#define MAX_KERNELS 64

/* The kernels of the rows of KIND (NULL: of any kind), in order of first appearance. */
static int kernels_of(const struct row *rows, int n, const char *kind, const char *kernels[MAX_KERNELS])
{
	int nk = 0, i, k;

	for (i = 0; i < n; i++) {
		if (kind && strcmp(rows[i].kind, kind))
			continue;
		for (k = 0; k < nk && strcmp(kernels[k], rows[i].kernel); k++)
			;
		if (k < nk)
			continue;
		if (nk == MAX_KERNELS)
			fail("more than %d kernels in one report", MAX_KERNELS);
		kernels[nk++] = rows[i].kernel;
	}
	return nk;
}

/*
 * How a row's clones ran, beyond its cell's method, vCPUs and shape:
 * "together" clones resumed at once (make crowd), or "load" (the VM busy
 * on every vCPU with traffic, fork_load).  "" for an ordinary row.
 */
static const char *row_conditions(const struct row *r, char *buf, size_t len)
{
	if (num(r->json, "together") > 0)
		snprintf(buf, len, ", %lld clones at once", num(r->json, "together"));
	else if (str(r->json, "load"))
		snprintf(buf, len, ", under load (every vCPU, %s traffic)", str(r->json, "load"));
	else if (str(r->json, "append"))
		snprintf(buf, len, ", booted with %s", str(r->json, "append"));
	else
		buf[0] = '\0';
	return buf;
}

/* ---- Markdown ------------------------------------------------------------ */


static void md_rng_row(const struct row *r)
{
	char records[64], bytes[64], us[64], cond[96];
	int n = r->clones ? (int)json_object_array_length(r->clones) : 0;

	printf("| %s | %lld | %s%s%s%s%s | ", key_str(r, "method"), num(r->json, "vcpus"),
	       row_shape(r), str(r->json, "crng") ? " (crng " : "",
	       str(r->json, "crng") ? str(r->json, "crng") : "", str(r->json, "crng") ? ")" : "",
	       row_conditions(r, cond, sizeof(cond)));
	if (!strcmp(r->verdict, "error") && !r->clones) {
		printf(" |  |  |  |  |  |  |  | error: %s |\n", r->why);
		return;
	}
	fmt_spread(records, sizeof(records),
		   clone_spread(r->clones, "exposure_records", 1, "guid_changed", 0), 0);
	fmt_spread(bytes, sizeof(bytes), clone_spread(r->clones, "exposure_bytes", 1, "guid_changed", 0), 0);
	fmt_spread(us, sizeof(us), clone_spread(r->clones, "exposure_us", 1, "guid_changed", 0), 0);
	printf("%d/%d | %d/%d | %s | %s | %s | %lld | %lld | %lld/%lld | %s%s%s |\n",
	       r->changed, n, r->reseeded, n, records, bytes, us, r->cross_max, r->shared,
	       r->control_fresh, r->control_bound, r->verdict, *r->why ? ": " : "", r->why);
}

static void md_rng(const struct row *rows, int n)
{
	const char *kernels[MAX_KERNELS];
	int nk = kernels_of(rows, n, "rng", kernels), i, k;

	for (k = 0; k < nk; k++) {
		printf("\n### Kernel: %s\n\n", kernels[k]);
		printf("| method | vCPUs | shape | GUID changed | reseed logged | exposure records min/med/max "
		       "| bytes | µs | cross-clone max | shared | control fresh/bound | verdict |\n");
		printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
		for (i = 0; i < n; i++)
			if (!strcmp(rows[i].kind, "rng") && !strcmp(rows[i].kernel, kernels[k]))
				md_rng_row(&rows[i]);
	}
}

static void md_wg_row(const struct row *r)
{
	char pre[64], fly[64], ini[64], hs[64], data[64], del[64];
	int n;

	printf("| %s | %s | ", r->kernel, key_str(r, "traffic"));
	if (!strcmp(r->verdict, "error") && !r->clones) {
		printf("error: %s |\n", r->why);
		return;
	}
	n = (int)json_object_array_length(r->clones);
	printf("%s%s%s | %s | %s | %lld | %lld | %d/%d | %s | %s | %s | %s |\n", r->verdict,
	       *r->why ? ": " : "", r->why,
	       fmt_spread(pre, sizeof(pre), clone_spread(r->clones, "prefork_packets", 1, NULL, 1), 1),
	       fmt_spread(fly, sizeof(fly), clone_spread(r->clones, "inflight_packets", 1, NULL, 1), 1),
	       r->reuse, r->control_reuse, r->rekeyed, n,
	       fmt_spread(ini, sizeof(ini), clone_spread(r->clones, "first_initiation_us", 1000, NULL, 1), 1),
	       fmt_spread(hs, sizeof(hs), clone_spread(r->clones, "handshake_us", 1000, NULL, 1), 1),
	       fmt_spread(data, sizeof(data), clone_spread(r->clones, "first_new_data_us", 1000, NULL, 1), 1),
	       fmt_spread(del, sizeof(del), clone_spread(r->clones, "delivered", 1, NULL, 1), 1));
}

static void md_wg(const struct row *rows, int n)
{
	int i, any = 0;

	for (i = 0; i < n; i++) {
		if (strcmp(rows[i].kind, "wg"))
			continue;
		if (!any++) {
			printf("\n| kernel | tunnel | verdict | pre-fork-key packets | in flight at the snapshot | nonce-reuse pairs | control reuse pairs | rekeyed | first initiation ms | handshake done ms | first new data ms | datagrams delivered |\n");
			printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
		}
		md_wg_row(&rows[i]);
	}
}

/* ---- one verdict per kernel ------------------------------------------------ */

/*
 * What an operator reads first: per kernel, one sentence for the RNG rows
 * and one for the WireGuard rows.  A kernel is "not fork-safe" if any row
 * shows a window, and the sentence names the worst clone (its bytes, its
 * µs, its method).  "fork-safe" rests on a number of clones, and a window
 * is a race that some clones win, so the sentence also says how likely it
 * is that a kernel with the exposed kernels' window would have shown none.
 *
 * That is asked per cell (method, vCPUs, shape and the other keys of
 * same_cell()), because a race is won more often in some cells than in
 * others.  In a cell, the exposed kernels (those with an exposed clone in
 * some row of this run, normally stock) let e of their t clones escape,
 * counted over their measured rows only (an error row is no evidence).
 * With a uniform prior, the chance q that a clone escapes is Beta(e+1,
 * t-e+1) after them, and the chance that all n clones of the fork-safe
 * kernel in that cell escape is the mean of q^n over that posterior:
 *
 *	P(n | e, t) = prod_{j=0}^{n-1} (e + 1 + j) / (t + 2 + j)
 *
 * (e = 0, t = 4, n = 4: 1/6 * 2/7 * 3/8 * 4/9 = 0.0079, where the point
 * estimate (1/6)^4 would claim 0.00077).  The verdict quotes the largest
 * cell's P, never a product over cells: cells are different experiments,
 * and the weakest one bounds what the run showed.  It covers windows as
 * often won as the exposed kernels'; a narrower window, won by more
 * clones, is not excluded by it.
 */

static int same_cell(const struct row *a, const struct row *b)
{
	const char *keys[] = { "method", "shape", "crng", "load", "append" };
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(key_str(a, keys[i]), key_str(b, keys[i])))
			return 0;
	return num(a->json, "vcpus") == num(b->json, "vcpus") &&
	       num(a->json, "together") == num(b->json, "together") &&
	       !strcmp(row_shape(a), row_shape(b));
}

/* Clones of R that saw a new GUID, and how many of them shared nothing. */
static int clones_escaped(const struct row *r, int *escaped)
{
	size_t i, len = r->clones ? json_object_array_length(r->clones) : 0;
	int n = 0;

	*escaped = 0;
	for (i = 0; i < len; i++) {
		struct json_object *c = json_object_array_get_idx(r->clones, i);

		if (!flag(c, "guid_changed"))
			continue;
		n++;
		*escaped += num(c, "exposure_records") <= r->allowance &&
			    num(c, "cross_clone_records") <= r->allowance;
	}
	return n;
}

static int measured(const struct row *r)
{
	return strcmp(r->verdict, "error") != 0;
}

/* Whether any measured RNG row of KERNEL has a clone that shared output after its fork. */
static int kernel_exposed(const struct row *rows, int n, const char *kernel)
{
	int i, esc;

	for (i = 0; i < n; i++)
		if (!strcmp(rows[i].kind, "rng") && !strcmp(rows[i].kernel, kernel) && measured(&rows[i]) &&
		    clones_escaped(&rows[i], &esc) > esc)
			return 1;
	return 0;
}

/* The predictive chance that all N clones escape after E of T did (above). */
static double unseen_p(int e, int t, int n)
{
	double p = 1;
	int j;

	for (j = 0; j < n; j++)
		p *= (e + 1.0 + j) / (t + 2.0 + j);
	return p;
}

/* The exposed kernels' clones in R's cell, measured rows only: *t of them, *e escaped. */
static void cell_evidence(const struct row *rows, int nrows, const struct row *r, int *e, int *t)
{
	int i, esc;

	*e = *t = 0;
	for (i = 0; i < nrows; i++) {
		if (strcmp(rows[i].kind, "rng") || !strcmp(rows[i].kernel, r->kernel) || !measured(&rows[i]) ||
		    !same_cell(&rows[i], r) || !kernel_exposed(rows, nrows, rows[i].kernel))
			continue;
		*t += clones_escaped(&rows[i], &esc);
		*e += esc;
	}
}

/* The fork-safe clones of R's kernel in R's cell, when R is the first such row; else -1. */
static int cell_clones(const struct row *rows, int nrows, const struct row *r)
{
	int i, esc, n = 0;

	for (i = 0; i < nrows; i++) {
		if (strcmp(rows[i].kind, "rng") || strcmp(rows[i].kernel, r->kernel) ||
		    strcmp(rows[i].verdict, "fork-safe") || !same_cell(&rows[i], r))
			continue;
		if (!n && &rows[i] != r)
			return -1;
		n += clones_escaped(&rows[i], &esc);
	}
	return n;
}

/* One cell of a fork-safe kernel, as the summary weighs it. */
struct cell {
	const struct row *first;
	int n, e, t;
	double p;
};

static void print_cell(const struct cell *c)
{
	printf("  %s: %s, %lld vCPU, %s", c->first->kernel, key_str(c->first, "method"),
	       num(c->first->json, "vcpus"), row_shape(c->first));
	if (strcmp(key_str(c->first, "crng"), "?"))
		printf(" (crng %s)", key_str(c->first, "crng"));
	printf(": nothing shared in %d %s; ", c->n, c->n == 1 ? "clone" : "clones");
	if (c->t)
		printf("exposed kernels escaped in %d of %d; unseen with probability %.2g\n", c->e, c->t, c->p);
	else
		printf("no exposed kernel measured here, not estimated\n");
}

static const char *fmt_bytes(char *buf, size_t len, long long b)
{
	if (b >= 1000000)
		snprintf(buf, len, "%.1f MB", b / 1e6);
	else if (b >= 1000)
		snprintf(buf, len, "%.1f KB", b / 1e3);
	else
		snprintf(buf, len, "%lld bytes", b);
	return buf;
}

static const char *plural(int n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static const char *fmt_us(char *buf, size_t len, long long us)
{
	if (us >= 1000)
		snprintf(buf, len, "%.1f ms", us / 1e3);
	else
		snprintf(buf, len, "%lld µs", us);
	return buf;
}

/* Whether R's output came from state that only user space can check (shape.h). */
static int user_state(const struct row *r)
{
	const struct shape *sh = shape_find(r->shape);

	return sh && sh->user_state;
}

/*
 * Whether R is a measured row of KIND for KERNEL (USER: of a user-state
 * shape, else of the others); counted in *nrows, in *errors if it failed.
 */
static int summary_takes(const struct row *r, const char *kind, const char *kernel, int user,
			 int *nrows, int *errors)
{
	if (strcmp(r->kind, kind) || strcmp(r->kernel, kernel) || (!strcmp(kind, "rng") && user_state(r) != user))
		return 0;
	++*nrows;
	if (strcmp(r->verdict, "error"))
		return 1;
	++*errors;
	return 0;
}

static void summary_rng(const struct row *rows, int n, const char *kernel)
{
	int i, nrows = 0, safe_rows = 0, safe_clones = 0, exposed = 0, clones = 0, errors = 0, nosignal = 0;
	int esc, c, ncells = 0, unestimated = 0;
	long long worst_b = -1, worst_us = 0;
	const char *worst_method = "", *nosignal_method = "";
	struct cell *cells = xcalloc(n ? n : 1, sizeof(*cells)), *weakest = NULL;
	char b[32], t[32];
	size_t k;

	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		if (!summary_takes(r, "rng", kernel, 0, &nrows, &errors))
			continue;
		if (!strcmp(r->verdict, "no fork signal") || !strcmp(r->verdict, "partial fork signal")) {
			nosignal++;
			nosignal_method = key_str(r, "method");
			continue;
		}
		c = clones_escaped(r, &esc);
		clones += c;
		exposed += c - esc;
		if (!strcmp(r->verdict, "fork-safe")) {
			struct cell *cl = &cells[ncells];

			safe_rows++;
			safe_clones += c;
			cl->n = cell_clones(rows, n, r);
			if (cl->n >= 0) {
				cl->first = r;
				cell_evidence(rows, n, r, &cl->e, &cl->t);
				cl->p = unseen_p(cl->e, cl->t, cl->n);
				if (!cl->t)
					unestimated++;
				else if (!weakest || cl->p > weakest->p)
					weakest = cl;
				ncells++;
			}
		}
		for (k = 0; r->clones && k < json_object_array_length(r->clones); k++) {
			struct json_object *cl = json_object_array_get_idx(r->clones, k);

			if (flag(cl, "guid_changed") && num(cl, "exposure_bytes") > worst_b) {
				worst_b = num(cl, "exposure_bytes");
				worst_us = num(cl, "exposure_us");
				worst_method = key_str(r, "method");
			}
		}
	}
	if (!nrows) {
		free(cells);
		return;
	}
	printf("%s: RNG: ", kernel);
	if (exposed)
		printf("not fork-safe: clones restored by %s shared up to %s of RNG output for up to %s "
		       "after the restore (exposure in %d of %d clones)",
		       worst_method, fmt_bytes(b, sizeof(b), worst_b), fmt_us(t, sizeof(t), worst_us), exposed, clones);
	else if (safe_rows && weakest)
		printf("fork-safe: nothing shared after the GUID changed in %d %s of %d %s; a window like the "
		       "exposed kernels' would have gone unseen with probability at most %.2g (its weakest "
		       "cell: %s, %lld vCPU, %s, %d %s against %d of %d escaped)",
		       safe_clones, plural(safe_clones, "clone", "clones"), safe_rows,
		       plural(safe_rows, "row", "rows"), weakest->p, key_str(weakest->first, "method"),
		       num(weakest->first->json, "vcpus"), row_shape(weakest->first), weakest->n,
		       plural(weakest->n, "clone", "clones"), weakest->e, weakest->t);
	else if (safe_rows)
		printf("fork-safe: nothing shared after the GUID changed in %d %s of %d %s; how likely a window "
		       "went unseen is not estimated (no kernel with a window in the same cells of this run)",
		       safe_clones, plural(safe_clones, "clone", "clones"), safe_rows,
		       plural(safe_rows, "row", "rows"));
	else if (nosignal)
		printf("no fork signal: not every clone saw a new GUID");
	else
		printf("not measured");
	if (!exposed && weakest && unestimated)
		printf("; not estimated in %d of %d %s (no exposed kernel measured there)", unestimated, ncells,
		       plural(ncells, "cell", "cells"));
	if (nosignal && (exposed || safe_rows))
		printf("; no fork signal in %d %s (%s: no guest can tell)", nosignal, plural(nosignal, "row", "rows"),
		       nosignal_method);
	if (errors)
		printf("; %d of %d %s not measured (errors)", errors, nrows, plural(nrows, "row", "rows"));
	printf("\n");
	for (i = 0; !exposed && i < ncells; i++)
		print_cell(&cells[i]);
	free(cells);
}

/* The user-state rows: the window of user space, which no kernel closes. */
static void summary_user(const struct row *rows, int n, const char *kernel)
{
	int i, nrows = 0, errors = 0, clones = 0, exposed = 0, esc, c;
	long long worst_b = -1, b;
	char buf[32];
	size_t k;

	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		if (!summary_takes(r, "rng", kernel, 1, &nrows, &errors))
			continue;
		c = clones_escaped(r, &esc);
		clones += c;
		exposed += c - esc;
		for (k = 0; r->clones && k < json_object_array_length(r->clones); k++) {
			b = num(json_object_array_get_idx(r->clones, k), "exposure_bytes");
			if (b > worst_b)
				worst_b = b;
		}
	}
	if (!nrows)
		return;
	printf("%s: user space without a fork check: ", kernel);
	if (exposed)
		printf("%d of %d clones' DRBGs shared up to %s from their pre-fork key (no kernel can "
		       "prevent this; a check of /dev/vmgenid before output does)", exposed, clones,
		       fmt_bytes(buf, sizeof(buf), worst_b));
	else if (nrows > errors)
		printf("nothing shared in %d %s: the comparison saw no window where one must be",
		       clones, plural(clones, "clone", "clones"));
	else
		printf("not measured");
	if (errors)
		printf("; %d of %d %s not measured (errors)", errors, nrows, plural(nrows, "row", "rows"));
	printf("\n");
}

static void summary_wg(const struct row *rows, int n, const char *kernel)
{
	int i, nrows = 0, safe = 0, errors = 0, clones = 0;
	long long prefork = 0, reuse = 0;
	const char *unrekeyed = NULL;

	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		if (!summary_takes(r, "wg", kernel, 0, &nrows, &errors))
			continue;
		clones += (int)json_object_array_length(r->clones);
		prefork += r->prefork;
		reuse += r->reuse;
		safe += !strcmp(r->verdict, "safe");
		if (!strcmp(r->verdict, "not rekeyed"))
			unrekeyed = key_str(r, "traffic");
	}
	if (!nrows)
		return;
	printf("%s: WireGuard: ", kernel);
	if (prefork || reuse)
		printf("exposed: %lld packets under pre-fork keys and %lld (key, nonce) pairs reused between clones",
		       prefork, reuse);
	else if (safe && safe == nrows - errors)
		printf("safe: no packet under a pre-fork key, no nonce reused, every clone rekeyed");
	else if (nrows > errors)
		printf("not exposed");
	else
		printf("not measured");
	if (unrekeyed)
		printf("; the %s tunnel did not rekey", unrekeyed);
	if (nrows > errors)
		printf(" (%d %s, %d %s)", clones, plural(clones, "clone", "clones"), nrows - errors,
		       plural(nrows - errors, "row", "rows"));
	if (errors)
		printf("; %d of %d %s not measured (errors)", errors, nrows, plural(nrows, "row", "rows"));
	printf("\n");
}

static void summary(const struct row *rows, int n)
{
	const char *kernels[MAX_KERNELS];
	int nk = kernels_of(rows, n, NULL, kernels), k;

	for (k = 0; k < nk; k++) {
		summary_rng(rows, n, kernels[k]);
		summary_user(rows, n, kernels[k]);
		summary_wg(rows, n, kernels[k]);
	}
}

/* ---- the report as a page -------------------------------------------------- */

/*
 * -f html: one self-contained page (no script, no network) with the verdict
 * lines, then a picture per row: for the RNG, each clone's output after its
 * GUID changed as one lane per stream, a bin of guest time red where it
 * shared records with the reference or another clone and grey where all
 * was fresh, the kernels of one cell side by side on one time scale; for
 * WireGuard, each clone on a time axis from the resume, red while it sent
 * under the pre-fork key, then its initiation, handshake and first new data.
 */
#define SVG_W 520
#define LANE_H 12
#define LABEL_W 90

static void html_text(const char *s)
{
	for (; s && *s; s++) {
		if (*s == '<')
			fputs("&lt;", stdout);
		else if (*s == '>')
			fputs("&gt;", stdout);
		else if (*s == '&')
			fputs("&amp;", stdout);
		else
			putchar(*s);
	}
}

static void html_caption(const struct row *r)
{
	printf("<figcaption><b>");
	html_text(r->kernel);
	printf("</b>: ");
	html_text(r->verdict);
	if (*r->why) {
		printf(" (");
		html_text(r->why);
		printf(")");
	}
	printf("</figcaption>\n");
}

static double timeline_span_us(const struct row *r)
{
	size_t i, j, len = r->clones ? json_object_array_length(r->clones) : 0;
	double span = 0, s;

	for (i = 0; i < len; i++) {
		struct json_object *st = array(json_object_array_get_idx(r->clones, i), "streams");

		for (j = 0; st && j < json_object_array_length(st); j++) {
			struct json_object *tl = get(json_object_array_get_idx(st, j), "timeline");

			s = json_object_get_double(get(tl, "bin_us")) * json_object_array_length(array(tl, "shared"));
			if (s > span)
				span = s;
		}
	}
	return span;
}

static void svg_axis(int y, double span, const char *unit, double div)
{
	printf("<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#000'/>", LABEL_W, y, SVG_W, y);
	printf("<text x='%d' y='%d' font-size='10'>0</text>", LABEL_W, y + 11);
	printf("<text x='%d' y='%d' font-size='10' text-anchor='end'>%.0f %s</text>\n", SVG_W, y + 11,
	       span / div, unit);
}

static void html_rng_row(const struct row *r, double span)
{
	size_t i, j, b, lanes = 0, len = r->clones ? json_object_array_length(r->clones) : 0;
	double x, w, bin_us;
	int y;

	printf("<figure>");
	html_caption(r);
	if (!r->clones || span <= 0) {
		printf("<p>no timeline</p></figure>\n");
		return;
	}
	for (i = 0; i < len; i++)
		lanes += json_object_array_length(array(json_object_array_get_idx(r->clones, i), "streams"));
	printf("<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%zu'>\n", SVG_W, lanes * LANE_H + 16);
	y = 0;
	for (i = 0; i < len; i++) {
		struct json_object *c = json_object_array_get_idx(r->clones, i);
		struct json_object *st = array(c, "streams");

		for (j = 0; st && j < json_object_array_length(st); j++, y += LANE_H) {
			struct json_object *tl = get(json_object_array_get_idx(st, j), "timeline");
			struct json_object *sh = array(tl, "shared"), *fr = array(tl, "fresh");

			printf("<text x='0' y='%d' font-size='10'>", y + LANE_H - 2);
			html_text(str(c, "name"));
			printf(" #%zu</text>", j);
			bin_us = json_object_get_double(get(tl, "bin_us"));
			for (b = 0; sh && fr && b < json_object_array_length(sh); b++) {
				long long nsh = json_object_get_int64(json_object_array_get_idx(sh, b));
				long long nfr = json_object_get_int64(json_object_array_get_idx(fr, b));

				if (!nsh && !nfr)
					continue;
				x = LABEL_W + (SVG_W - LABEL_W) * (b * bin_us) / span;
				w = (SVG_W - LABEL_W) * bin_us / span;
				printf("<rect x='%.1f' y='%d' width='%.1f' height='%d' fill='%s'/>", x, y + 1,
				       w < 1 ? 1 : w, LANE_H - 2, nsh ? "#d62728" : "#bbbbbb");
			}
			printf("\n");
		}
	}
	svg_axis(y + 2, span, "µs after the GUID changed", 1);
	printf("</svg></figure>\n");
}

static void html_rng(const struct row *rows, int n)
{
	int i, j, *shown = xcalloc(n, sizeof(*shown));
	char cond[96];
	double span;

	printf("<h2>RNG: each clone after its GUID changed</h2>\n<p><span class='shared'>red</span>: "
	       "records shared with the reference or another clone; <span class='fresh'>grey</span>: "
	       "only fresh output.  One lane per clone and stream.</p>\n");
	for (i = 0; i < n; i++) {
		if (shown[i] || strcmp(rows[i].kind, "rng"))
			continue;
		span = 0;
		for (j = i; j < n; j++)
			if (!strcmp(rows[j].kind, "rng") && same_cell(&rows[i], &rows[j]) &&
			    timeline_span_us(&rows[j]) > span)
				span = timeline_span_us(&rows[j]);
		printf("<h3>");
		html_text(key_str(&rows[i], "method"));
		printf(", %lld vCPU, ", num(rows[i].json, "vcpus"));
		html_text(row_shape(&rows[i]));
		if (str(rows[i].json, "crng")) {
			printf(" (crng ");
			html_text(str(rows[i].json, "crng"));
			printf(")");
		}
		html_text(row_conditions(&rows[i], cond, sizeof(cond)));
		printf("</h3>\n<div class='cell'>\n");
		for (j = i; j < n; j++) {
			if (strcmp(rows[j].kind, "rng") || !same_cell(&rows[i], &rows[j]))
				continue;
			shown[j] = 1;
			html_rng_row(&rows[j], span);
		}
		printf("</div>\n");
	}
	free(shown);
}

/* Microseconds of a WireGuard event, or -1 for never. */
static long long wg_event(struct json_object *c, const char *key)
{
	return get(c, key) ? num(c, key) : -1;
}

static void html_wg_row(const struct row *r)
{
	static const struct {
		const char *key, *color;
	} marks[] = {
		{ "first_initiation_us", "#1f77b4" },
		{ "handshake_us", "#2ca02c" },
		{ "first_answer_us", "#ff7f0e" },
		{ "first_new_data_us", "#000000" },
	};
	size_t i, m, len = r->clones ? json_object_array_length(r->clones) : 0;
	double span = 1000, x;
	long long t;
	int y;

	printf("<figure>");
	html_caption(r);
	if (!r->clones) {
		printf("<p>no capture</p></figure>\n");
		return;
	}
	for (i = 0; i < len; i++) {
		struct json_object *c = json_object_array_get_idx(r->clones, i);

		for (m = 0; m < sizeof(marks) / sizeof(marks[0]); m++)
			if (wg_event(c, marks[m].key) * 1.2 > span)
				span = wg_event(c, marks[m].key) * 1.2;
		if (wg_event(c, "prefork_last_us") * 1.2 > span)
			span = wg_event(c, "prefork_last_us") * 1.2;
	}
	printf("<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%zu'>\n", SVG_W, len * LANE_H + 16);
	for (i = 0, y = 0; i < len; i++, y += LANE_H) {
		struct json_object *c = json_object_array_get_idx(r->clones, i);

		printf("<text x='0' y='%d' font-size='10'>", y + LANE_H - 2);
		html_text(str(c, "name"));
		printf("</text>");
		t = wg_event(c, "prefork_last_us");
		if (num(c, "prefork_packets") > 0 && t >= 0)
			printf("<rect x='%d' y='%d' width='%.1f' height='%d' fill='#d62728'/>", LABEL_W, y + 1,
			       1 + (SVG_W - LABEL_W) * t / span, LANE_H - 2);
		for (m = 0; m < sizeof(marks) / sizeof(marks[0]); m++) {
			t = wg_event(c, marks[m].key);
			if (t < 0)
				continue;
			x = LABEL_W + (SVG_W - LABEL_W) * t / span;
			printf("<rect x='%.1f' y='%d' width='3' height='%d' fill='%s'/>", x, y + 1, LANE_H - 2,
			       marks[m].color);
		}
		printf("\n");
	}
	svg_axis(y + 2, span, "ms after the resume", 1000);
	printf("</svg></figure>\n");
}

#define WG_MARKS "marks: <span style='color:#1f77b4'>first initiation</span>, <span style='color:#2ca02c'>" \
	"handshake done</span>, <span style='color:#ff7f0e'>first answer to an initiation</span>, first new data (black)."

/* The h3 of a WireGuard row: its kernel and what sets it apart. */
static void html_wg_title(const struct row *r)
{
	const char *step = str(r->json, "step");

	printf("<div><h3>");
	html_text(r->kernel);
	if (!strcmp(r->kind, "wg")) {
		printf(", tunnel ");
		html_text(key_str(r, "traffic"));
	} else if (!strcmp(r->kind, "wg-live")) {
		printf(", the original ran on %lld s", num(r->json, "live"));
	} else if (wg_both_kind(r->kind)) {
		printf(", clones side by side for %lld s", num(r->json, "both"));
	} else {
		printf(", the clock %lld s behind", num(r->json, "behind"));
	}
	if (step && !strcmp(step, "identity"))
		fputs(", fork hooks with identities of their own", stdout);
	else if (step)
		fputs(!strcmp(step, "hook") ? ", fork hooks" : ", nothing steps the clock", stdout);
	printf("</h3>\n");
}

/*
 * Clones side by side: a lane per clone (and one for any other sender),
 * each run of datagrams the peer received from it as a bar, on the peer's
 * clock from its restore.
 */
static void html_wg_both_row(const struct row *r)
{
	struct json_object *runs = r->result ? array(r->result, "runs") : NULL;
	size_t i, j, lanes = r->clones ? json_object_array_length(r->clones) + 1 : 0;
	double span = 1e6, x, w;

	printf("<figure>");
	html_caption(r);
	if (!r->clones || !runs) {
		printf("<p>no runs</p></figure>\n");
		return;
	}
	for (j = 0; j < json_object_array_length(runs); j++)
		if (num(json_object_array_get_idx(runs, j), "last_us") * 1.05 > span)
			span = num(json_object_array_get_idx(runs, j), "last_us") * 1.05;
	printf("<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%zu'>\n", SVG_W, lanes * LANE_H + 16);
	for (i = 0; i < lanes; i++) {
		const char *name = i + 1 < lanes ? str(json_object_array_get_idx(r->clones, i), "name") : NULL;

		printf("<text x='0' y='%zu' font-size='10'>", (i + 1) * LANE_H - 2);
		html_text(name ? name : "other");
		printf("</text>");
		for (j = 0; j < json_object_array_length(runs); j++) {
			struct json_object *run = json_object_array_get_idx(runs, j);
			const char *sender = str(run, "sender");
			size_t k;

			for (k = 0; k + 1 < lanes; k++)
				if (sender && !strcmp(sender, str(json_object_array_get_idx(r->clones, k), "name")))
					break;
			if (k != i)
				continue;
			x = LABEL_W + (SVG_W - LABEL_W) * num(run, "first_us") / span;
			w = (SVG_W - LABEL_W) * (num(run, "last_us") - num(run, "first_us")) / span;
			printf("<rect x='%.1f' y='%zu' width='%.1f' height='%d' fill='%s'/>", x, i * LANE_H + 1,
			       w < 1 ? 1 : w, LANE_H - 2, i + 1 < lanes ? "#2ca02c" : "#888");
		}
		printf("\n");
	}
	svg_axis((int)(lanes * LANE_H) + 2, span, "s after the peer's restore", 1e6);
	printf("</svg></figure>\n");
}

static int wg_plain_kind(const char *kind)
{
	return !strcmp(kind, "wg");
}

/* A section of the WireGuard rows whose kind is_kind takes, under a heading. */
static void html_wg_section(const struct row *rows, int n, int (*is_kind)(const char *), const char *heading)
{
	int i, any = 0;

	for (i = 0; i < n; i++) {
		if (!is_kind(rows[i].kind))
			continue;
		if (!any++)
			printf("%s<div class='cell'>\n", heading);
		html_wg_title(&rows[i]);
		if (wg_both_kind(rows[i].kind))
			html_wg_both_row(&rows[i]);
		else
			html_wg_row(&rows[i]);
		printf("</div>\n");
	}
	if (any)
		printf("</div>\n");
}

static void html_wg(const struct row *rows, int n)
{
	html_wg_section(rows, n, wg_plain_kind,
			"<h2>WireGuard: each clone's packets after the resume</h2>\n<p><span class='shared'>"
			"red</span>: sending under the pre-fork key; " WG_MARKS "</p>\n");
	html_wg_section(rows, n, wg_clock_kind,
			"<h2>WireGuard clones beside a peer that took later handshakes: the time to a working "
			"tunnel</h2>\n<p>The tunnel works from the first answer to one of the clone's "
			"initiations (orange) on; " WG_MARKS "</p>\n");
	html_wg_section(rows, n, wg_both_kind,
			"<h2>WireGuard clones side by side with one key: whom the peer heard</h2>\n<p>Each bar "
			"is a run of datagrams the peer received from one clone, on the peer's clock.</p>\n");
}

static void html(const struct row *rows, int n)
{
	printf("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>forksafe: fork report</title>\n"
	       "<style>body{font-family:sans-serif;margin:1em}pre{background:#f4f4f4;padding:.5em;"
	       "white-space:pre-wrap}.cell{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}"
	       ".shared{color:#d62728}.fresh{color:#888}</style></head><body>\n"
	       "<h1>forksafe: fork report</h1>\n<pre class='verdicts'>");
	fflush(stdout);
	summary(rows, n);
	printf("</pre>\n");
	html_rng(rows, n);
	html_wg(rows, n);
	printf("</body></html>\n");
}

/* ---- verdict lines ------------------------------------------------------- */

static void add_int(struct json_object *o, const char *key, long long v)
{
	json_object_object_add(o, key, json_object_new_int64(v));
}

static void add_str(struct json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

/* The row's keys, its verdict, and the figures the tests assert on. */
static struct json_object *verdict_of(const struct row *r)
{
	struct json_object *o = json_object_new_object();
	int n = r->clones ? (int)json_object_array_length(r->clones) : 0;

	json_object_object_foreach(r->json, key, val) {
		if (json_object_is_type(val, json_type_string) || json_object_is_type(val, json_type_int))
			json_object_object_add(o, key, json_object_get(val));
	}
	add_str(o, "verdict", r->verdict);
	add_str(o, "why", r->why);
	add_int(o, "clones", n);
	if (!strcmp(r->kind, "rng") && r->clones) {
		add_int(o, "guid_changed", r->changed);
		add_int(o, "diverged", r->diverged);
		add_int(o, "reseeded_once", r->reseeded_once);
		add_int(o, "control_reseeds", r->control_reseeds);
		add_int(o, "exposure_max", r->exposure_max);
		add_int(o, "exposure_bytes_max",
			clone_spread(r->clones, "exposure_bytes", 1, "guid_changed", 0).max);
		add_int(o, "exposure_us_max", clone_spread(r->clones, "exposure_us", 1, "guid_changed", 0).max);
		add_int(o, "cross_clone_max", r->cross_max);
		add_int(o, "allowance", r->allowance);
		add_str(o, "shape", row_shape(r));
		add_int(o, "control_fresh", r->control_fresh);
		add_int(o, "control_fresh_bound", r->control_bound);
	} else if (!strcmp(r->kind, "wg") && r->clones) {
		add_int(o, "prefork_packets", r->prefork);
		add_int(o, "nonce_reuse_pairs", r->reuse);
		add_int(o, "control_reuse_pairs", r->control_reuse);
		add_int(o, "rekeyed", r->rekeyed);
		add_int(o, "delivering", r->delivering);
	}
	return o;
}

int main(int argc, char **argv)
{
	const char *format = "md";
	struct json_object *all;
	struct row *rows;
	int opt, n, i;

	while ((opt = getopt(argc, argv, "f:")) != -1) {
		if (opt != 'f')
			fail("usage: fork-report [-f md|json|verdicts|summary|html] ROW.json...");
		format = optarg;
	}
	if (strcmp(format, "md") && strcmp(format, "json") && strcmp(format, "verdicts") &&
	    strcmp(format, "summary") && strcmp(format, "html"))
		fail("-f wants md, json, verdicts, summary or html, not '%s'", format);
	n = argc - optind;
	if (n < 1)
		fail("no rows given");
	rows = xcalloc(n, sizeof(*rows));
	for (i = 0; i < n; i++) {
		rows[i].json = json_object_from_file(argv[optind + i]);
		if (!rows[i].json || !json_object_is_type(rows[i].json, json_type_object))
			fail("%s is not a JSON object", argv[optind + i]);
		judge(&rows[i]);
	}
	if (!strcmp(format, "summary")) {
		summary(rows, n);
	} else if (!strcmp(format, "html")) {
		html(rows, n);
	} else if (!strcmp(format, "md")) {
		md_rng(rows, n);
		md_wg(rows, n);
	} else if (!strcmp(format, "verdicts")) {
		for (i = 0; i < n; i++) {
			struct json_object *v = verdict_of(&rows[i]);

			puts(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
			json_object_put(v);
		}
	} else {
		all = json_object_new_array();
		for (i = 0; i < n; i++) {
			json_object_object_add(rows[i].json, "verdict", json_object_new_string(rows[i].verdict));
			json_object_object_add(rows[i].json, "why", json_object_new_string(rows[i].why));
			json_object_array_add(all, json_object_get(rows[i].json));
		}
		puts(json_object_to_json_string_ext(all, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
		json_object_put(all);
	}
	if (fflush(stdout))
		fail("cannot write the report");
	for (i = 0; i < n; i++)
		json_object_put(rows[i].json);
	free(rows);
	return 0;
}
