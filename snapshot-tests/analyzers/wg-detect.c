// SPDX-License-Identifier: GPL-2.0
/*
 * wg-detect: did restored clones of one VM reuse WireGuard nonces?
 *
 *   wg-detect -p PORT [-m MARKER-PORT] [-M MAC] [-o ORIGINAL.pcap] [-j OUT.json] CLONE.pcap...
 *
 * Each CLONE.pcap is QEMU's filter-dump of one clone, both directions, from
 * its restore on.  t0 is the first frame sent to MARKER-PORT (the guest's
 * heartbeat: frames can arrive while the clone is still loading, with a
 * clock not yet restored), or without -m the first frame.  PORT is the VM's WireGuard UDP port: a message from
 * it was sent by the VM, one to it was received, and one from it to it is
 * an error (give the peer another port).
 *
 * -M MAC (aa:bb:cc:dd:ee:ff), the VM's: who sent a frame is told by its
 * Ethernet addresses instead, so a peer may use PORT too.  A message from
 * MAC (and from PORT) was sent by the VM, one to MAC (and to PORT) was
 * received, one from MAC to MAC is an error; a frame neither from nor to
 * MAC (a sibling clone's, flooded by a switch) is counted in
 * foreign_frames and ignored, even as a heartbeat.
 *
 * -o ORIGINAL.pcap, the original VM's capture up to the snapshot (read like
 * the clones, with -M if given, but without a marker: there is no resume
 * to time): every session it held keys for is a pre-fork session, told by
 * its receiver index (a handshake the VM completed, a response it sent,
 * data it sent under the index) and, where the handshake is seen, its
 * ephemeral keys; each of its handshake messages is kept byte for byte.
 * The clones' data is then attributed by matching, not by absence.
 *
 * For each clone:
 *  - prefork_packets: data the VM sent under a pre-fork session, and
 *    prefork_last_us, when it sent the last of them.  Without -o, a
 *    session this capture did not see being set up, i.e. with a keypair
 *    from before the snapshot; with -o, a session of the original's whose
 *    index no post-fork session of this clone's has taken since;
 *  - unattributed_packets (-o; else 0): data under an index that is
 *    neither a pre-fork session's nor a post-fork one's, or both (an index
 *    handed out again for other keys): counted apart, never as either;
 *  - inflight_packets: those of the pre-fork ones that were already sealed
 *    and queued on the NIC at the snapshot, not counted in prefork_packets:
 *    with -m and two clones or more, a pre-fork message that every clone
 *    sent byte for byte before its heartbeat (wgpcap.h, wg_compare());
 *  - postfork_sessions: how many receiver indices the capture shows a
 *    post-fork session set up for: an initiation and its response.  With
 *    -o both after t0 (or an initiation of the VM's before t0 that no
 *    other clone sent: a fork-safe kernel initiates at once, maybe before
 *    the first heartbeat; one sealed before the snapshot leaves every
 *    clone alike), neither a byte copy of a message in the original's
 *    capture (a frame in flight or replayed), and not the same index and
 *    ephemeral keys as a session of the original's;
 *  - first_initiation_us (the VM's first initiation), handshake_us (the
 *    first handshake completed: without -o a response to one of the VM's
 *    initiations, or any response it sent; with -o the first post-fork
 *    session, so that a response alone, sealed before the snapshot, is no
 *    rekey) and first_new_data_us (the first data it sent under a post-fork
 *    session);
 *  - initiations: the initiations the VM sent, before t0 too, but byte
 *    copies of the original's (with -o), and unanswered_initiations,
 *    those no response named: a peer that refused them (a timestamp not
 *    later than the last it accepted from this key), or answers still on
 *    their way when the capture ends; first_answer_us, when the first
 *    response to one of them came (the tunnel works from there, whether
 *    or not its session is known to be post-fork);
 *  - foreign_frames (-M; else 0);
 *  - peers: for each UDP port the VM sent an initiation to (a VM with many
 *    peers reaches each at its own port), when it first did and when the
 *    first answer to one came back (with -o: one that set up a post-fork
 *    session) (JSON only).
 * Times are microseconds after t0, -1 for never.  Across clones, every pair
 * that sent the same (session, counter) is either a nonce reuse
 * (different bytes: the same key and nonce over two plaintexts) or an
 * identical replay, counted apart.  A session is its receiver index, and for
 * one set up after the restore also its two ephemeral keys: two restores of
 * one peer may hand two clones the same index for different keys.
 *
 * Prints one line per clone (with -o, first one for the original: its
 * frames, prefork_sessions, how many indices it held keys for, and
 * handshake_messages) and one for the pairs, and with -j a JSON object:
 * "port", "original" (those counts, "file" and "foreign_frames"; null
 * without -o: a reader can tell how the clones' data was attributed),
 * "mac" (null without -M), "clones", "nonce_reuse_pairs",
 * "identical_pairs".  Exit 0 whatever it found (the caller judges), or 2
 * with one line on bad usage or a capture (the original's too) it cannot
 * read whole.
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

#define USAGE "usage: wg-detect -p PORT [-m MARKER-PORT] [-M MAC] [-o ORIGINAL.pcap] [-j OUT.json] CLONE.pcap..."

struct options {
	uint16_t port, marker;
	int by_mac;
	uint8_t mac[ETH_ALEN];
	const char *original, *json;
};

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

static void parse_mac(struct options *o, const char *s)
{
	if (wg_parse_mac(s, o->mac))
		fail("a MAC address is six bytes in hex, aa:bb:cc:dd:ee:ff, not '%s'", s);
	o->by_mac = 1;
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

static void load(struct clone *cl, const char *path, const struct options *o,
		 const struct wg_capture *origin, const struct wg_set *early_fresh)
{
	FILE *f = fopen(path, "rb");

	cl->path = path;
	if (!cl->name)
		cl->name = clone_name(path);
	wg_capture_init(&cl->cap, o->port, o->marker);
	if (o->by_mac)
		wg_capture_by_mac(&cl->cap, o->mac);
	cl->cap.origin = origin;
	cl->cap.early_fresh = early_fresh;
	if (!f)
		fail("%s: cannot read: %s", path, strerror(errno));
	if (wg_capture_load(&cl->cap, f, path))
		fail("%s", cl->cap.error);
}

/* The original's capture, with no marker: it was never restored. */
static void load_original(struct wg_capture *c, const struct options *o)
{
	FILE *f = fopen(o->original, "rb");

	wg_capture_init(c, o->port, 0);
	if (o->by_mac)
		wg_capture_by_mac(c, o->mac);
	if (!f)
		fail("-o %s: cannot read: %s", o->original, strerror(errno));
	if (wg_origin_load(c, f, o->original))
		fail("-o %s", c->error);
}

