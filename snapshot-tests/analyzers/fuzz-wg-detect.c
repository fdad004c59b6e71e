// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for wg-detect's parser: a capture is written by QEMU from
 * what a guest sent, so the host must survive any bytes in it.  The input
 * goes through wg_capture_load() as a whole pcap file, exactly as the tool
 * reads one, twice: once with each end of the seeds' tunnel as the VM, so
 * that the cross-clone comparison sees two clones with different keys.  It
 * also goes through wg_capture_frame() as one bare Ethernet frame, so the
 * frame parser is reached without a valid file around it.  Beyond the
 * sanitizers' checks, every frame must land in exactly one counter, a
 * failed load must say why, and comparing a clone with itself must find
 * each key exactly once and move only what it sent before its marker
 * (the VM's end has one, port 9) from pre-fork to in flight.
 *
 * Then as wg-detect -o and -M read it: as a clone of an original made of
 * its frames before its first heartbeat (a seed writes the original's wire
 * first), told apart by the Ethernet addresses of the VM's MAC; and as a
 * clone of itself, which must find every handshake a copy and every
 * packet pre-fork: no post-fork session, no rekey, nothing unattributed.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pcap/pcap.h>
#include "wgpcap.h"

/* The seeds' tunnel: the VM on PORT, its peer on PORT + 1. */
#define PORT 51820

/* The VM's MAC in the seeds that give addresses (pcap-synth's ether). */
static const uint8_t vm_mac[ETH_ALEN] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t sum(const uint64_t *n)
{
	uint64_t s = 0;
	int t;

	for (t = 0; t < WG_NTYPES; t++)
		s += n[t];
	return s;
}

static void check_counts(const struct wg_capture *c)
{
	uint64_t old = c->prefork_packets + c->unattributed_packets;

	if (c->malformed + c->not_udp + c->fragments + c->other + c->foreign + sum(c->sent) +
	    sum(c->received) != c->frames)
		abort();
	if (c->sent[0] || c->received[0] || (c->foreign && !c->by_mac))
		abort();
	if (c->data_sent != c->sent[WG_DATA] || c->data_sent != c->ndata ||
	    c->data_received != c->received[WG_DATA] || old > c->data_sent)
		abort();
	if ((c->prefork_packets == 0) != (c->prefork_last_us == -1))
		abort();
	if ((old == c->data_sent) != (c->first_new_data_us == -1))
		abort();
	/* Without an original nothing is unattributed; with one, a rekey is a post-fork session. */
	if (c->origin ? (c->handshake_us == -1) != (c->postfork.n == 0) : c->unattributed_packets != 0)
		abort();
	if (c->first_new_data_us != -1 && c->handshake_us == -1)
		abort();
	if ((c->first_initiation_us == -1) != (c->sent[WG_INITIATION] == 0))
		abort();
}

/* Compared with itself, a clone's every key is a pair: identical or not. */
static void check_self(struct wg_capture *c)
{
	struct wg_capture *two[2] = { c, c };
	uint64_t reuse, identical, keys = 0, prefork = c->prefork_packets;
	uint64_t unattributed = c->unattributed_packets;
	size_t i;

	wg_compare(two, 2, &reuse, &identical);
	/* In flight: what it sent before its marker, pre-fork, all alike. */
	if (c->prefork_packets + c->inflight_packets != prefork ||
	    (c->prefork_packets == 0) != (c->prefork_last_us == -1) || (c->inflight_packets && !c->marker) ||
	    c->unattributed_packets != unattributed)
		abort();
	for (i = 0; i < c->ndata; i++)
		keys += !i || c->data[i].receiver != c->data[i - 1].receiver ||
			c->data[i].session != c->data[i - 1].session ||
			c->data[i].counter != c->data[i - 1].counter;
	if (reuse + identical != keys || reuse != c->self_reuse || c->reused > c->ndata)
		abort();
}

static void check_failed(const struct wg_capture *c)
{
	if (!c->error[0] || !memchr(c->error, '\0', sizeof(c->error)) || strchr(c->error, '\n'))
		abort();
}

/* A clone that is its original's wire again: every handshake a copy. */
static void check_copy(const struct wg_capture *c)
{
	if (c->postfork.n || c->handshake_us != -1 || c->unattributed_packets ||
	    c->prefork_packets != c->data_sent)
		abort();
}

/* The input as the clone C (made by init), of ORIGIN if any, of itself when COPY. */
static void fuzz_clone(const uint8_t *data, size_t size, struct wg_capture *c,
		       const struct wg_capture *origin, int copy)
{
	FILE *f;

	c->origin = origin;
	if (!size)
		return;
	f = fmemopen((void *)data, size, "rb");
	if (!f)
		return;
	if (wg_capture_load(c, f, "fuzz")) {
		check_failed(c);
		return;
	}
	if (!c->frames)
		abort();
	check_counts(c);
	if (copy)
		check_copy(c);
	check_self(c);
}

static void fuzz_file(const uint8_t *data, size_t size, struct wg_capture *c, uint16_t port,
		      uint16_t marker)
{
	wg_capture_init(c, port, marker);
	fuzz_clone(data, size, c, NULL, 0);
}

/* Is FRAME the VM's heartbeat, as a clone by MAC would tell? */
static int heartbeat(const u_char *frame, size_t len)
{
	struct wg_capture one;
	int beat;

	wg_capture_init(&one, PORT, 9);
	wg_capture_by_mac(&one, vm_mac);
	beat = !wg_capture_frame(&one, 0, frame, len) && one.t0_us >= 0;
	wg_capture_free(&one);
	return beat;
}

/* The original: the input's frames before its first heartbeat. */
static void load_before_beat(const uint8_t *data, size_t size, struct wg_capture *o)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *frame;
	pcap_t *p;
	FILE *f;

	wg_capture_init(o, PORT, 0);
	wg_capture_by_mac(o, vm_mac);
	wg_origin_begin(o);
	f = size ? fmemopen((void *)data, size, "rb") : NULL;
	p = f ? pcap_fopen_offline(f, errbuf) : NULL;
	if (f && !p)
		fclose(f);
	while (p && pcap_next_ex(p, &h, &frame) == 1 && !heartbeat(frame, h->caplen))
		if (wg_capture_frame(o, 0, frame, h->caplen))
			break;
	if (p)
		pcap_close(p);
	wg_origin_seal(o);
}

