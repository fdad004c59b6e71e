// SPDX-License-Identifier: GPL-2.0
/*
 * WireGuard in a QEMU filter-dump capture of one restored clone: the frame
 * parser and what the clone did after the restore.  Every byte of a capture
 * comes from a guest, so every length is checked against the bytes really
 * captured and multi-byte fields are assembled byte by byte.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pcap/pcap.h>
#include "wgpcap.h"

/* ---- frames --------------------------------------------------------------- */

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/*
 * The UDP payload of an Ethernet II / IPv4 / UDP frame, or the class of
 * frame it is not.  The IP total length, not the frame, bounds the packet:
 * short frames are padded to 60 bytes on the wire.
 */
static int udp_payload(const uint8_t *f, size_t len, const uint8_t **pl, size_t *plen,
		       uint16_t *sport, uint16_t *dport)
{
	const uint8_t *ip, *udp;
	size_t ihl, tot, ulen;

	if (len < ETH_HLEN)
		return WGF_MALFORMED;
	if (be16(f + 12) != ETHERTYPE_IPV4)
		return WGF_NOT_UDP;
	ip = f + ETH_HLEN;
	len -= ETH_HLEN;
	if (len < IP_MIN_HLEN || ip[0] >> 4 != 4)
		return WGF_MALFORMED;
	ihl = (size_t)(ip[0] & 0xf) * 4;
	tot = be16(ip + 2);
	if (ihl < IP_MIN_HLEN || tot < ihl || tot > len)
		return WGF_MALFORMED;
	if (be16(ip + 6) & (IP_MF | IP_OFFMASK))
		return WGF_FRAGMENT;
	if (ip[9] != PROTO_UDP)
		return WGF_NOT_UDP;
	udp = ip + ihl;
	tot -= ihl;
	if (tot < UDP_HLEN)
		return WGF_MALFORMED;
	ulen = be16(udp + 4);
	if (ulen < UDP_HLEN || ulen > tot)
		return WGF_MALFORMED;
	*sport = be16(udp);
	*dport = be16(udp + 2);
	*pl = udp + UDP_HLEN;
	*plen = ulen - UDP_HLEN;
	return WGF_OTHER;
}

