// SPDX-License-Identifier: GPL-2.0
/*
 * qmp: one QMP exchange with a running QEMU, for shell scripts.
 *
 *   qmp [-t SECONDS] SOCKET COMMAND [ARGUMENTS-JSON]
 *
 * Runs COMMAND and prints its "return" value as JSON; events are skipped.
 * Exit 0 on success, 1 when QEMU answered with an error, 2 on a timeout, a
 * broken connection or bad input.  Every wait ends at -t.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "unixsock.h"

static const char *sock_path;
static long long deadline;
static struct line_reader rd;

static void __attribute__((noreturn)) fail(int code, const char *what, const char *why)
{
	fprintf(stderr, "qmp: %s: %s\n", what, why);
	exit(code);
}

/* The next message from QEMU that is not an event. */
static struct json_object *next_message(const char *waiting_for)
{
	static char line[sizeof(rd.buf)];
	struct json_object *msg;
	int n;

	for (;;) {
		n = read_line(&rd, line, sizeof(line), deadline);
		if (n == LINE_TIMEOUT)
			fail(2, waiting_for, "timed out");
		if (n == LINE_EOF)
			fail(2, waiting_for, "QEMU closed the connection");
		if (n < 0)
			fail(2, waiting_for, "broken reply from QEMU");
		msg = json_tokener_parse(line);
		if (!msg || !json_object_is_type(msg, json_type_object))
			fail(2, waiting_for, "QEMU sent something that is not a JSON object");
		if (!json_object_object_get_ex(msg, "event", NULL))
			return msg;
		json_object_put(msg);
	}
}

/* Send one command and return its "return" value; QMP errors exit 1. */
static struct json_object *execute(const char *cmd, struct json_object *args)
{
	struct json_object *req = json_object_new_object(), *msg, *ret, *err, *desc;
	const char *text;

	json_object_object_add(req, "execute", json_object_new_string(cmd));
	if (args)
		json_object_object_add(req, "arguments", json_object_get(args));
	text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	if (write_all(rd.fd, text, strlen(text)) || write_all(rd.fd, "\n", 1))
		fail(2, cmd, "cannot write to QEMU");
	json_object_put(req);
	msg = next_message(cmd);
	if (json_object_object_get_ex(msg, "error", &err)) {
		if (!json_object_object_get_ex(err, "desc", &desc))
			desc = err;
		fail(1, cmd, json_object_get_string(desc));
	}
	if (!json_object_object_get_ex(msg, "return", &ret))
		fail(2, cmd, "reply has neither return nor error");
	json_object_get(ret);
	json_object_put(msg);
	return ret;
}

static void print(struct json_object *obj)
{
	puts(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN));
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: qmp [-t SECONDS] SOCKET COMMAND [ARGUMENTS-JSON]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct json_object *greeting, *args = NULL, *ret;
	double seconds = 10;
	char *end;
	int opt;

	while ((opt = getopt(argc, argv, "t:")) != -1) {
		if (opt != 't')
			usage();
		seconds = strtod(optarg, &end);
		if (*end || seconds <= 0 || seconds > 86400)
			fail(2, "-t", "wants a number of seconds");
	}
	if (argc - optind < 2 || argc - optind > 3)
		usage();
	sock_path = argv[optind];
	if (optind + 2 < argc) {
		args = json_tokener_parse(argv[optind + 2]);
		if (!args || !json_object_is_type(args, json_type_object))
			fail(2, argv[optind + 1], "arguments are not a JSON object");
	}
	deadline = now_ms() + (long long)(seconds * 1000);
	rd.fd = unix_connect(sock_path, deadline);
	if (rd.fd < 0)
		fail(2, sock_path, strerror(errno));

	greeting = next_message("greeting");
	if (!json_object_object_get_ex(greeting, "QMP", NULL))
		fail(2, sock_path, "not a QMP socket");
	json_object_put(greeting);
	json_object_put(execute("qmp_capabilities", NULL));

	ret = execute(argv[optind + 1], args);
	print(ret);
	json_object_put(ret);
	json_object_put(args);
	close(rd.fd);
	return 0;
}
