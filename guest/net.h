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
 * Every interval_us microseconds, one datagram to dst:port carrying a
 * sequence number, CLOCK_MONOTONIC and 16 random bytes, so that two clones
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

/* Counts datagrams arriving on a UDP port. */
int sink_start(unsigned int port, char *err, size_t errlen);
void sink_stat(uint64_t *received, uint64_t *max_seq, uint64_t *last_seq);

#endif