/* FNV-1a: only ever compared between messages with the same key, or keys. */
static uint64_t payload_hash(const uint8_t *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* A WireGuard message is told by its header and its exact size alone. */
static int wg_message(const uint8_t *p, size_t len, struct wg_msg *m)
{
	const struct wg_layout *l;

	memset(m, 0, sizeof(*m));
	if (len < 4 || p[1] || p[2] || p[3])
		return -1;
	m->type = p[0];
	m->bytes = p;
	m->len = len;
	if (m->type == WG_DATA) {
		if (len < WG_DATA_MIN_LEN || (len - WG_DATA_HLEN) % 16)
			return -1;
		m->receiver = le32(p + 4);
		m->counter = le64(p + 8);
		m->payload = p + WG_DATA_HLEN;
		m->payload_len = len - WG_DATA_HLEN;
		return 0;
	}
	if (m->type < WG_INITIATION || m->type > WG_COOKIE)
		return -1;
	l = &wg_layouts[m->type];
	if (len != l->len)
		return -1;
	if (l->sender)
		m->sender = le32(p + l->sender);
	if (l->receiver)
		m->receiver = le32(p + l->receiver);
	if (l->ephemeral)
		m->ephemeral = payload_hash(p + l->ephemeral, WG_KEY_LEN);
	return 0;
}

/* The UDP destination port of a frame, or -1. */
static int udp_dport(const uint8_t *frame, size_t len)
{
	const uint8_t *pl;
	uint16_t sport, dport;
	size_t plen;

	if (udp_payload(frame, len, &pl, &plen, &sport, &dport) != WGF_OTHER)
		return -1;
	return dport;
}

/*
 * With the VM's MAC, the Ethernet addresses say who sent a message: a peer
 * may listen on the VM's port too.  The VM's end must still be the port,
 * where its WireGuard listens; anything else the VM sends is other UDP.
 */
static int by_mac(int from_vm, int to_vm, uint16_t port, uint16_t sport, uint16_t dport,
		  struct wg_msg *m)
{
	if (from_vm && to_vm)
		return WGF_AMBIGUOUS;
	if (from_vm && sport == port) {
		m->remote_port = dport;
		return WGF_SENT;
	}
	if (to_vm && dport == port) {
		m->remote_port = sport;
		return WGF_RECEIVED;
	}
	return WGF_OTHER;
}

int wg_classify(const uint8_t *frame, size_t len, uint16_t port, const uint8_t *mac, struct wg_msg *m)
{
	const uint8_t *pl = NULL;
	uint16_t sport = 0, dport = 0;
	size_t plen = 0;
	int class, from_vm = 0, to_vm = 0;

	memset(m, 0, sizeof(*m));
	if (mac && len >= ETH_HLEN) {
		to_vm = !memcmp(frame, mac, ETH_ALEN);
		from_vm = !memcmp(frame + ETH_ALEN, mac, ETH_ALEN);
		if (!from_vm && !to_vm)
			return WGF_FOREIGN;
	}
	class = udp_payload(frame, len, &pl, &plen, &sport, &dport);
	if (class != WGF_OTHER || (sport != port && dport != port))
		return class;
	if (wg_message(pl, plen, m))
		return WGF_OTHER;
	if (mac)
		return by_mac(from_vm, to_vm, port, sport, dport, m);
	if (sport == port && dport == port)
		return WGF_AMBIGUOUS;
	m->remote_port = sport == port ? dport : sport;
	return sport == port ? WGF_SENT : WGF_RECEIVED;
}

/* ---- index sets ------------------------------------------------------------ */

/*
 * Open addressing over a power-of-two table kept at most half full.  The
 * indices are random in real traffic, but a capture could hold any, so the
 * slot is a multiplicative hash rather than the low bits.
 */
#define SET_USED (1ULL << 32)

static size_t set_slot(const struct wg_set *s, uint32_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 29) & s->mask;
}

static int set_has(const struct wg_set *s, uint32_t key)
{
	size_t i;

	if (!s->slot)
		return 0;
	for (i = set_slot(s, key); s->slot[i]; i = (i + 1) & s->mask)
		if (s->slot[i] == (key | SET_USED))
			return 1;
	return 0;
}

static void set_put(struct wg_set *s, uint32_t key)
{
	size_t i;

	for (i = set_slot(s, key); s->slot[i]; i = (i + 1) & s->mask)
		if (s->slot[i] == (key | SET_USED))
			return;
	s->slot[i] = key | SET_USED;
	s->n++;
}

static int set_grow(struct wg_set *s)
{
	struct wg_set bigger = { .mask = s->slot ? 2 * s->mask + 1 : 63 };
	size_t i;

	bigger.slot = calloc(bigger.mask + 1, sizeof(*bigger.slot));
	if (!bigger.slot)
		return -1;
	for (i = 0; s->slot && i <= s->mask; i++)
		if (s->slot[i])
			set_put(&bigger, (uint32_t)s->slot[i]);
	free(s->slot);
	*s = bigger;
	return 0;
}

static int set_add(struct wg_set *s, uint32_t key)
{
	if ((!s->slot || 2 * (s->n + 1) > s->mask + 1) && set_grow(s))
		return -1;
	set_put(s, key);
	return 0;
}