/*
 * An initiation a clone sent before its t0 is its own, and may set up a
 * post-fork session, when no other clone sent it too: each clone is read
 * again knowing which of its early initiations those are.
 */
static void reload_early(struct clone *cl, struct wg_capture **caps, int n, char **paths,
			 const struct options *o, const struct wg_capture *original)
{
	struct wg_set *unshared = xcalloc(n, sizeof(*unshared));
	int k;

	for (k = 0; k < n; k++)
		if (wg_early_unshared(caps, n, k, &unshared[k]))
			fail("out of memory");
	for (k = 0; k < n; k++) {
		wg_capture_free(&cl[k].cap);
		load(&cl[k], paths[k], o, original, &unshared[k]);
	}
	/* early_fresh is read only while a capture is loaded. */
	for (k = 0; k < n; k++) {
		cl[k].cap.early_fresh = NULL;
		wg_set_free(&unshared[k]);
	}
	free(unshared);
}

/* ---- output ---------------------------------------------------------------- */

/* The line of old, then what only -o and -M count, so that it is unchanged without. */
static void print_clone(const struct clone *cl, const struct options *o)
{
	const struct wg_capture *c = &cl->cap;

	printf("%s: t0=%lld prefork_packets=%llu inflight_packets=%llu first_initiation_us=%lld handshake_us=%lld "
	       "first_new_data_us=%lld data_sent=%llu data_received=%llu "
	       "prefork_last_us=%lld reused_with_other_clones=%llu frames=%llu malformed=%llu",
	       cl->name, (long long)c->t0_us, (unsigned long long)c->prefork_packets,
	       (unsigned long long)c->inflight_packets,
	       (long long)c->first_initiation_us, (long long)c->handshake_us,
	       (long long)c->first_new_data_us, (unsigned long long)c->data_sent,
	       (unsigned long long)c->data_received, (long long)c->prefork_last_us,
	       (unsigned long long)c->reused, (unsigned long long)c->frames,
	       (unsigned long long)c->malformed);
	if (o->original)
		printf(" unattributed_packets=%llu postfork_sessions=%llu",
		       (unsigned long long)c->unattributed_packets, (unsigned long long)c->postfork.n);
	if (o->by_mac)
		printf(" foreign_frames=%llu", (unsigned long long)c->foreign);
	putchar('\n');
}

