// SPDX-License-Identifier: GPL-2.0
/*
 * The forksafe guest agent: answers the host over a virtio-serial port.
 *
 * Protocol (docs/protocol.md): the host writes one line "ID COMMAND [ARGS]";
 * the agent answers with zero or more lines "ID key=value" and ends with
 * "ID ok" or "ID err <reason>".  IDs let the host ignore a reply that a
 * restore cut in half: every restore into a new QEMU process disconnects
 * and reconnects the host end of the port, and the agent simply waits.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include "genid.h"
#include "recorder.h"
#include "bench.h"

#define PORT_NAME "org.forksafe.agent"

static int port = -1;
static const char *req_id = "-";

/* ---- replies ---------------------------------------------------------- */

static void reply(const char *fmt, ...)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "%s ", req_id);
	va_list ap;

	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* The host may go away mid-reply (a snapshot); the ID makes that harmless. */
	if (write(port, line, n) < 0 && errno != EPIPE)
		fprintf(stderr, "agent: write: %s\n", strerror(errno));
}

/* ---- what the guest knows about itself ---------------------------------- */

static int path_exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/* "bound", "unbound" (device present, no driver) or "absent". */
static const char *vmgenid_driver_state(void)
{
	const char *state = "absent";
	char path[512];
	struct dirent *d;
	DIR *dir = opendir("/sys/bus/acpi/devices");

	if (!dir)
		return "absent";
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "QEMUVGID:", 9) && strncmp(d->d_name, "VMGENCTR:", 9))
			continue;
		snprintf(path, sizeof(path), "/sys/bus/acpi/devices/%s/driver", d->d_name);
		state = path_exists(path) ? "bound" : "unbound";
		if (*state == 'b')
			break;
	}
	closedir(dir);
	return state;
}

/*
 * A tiny guest has no entropy source that fires on its own; a blocking
 * getrandom() runs the kernel's jitter entropy and initialises the crng.
 * Everything the agent measures assumes an initialised crng.
 */
static long long crng_wait_ms;

static void wait_for_crng(void)
{
	struct timespec a, b;
	char c;

	fprintf(stderr, "agent: waiting for the crng to initialise\n");
	clock_gettime(CLOCK_MONOTONIC, &a);
	while (getrandom(&c, 1, 0) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &b);
	crng_wait_ms = (b.tv_sec - a.tv_sec) * 1000LL + (b.tv_nsec - a.tv_nsec) / 1000000;
}

static const char *crng_state(void)
{
	char c;

	if (getrandom(&c, 1, GRND_NONBLOCK) == 1)
		return "ready";
	return errno == EAGAIN ? "not-ready" : "error";
}

/* ---- commands ----------------------------------------------------------- */

static int cmd_ping(const char *args)
{
	(void)args;
	return 0;
}

