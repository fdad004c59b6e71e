// SPDX-License-Identifier: GPL-2.0
/* UNIX-socket plumbing shared by the QMP client and the agent client. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "unixsock.h"

long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int unix_connect(const char *path, long long deadline)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		close(fd);
		if ((errno != ENOENT && errno != ECONNREFUSED) || now_ms() >= deadline)
			return -1;
		usleep(50000);
	}
}

int read_line(struct line_reader *r, char *out, size_t outlen, long long deadline)
{
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
	char *line, *nl;
	size_t n;
	ssize_t got;
	long long left;

	for (;;) {
		line = r->buf + r->start;
		nl = memchr(line, '\n', r->len);
		if (nl) {
			n = nl - line;
			if (n > 0 && line[n - 1] == '\r')
				n--;
			if (n >= outlen)
				return LINE_ERROR;
			memcpy(out, line, n);
			out[n] = '\0';
			r->len -= nl + 1 - line;
			r->start = r->len ? r->start + (nl + 1 - line) : 0;
			return (int)n;
		}
		if (r->len == sizeof(r->buf))
			return LINE_ERROR;
		/* Move the partial line down only when more must be read. */
		memmove(r->buf, line, r->len);
		r->start = 0;
		left = deadline - now_ms();
		if (left <= 0)
			return LINE_TIMEOUT;
		if (poll(&pfd, 1, left > 1000 ? 1000 : (int)left) < 0 && errno != EINTR)
			return LINE_ERROR;
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		got = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return LINE_ERROR;
		if (got == 0)
			return r->len ? LINE_ERROR : LINE_EOF;
		r->len += got;
	}
}

int write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= n;
	}
	return 0;
}