static void print_original(const struct wg_capture *c)
{
	printf("original: frames=%llu prefork_sessions=%llu handshake_messages=%llu\n",
	       (unsigned long long)c->frames, (unsigned long long)c->derived.n,
	       (unsigned long long)c->nshakes);
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
	add_int(o, "initiations", (int64_t)c->asked.n);
	add_int(o, "unanswered_initiations", (int64_t)(c->asked.n - c->answered.n));
	add_int(o, "first_answer_us", c->first_answer_us);
	add_int(o, "prefork_packets", (int64_t)c->prefork_packets);
	add_int(o, "prefork_last_us", c->prefork_last_us);
	add_int(o, "inflight_packets", (int64_t)c->inflight_packets);
	add_int(o, "unattributed_packets", (int64_t)c->unattributed_packets);
	add_int(o, "first_initiation_us", c->first_initiation_us);
	add_int(o, "handshake_us", c->handshake_us);
	add_int(o, "first_new_data_us", c->first_new_data_us);
	add_int(o, "data_sent", (int64_t)c->data_sent);
	add_int(o, "data_received", (int64_t)c->data_received);
	add_int(o, "reused_with_other_clones", (int64_t)c->reused);
	add_int(o, "self_reuse", (int64_t)c->self_reuse);
	add_int(o, "foreign_frames", (int64_t)c->foreign);
	json_object_object_add(o, "peers", peers_json(c));
	return o;
}

/* What the clones were matched with; null without -o. */
static struct json_object *original_json(const struct wg_capture *c, const struct options *opt)
{
	struct json_object *o;

	if (!opt->original)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "file", json_object_new_string(opt->original));
	add_int(o, "frames", (int64_t)c->frames);
	add_int(o, "foreign_frames", (int64_t)c->foreign);
	add_int(o, "prefork_sessions", (int64_t)c->derived.n);
	add_int(o, "handshake_messages", (int64_t)c->nshakes);
	return o;
}

static struct json_object *mac_json(const struct options *o)
{
	char s[18];

	if (!o->by_mac)
		return NULL;
	snprintf(s, sizeof(s), "%02x:%02x:%02x:%02x:%02x:%02x",
		 o->mac[0], o->mac[1], o->mac[2], o->mac[3], o->mac[4], o->mac[5]);
	return json_object_new_string(s);
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

static void report(struct clone *cl, int n, const struct wg_capture *original,
		   const struct options *o, uint64_t reuse, uint64_t identical)
{
	struct json_object *out, *clones;
	int k;

	if (o->original)
		print_original(original);
	for (k = 0; k < n; k++)
		print_clone(&cl[k], o);
	printf("nonce_reuse_pairs=%llu identical_pairs=%llu\n",
	       (unsigned long long)reuse, (unsigned long long)identical);
	if (fflush(stdout))
		fail("cannot write the summary: %s", strerror(errno));
	if (!o->json)
		return;
	out = json_object_new_object();
	clones = json_object_new_array();
	for (k = 0; k < n; k++)
		json_object_array_add(clones, clone_json(&cl[k]));
	add_int(out, "port", o->port);
	json_object_object_add(out, "original", original_json(original, o));
	json_object_object_add(out, "mac", mac_json(o));
	json_object_object_add(out, "clones", clones);
	add_int(out, "nonce_reuse_pairs", (int64_t)reuse);
	add_int(out, "identical_pairs", (int64_t)identical);
	write_json(o->json, out);
	json_object_put(out);
}

static void parse_options(int argc, char **argv, struct options *o)
{
	int opt;

	while ((opt = getopt(argc, argv, ":p:m:M:o:j:")) != -1) {
		switch (opt) {
		case 'p':
			o->port = parse_port(optarg);
			break;
		case 'm':
			o->marker = parse_port(optarg);
			break;
		case 'M':
			parse_mac(o, optarg);
			break;
		case 'o':
			o->original = optarg;
			break;
		case 'j':
			o->json = optarg;
			break;
		case ':':
			fail("-%c wants an argument; " USAGE, optopt);
		default:
			fail("unknown option -%c; " USAGE, optopt);
		}
	}
	if (!o->port)
		fail("-p PORT is missing; " USAGE);
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct wg_capture **caps, original;
	uint64_t reuse, identical;
	struct clone *cl;
	int n, k;

	parse_options(argc, argv, &o);
	n = argc - optind;
	if (n < 1)
		fail("no capture given; " USAGE);
	/* First, so that a clone is matched with it frame by frame as it is read. */
	wg_capture_init(&original, o.port, 0);
	if (o.original)
		load_original(&original, &o);
	cl = xcalloc(n, sizeof(*cl));
	caps = xcalloc(n, sizeof(*caps));
	for (k = 0; k < n; k++) {
		load(&cl[k], argv[optind + k], &o, o.original ? &original : NULL, NULL);
		caps[k] = &cl[k].cap;
	}
	if (o.original && n > 1)
		reload_early(cl, caps, n, argv + optind, &o, &original);

	wg_compare(caps, n, &reuse, &identical);
	report(cl, n, &original, &o, reuse, identical);
	for (k = 0; k < n; k++) {
		wg_capture_free(&cl[k].cap);
		free(cl[k].name);
	}
	wg_capture_free(&original);
	free(caps);
	free(cl);
	return 0;
}