static void set_free(struct wg_set *s)
{
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

void wg_set_free(struct wg_set *s)
{
	set_free(s);
}

int wg_early_unshared(struct wg_capture **c, size_t n, size_t k, struct wg_set *out)
{
	const struct wg_set *mine = &c[k]->early;
	size_t i, j;

	memset(out, 0, sizeof(*out));
	for (i = 0; n > 1 && mine->slot && i <= mine->mask; i++) {
		uint32_t key = (uint32_t)mine->slot[i];

		if (!mine->slot[i])
			continue;
		for (j = 0; j < n; j++)
			if (j != k && set_has(&c[j]->early, key))
				break;
		if (j == n && set_add(out, key))
			return -1;
	}
	return 0;
}

/* ---- one clone -------------------------------------------------------------- */

void wg_capture_init(struct wg_capture *c, uint16_t port, uint16_t marker)
{
	memset(c, 0, sizeof(*c));
	c->port = port;
	c->marker = marker;
	c->t0_us = -1;
	c->prefork_last_us = -1;
	c->first_initiation_us = -1;
	c->first_answer_us = -1;
	c->handshake_us = -1;
	c->first_new_data_us = -1;
}

void wg_capture_by_mac(struct wg_capture *c, const uint8_t mac[ETH_ALEN])
{
	c->by_mac = 1;
	memcpy(c->mac, mac, ETH_ALEN);
}

void wg_capture_free(struct wg_capture *c)
{
	set_free(&c->initiated);
	set_free(&c->asked);
	set_free(&c->answered);
	set_free(&c->answering);
	set_free(&c->postfork);
	set_free(&c->early);
	set_free(&c->derived);
	free(c->shakes);
	c->shakes = NULL;
	c->nshakes = c->shakes_cap = 0;
	free(c->hello.v);
	free(c->sessions.v);
	memset(&c->hello, 0, sizeof(c->hello));
	memset(&c->sessions, 0, sizeof(c->sessions));
	free(c->peers);
	c->peers = NULL;
	c->npeers = c->peers_cap = 0;
	free(c->data);
	c->data = NULL;
	c->ndata = c->data_cap = 0;
}

static int __attribute__((format(printf, 2, 3))) bad(struct wg_capture *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	return -1;
}

/* Room for one more element in a growable array: doubles, from FIRST. */
static int grow(struct wg_capture *c, void **v, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t want = *cap ? 2 * *cap : first;
	void *p;

	if (n < *cap)
		return 0;
	if (want > SIZE_MAX / size)
		return bad(c, "out of memory");
	p = realloc(*v, want * size);
	if (!p)
		return bad(c, "out of memory");
	*v = p;
	*cap = want;
	return 0;
}

/* Handshakes are few: a list searched from its newest entry is enough. */
static int indices_add(struct wg_capture *c, struct wg_indices *l, uint32_t index, uint64_t ephemeral)
{
	if (grow(c, (void **)&l->v, &l->cap, l->n, sizeof(*l->v), 16))
		return -1;
	l->v[l->n++] = (struct wg_index){ .index = index, .ephemeral = ephemeral };
	return 0;
}

/* The ephemeral seen with INDEX, newest first; 0 if none. */
static uint64_t indices_find(const struct wg_indices *l, uint32_t index)
{
	size_t i;

	for (i = l->n; i-- > 0;)
		if (l->v[i].index == index)
			return l->v[i].ephemeral;
	return 0;
}

/* ---- what an original keeps for its clones ---------------------------------- */

/* An original held keys for the session whose data goes to INDEX. */
static int derive(struct wg_capture *c, uint32_t index)
{
	if (c->record && set_add(&c->derived, index))
		return bad(c, "out of memory");
	return 0;
}

/* An original's handshake message, byte for byte (see struct wg_shake). */
static int keep_shake(struct wg_capture *c, const struct wg_msg *m)
{
	struct wg_shake *s;

	if (!c->record || (m->type != WG_INITIATION && m->type != WG_RESPONSE))
		return 0;
	if (grow(c, (void **)&c->shakes, &c->shakes_cap, c->nshakes, sizeof(*c->shakes), 16))
		return -1;
	s = &c->shakes[c->nshakes++];
	memset(s, 0, sizeof(*s));
	s->hash = payload_hash(m->bytes, m->len);
	s->len = (uint32_t)m->len;
	memcpy(s->bytes, m->bytes, m->len);
	return 0;
}

static int cmp_shake(const void *pa, const void *pb)
{
	const struct wg_shake *a = pa, *b = pb;

	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return memcmp(a->bytes, b->bytes, a->len);
}

/* Is M a byte copy of one of the original O's handshake messages? */
static int is_copy(const struct wg_capture *o, const struct wg_msg *m)
{
	struct wg_shake key = { .hash = payload_hash(m->bytes, m->len), .len = (uint32_t)m->len };

	if (!o->nshakes || m->len > sizeof(key.bytes))
		return 0;
	memcpy(key.bytes, m->bytes, m->len);
	return bsearch(&key, o->shakes, o->nshakes, sizeof(key), cmp_shake) != NULL;
}

/* Did the original O set up the session at INDEX with the keys ID? */
static int origin_session(const struct wg_capture *o, uint32_t index, uint64_t id)
{
	size_t i;

	for (i = 0; i < o->sessions.n; i++)
		if (o->sessions.v[i].index == index && o->sessions.v[i].ephemeral == id)
			return 1;
	return 0;
}

/*
 * With an original, a handshake message makes a post-fork session only if
 * the clone handled it after its resume and it is no copy of the
 * original's: one before t0 was sealed before the snapshot (a frame in
 * flight, or queued by the peer), one with the original's bytes is a
 * replay.  Without an original, every message does.  The one exception is
 * the VM's own initiation before t0 that no sibling clone sent alike
 * (early_fresh): a fork-safe kernel initiates as soon as it learns of the
 * fork, which can be before the agent's first heartbeat leaves.
 */
static int fresh(const struct wg_capture *c, const struct wg_msg *m)
{
	return !c->origin || (c->t0_us >= 0 && !is_copy(c->origin, m));
}

static int fresh_initiation(const struct wg_capture *c, const struct wg_msg *m)
{
	if (!c->origin || c->t0_us >= 0)
		return fresh(c, m);
	return c->early_fresh && set_has(c->early_fresh, m->sender) && !is_copy(c->origin, m);
}

/*
 * A response to one of the VM's post-fork initiations is post-fork
 * whenever it came, even before t0: it names that initiation's index,
 * which nobody held before the restore.  The peer's restore can answer an
 * early initiation before the agent's first heartbeat leaves.
 */
static int fresh_response(const struct wg_capture *c, const struct wg_msg *m)
{
	return set_has(&c->initiated, m->receiver) && (!c->origin || !is_copy(c->origin, m));
}

/* ---- sessions ---------------------------------------------------------------- */

/* A session's name: both of its ephemeral keys. */
static uint64_t session_id(uint64_t initiator, uint64_t responder)
{
	return (initiator ^ (responder * 0x9e3779b97f4a7c15ULL)) ?: 1;
}

/* A post-fork session: its index, named by both of its ephemeral keys. */
static int session_add(struct wg_capture *c, uint32_t index, uint64_t id)
{
	if (set_add(&c->postfork, index))
		return bad(c, "out of memory");
	return derive(c, index) ?: indices_add(c, &c->sessions, index, id);
}

/*
 * The VM completed a handshake at T: INDEX is where its data now goes,
 * INITIATOR the initiation's ephemeral, M the response, PEER the peer it
 * had initiated to (NULL when it answered).  With an original, one that
 * sets up one of the original's sessions again (the same index and keys)
 * is that session and no rekey.
 */
static int handshake(struct wg_capture *c, int64_t t, uint32_t index, uint64_t initiator,
		     const struct wg_msg *m, struct wg_peer *peer)
{
	uint64_t id = session_id(initiator, m->ephemeral);

	if (c->origin && origin_session(c->origin, index, id))
		return 0;
	if (c->handshake_us < 0)
		c->handshake_us = t;
	if (peer && peer->handshake_us < 0)
		peer->handshake_us = t;
	return session_add(c, index, id);
}

/* What a data message the VM sent turned out to be. */
enum wg_attr { WGA_POSTFORK, WGA_PREFORK, WGA_UNATTRIBUTED };

static int keep_data(struct wg_capture *c, int64_t t, const struct wg_msg *m, enum wg_attr attr)
{
	struct wg_data *d;

	if (grow(c, (void **)&c->data, &c->data_cap, c->ndata, sizeof(*c->data), 1024))
		return -1;
	d = &c->data[c->ndata++];
	memset(d, 0, sizeof(*d));
	d->receiver = m->receiver;
	d->us = t;
	d->prefork = attr == WGA_PREFORK;
	d->unattributed = attr == WGA_UNATTRIBUTED;
	d->early = c->marker && c->t0_us < 0;
	d->session = indices_find(&c->sessions, m->receiver);
	d->counter = m->counter;
	d->len = (uint32_t)m->payload_len;
	d->hash = payload_hash(m->payload, m->payload_len);
	memcpy(d->tag, m->payload + m->payload_len - WG_TAG_LEN, WG_TAG_LEN);
	return 0;
}

/* The peer at PORT, added when ADD; NULL when absent or out of memory. */
static struct wg_peer *peer_at(struct wg_capture *c, uint16_t port, int add)
{
	struct wg_peer *p;
	size_t i;

	for (i = 0; i < c->npeers; i++)
		if (c->peers[i].port == port)
			return &c->peers[i];
	if (!add)
		return NULL;
	if (c->npeers == c->peers_cap) {
		size_t cap = c->peers_cap ? 2 * c->peers_cap : 16;

		p = realloc(c->peers, cap * sizeof(*p));
		if (!p)
			return NULL;
		c->peers = p;
		c->peers_cap = cap;
	}
	p = &c->peers[c->npeers++];
	p->port = port;
	p->initiation_us = p->handshake_us = -1;
	return p;
}

static int postfork_data(struct wg_capture *c, int64_t t, const struct wg_msg *m)
{
	if (c->first_new_data_us < 0)
		c->first_new_data_us = t;
	return keep_data(c, t, m, WGA_POSTFORK);
}

static int prefork_data(struct wg_capture *c, int64_t t, const struct wg_msg *m)
{
	c->prefork_packets++;
	c->prefork_last_us = t;
	return keep_data(c, t, m, WGA_PREFORK);
}

/*
 * With an original, by matching (see struct wg_capture): an index that
 * names both a pre-fork and a post-fork session cannot say which keys
 * sealed the message, one that names neither says nothing; either is
 * unattributed, never a guess.
 */
static int matched_data(struct wg_capture *c, int64_t t, const struct wg_msg *m)
{
	int pre = set_has(&c->origin->derived, m->receiver);
	int post = set_has(&c->postfork, m->receiver);

	if (post && !pre)
		return postfork_data(c, t, m);
	if (pre && !post)
		return prefork_data(c, t, m);
	c->unattributed_packets++;
	return keep_data(c, t, m, WGA_UNATTRIBUTED);
}

/*
 * A session is post-fork when this capture shows its whole handshake: our
 * initiation answered (the responder's index is where we send), or an
 * initiation we answered (the initiator's index is).  A response alone is
 * not enough: its keys may have been derived before the snapshot and the
 * frame only left the queue after the restore.  Without an original, any
 * response the VM sent is its handshake_us all the same.
 */
static int sent_msg(struct wg_capture *c, int64_t t, const struct wg_msg *m)
{
	struct wg_peer *p;

	switch (m->type) {
	case WG_INITIATION:
		if (c->first_initiation_us < 0)
			c->first_initiation_us = t;
		p = peer_at(c, m->remote_port, 1);
		if (!p)
			return bad(c, "out of memory");
		if (p->initiation_us < 0)
			p->initiation_us = t;
		if (c->origin && c->t0_us < 0 && set_add(&c->early, m->sender))
			return bad(c, "out of memory");
		if (fresh_initiation(c, m) && set_add(&c->initiated, m->sender))
			return bad(c, "out of memory");
		if ((!c->origin || !is_copy(c->origin, m)) && set_add(&c->asked, m->sender))
			return bad(c, "out of memory");
		return indices_add(c, &c->hello, m->sender, m->ephemeral);
	case WG_RESPONSE:
		if (!c->origin && c->handshake_us < 0)
			c->handshake_us = t;
		if (derive(c, m->receiver))
			return -1;
		if (!set_has(&c->answering, m->receiver) || !fresh(c, m))
			return 0;
		return handshake(c, t, m->receiver, indices_find(&c->hello, m->receiver), m, NULL);
	case WG_DATA:
		c->data_sent++;
		if (derive(c, m->receiver))
			return -1;
		if (c->origin)
			return matched_data(c, t, m);
		if (set_has(&c->postfork, m->receiver))
			return postfork_data(c, t, m);
		return prefork_data(c, t, m);
	}
	return 0;
}

static int received_msg(struct wg_capture *c, int64_t t, const struct wg_msg *m)
{
	switch (m->type) {
	case WG_INITIATION:
		if (fresh(c, m) && set_add(&c->answering, m->sender))
			return bad(c, "out of memory");
		return indices_add(c, &c->hello, m->sender, m->ephemeral);
	case WG_RESPONSE:
		if (set_has(&c->asked, m->receiver)) {
			if (c->first_answer_us < 0)
				c->first_answer_us = t;
			if (set_add(&c->answered, m->receiver))
				return bad(c, "out of memory");
		}
		if (!fresh_response(c, m))
			return 0;
		return handshake(c, t, m->sender, indices_find(&c->hello, m->receiver), m,
				 peer_at(c, m->remote_port, 0));
	case WG_DATA:
		c->data_received++;
		return 0;
	}
	return 0;
}

int wg_capture_frame(struct wg_capture *c, int64_t t_us, const uint8_t *frame, size_t len)
{
	uint64_t *not_wireguard[] = {
		[WGF_MALFORMED] = &c->malformed, [WGF_NOT_UDP] = &c->not_udp,
		[WGF_FRAGMENT] = &c->fragments, [WGF_OTHER] = &c->other,
	};
	struct wg_msg m;
	int64_t t;
	int class;

	c->frames++;
	class = wg_classify(frame, len, c->port, c->by_mac ? c->mac : NULL, &m);
	/* A sibling's frame flooded to this clone is none of its own, not even its heartbeat. */
	if (class == WGF_FOREIGN) {
		c->foreign++;
		return 0;
	}
	if (c->t0_us < 0 && (!c->marker || udp_dport(frame, len) == c->marker))
		c->t0_us = t_us;
	/* A host clock stepped back puts a frame at t0, never at "-1: never". */
	if (c->t0_us < 0 || t_us <= c->t0_us)
		t = 0;
	else if (__builtin_sub_overflow(t_us, c->t0_us, &t))
		t = INT64_MAX;
	if (class <= WGF_OTHER) {
		(*not_wireguard[class])++;
		return 0;
	}
	switch (class) {
	case WGF_SENT:
		c->sent[m.type]++;
		return keep_shake(c, &m) ?: sent_msg(c, t, &m);
	case WGF_RECEIVED:
		c->received[m.type]++;
		return keep_shake(c, &m) ?: received_msg(c, t, &m);
	}
	/* WGF_AMBIGUOUS: counting it either way would be a silent guess. */
	if (c->by_mac)
		return bad(c, "record %llu: a WireGuard message from the VM's MAC to itself: "
			   "cannot tell who sent it", (unsigned long long)c->frames);
	return bad(c, "record %llu: a WireGuard message from port %u to port %u: cannot tell who sent it",
		   (unsigned long long)c->frames, c->port, c->port);
}

/* ---- pcap files ------------------------------------------------------------ */

/*
 * A record's time in microseconds.  Both fields come from the file, so they
 * are clamped to 2^40 first: far past any real capture, and small enough
 * that neither the sum nor a difference of two times can overflow.
 */
#define TS_MAX (1LL << 40)

static int64_t record_us(const struct pcap_pkthdr *h)
{
	int64_t s = h->ts.tv_sec, us = h->ts.tv_usec;

	s = s < 0 ? 0 : s > TS_MAX ? TS_MAX : s;
	us = us < 0 ? 0 : us > TS_MAX ? TS_MAX : us;
	return s * 1000000 + us;
}

static int read_records(struct wg_capture *c, pcap_t *p, const char *name)
{
	struct pcap_pkthdr *h;
	const u_char *frame;
	char why[sizeof(c->error)];
	int rc;

	while ((rc = pcap_next_ex(p, &h, &frame)) == 1) {
		if (wg_capture_frame(c, record_us(h), frame, h->caplen)) {
			snprintf(why, sizeof(why), "%s", c->error);
			return bad(c, "%s: %s", name, why);
		}
	}
	if (rc == PCAP_ERROR_BREAK && !c->frames)
		return bad(c, "%s: no frames at all (not even the heartbeat)", name);
	if (rc == PCAP_ERROR_BREAK && c->t0_us < 0)
		return bad(c, "%s: no frame to the marker port %u: the resume cannot be timed", name, c->marker);
	if (rc == PCAP_ERROR_BREAK)
		return 0;
	if (strstr(pcap_geterr(p), "truncated"))
		return bad(c, "%s: truncated capture (record %llu): %s",
			   name, (unsigned long long)c->frames + 1, pcap_geterr(p));
	return bad(c, "%s: bad record %llu: %s", name, (unsigned long long)c->frames + 1, pcap_geterr(p));
}

int wg_capture_load(struct wg_capture *c, FILE *f, const char *name)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	pcap_t *p;
	int ch, dlt, rc;

	ch = getc(f);
	if (ch == EOF || ungetc(ch, f) == EOF) {
		rc = ferror(f);
		fclose(f);
		return bad(c, "%s: %s", name, rc ? "read error" : "empty file");
	}
	p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_MICRO, errbuf);
	if (!p) {
		fclose(f);
		if (strstr(errbuf, "truncated"))
			return bad(c, "%s: truncated capture header: %s", name, errbuf);
		return bad(c, "%s: not a pcap capture: %s", name, errbuf);
	}
	dlt = pcap_datalink(p);
	if (dlt != DLT_EN10MB) {
		const char *dlt_name = pcap_datalink_val_to_name(dlt);

		rc = bad(c, "%s: link type %d (%s), not Ethernet", name, dlt, dlt_name ? dlt_name : "unknown");
	} else {
		rc = read_records(c, p, name);
	}
	pcap_close(p);
	return rc;
}

