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
 * `record dump` sends one line per record:
 *
 *	R STREAM SEQ FP T_NS CHANGED
 *
 * STREAM is a vCPU for the getrandom() loops (0 .. DUMP_MAX_STREAMS - 1),
 * SEQ counts that stream's records from 0 without a gap, FP is a 64-bit
 * fingerprint of the output in hex, T_NS the guest's CLOCK_MONOTONIC when
 * it was produced, CHANGED 1 once the live generation ID differed from
 * the one seen when recording started.  Each record stands for
 * RNG_BLOCK_BYTES bytes of output.
 */
#define DUMP_RECORD_FMT "R %d %u %016llx %lld %u"
#define DUMP_MAX_STREAMS 64
#define DUMP_MAX_RECORDS 4000000
#define RNG_BLOCK_BYTES 16

#endif
