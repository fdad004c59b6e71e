// SPDX-License-Identifier: GPL-2.0
/*
 * matrix-report: the fork matrix as a table, Markdown and JSON.
 *
 *   matrix-report [-m OUT.md] [-j OUT.json] [-v] ROW.json...
 *
 * Each ROW.json is what snapshot-tests/fork-matrix.sh wrote for one kernel,
 * vCPU count and method: {"kernel","method","vcpus"} and either "error" or
 * "result" (rng-exposure's output).  This is the one place that turns a row
 * into a verdict:
 *   error           the row failed, or its control diverged (a blind detector)
 *   no fork signal  no clone saw a new GUID
 *   fork-safe       clones saw a new GUID and produced nothing pre-fork after it
 *   exposure window clones produced pre-fork output after the GUID changed
 * With -v, prints one line per row for tests instead of the table:
 *   KERNEL VCPUS METHOD VERDICT guid_changed=N/M diverged=N/M exposure_max=B
 *   reseeded_once=N/M control_reseeds=K
 * where VERDICT has dashes for spaces (no-fork-signal).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

struct row {
	const char *kernel, *method, *verdict;
	char why[256];
	int vcpus, clones, changed, diverged, reseeded, reseeded_once, control_reseeds;
	long long bmin, bmed, bmax, umin, umed, umax, shared;
	struct json_object *json;
};

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static long long num(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : 0;
}

static int flag(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

/* min/median/max of the clones' KEY, over clones that saw a new GUID. */
static void spread(struct json_object *clones, const char *key, long long *mn, long long *md, long long *mx)
{
	size_t i, n = 0, len = json_object_array_length(clones);
	long long *v = calloc(len + 1, sizeof(*v));

	*mn = *md = *mx = -1;
	if (!v)
		return;
	for (i = 0; i < len; i++) {
		struct json_object *c = json_object_array_get_idx(clones, i);

		if (flag(c, "guid_changed"))
			v[n++] = num(c, key);
	}
	if (n) {
		qsort(v, n, sizeof(*v), cmp_ll);
		*mn = v[0];
		*md = v[n / 2];
		*mx = v[n - 1];
	}
	free(v);
}

static void judge(struct row *r)
{
	struct json_object *res, *ctrl, *clones;
	size_t i;

	r->kernel = str(r->json, "kernel");
	r->method = str(r->json, "method");
	r->vcpus = (int)num(r->json, "vcpus");
	if (!r->kernel || !r->method) {
		r->kernel = r->kernel ? r->kernel : "?";
		r->method = r->method ? r->method : "?";
		r->verdict = "error";
		snprintf(r->why, sizeof(r->why), "row lacks kernel or method");
		return;
	}
	if (str(r->json, "error")) {
		r->verdict = "error";
		snprintf(r->why, sizeof(r->why), "%s", str(r->json, "error"));
		return;
	}
	if (!json_object_object_get_ex(r->json, "result", &res) ||
	    !json_object_object_get_ex(res, "control", &ctrl) ||
	    !json_object_object_get_ex(res, "clones", &clones) ||
	    !json_object_is_type(clones, json_type_array)) {
		r->verdict = "error";
		snprintf(r->why, sizeof(r->why), "row has no analyzer result");
		return;
	}
	r->clones = (int)json_object_array_length(clones);
	for (i = 0; i < (size_t)r->clones; i++) {
		struct json_object *c = json_object_array_get_idx(clones, i);

		r->changed += flag(c, "guid_changed");
		r->diverged += flag(c, "diverged");
		r->reseeded += flag(c, "reseed_logged");
		r->reseeded_once += num(c, "reseed_lines") == 1;
		if (!i || num(c, "identical_after_snapshot") < r->shared)
			r->shared = num(c, "identical_after_snapshot");
	}
	r->control_reseeds = (int)num(ctrl, "reseed_lines");
	spread(clones, "exposure_blocks", &r->bmin, &r->bmed, &r->bmax);
	spread(clones, "exposure_us", &r->umin, &r->umed, &r->umax);
	if (!flag(ctrl, "identical")) {
		r->verdict = "error";
		snprintf(r->why, sizeof(r->why),
			 "control diverged at block %lld: the recording cannot tell a fork (blind detector)",
			 num(ctrl, "diverged_at_seq"));
	} else if (!flag(ctrl, "window_ok")) {
		r->verdict = "error";
		snprintf(r->why, sizeof(r->why), "only %lld blocks recorded after the snapshot",
			 num(ctrl, "window_blocks"));
	} else if (!r->changed) {
		r->verdict = "no fork signal";
	} else if (r->bmax == 0) {
		r->verdict = "fork-safe";
	} else {
		r->verdict = "exposure window";
	}
}

