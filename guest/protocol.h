/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the guest agent and the host tools share: the port they talk over,
 * the shape of a request, and the recorder's dump format.  The agent
 * (guest/) and the host's agent-call and analyzers (qemu-scripts/,
 * snapshot-tests/analyzers/) include this file; qemu-scripts/qemu.sh reads
 * AGENT_PORT out of it.  docs/protocol.md describes the commands.
 */
#ifndef FORKSAFE_PROTOCOL_H
#define FORKSAFE_PROTOCOL_H

/* The virtio-serial port the agent listens on. */
#define AGENT_PORT "org.forksafe.agent"

/*
 * A request is "\nID COMMAND [ARGS]\n", at most AGENT_REQUEST_MAX bytes;
 * the agent answers "ID key=value" lines and then "ID ok" or "ID err WHY".
 */
#define AGENT_REQUEST_MAX 4096

/*
 * `record dump` sends a header line, then one line per record:
 *
 *	H SHAPE UNIT
 *	R STREAM SEQ FP T_NS CHANGED
 *
 * SHAPE says how the RNG was used (below), UNIT how many bytes of output
 * one record stands for.  STREAM numbers the recorder's streams from 0
 * (at most DUMP_MAX_STREAMS), SEQ counts a stream's records from 0 without
 * a gap, FP is a 64-bit fingerprint of the output in hex, T_NS the
 * guest's CLOCK_MONOTONIC when it was produced, CHANGED 1 once the live
 * generation ID differed from the one seen when recording started.
 *
 * The shapes, one way each that the RNG's output reaches user space:
 *   getrandom-16     one thread per vCPU, getrandom() of 16 bytes in a
 *                    loop; a stream per vCPU, UNIT 16
 *   insecure-16      the same with GRND_INSECURE, for a crng that is not
 *                    ready yet
 *   vdso-16          the same through the vDSO's getrandom() (Linux 6.11
 *                    and later), a state per thread
 *   drbg-16          the same from a user-space DRBG per thread, seeded
 *                    once (libforksafe's reference DRBG, guest/forksafe.h)
 *   drbg-checked-16  the same DRBG checking the /dev/vmgenid mapping
 *                    before each output, reseeding when the ID changed
 *   getrandom-16MiB  one thread, getrandom() of 16 MiB at a time; a record
 *                    per 4 KiB page, CHANGED as seen when the kernel first
 *                    wrote to that page; UNIT 4096
 *   urandom-1MiB     the same with read() of /dev/urandom, 1 MiB at a time
 *   uuid             as getrandom-16, each call a read of
 *                    /proc/sys/kernel/random/uuid; UNIT 16
 *   openssl-public-16, openssl-private-16, python-mt-16,
 *   python-secrets-16, arc4random-16, libuuid-16
 *                    one thread; each record 16 bytes that a python3
 *                    process of the guest's (an image's) drew from that
 *                    library (libcrypto's RAND_bytes, RAND_priv_bytes,
 *                    Python's random, secrets, glibc's arc4random_buf,
 *                    libuuid's uuid_generate_random), lock-step, the
 *                    process started with the recording; UNIT 16
 *   openssl-fs-public-16, openssl-fs-private-16
 *                    the same for libcrypto's two DRBGs with
 *                    OPENSSL_CONF=/etc/forksafe/openssl.cnf: forksafe-openssl's
 *                    FORKSAFE-DRBG (the process checks it is); UNIT 16
 *   openssl-tls-16, openssl-fs-tls-16
 *                    the same process runs `openssl s_server` (TLS 1.3)
 *                    on loopback, and each record is one handshake begun
 *                    with the same fixed ClientHello: the SHA-256 of the
 *                    server's random and x25519 share (16 bytes of it);
 *                    with fs-, s_server draws from FORKSAFE-DRBG; UNIT 16
 *   systemd-seed     the same process, each record the seed file that
 *                    systemd-random-seed save wrote (a clone's shutdown
 *                    runs it), as its SHA-256; UNIT the file's size
 *   exec             one process per vCPU exec'ing a program again and
 *                    again (a chain, no fork): stream 2 * CPU its
 *                    AT_RANDOM, 2 * CPU + 1 its stack and mmap bases;
 *                    UNIT 16
 */
#define DUMP_HEADER_FMT "H %s %u"
#define DUMP_RECORD_FMT "R %d %u %016llx %lld %u"
#define DUMP_MAX_STREAMS 64
#define DUMP_MAX_RECORDS 4000000
#define DUMP_SHAPE_MAX 32
#define RNG_BLOCK_BYTES 16
#define RNG_PAGE_BYTES 4096
#define SEED_FILE_BYTES 512	/* systemd 252 on Linux 6.1: the pool's 4096 bits */

#endif
