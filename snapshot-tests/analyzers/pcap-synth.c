// SPDX-License-Identifier: GPL-2.0
/*
 * pcap-synth: write a pcap capture from a short text description, for
 * wg-detect's fuzz seeds (corpus/wg-detect/), its known-answer tests and
 * the bad captures of snapshot-tests/bad_input.sh.
 *
 *   pcap-synth [IN.frames] >OUT.pcap
 *
 * One statement per line; "#" starts a comment.  Times are microseconds.
 *
 *   linktype N          the file header's link type (1, Ethernet, by default);
 *                       must come before any frame
 *   ether SRC DST       the Ethernet source and destination (aa:bb:cc:dd:ee:ff)
 *                       of every frame after it, for wg-detect -M; until the
 *                       first, 52:54:00:00:00:02 -> 52:54:00:00:00:01
 *   udp T SPORT DPORT MSG
 *                       an Ethernet/IPv4/UDP frame 10.0.0.2 -> 10.0.0.1 at T
 *                       carrying MSG, one of:
 *     init SENDER E           a handshake initiation, ephemeral key 32 x byte E
 *     resp SENDER RECEIVER E  a handshake response
 *     data RECEIVER COUNTER B [LEN]
 *                             transport data, LEN bytes (32) of byte B after
 *                             the header: the last 16 stand for the tag
 *     zeros N                 N zero bytes (a heartbeat, say)
 *   cut N               the next frame's record claims its whole length but
 *                       the file ends after N bytes of it
 *
 * Numbers are decimal or 0x hex.  Exit 0, or 2 with one line naming the
 * line of the description that is wrong.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tool.h"
#include "wgpcap.h"

const char *tool_name = "pcap-synth";

#define PCAP_MAGIC 0xa1b2c3d4u
#define FRAME_MAX 2048

static const char *src_name = "<stdin>";
static unsigned long lineno;
static uint8_t eth_dst[ETH_ALEN] = { 0x52, 0x54, 0, 0, 0, 1 };
static uint8_t eth_src[ETH_ALEN] = { 0x52, 0x54, 0, 0, 0, 2 };

static void put(const void *p, size_t n)
{
	if (fwrite(p, 1, n, stdout) != n)
		fail("cannot write: %s", strerror(errno));
}

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *p, uint64_t v)
{
	le32(p, (uint32_t)v);
	le32(p + 4, (uint32_t)(v >> 32));
}

static void be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The next whitespace-separated number of the line, within [0, max]. */
static uint64_t number(char **save, const char *what, uint64_t max)
{
	char *tok = strtok_r(NULL, " \t", save), *end;
	unsigned long long v;

	if (!tok)
		fail("%s:%lu: %s is missing", src_name, lineno, what);
	errno = 0;
	v = strtoull(tok, &end, 0);
	if (errno || *end || *tok == '-' || v > max)
		fail("%s:%lu: %s is a number up to %llu, not '%s'", src_name, lineno, what,
		     (unsigned long long)max, tok);
	return v;
}

/* The next word of the line as a MAC address, into MAC. */
static void address(char **save, const char *what, uint8_t *mac)
{
	char *tok = strtok_r(NULL, " \t", save);

	if (!tok)
		fail("%s:%lu: %s is missing", src_name, lineno, what);
	if (wg_parse_mac(tok, mac))
		fail("%s:%lu: %s is a MAC address, aa:bb:cc:dd:ee:ff, not '%s'", src_name, lineno, what, tok);
}

static void file_header(uint32_t linktype)
{
	uint8_t h[24] = { 0 };

	le32(h, PCAP_MAGIC);
	h[4] = 2;		/* version 2.4 */
	h[6] = 4;
	le32(h + 16, 65536);	/* snaplen */
	le32(h + 20, linktype);
	put(h, sizeof(h));
}

/* A handshake message of TYPE: its indices, then the ephemeral key's byte. */
static size_t handshake(char **save, uint8_t *m, int type)
{
	const struct wg_layout *l = &wg_layouts[type];

	m[0] = (uint8_t)type;
	le32(m + l->sender, (uint32_t)number(save, "sender", UINT32_MAX));
	if (l->receiver)
		le32(m + l->receiver, (uint32_t)number(save, "receiver", UINT32_MAX));
	memset(m + l->ephemeral, (int)number(save, "ephemeral byte", 255), WG_KEY_LEN);
	return l->len;
}

