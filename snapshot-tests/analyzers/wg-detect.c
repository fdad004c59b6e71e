// SPDX-License-Identifier: GPL-2.0
/*
 * wg-detect: did restored clones of one VM reuse WireGuard nonces?
 *
 *   wg-detect -p PORT [-m MARKER-PORT] [-j OUT.json] CLONE.pcap...
 *
 * Each CLONE.pcap is QEMU's filter-dump of one clone, both directions, from
 * its restore on.  t0 is the first frame sent to MARKER-PORT (the guest's
 * heartbeat: frames can arrive while the clone is still loading, with a
 * clock not yet restored), or without -m the first frame.  PORT is the VM's WireGuard UDP port: a message from
 * it was sent by the VM, one to it was received, and one from it to it is
 * an error (give the peer another port).  For each clone:
 *  - prefork_packets: data the VM sent under a session this capture did not
 *    see being set up, i.e. with a keypair from before the snapshot, and
 *    prefork_last_us, when it sent the last of them;
 *  - inflight_packets: those of them that were already sealed and queued
 *    on the NIC at the snapshot, not counted in prefork_packets: with -m
 *    and two clones or more, a pre-fork message that every clone sent byte
 *    for byte before its heartbeat (wgpcap.h, wg_compare());
 *  - first_initiation_us (the VM's first initiation), handshake_us (the
 *    first handshake completed: a response to one of the VM's initiations,
 *    or any response it sent) and first_new_data_us (the first data it sent
 *    under a post-fork session: one whose initiation and response are both
 *    in the capture);
 *  - peers: for each UDP port the VM sent an initiation to (a VM with many
 *    peers reaches each at its own port), when it first did and when the
 *    first answer to one came back (JSON only).
 * Times are microseconds after t0, -1 for never.  Across clones, every pair
 * that sent the same (session, counter) is either a nonce reuse
 * (different bytes: the same key and nonce over two plaintexts) or an
 * identical replay, counted apart.  A session is its receiver index, and for
 * one set up after the restore also its two ephemeral keys: two restores of
 * one peer may hand two clones the same index for different keys.
 *
 * Prints one line per clone and one for the pairs, and with -j a JSON
 * object.  Exit 0 whatever it found (the caller judges), or 2 with one
 * line on bad usage or a capture it cannot read whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "tool.h"
#include "wgpcap.h"

const char *tool_name = "wg-detect";

#define USAGE "usage: wg-detect -p PORT [-m MARKER-PORT] [-j OUT.json] CLONE.pcap..."

struct clone {
	char *name;
	const char *path;
	struct wg_capture cap;
};

static uint16_t parse_port(const char *s)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < 1 || v > 65535)
		fail("a port is a number from 1 to 65535, not '%s'", s);
	return (uint16_t)v;
}

/* The clone's name: the file's basename without ".pcap". */
static char *clone_name(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t len;
	char *name;

	base = base ? base + 1 : path;
	len = strlen(base);
	if (len > 5 && !strcmp(base + len - 5, ".pcap"))
		len -= 5;
	name = strndup(base, len);
	if (!name)
		fail("out of memory");
	return name;
}

static void load(struct clone *cl, const char *path, uint16_t port, uint16_t marker)
{
	FILE *f = fopen(path, "rb");

	cl->path = path;
	cl->name = clone_name(path);
	wg_capture_init(&cl->cap, port, marker);
	if (!f)
		fail("%s: cannot read: %s", path, strerror(errno));
	if (wg_capture_load(&cl->cap, f, path))
		fail("%s", cl->cap.error);
}

/* ---- output ---------------------------------------------------------------- */

static void print_clone(const struct clone *cl)
{
	const struct wg_capture *c = &cl->cap;

	printf("%s: t0=%lld prefork_packets=%llu inflight_packets=%llu first_initiation_us=%lld handshake_us=%lld "
	       "first_new_data_us=%lld data_sent=%llu data_received=%llu "
	       "prefork_last_us=%lld reused_with_other_clones=%llu frames=%llu malformed=%llu\n",
	       cl->name, (long long)c->t0_us, (unsigned long long)c->prefork_packets,
	       (unsigned long long)c->inflight_packets,
	       (long long)c->first_initiation_us, (long long)c->handshake_us,
	       (long long)c->first_new_data_us, (unsigned long long)c->data_sent,
	       (unsigned long long)c->data_received, (long long)c->prefork_last_us,
	       (unsigned long long)c->reused, (unsigned long long)c->frames,
	       (unsigned long long)c->malformed);
}

static void add_int(struct json_object *o, const char *key, int64_t v)
{
	json_object_object_add(o, key, json_object_new_int64(v));
}

static struct json_object *by_type(const uint64_t *n)
{
	struct json_object *o = json_object_new_object();

	add_int(o, "initiation", (int64_t)n[WG_INITIATION]);
	add_int(o, "response", (int64_t)n[WG_RESPONSE]);
	add_int(o, "cookie", (int64_t)n[WG_COOKIE]);
	add_int(o, "data", (int64_t)n[WG_DATA]);
	return o;
}

