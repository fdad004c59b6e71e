/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_WGPCAP_H
#define FORKSAFE_WGPCAP_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The wire: Ethernet II, IPv4, UDP, then a WireGuard message.  wgpcap.c
 * reads it; pcap-synth.c writes it for seeds and known-answer tests.
 */
#define ETH_HLEN 14
#define ETHERTYPE_IPV4 0x0800
#define IP_MIN_HLEN 20
#define IP_MF 0x2000
#define IP_OFFMASK 0x1fff
#define PROTO_UDP 17
#define UDP_HLEN 8

#define WG_INITIATION_LEN 148
#define WG_RESPONSE_LEN 92
#define WG_COOKIE_LEN 64
#define WG_DATA_HLEN 16
#define WG_DATA_MIN_LEN 32
#define WG_TAG_LEN 16
#define WG_KEY_LEN 32
#define ETH_ALEN 6

/* WireGuard message types: the first byte, then three zero bytes. */
enum wg_type {
	WG_INITIATION = 1,
	WG_RESPONSE = 2,
	WG_COOKIE = 3,
	WG_DATA = 4,
	WG_NTYPES
};

/*
 * Where the handshake messages keep their indices and ephemeral key: byte
 * offsets into the message, 0 for a field it does not have.  Transport
 * data is a 16-byte header (type, receiver at 4, counter at 8) and the
 * encrypted packet with its 16-byte tag, in 16-byte steps.
 */
struct wg_layout {
	size_t len, sender, receiver, ephemeral;
};

static const struct wg_layout wg_layouts[WG_NTYPES] = {
	[WG_INITIATION] = { WG_INITIATION_LEN, 4, 0, 8 },
	[WG_RESPONSE] = { WG_RESPONSE_LEN, 4, 8, 12 },
	[WG_COOKIE] = { WG_COOKIE_LEN, 0, 4, 0 },
};