void wg_origin_begin(struct wg_capture *o)
{
	o->record = 1;
}

/* Sorted, so that each of a clone's handshake messages is one search. */
void wg_origin_seal(struct wg_capture *o)
{
	if (o->nshakes)
		qsort(o->shakes, o->nshakes, sizeof(*o->shakes), cmp_shake);
}

int wg_origin_load(struct wg_capture *o, FILE *f, const char *name)
{
	wg_origin_begin(o);
	if (wg_capture_load(o, f, name))
		return -1;
	wg_origin_seal(o);
	return 0;
}

/* ---- across clones ---------------------------------------------------------- */

static int cmp_key(const struct wg_data *a, const struct wg_data *b)
{
	if (a->receiver != b->receiver)
		return a->receiver < b->receiver ? -1 : 1;
	if (a->session != b->session)
		return a->session < b->session ? -1 : 1;
	if (a->counter != b->counter)
		return a->counter < b->counter ? -1 : 1;
	return 0;
}

static int cmp_bytes(const struct wg_data *a, const struct wg_data *b)
{
	int r;

	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	r = memcmp(a->tag, b->tag, sizeof(a->tag));
	if (r)
		return r;
	return (a->hash > b->hash) - (a->hash < b->hash);
}

static int cmp_data(const void *pa, const void *pb)
{
	const struct wg_data *a = pa, *b = pb;

	return cmp_key(a, b) ?: cmp_bytes(a, b);
}

