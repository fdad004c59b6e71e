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

#define PLAN 13

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

static struct sink_run runs[SINK_RUNS];

static int runs_are(const uint32_t *sender, const uint64_t *count, unsigned int n, unsigned int got)
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
	uint64_t switches, dropped;
	unsigned int n, port, i;
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
	n = sink_runs(runs, SINK_RUNS, &switches, &dropped);
	check(runs_are((uint32_t[]){ 0xaaaa0001, 0xbbbb0002, 0xaaaa0001 }, (uint64_t[]){ 3, 2, 1 }, 3, n),
	      "A A A B B A: three runs, 3, 2 and 1, senders in order");
	check(switches == 2 && dropped == 0, "two switches, no run dropped");
	check(n == 3 && runs[0].first_ns <= runs[1].first_ns && runs[1].last_ns <= runs[2].first_ns,
	      "the runs' times are in order");

	send_from(0xcccc0003, 4, sizeof(struct datagram) - 1);
	send_from(0xaaaa0001, 1, sizeof(struct datagram));
	check(settled(), "the sink took the whole datagram after the short ones");
	n = sink_runs(runs, SINK_RUNS, &switches, &dropped);
	check(n == 3 && runs[2].count == 2 && switches == 2,
	      "a datagram of another size is no sender's: the last run goes on");

	sink_reset();
	n = sink_runs(runs, SINK_RUNS, &switches, &dropped);
	check(n == 0 && switches == 0 && dropped == 0, "a reset starts the runs over");
	send_from(0xbbbb0002, 1, sizeof(struct datagram));
	check(settled(), "datagrams after the reset arrive");
	n = sink_runs(runs, SINK_RUNS, &switches, &dropped);
	check(runs_are((uint32_t[]){ 0xbbbb0002 }, (uint64_t[]){ 1 }, 1, n) && switches == 0,
	      "after a reset the first run is no switch");

	/* 300 runs: the last slot takes every run past 256. */
	for (i = 0; i < 299; i++) {
		send_from(i % 2 ? 0xbbbb0002 : 0xaaaa0001, 1, sizeof(struct datagram));
		if (i % 50 == 49)
			settled();
	}
	check(settled(), "a flapping peer's datagrams arrive");
	n = sink_runs(runs, SINK_RUNS, &switches, &dropped);
	check(n == SINK_RUNS && switches == 299 && dropped == 300 - SINK_RUNS,
	      "300 runs: 256 kept, 44 dropped, 299 switches");
	check(runs[SINK_RUNS - 1].sender == 0xaaaa0001 && runs[SINK_RUNS - 1].count == 1,
	      "the last slot holds the latest run");
	close(fd);
	printf("# %d of %d failed\n", failures, planned);
	return failures || planned != PLAN;
}
