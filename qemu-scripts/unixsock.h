/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_UNIXSOCK_H
#define FORKSAFE_UNIXSOCK_H
#include <stddef.h>

/* Milliseconds on CLOCK_MONOTONIC: every wait below ends at such a deadline. */
long long now_ms(void);

/* Connect to a UNIX socket, retrying until deadline (QEMU may be starting). */
int unix_connect(const char *path, long long deadline);

/*
 * Buffered line reader with a deadline.  Returns the line length (newline
 * stripped), or LINE_ERROR, LINE_TIMEOUT, or LINE_EOF on a clean end of
 * stream.  A line longer than the buffer or cut by the end is an error.
 */
enum { LINE_ERROR = -1, LINE_TIMEOUT = -2, LINE_EOF = -3 };

struct line_reader {
	int fd;
	size_t start, len; /* unread bytes: buf[start .. start + len) */
	char buf[1 << 16];
};

int read_line(struct line_reader *r, char *out, size_t outlen, long long deadline);

/* Write all of buf, or -1. */
int write_all(int fd, const char *buf, size_t len);

#endif