/* The end of the run of messages with d[i]'s key (the data is sorted). */
static size_t run_end(const struct wg_data *d, size_t n, size_t i)
{
	size_t j = i + 1;

	while (j < n && !cmp_key(&d[i], &d[j]))
		j++;
	return j;
}

/* Sorted by key then bytes: a run is all one payload iff its ends are equal. */
static int one_payload(const struct wg_data *d, size_t i, size_t end)
{
	return !cmp_bytes(&d[i], &d[end - 1]);
}

static void sort_clone(struct wg_capture *c)
{
	size_t i, end;

	if (c->ndata)
		qsort(c->data, c->ndata, sizeof(*c->data), cmp_data);
	c->reused = c->self_reuse = 0;
	for (i = 0; i < c->ndata; i = end) {
		end = run_end(c->data, c->ndata, i);
		c->self_reuse += !one_payload(c->data, i, end);
	}
	for (i = 0; i < c->ndata; i++)
		c->data[i].reused = 0;
}

static void mark_reused(struct wg_data *d, size_t i, size_t end)
{
	for (; i < end; i++)
		d[i].reused = 1;
}

/* A merge of two sorted clones, key by key. */
static void compare_pair(struct wg_capture *a, struct wg_capture *b, uint64_t *reuse, uint64_t *identical)
{
	size_t i = 0, j = 0, ie, je;
	int k;

	while (i < a->ndata && j < b->ndata) {
		k = cmp_key(&a->data[i], &b->data[j]);
		if (k < 0) {
			i = run_end(a->data, a->ndata, i);
			continue;
		}
		if (k > 0) {
			j = run_end(b->data, b->ndata, j);
			continue;
		}
		ie = run_end(a->data, a->ndata, i);
		je = run_end(b->data, b->ndata, j);
		if (one_payload(a->data, i, ie) && one_payload(b->data, j, je) &&
		    !cmp_bytes(&a->data[i], &b->data[j])) {
			(*identical)++;
		} else {
			(*reuse)++;
			mark_reused(a->data, i, ie);
			mark_reused(b->data, j, je);
		}
		i = ie;
		j = je;
	}
}