static int cmd_info(const char *args)
{
	char err[256], guid[37];
	uint8_t g[GENID_LEN];
	const volatile uint8_t *live;
	struct utsname u;
	struct timespec ts;

	(void)args;
	uname(&u);
	reply("kernel=%s", u.release);
	reply("cpus=%ld", sysconf(_SC_NPROCESSORS_ONLN));
	clock_gettime(CLOCK_BOOTTIME, &ts);
	reply("uptime_ms=%lld", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	reply("vmgenid_driver=%s", vmgenid_driver_state());
	reply("crng=%s", crng_state());
	reply("crng_wait_ms=%lld", crng_wait_ms);
	live = genid_map(err, sizeof(err));
	if (live) {
		genid_read(live, g);
		genid_format(g, guid);
		reply("guid=%s", guid);
	} else {
		reply("guid_error=%s", err);
	}
	return 0;
}

static int cmd_reseed(const char *args)
{
	(void)args;
	return rng_reseed();
}

/* ---- the recorder (guest/recorder.c) ------------------------------------ */

/* Dumps are large: batch lines into 64 KiB writes instead of one per line. */
struct batch {
	char buf[65536];
	size_t len;
};

static void batch_flush(struct batch *b)
{
	size_t off = 0;
	ssize_t n;

	while (off < b->len) {
		n = write(port, b->buf + off, b->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the host went away: the ID makes a retry safe */
		off += n;
	}
	b->len = 0;
}

static void batch_line(const char *line, void *ctx)
{
	struct batch *b = ctx;
	size_t need = strlen(req_id) + strlen(line) + 2;

	if (b->len + need >= sizeof(b->buf)) /* room for snprintf's NUL */
		batch_flush(b);
	b->len += snprintf(b->buf + b->len, sizeof(b->buf) - b->len, "%s %s\n", req_id, line);
}

static int cmd_record(const char *args)
{
	static struct batch b;
	uint32_t done, total;
	char err[256];
	unsigned long blocks;
	int rc;

	if (!strncmp(args, "start ", 6)) {
		blocks = strtoul(args + 6, NULL, 10);
		if (recorder_start(blocks, err, sizeof(err))) {
			reply("error=%s", err);
			return -EINVAL;
		}
		return 0;
	}
	rc = recorder_status(&done, &total);
	if (!strcmp(args, "status")) {
		reply("done=%u", done);
		reply("total=%u", total);
		reply("complete=%d", total && done == total);
		return rc ? -rc : 0;
	}
	if (!strcmp(args, "dump")) {
		recorder_dump(batch_line, &b);
		batch_flush(&b);
		return rc ? -rc : 0;
	}
	return -EINVAL;
}

/* "bench SIZE MS": getrandom() calls per second over all vCPUs. */
static int cmd_bench(const char *args)
{
	unsigned long size, ms;
	uint64_t calls;
	char err[256];
	int threads;

	if (sscanf(args, "%lu %lu", &size, &ms) != 2)
		return -EINVAL;
	if (bench_getrandom(size, ms, &calls, &threads, err, sizeof(err))) {
		reply("error=%s", err);
		return -EINVAL;
	}
	reply("threads=%d", threads);
	reply("calls=%llu", (unsigned long long)calls);
	reply("calls_per_s=%llu", (unsigned long long)(calls * 1000 / ms));
	return 0;
}

static int quit;

static int cmd_poweroff(const char *args)
{
	(void)args;
	quit = 1;
	return 0;
}

static const struct command {
	const char *name;
	int (*fn)(const char *args);
} commands[] = {
	{ "ping", cmd_ping },
	{ "info", cmd_info },
	{ "reseed", cmd_reseed },
	{ "record", cmd_record },
	{ "bench", cmd_bench },
	{ "poweroff", cmd_poweroff },
};

static void dispatch(char *line)
{
	char *cmd, *args, *save;
	size_t i;
	int rc;

	req_id = strtok_r(line, " ", &save);
	if (!req_id)
		return; /* the host starts each request with a newline */
	cmd = strtok_r(NULL, " ", &save);
	if (!cmd) {
		req_id = "-";
		reply("err malformed request");
		return;
	}
	args = strtok_r(NULL, "", &save);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(cmd, commands[i].name))
			continue;
		rc = commands[i].fn(args ? args : "");
		if (rc)
			reply("err %s: %s", cmd, strerror(-rc));
		else
			reply("ok");
		return;
	}
	reply("err unknown command '%s'", cmd);
}

/* ---- the port ----------------------------------------------------------- */

static int open_port(void)
{
	char path[512], name[64];
	struct dirent *d;
	DIR *dir = opendir("/sys/class/virtio-ports");
	FILE *f;
	int fd = -1;

	while (dir && fd < 0 && (d = readdir(dir))) {
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && !strncmp(name, PORT_NAME, strlen(PORT_NAME))) {
			snprintf(path, sizeof(path), "/dev/%s", d->d_name);
			fd = open(path, O_RDWR);
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return fd;
}

int main(void)
{
	char buf[4096], *nl;
	size_t len = 0;
	ssize_t n;

	wait_for_crng();

	port = open_port();
	if (port < 0) {
		fprintf(stderr, "agent: no virtio-serial port named %s\n", PORT_NAME);
		return 1;
	}
	fprintf(stderr, "agent: listening on %s\n", PORT_NAME);
	while (!quit) {
		n = read(port, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Host end closed (a restore in progress): wait for it. */
			usleep(50000);
			continue;
		}
		len += n;
		buf[len] = '\0';
		while (!quit && (nl = strchr(buf, '\n'))) {
			*nl = '\0';
			dispatch(buf);
			len -= nl + 1 - buf;
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1)
			len = 0; /* a line longer than any request: drop it */
	}
	return 0;
}