/* The WireGuard message (or filler) of a udp statement, into m; its length. */
static size_t message(char **save, uint8_t *m)
{
	char *kind = strtok_r(NULL, " \t", save);
	size_t len;

	if (!kind)
		fail("%s:%lu: the message is missing", src_name, lineno);
	memset(m, 0, FRAME_MAX);
	if (!strcmp(kind, "init"))
		return handshake(save, m, WG_INITIATION);
	if (!strcmp(kind, "resp"))
		return handshake(save, m, WG_RESPONSE);
	if (!strcmp(kind, "data")) {
		m[0] = WG_DATA;
		le32(m + 4, (uint32_t)number(save, "receiver", UINT32_MAX));
		le64(m + 8, number(save, "counter", UINT64_MAX));
		memset(m + WG_DATA_HLEN, (int)number(save, "payload byte", 255), FRAME_MAX - WG_DATA_HLEN);
		len = WG_DATA_MIN_LEN;
		if (**save) /* strtok_r leaves the rest of the line in *save */
			len = number(save, "payload length", 1400);
		return WG_DATA_HLEN + len;
	}
	if (!strcmp(kind, "zeros"))
		return number(save, "length", 1400);
	fail("%s:%lu: unknown message '%s' (init, resp, data, zeros)", src_name, lineno, kind);
}

/* An Ethernet/IPv4/UDP frame around a message of len bytes at m; its length. */
static size_t frame(uint8_t *f, uint16_t sport, uint16_t dport, const uint8_t *m, size_t len)
{
	uint8_t *ip = f + ETH_HLEN, *udp = ip + IP_MIN_HLEN;

	memset(f, 0, ETH_HLEN + IP_MIN_HLEN + UDP_HLEN);
	memcpy(f, eth_dst, ETH_ALEN);
	memcpy(f + ETH_ALEN, eth_src, ETH_ALEN);
	be16(f + 12, ETHERTYPE_IPV4);
	ip[0] = 0x45;
	be16(ip + 2, (uint16_t)(IP_MIN_HLEN + UDP_HLEN + len));
	ip[8] = 64;
	ip[9] = PROTO_UDP;
	memcpy(ip + 12, (uint8_t[]){ 10, 0, 0, 2, 10, 0, 0, 1 }, 8);
	be16(udp, sport);
	be16(udp + 2, dport);
	be16(udp + 4, (uint16_t)(UDP_HLEN + len));
	memcpy(udp + UDP_HLEN, m, len);
	return ETH_HLEN + IP_MIN_HLEN + UDP_HLEN + len;
}

int main(int argc, char **argv)
{
	static uint8_t m[FRAME_MAX], f[FRAME_MAX + 64];
	char *line = NULL, *save, *word;
	size_t cap = 0, len, flen;
	long long cut = -1;
	int header = 0;
	uint8_t rec[16];
	uint64_t t;
	FILE *in = stdin;

	if (argc > 2)
		fail("usage: pcap-synth [IN.frames] >OUT.pcap");
	if (argc == 2) {
		src_name = argv[1];
		in = fopen(argv[1], "r");
		if (!in)
			fail("cannot read %s: %s", argv[1], strerror(errno));
	}
	while (getline(&line, &cap, in) > 0) {
		lineno++;
		line[strcspn(line, "#\n")] = '\0';
		word = strtok_r(line, " \t", &save);
		if (!word)
			continue;
		if (!strcmp(word, "linktype")) {
			if (header)
				fail("%s:%lu: linktype after the first frame", src_name, lineno);
			file_header((uint32_t)number(&save, "link type", UINT32_MAX));
			header = 1;
		} else if (!strcmp(word, "ether")) {
			address(&save, "source", eth_src);
			address(&save, "destination", eth_dst);
		} else if (!strcmp(word, "cut")) {
			cut = (long long)number(&save, "bytes", FRAME_MAX);
		} else if (!strcmp(word, "udp")) {
			if (!header)
				file_header(1);
			header = 1;
			t = number(&save, "time", UINT32_MAX * 1000000ULL);
			flen = number(&save, "source port", 65535);
			len = number(&save, "destination port", 65535);
			flen = frame(f, (uint16_t)flen, (uint16_t)len, m, message(&save, m));
			le32(rec, (uint32_t)(t / 1000000));
			le32(rec + 4, (uint32_t)(t % 1000000));
			le32(rec + 8, (uint32_t)flen);
			le32(rec + 12, (uint32_t)flen);
			put(rec, sizeof(rec));
			put(f, cut >= 0 && (size_t)cut < flen ? (size_t)cut : flen);
			if (cut >= 0)
				break;
		} else {
			fail("%s:%lu: unknown statement '%s' (linktype, ether, udp, cut)", src_name, lineno, word);
		}
	}
	if (!header)
		file_header(1);
	free(line);
	if (in != stdin)
		fclose(in);
	if (fflush(stdout))
		fail("cannot write: %s", strerror(errno));
	return 0;
}
