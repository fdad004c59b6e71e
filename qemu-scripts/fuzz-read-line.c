// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for read_line(): the QMP and agent clients read QEMU's
 * and the guest's sockets with it, so any byte stream may arrive.  The
 * input goes through a pipe whose write end is then closed; every line
 * read back must fit the output buffer and be NUL-terminated.  The loop
 * ends at EOF, an error or the deadline (a hang is libFuzzer's -timeout).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "unixsock.h"

#define OUTLEN 4096
#define TRUNCATE_TO 60000

/* 64 KiB of buffer: keep it off the stack. */
static struct line_reader rd;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	long long deadline = now_ms() + 1000;
	int fds[2], cap, n;
	char *out;

	if (pipe2(fds, O_CLOEXEC))
		abort();
	/* Nobody reads yet: what is written must fit the pipe in one go. */
	cap = fcntl(fds[1], F_GETPIPE_SZ);
	if (cap <= 0)
		abort();
	if (size > (size_t)cap)
		size = cap < TRUNCATE_TO ? (size_t)cap : TRUNCATE_TO;
	if (write_all(fds[1], (const char *)data, size))
		abort();
	close(fds[1]);

	/* Exactly OUTLEN bytes on the heap, so a write past it is caught. */
	out = malloc(OUTLEN);
	if (!out)
		abort();
	rd.fd = fds[0];
	rd.start = 0;
	rd.len = 0;
	for (;;) {
		n = read_line(&rd, out, OUTLEN, deadline);
		if (n == LINE_EOF || n == LINE_ERROR || n == LINE_TIMEOUT)
			break;
		if (n < 0 || n >= OUTLEN || out[n] != '\0')
			abort();
	}
	free(out);
	close(fds[0]);
	return 0;
}