static struct json_object *peers_json(const struct wg_capture *c)
{
	struct json_object *a = json_object_new_array(), *p;
	size_t i;

	for (i = 0; i < c->npeers; i++) {
		p = json_object_new_object();
		add_int(p, "port", c->peers[i].port);
		add_int(p, "initiation_us", c->peers[i].initiation_us);
		add_int(p, "handshake_us", c->peers[i].handshake_us);
		json_object_array_add(a, p);
	}
	return a;
}

static struct json_object *clone_json(const struct clone *cl)
{
	const struct wg_capture *c = &cl->cap;
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(cl->name));
	json_object_object_add(o, "file", json_object_new_string(cl->path));
	add_int(o, "t0_us", c->t0_us);
	add_int(o, "frames", (int64_t)c->frames);
	add_int(o, "malformed", (int64_t)c->malformed);
	add_int(o, "not_udp", (int64_t)c->not_udp);
	add_int(o, "fragments", (int64_t)c->fragments);
	add_int(o, "other", (int64_t)c->other);
	json_object_object_add(o, "sent", by_type(c->sent));
	json_object_object_add(o, "received", by_type(c->received));
	add_int(o, "postfork_sessions", (int64_t)c->postfork.n);
	add_int(o, "prefork_packets", (int64_t)c->prefork_packets);
	add_int(o, "prefork_last_us", c->prefork_last_us);
	add_int(o, "inflight_packets", (int64_t)c->inflight_packets);
	add_int(o, "first_initiation_us", c->first_initiation_us);
	add_int(o, "handshake_us", c->handshake_us);
	add_int(o, "first_new_data_us", c->first_new_data_us);
	add_int(o, "data_sent", (int64_t)c->data_sent);
	add_int(o, "data_received", (int64_t)c->data_received);
	add_int(o, "reused_with_other_clones", (int64_t)c->reused);
	add_int(o, "self_reuse", (int64_t)c->self_reuse);
	json_object_object_add(o, "peers", peers_json(c));
	return o;
}

static void write_json(const char *path, struct json_object *out)
{
	const char *text = json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY |
							   JSON_C_TO_STRING_SPACED);
	FILE *f = fopen(path, "w");

	if (!f)
		fail("cannot write %s: %s", path, strerror(errno));
	if (fprintf(f, "%s\n", text) < 0 || fclose(f))
		fail("cannot write %s: %s", path, strerror(errno));
}

static void report(struct clone *cl, int n, uint16_t port, uint64_t reuse, uint64_t identical,
		   const char *json_path)
{
	struct json_object *out, *clones;
	int k;

	for (k = 0; k < n; k++)
		print_clone(&cl[k]);
	printf("nonce_reuse_pairs=%llu identical_pairs=%llu\n",
	       (unsigned long long)reuse, (unsigned long long)identical);
	if (fflush(stdout))
		fail("cannot write the summary: %s", strerror(errno));
	if (!json_path)
		return;
	out = json_object_new_object();
	clones = json_object_new_array();
	for (k = 0; k < n; k++)
		json_object_array_add(clones, clone_json(&cl[k]));
	add_int(out, "port", port);
	json_object_object_add(out, "clones", clones);
	add_int(out, "nonce_reuse_pairs", (int64_t)reuse);
	add_int(out, "identical_pairs", (int64_t)identical);
	write_json(json_path, out);
	json_object_put(out);
}

int main(int argc, char **argv)
{
	const char *json_path = NULL;
	struct wg_capture **caps;
	uint64_t reuse, identical;
	struct clone *cl;
	int opt, n, k, port = 0, marker = 0;

	while ((opt = getopt(argc, argv, ":p:m:j:")) != -1) {
		switch (opt) {
		case 'p':
			port = parse_port(optarg);
			break;
		case 'm':
			marker = parse_port(optarg);
			break;
		case 'j':
			json_path = optarg;
			break;
		case ':':
			fail("-%c wants an argument; " USAGE, optopt);
		default:
			fail("unknown option -%c; " USAGE, optopt);
		}
	}
	if (!port)
		fail("-p PORT is missing; " USAGE);
	n = argc - optind;
	if (n < 1)
		fail("no capture given; " USAGE);
	cl = xcalloc(n, sizeof(*cl));
	caps = xcalloc(n, sizeof(*caps));
	for (k = 0; k < n; k++) {
		load(&cl[k], argv[optind + k], (uint16_t)port, (uint16_t)marker);
		caps[k] = &cl[k].cap;
	}

	wg_compare(caps, n, &reuse, &identical);
	report(cl, n, (uint16_t)port, reuse, identical, json_path);
	for (k = 0; k < n; k++) {
		wg_capture_free(&cl[k].cap);
		free(cl[k].name);
	}
	free(caps);
	free(cl);
	return 0;
}