/* The first message with KEY's key in D (sorted), or N if there is none. */
static size_t run_find(const struct wg_data *d, size_t n, const struct wg_data *key)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (cmp_key(&d[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && !cmp_key(&d[lo], key) ? lo : n;
}

/* Did C send D's message before its marker, pre-fork, with D's bytes only? */
static int sent_early_alike(const struct wg_capture *c, const struct wg_data *d)
{
	size_t i = run_find(c->data, c->ndata, d), end;

	if (i == c->ndata)
		return 0;
	end = run_end(c->data, c->ndata, i);
	return one_payload(c->data, i, end) && !cmp_bytes(&c->data[i], d) &&
	       c->data[i].prefork && c->data[i].early;
}

static int in_flight(struct wg_capture **c, size_t n, size_t k, const struct wg_data *d)
{
	size_t j;

	if (n < 2 || !d->prefork || !d->early)
		return 0;
	for (j = 0; j < n; j++)
		if (j != k && !sent_early_alike(c[j], d))
			return 0;
	return 1;
}

/* Pre-fork and in-flight counts from the messages (see the header). */
static void count_prefork(struct wg_capture **c, size_t n, size_t k)
{
	struct wg_capture *me = c[k];
	struct wg_data *d;
	size_t i;

	me->prefork_packets = me->inflight_packets = 0;
	me->prefork_last_us = -1;
	for (i = 0; i < me->ndata; i++) {
		d = &me->data[i];
		d->inflight = (uint8_t)in_flight(c, n, k, d);
		if (d->inflight) {
			me->inflight_packets++;
		} else if (d->prefork) {
			me->prefork_packets++;
			if (d->us > me->prefork_last_us)
				me->prefork_last_us = d->us;
		}
	}
}

void wg_compare(struct wg_capture **c, size_t n, uint64_t *reuse, uint64_t *identical)
{
	size_t i, j;

	*reuse = *identical = 0;
	for (i = 0; i < n; i++)
		sort_clone(c[i]);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			compare_pair(c[i], c[j], reuse, identical);
	for (i = 0; i < n; i++) {
		c[i]->reused = 0;
		for (j = 0; j < c[i]->ndata; j++)
			c[i]->reused += c[i]->data[j].reused;
	}
	for (i = 0; i < n; i++)
		count_prefork(c, n, i);
}