/* A hex digit's value, or -1. */
static inline int wg_hex(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch |= 0x20;
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/*
 * "aa:bb:cc:dd:ee:ff" into MAC: 0, or -1 for anything else.  Here, not in
 * wgpcap.c, because pcap-synth writes the addresses wg-detect reads.
 */
static inline int wg_parse_mac(const char *s, uint8_t mac[ETH_ALEN])
{
	int i, hi, lo;

	for (i = 0; i < ETH_ALEN; i++, s += 3) {
		hi = wg_hex(s[0]);
		lo = hi < 0 ? -1 : wg_hex(s[1]);
		if (lo < 0 || s[2] != (i < ETH_ALEN - 1 ? ':' : '\0'))
			return -1;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/*
 * What one Ethernet frame turned out to be.  Who sent a WireGuard message
 * is told by the VM's UDP port, or with the VM's MAC address by the
 * Ethernet addresses: then the VM's end must still be the port.
 */
enum wg_class {
	WGF_MALFORMED,	/* lengths that do not add up */
	WGF_NOT_UDP,	/* another ethertype or IP protocol */
	WGF_FRAGMENT,	/* an IPv4 fragment: not reassembled */
	WGF_OTHER,	/* UDP, but no WireGuard message to or from the port */
	WGF_SENT,	/* a WireGuard message from the port: the VM sent it */
	WGF_RECEIVED,	/* a WireGuard message to the port */
	WGF_AMBIGUOUS,	/* a WireGuard message from the port to the port (or MAC) */
	WGF_FOREIGN,	/* by MAC: neither from nor to the VM (a sibling's, flooded) */
};

struct wg_msg {
	int type;
	uint16_t remote_port;	/* the other end's UDP port: which peer */
	uint32_t sender, receiver;
	uint64_t counter;
	uint64_t ephemeral;	/* initiation, response: a hash of the ephemeral key */
	const uint8_t *payload;	/* WG_DATA: the encrypted packet and its tag */
	size_t payload_len;
	const uint8_t *bytes;	/* the whole message */
	size_t len;
};

/*
 * Classify one frame, by the port, or with MAC (NULL: by the port) by the
 * Ethernet addresses; *m is filled in for WGF_SENT, _RECEIVED and
 * _AMBIGUOUS.
 */
int wg_classify(const uint8_t *frame, size_t len, uint16_t port, const uint8_t *mac, struct wg_msg *m);

/*
 * A transport-data message the VM sent.  The payload is kept as its length,
 * its Poly1305 tag (the last 16 bytes) and a 64-bit hash of all of it: under
 * one key and nonce, two different ciphertexts differ in the tag but for a
 * forgery, and the hash catches what a forger (or a fuzzer) could arrange.
 */
struct wg_data {
	uint64_t session;	/* 0: a pre-fork session; else its ephemeral keys */
	uint64_t counter;
	uint64_t hash;
	int64_t us;		/* when it was sent, after t0 */
	uint32_t receiver;
	uint32_t len;
	uint8_t tag[16];
	uint8_t reused;		/* another clone sent this key with other bytes */
	uint8_t prefork;	/* under a pre-fork session (see struct wg_capture) */
	uint8_t unattributed;	/* with an original: under neither kind of session */
	uint8_t early;		/* sent before the first frame to the marker port */
	uint8_t inflight;	/* and sent alike by every other clone: see wg_compare() */
};

/* A set of 32-bit session indices. */
struct wg_set {
	uint64_t *slot;		/* 0 when free, else index | 1 << 32 */
	size_t mask, n;
};

/* A session index and the ephemeral keys seen with it. */
struct wg_index {
	uint32_t index;
	uint64_t ephemeral;
};

struct wg_indices {
	struct wg_index *v;
	size_t n, cap;
};

/*
 * A handshake message of the original's, kept byte for byte: a clone's
 * message with the same bytes is a copy (a frame replayed from a queue,
 * or resent), not a handshake made after the fork.
 */
struct wg_shake {
	uint64_t hash;
	uint32_t len;
	uint8_t bytes[WG_INITIATION_LEN];
};

/*
 * One peer of the VM, told apart by its UDP port (a VM with many peers
 * reaches each at its own port): when the VM first sent it an initiation
 * and when the first answer to one of ours came back.
 */
struct wg_peer {
	uint16_t port;
	int64_t initiation_us, handshake_us;
};

/*
 * Times are in microseconds, relative to t0_us: the first frame sent to the
 * marker port (the VM's heartbeat), or with no marker port the first frame.
 * -1 means "never".
 *
 * A data message the VM sent is attributed in one of two ways.  Without an
 * original (origin NULL), by absence: it is post-fork when this capture
 * shows the whole handshake of its receiver index, else pre-fork.  With
 * the original VM's capture up to the snapshot (origin, see
 * wg_origin_load()), by matching: pre-fork when its index is one of the
 * sessions the original held keys for, post-fork when it is the index of
 * a handshake this capture shows being made after t0 (both messages after
 * t0, neither a byte copy of one of the original's, and not setting up one
 * of its sessions again), and unattributed when it is neither or both;
 * then handshake_us is the first such handshake and nothing else.
 */
struct wg_capture {
	uint16_t port, marker;
	uint8_t by_mac;			/* direction by MAC, not by port */
	uint8_t mac[ETH_ALEN];		/* the VM's: see wg_capture_by_mac() */
	const struct wg_capture *origin;	/* the original's, or NULL */
	uint64_t frames, malformed, not_udp, fragments, other, foreign;
	uint64_t sent[WG_NTYPES], received[WG_NTYPES];
	int64_t t0_us;
	uint64_t prefork_packets, inflight_packets, unattributed_packets, data_sent, data_received;
	int64_t prefork_last_us, first_initiation_us, handshake_us, first_new_data_us;
	struct wg_set initiated;	/* sender indices of our initiations */
	/*
	 * Every initiation we sent but a copy of the original's, before t0
	 * too, and those a response named: a peer that answers none refuses
	 * them (its clock check), whether or not they are post-fork.  When
	 * the first such response came: the tunnel works again from there
	 * (its session may still be unattributed: whether it is post-fork
	 * is handshake_us's to say).
	 */
	struct wg_set asked, answered;
	int64_t first_answer_us;
	struct wg_set answering;	/* sender indices of initiations we received */
	struct wg_set postfork;		/* receiver indices of post-fork sessions */
	struct wg_set early;		/* sender indices of our initiations before t0 */
	/* Of those, the ones no sibling clone sent too (wg_early_unshared()): fresh. */
	const struct wg_set *early_fresh;
	/*
	 * Two clones restored next to two restores of one peer may be given
	 * the same index by the peer for different keys: a post-fork session
	 * is told apart by its two ephemeral keys, not by its index alone.
	 */
	struct wg_indices hello;	/* initiations: sender index, ephemeral */
	struct wg_indices sessions;	/* post-fork: receiver index, both ephemerals */
	struct wg_peer *peers;		/* every port we sent an initiation to */
	size_t npeers, peers_cap;
	struct wg_data *data;		/* every transport-data message we sent */
	size_t ndata, data_cap;
	uint64_t reused;		/* of them, part of a reuse with another clone */
	uint64_t self_reuse;		/* keys this clone sent twice, different bytes */
	/* Kept for an original only (record set): what its clones are matched with. */
	uint8_t record;
	struct wg_set derived;		/* receiver indices of every session it held keys for */
	struct wg_shake *shakes;	/* its handshake messages, sorted when sealed */
	size_t nshakes, shakes_cap;
	char error[320];
};

void wg_capture_init(struct wg_capture *c, uint16_t port, uint16_t marker);
void wg_capture_free(struct wg_capture *c);

/* Tell direction by the Ethernet addresses, MAC being the VM's (after init). */
void wg_capture_by_mac(struct wg_capture *c, const uint8_t mac[ETH_ALEN]);

/*
 * Account for one frame captured at T_US (absolute; a time before the first
 * frame's counts as t0).  Returns 0, or -1 with c->error set when the
 * capture cannot be judged (out of memory, or a WireGuard message whose
 * direction the port cannot tell).
 */
int wg_capture_frame(struct wg_capture *c, int64_t t_us, const uint8_t *frame, size_t len);

/*
 * Read a whole pcap capture from F, which it always closes.  Returns 0, or
 * -1 with c->error set to one line starting with NAME: not a capture, not
 * Ethernet, truncated, no frames at all, or a failure of wg_capture_frame().
 */
int wg_capture_load(struct wg_capture *c, FILE *f, const char *name);

/*
 * The original VM's capture up to the snapshot, read from F into O (made
 * by wg_capture_init(), with no marker port: the original has no resume to
 * time) like wg_capture_load(), keeping what its clones are matched with:
 * every receiver index it held keys for (a handshake it completed, a
 * response it sent, data it sent under the index) and every handshake
 * message byte for byte.  A clone's capture then names it in its origin,
 * before it is read.  wg_origin_begin() and wg_origin_seal() are the two
 * halves, for an original fed frame by frame with wg_capture_frame().
 */
int wg_origin_load(struct wg_capture *o, FILE *f, const char *name);
void wg_origin_begin(struct wg_capture *o);
void wg_origin_seal(struct wg_capture *o);

/*
 * Compare the data messages of N clones, pair by pair (C[i] may equal C[j]):
 * *reuse counts the (session, counter) keys both of a pair sent with
 * different bytes, *identical those they sent with the same bytes.  Fills
 * in each clone's reused and self_reuse; sorts each clone's data.
 *
 * It also tells the frames that were in flight at the snapshot from those
 * sealed after it.  A frame the guest had handed to its virtual NIC before
 * the snapshot is in every restore's queue, and each restored QEMU sends
 * it before the guest runs again: the same bytes in every clone, before
 * its first heartbeat.  So with N >= 2 and a marker port, a pre-fork data
 * message that every other clone sent byte for byte before its own marker
 * is counted in inflight_packets, not in prefork_packets (and not in
 * prefork_last_us).  No guest kernel can recall such a frame, and the peer
 * drops every copy after the first as a replay.  A frame sealed after the
 * fork differs between clones (the stream's datagrams carry a clock in ns
 * and fresh random bytes), or comes after the heartbeat, and stays
 * pre-fork; the criterion errs towards counting pre-fork.
 */
/*
 * With an original: into OUT, the sender indices of the initiations clone K
 * sent before its t0 that no other clone of C sent before its own, which a
 * second read of clone K takes as fresh (early_fresh).  An initiation sealed
 * before the snapshot and still queued leaves every clone alike; one the
 * clone's kernel made after its resume is its own.  With one clone, none.
 * 0, or -1 out of memory.
 */
int wg_early_unshared(struct wg_capture **c, size_t n, size_t k, struct wg_set *out);
void wg_set_free(struct wg_set *s);
void wg_compare(struct wg_capture **c, size_t n, uint64_t *reuse, uint64_t *identical);

#endif
