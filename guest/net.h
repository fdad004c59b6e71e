/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_NET_H
#define FORKSAFE_NET_H
#include <stddef.h>
#include <stdint.h>

/*
 * Networking for the WireGuard scenarios: running ip and wg, a paced UDP
 * stream (through the tunnel, or a heartbeat on the wire), and a sink that
 * counts what arrives.
 */

/* Runs argv[0] with argv, output into out; returns its exit status or -errno. */
int net_run(char *const argv[], char *out, size_t outlen);

/*
 * What a stream sends and a sink counts.  Two clones of one VM share its
 * address, port and WireGuard key: only the datagram itself can say which
 * of them sent it, so each carries the last four bytes of the sender's live
 * generation ID, read as it is sent.
 */
struct datagram {
	uint64_t seq;
	uint64_t mono_ns;
	uint32_t sender;
	unsigned char random[12];
};

/*
 * Every interval_us microseconds, one datagram to dst:port carrying a
 * sequence number, CLOCK_MONOTONIC, the sender (the last four bytes of its
 * live generation ID, as big-endian number: the last 8 hex digits of the
 * GUID's string; 0 without one) and 12 random bytes, so that two clones
 * sending the same sequence number still send different plaintexts.
 */
int stream_start(const char *name, const char *dst, unsigned int port,
		 unsigned int interval_us, char *err, size_t errlen);
int stream_stop(const char *name);
int stream_stat(const char *name, uint64_t *sent, uint64_t *errors);

/*
 * The kernel's TCP secret, as far as a connection shows it: a loopback
 * connection from 127.0.0.1:port+1 to 127.0.0.1:port, its initial
 * sequence number (read back with TCP_REPAIR) and CLOCK_REALTIME in ns
 * just before connect().  Linux makes the ISN a keyed hash of the 4-tuple
 * plus ktime_get_real_ns() >> 6, so isn - (realtime_ns >> 6) is the hash,
 * give or take the ns between the two reads.
 */
int tcp_isn(unsigned int port, uint32_t *isn, uint64_t *realtime_ns, char *err, size_t errlen);

/* Counts datagrams arriving on a UDP port, and who sent them in turn. */
int sink_start(unsigned int port, char *err, size_t errlen);
void sink_stat(uint64_t *received, uint64_t *max_seq, uint64_t *last_seq);

/*
 * Datagrams from one sender: a run of them in a row, or all of them (a
 * total); times in ns since the last reset.
 */
struct sink_run {
	uint32_t sender;
	uint64_t count, first_ns, last_ns;
};

#define SINK_RUNS 256
#define SINK_SENDERS 16

/*
 * What the sink kept: its runs, oldest first (past SINK_RUNS the last slot
 * stands for the latest run and runs_dropped counts the others), each
 * sender's total (past SINK_SENDERS, senders_dropped counts the datagrams
 * of the others), and switches, the changes of sender.
 */
struct sink_view {
	unsigned int nruns, nsenders;
	uint64_t switches, runs_dropped, senders_dropped;
	struct sink_run runs[SINK_RUNS], senders[SINK_SENDERS];
};

/* Starts the runs and totals (and their clock) over; the counts above go on. */
void sink_reset(void);
void sink_runs(struct sink_view *v);

#endif