/* wg-detect -M -o BEFORE-THE-BEAT.pcap on the input; -o INPUT on the input. */
static void fuzz_matched(const uint8_t *data, size_t size)
{
	static struct wg_capture before, clone, self, copy;
	FILE *f;

	load_before_beat(data, size, &before);
	wg_capture_init(&clone, PORT, 9);
	wg_capture_by_mac(&clone, vm_mac);
	fuzz_clone(data, size, &clone, &before, 0);

	wg_capture_init(&self, PORT, 0);
	f = size ? fmemopen((void *)data, size, "rb") : NULL;
	if (f && !wg_origin_load(&self, f, "fuzz")) {
		wg_capture_init(&copy, PORT, 9);
		fuzz_clone(data, size, &copy, &self, 1);
		wg_capture_free(&copy);
	}
	wg_capture_free(&before);
	wg_capture_free(&clone);
	wg_capture_free(&self);
}

static void fuzz_frame(const uint8_t *data, size_t size, struct wg_capture *c)
{
	wg_capture_init(c, PORT, 9);
	if (wg_capture_frame(c, 0, data, size))
		check_failed(c);
	else
		check_counts(c);
}

/* Clones A and B as a pair, then with a third that sent nothing. */
static void check_pairs(struct wg_capture *a, struct wg_capture *b, struct wg_capture *none)
{
	struct wg_capture *three[3] = { a, b, none };
	uint64_t reuse, identical, reuse3, identical3;

	wg_compare(three, 2, &reuse, &identical);
	if (reuse + identical > a->ndata || reuse + identical > b->ndata)
		abort();
	if ((reuse == 0) != (a->reused == 0) || (reuse == 0) != (b->reused == 0))
		abort();
	wg_compare(three, 3, &reuse3, &identical3);
	if (reuse3 != reuse || identical3 != identical)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct wg_capture vm, peer, frame, none;

	fuzz_file(data, size, &vm, PORT, 9);
	fuzz_file(data, size, &peer, PORT + 1, 0);
	fuzz_frame(data, size, &frame);
	wg_capture_init(&none, PORT, 0);
	check_pairs(&vm, &peer, &none);
	check_pairs(&frame, &vm, &none);
	fuzz_matched(data, size);

	wg_capture_free(&vm);
	wg_capture_free(&peer);
	wg_capture_free(&frame);
	wg_capture_free(&none);
	return 0;
}
