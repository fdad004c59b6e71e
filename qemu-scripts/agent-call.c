// SPDX-License-Identifier: GPL-2.0
/*
 * agent-call: one request to the guest agent over its virtio-serial socket.
 *
 *   agent-call [-t SECONDS] SOCKET COMMAND [ARGS...]
 *
 * Prints the agent's "key=value" lines.  Exit 0 when the agent says ok,
 * 1 when it answers err (the reason goes to stderr), 2 when no answer comes
 * within SECONDS or the port closes.  Lines carrying another request's ID
 * (a reply a snapshot cut in half) are ignored.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "protocol.h"
#include "unixsock.h"

static struct line_reader rd;

static void __attribute__((noreturn)) fail(int code, const char *fmt, const char *arg)
{
	fprintf(stderr, "agent-call: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(code);
}

int main(int argc, char **argv)
{
	static char line[sizeof(rd.buf)], req[AGENT_REQUEST_MAX], why[sizeof(rd.buf)];
	char id[32];
	double seconds = 30;
	long long deadline;
	size_t idlen, len;
	char *end;
	int opt, i, n;

	while ((opt = getopt(argc, argv, "t:")) != -1) {
		if (opt != 't')
			fail(2, "%s", "usage: agent-call [-t SECONDS] SOCKET COMMAND [ARGS...]");
		seconds = strtod(optarg, &end);
		if (*end || seconds <= 0 || seconds > 86400)
			fail(2, "-t wants a number of seconds, not '%s'", optarg);
	}
	if (argc - optind < 2)
		fail(2, "%s", "usage: agent-call [-t SECONDS] SOCKET COMMAND [ARGS...]");

	snprintf(id, sizeof(id), "%lx%lx", (long)getpid(), (long)time(NULL));
	idlen = strlen(id);
	len = snprintf(req, sizeof(req), "\n%s", id);
	for (i = optind + 1; i < argc && len < sizeof(req); i++)
		len += snprintf(req + len, sizeof(req) - len, " %s", argv[i]);
	if (len >= sizeof(req) - 1 || strchr(req + 1, '\n'))
		fail(2, "%s", "request too long or contains a newline");
	req[len++] = '\n';

	deadline = now_ms() + (long long)(seconds * 1000);
	rd.fd = unix_connect(argv[optind], deadline);
	if (rd.fd < 0)
		fail(2, "cannot connect to the agent socket: %s", strerror(errno));
	if (write_all(rd.fd, req, len))
		fail(2, "cannot write to %s", argv[optind]);

	for (;;) {
		n = read_line(&rd, line, sizeof(line), deadline);
		if (n == LINE_TIMEOUT)
			fail(2, "no answer from the guest agent to '%s' in time", argv[optind + 1]);
		if (n == LINE_EOF)
			fail(2, "the guest's port closed during '%s'", argv[optind + 1]);
		if (n < 0)
			fail(2, "broken reply to '%s'", argv[optind + 1]);
		if (strncmp(line, id, idlen) || line[idlen] != ' ')
			continue;
		if (!strcmp(line + idlen + 1, "ok"))
			return 0;
		/*
		 * The reason for a failure comes as an "error=" line before the
		 * "err" line, on stdout with the rest of the reply, which callers
		 * often discard: say it on stderr too.
		 */
		if (!strncmp(line + idlen + 1, "err ", 4)) {
			if (*why)
				fprintf(stderr, "agent: %s (%s)\n", line + idlen + 5, why);
			else
				fprintf(stderr, "agent: %s\n", line + idlen + 5);
			return 1;
		}
		if (!strncmp(line + idlen + 1, "error=", 6))
			snprintf(why, sizeof(why), "%s", line + idlen + 7);
		puts(line + idlen + 1);
	}
}
