// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's sink (guest/net.c) on the host, under ASan and UBSan, in
 * KTAP: datagrams sent to it over loopback with chosen senders, and the
 * runs, switches and drops it reports for them.  What wg-deploy's rows of
 * clones side by side say about who the peer heard rests on this.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "net.h"

#define PLAN 17

static int planned, failures;
static int fd = -1;
static struct sockaddr_in to = { .sin_family = AF_INET };
static uint64_t sent;

static void check(int ok, const char *what)
{
	printf("%s %d %s\n", ok ? "ok" : "not ok", ++planned, what);
	failures += !ok;
}

/* Sends n datagrams from sender (len bytes each: a short one is no datagram). */
static void send_from(uint32_t sender, unsigned int n, size_t len)
{
	struct datagram d = { .sender = sender };
	unsigned int i;

	for (i = 0; i < n; i++, d.seq++)
		if (sendto(fd, &d, len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len &&
		    len == sizeof(d))
			sent++;
}

/* Waits up to 5 s until the sink has received every datagram sent. */
static int settled(void)
{
	uint64_t received, max_seq, last_seq;
	int i;

	for (i = 0; i < 500; i++) {
		sink_stat(&received, &max_seq, &last_seq);
		if (received >= sent)
			return received == sent;
		usleep(10000);
	}
	return 0;
}

static struct sink_view v;

static int runs_are(const struct sink_run *runs, unsigned int got, const uint32_t *sender,
		    const uint64_t *count, unsigned int n)
{
	unsigned int i;

	if (got != n)
		return 0;
	for (i = 0; i < n; i++)
		if (runs[i].sender != sender[i] || runs[i].count != count[i] ||
		    runs[i].first_ns > runs[i].last_ns)
			return 0;
	return 1;
}

int main(void)
{
	unsigned int port, i;
	char err[256] = "";
	int rc = -1;

	printf("KTAP version 1\n1..%d\n", PLAN);
	/* A free port: the sink takes a number, so try a few. */
	for (i = 0; i < 50 && rc; i++) {
		port = 40000 + (unsigned int)(getpid() + i * 97) % 20000;
		rc = sink_start(port, err, sizeof(err));
	}
	check(!rc, "the sink starts on a loopback port");
	if (rc) {
		printf("# %s\n", err);
		return 1;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	to.sin_port = htons(port);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	send_from(0xaaaa0001, 3, sizeof(struct datagram));
	send_from(0xbbbb0002, 2, sizeof(struct datagram));
	send_from(0xaaaa0001, 1, sizeof(struct datagram));
	check(settled(), "every datagram arrived");
	sink_runs(&v);
	check(runs_are(v.runs, v.nruns, (uint32_t[]){ 0xaaaa0001, 0xbbbb0002, 0xaaaa0001 },
		       (uint64_t[]){ 3, 2, 1 }, 3),
	      "A A A B B A: three runs, 3, 2 and 1, senders in order");
	check(v.switches == 2 && v.runs_dropped == 0, "two switches, no run dropped");
	check(v.nruns == 3 && v.runs[0].first_ns <= v.runs[1].first_ns && v.runs[1].last_ns <= v.runs[2].first_ns,
	      "the runs' times are in order");
	check(runs_are(v.senders, v.nsenders, (uint32_t[]){ 0xaaaa0001, 0xbbbb0002 }, (uint64_t[]){ 4, 2 }, 2) &&
		      v.senders[0].first_ns == v.runs[0].first_ns && v.senders[0].last_ns == v.runs[2].last_ns,
	      "the totals: A 4 from its first run to its last, B 2");

	send_from(0xcccc0003, 4, sizeof(struct datagram) - 1);
	send_from(0xaaaa0001, 1, sizeof(struct datagram));
	check(settled(), "the sink took the whole datagram after the short ones");
	sink_runs(&v);
	check(v.nruns == 3 && v.runs[2].count == 2 && v.switches == 2 && v.nsenders == 2,
	      "a datagram of another size is no sender's: the last run goes on");

	sink_reset();
	sink_runs(&v);
	check(v.nruns == 0 && v.nsenders == 0 && v.switches == 0 && v.runs_dropped == 0,
	      "a reset starts the runs and totals over");
	send_from(0xbbbb0002, 1, sizeof(struct datagram));
	check(settled(), "datagrams after the reset arrive");
	sink_runs(&v);
	check(runs_are(v.runs, v.nruns, (uint32_t[]){ 0xbbbb0002 }, (uint64_t[]){ 1 }, 1) && v.switches == 0,
	      "after a reset the first run is no switch");

	/* 300 runs: the last slot takes every run past 256. */
	for (i = 0; i < 299; i++) {
		send_from(i % 2 ? 0xbbbb0002 : 0xaaaa0001, 1, sizeof(struct datagram));
		if (i % 50 == 49)
			settled();
	}
	check(settled(), "a flapping peer's datagrams arrive");
	sink_runs(&v);
	check(v.nruns == SINK_RUNS && v.switches == 299 && v.runs_dropped == 300 - SINK_RUNS,
	      "300 runs: 256 kept, 44 dropped, 299 switches");
	check(v.runs[SINK_RUNS - 1].sender == 0xaaaa0001 && v.runs[SINK_RUNS - 1].count == 1,
	      "the last slot holds the latest run");
	check(runs_are(v.senders, v.nsenders, (uint32_t[]){ 0xbbbb0002, 0xaaaa0001 }, (uint64_t[]){ 150, 150 }, 2),
	      "the totals count the dropped runs too: 150 and 150");

	/* 17 senders: the 17th finds every total's slot taken. */
	sink_reset();
	for (i = 0; i <= SINK_SENDERS; i++)
		send_from(0xcc000000 + i, 2, sizeof(struct datagram));
	check(settled(), "17 senders' datagrams arrive");
	sink_runs(&v);
	check(v.nsenders == SINK_SENDERS && v.senders_dropped == 2 && v.nruns == SINK_SENDERS + 1,
	      "16 totals kept, the 17th sender's 2 datagrams counted as dropped, its run kept");
	close(fd);
	printf("# %d of %d failed\n", failures, planned);
	return failures || planned != PLAN;
}