static void triple(char *buf, size_t len, long long a, long long b, long long c, long long scale)
{
	if (a < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%lld/%lld/%lld", a * scale, b * scale, c * scale);
}

static void print_row(FILE *f, const struct row *r, int md)
{
	char blocks[64], bytes[64], us[64], changed[32], reseed[32], shared[32];

	triple(blocks, sizeof(blocks), r->bmin, r->bmed, r->bmax, 1);
	triple(bytes, sizeof(bytes), r->bmin, r->bmed, r->bmax, 16);
	triple(us, sizeof(us), r->umin, r->umed, r->umax, 1);
	snprintf(changed, sizeof(changed), "%d/%d", r->changed, r->clones);
	snprintf(reseed, sizeof(reseed), "%d/%d", r->reseeded, r->clones);
	snprintf(shared, sizeof(shared), "%lld", r->shared);
	if (md)
		fprintf(f, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", r->method, r->vcpus,
			changed, reseed, blocks, bytes, us, shared, r->verdict);
	else
		fprintf(f, "  %-15s %5d  %-8s %-8s %-18s %-21s %-18s %-8s %s\n", r->method, r->vcpus,
			changed, reseed, blocks, bytes, us, shared, r->verdict);
	if (*r->why && md)
		fprintf(f, "|  |  |  |  |  |  |  |  | %s |\n", r->why);
	else if (*r->why)
		fprintf(f, "  %22s%s\n", "", r->why);
}

static void table(FILE *f, struct row *rows, int n, int md)
{
	const char *kernels[16];
	int nk = 0, i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < nk && strcmp(kernels[k], rows[i].kernel); k++)
			;
		if (k == nk && nk < 16)
			kernels[nk++] = rows[i].kernel;
	}
	for (k = 0; k < nk; k++) {
		if (md) {
			fprintf(f, "\n### Kernel: %s\n\n", kernels[k]);
			fprintf(f, "| method | vCPUs | GUID changed | reseed logged | exposure blocks min/med/max | bytes | µs | shared | verdict |\n");
			fprintf(f, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
		} else {
			fprintf(f, "\nkernel: %s\n", kernels[k]);
			fprintf(f, "  %-15s %5s  %-8s %-8s %-18s %-21s %-18s %-8s %s\n", "method", "vCPUs",
				"GUID chg", "reseeded", "exposure blocks", "bytes", "µs (min/med/max)", "shared", "verdict");
		}
		for (i = 0; i < n; i++)
			if (!strcmp(rows[i].kernel, kernels[k]))
				print_row(f, &rows[i], md);
	}
}

/* "exposure window" -> "exposure-window", for the one-word column of -v. */
static const char *slug(const char *verdict)
{
	static char buf[64];
	size_t i;

	snprintf(buf, sizeof(buf), "%s", verdict);
	for (i = 0; buf[i]; i++)
		if (buf[i] == ' ')
			buf[i] = '-';
	return buf;
}

int main(int argc, char **argv)
{
	const char *md_path = NULL, *json_path = NULL;
	struct json_object *all;
	struct row *rows;
	int opt, n, i, verdicts = 0;
	FILE *f;

	while ((opt = getopt(argc, argv, "m:j:v")) != -1) {
		switch (opt) {
		case 'm': md_path = optarg; break;
		case 'j': json_path = optarg; break;
		case 'v': verdicts = 1; break;
		default:
			fprintf(stderr, "usage: matrix-report [-m OUT.md] [-j OUT.json] [-v] ROW.json...\n");
			return 2;
		}
	}
	n = argc - optind;
	if (n < 1) {
		fprintf(stderr, "matrix-report: no rows given\n");
		return 2;
	}
	rows = calloc(n, sizeof(*rows));
	all = json_object_new_array();
	if (!rows || !all)
		return 2;
	for (i = 0; i < n; i++) {
		rows[i].json = json_object_from_file(argv[optind + i]);
		if (!rows[i].json || !json_object_is_type(rows[i].json, json_type_object)) {
			fprintf(stderr, "matrix-report: %s is not a JSON object\n", argv[optind + i]);
			return 2;
		}
		judge(&rows[i]);
		json_object_object_add(rows[i].json, "verdict", json_object_new_string(rows[i].verdict));
		json_object_array_add(all, json_object_get(rows[i].json));
	}
	if (verdicts) {
		for (i = 0; i < n; i++)
			printf("%s %d %s %s guid_changed=%d/%d diverged=%d/%d exposure_max=%lld"
			       " reseeded_once=%d/%d control_reseeds=%d%s%s\n",
			       rows[i].kernel, rows[i].vcpus, rows[i].method, slug(rows[i].verdict),
			       rows[i].changed, rows[i].clones, rows[i].diverged, rows[i].clones,
			       rows[i].bmax, rows[i].reseeded_once, rows[i].clones, rows[i].control_reseeds,
			       *rows[i].why ? " # " : "", rows[i].why);
	} else {
		table(stdout, rows, n, 0);
	}
	if (md_path) {
		f = fopen(md_path, "w");
		if (!f) {
			perror(md_path);
			return 2;
		}
		fprintf(f, "## Fork matrix\n\nExposure: blocks of 16 bytes (and guest µs) that a clone produced from the pre-fork state after its GUID had changed, min/median/max over the clones that saw a new GUID. Shared: the fewest blocks any clone produced after the snapshot point that equal the reference clone's (with no fork signal, the whole window).\n");
		table(f, rows, n, 1);
		fclose(f);
	}
	if (json_path && json_object_to_file_ext(json_path, all, JSON_C_TO_STRING_PRETTY)) {
		fprintf(stderr, "matrix-report: cannot write %s\n", json_path);
		return 2;
	}
	json_object_put(all);
	for (i = 0; i < n; i++)
		json_object_put(rows[i].json);
	free(rows);
	return 0;
}
