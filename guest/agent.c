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
#include "net.h"
#include "protocol.h"
#include "fork_signal.h"

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
		/* An ACPI driver (6.1) or, since 6.10, a platform driver. */
		snprintf(path, sizeof(path), "/sys/bus/acpi/devices/%s/driver", d->d_name);
		state = path_exists(path) ? "bound" : "unbound";
		snprintf(path, sizeof(path), "/sys/bus/acpi/devices/%s/physical_node/driver", d->d_name);
		if (*state == 'u' && path_exists(path))
			state = "bound";
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

/*
 * A guest measured before its crng is ready boots with forksafe.crng=nowait
 * (and without a cycle counter or RDRAND it trusts): then the agent must
 * not run the jitter entropy itself.  The one kernel parameter the agent
 * reads; init reads the others.
 */
static int crng_nowait(void)
{
	char line[4096], *tok, *save;
	FILE *f = fopen("/proc/cmdline", "r");
	int found = 0;

	if (!f)
		return 0;
	if (fgets(line, sizeof(line), f))
		for (tok = strtok_r(line, " \n", &save); tok && !found; tok = strtok_r(NULL, " \n", &save))
			found = !strcmp(tok, "forksafe.crng=nowait");
	fclose(f);
	return found;
}

static const char *crng_state(void)
{
	char c;

	if (getrandom(&c, 1, GRND_NONBLOCK) == 1)
		return "ready";
	return errno == EAGAIN ? "not-ready" : "error";
}

/* The input pool's credited bits, as /proc shows them; -1 if unreadable. */
static int entropy_avail(void)
{
	FILE *f = fopen("/proc/sys/kernel/random/entropy_avail", "r");
	int bits = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &bits) != 1)
		bits = -1;
	fclose(f);
	return bits;
}

/*
 * The crng's state as 6.1's random.c names it: CRNG_READY once getrandom()
 * no longer blocks, CRNG_EARLY once 128 bits were credited (POOL_EARLY_BITS:
 * the crng is keyed, from those bits alone), CRNG_EMPTY before.
 */
static const char *crng_init(void)
{
	if (!strcmp(crng_state(), "ready"))
		return "ready";
	return entropy_avail() >= 128 ? "early" : "empty";
}

/* ---- commands ----------------------------------------------------------- */

static int cmd_ping(const char *args)
{
	(void)args;
	return 0;
}

/* MemAvailable of /proc/meminfo in kB, -1 if unreadable. */
static long mem_available_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* The command name of PID, "?" if unreadable: which init runs the guest. */
static void reply_comm(const char *key, pid_t pid)
{
	char path[32], comm[32] = "?";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			strcpy(comm, "?");
		comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	reply("%s=%s", key, comm);
}

static int cmd_info(const char *args)
{
	char err[256], guid[37];
	uint8_t g[GENID_LEN];
	const volatile uint8_t *live;
	struct utsname u;
	struct timespec ts;
	uint64_t phys;

	(void)args;
	uname(&u);
	reply("kernel=%s", u.release);
	reply("cpus=%ld", sysconf(_SC_NPROCESSORS_ONLN));
	clock_gettime(CLOCK_BOOTTIME, &ts);
	reply("uptime_ms=%lld", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	reply("vmgenid_driver=%s", vmgenid_driver_state());
	reply("crng=%s", crng_state());
	reply("crng_wait_ms=%lld", crng_wait_ms);
	reply("entropy_avail=%d", entropy_avail());
	reply("crng_init=%s", crng_init());
	reply("mem_available_kb=%ld", mem_available_kb());
	reply_comm("init", 1);
	reply_comm("parent", getppid());
	phys = genid_locate(err, sizeof(err));
	live = phys ? genid_map_at(phys, err, sizeof(err)) : NULL;
	if (live) {
		genid_read(live, g);
		genid_format(g, guid);
		reply("guid=%s", guid);
		reply("guid_phys=0x%llx", (unsigned long long)phys);
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

/* "credit BITS": BITS (1..256) credited to the input pool; entropy_avail after. */
static int cmd_credit(const char *args)
{
	unsigned int bits;
	char extra;
	int rc;

	if (sscanf(args, "%u %c", &bits, &extra) != 1 || bits < 1 || bits > 256)
		return -EINVAL;
	rc = rng_credit(bits);
	if (rc)
		return rc;
	reply("entropy_avail=%d", entropy_avail());
	return 0;
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

/* "record start SHAPE N" | "record status" | "record dump" */
_Static_assert(DUMP_SHAPE_MAX == 32, "cmd_record reads SHAPE with %31s");
static int cmd_record(const char *args)
{
	static struct batch b;
	char shape[DUMP_SHAPE_MAX], err[256], extra;
	uint32_t done, total;
	unsigned long n;
	int rc;

	if (!strncmp(args, "start ", 6)) {
		if (sscanf(args + 6, "%31s %lu %c", shape, &n, &extra) != 2) {
			reply("error=usage: record start SHAPE N");
			return -EINVAL;
		}
		if (recorder_start(shape, n, err, sizeof(err))) {
			reply("error=%s", err);
			return -EINVAL;
		}
		return 0;
	}
	rc = recorder_status(&done, &total, err, sizeof(err));
	if (!strcmp(args, "status")) {
		reply("done=%u", done);
		reply("total=%u", total);
		reply("complete=%d", total && done == total);
		if (rc)
			reply("error=%s", err);
		return -rc;
	}
	if (!strcmp(args, "dump")) {
		if (recorder_dump(batch_line, &b)) {
			reply("error=nothing recorded");
			return -ENOENT;
		}
		batch_flush(&b);
		return -rc;
	}
	return -EINVAL;
}

/* "bench SIZE MS [vdso]": getrandom() (or the vDSO's) calls per second over all vCPUs. */
static int cmd_bench(const char *args)
{
	unsigned long size, ms;
	uint64_t calls;
	char err[256], how[8] = "";
	int threads, n = sscanf(args, "%lu %lu %7s", &size, &ms, how);

	if (n < 2 || (n == 3 && strcmp(how, "vdso")))
		return -EINVAL;
	if (bench_getrandom(size, ms, n == 3, &calls, &threads, err, sizeof(err))) {
		reply("error=%s", err);
		return -EINVAL;
	}
	reply("threads=%d", threads);
	reply("calls=%llu", (unsigned long long)calls);
	reply("calls_per_s=%llu", (unsigned long long)(calls * 1000 / ms));
	return 0;
}

/* "bench-u32": get_random_u32() calls per second over all vCPUs (bench kernels). */
static int cmd_bench_u32(const char *args)
{
	uint64_t calls_per_s;
	char err[256];
	int threads;

	(void)args;
	if (bench_u32(&calls_per_s, &threads, err, sizeof(err))) {
		reply("error=%s", err);
		return -EINVAL;
	}
	reply("threads=%d", threads);
	reply("calls_per_s=%llu", (unsigned long long)calls_per_s);
	return 0;
}

/*
 * The agent run again as "BENCH_FORK_ARG COUNT": bench_fork() in a process
 * of its own, whose fork()s copy nothing of what the agent mapped before
 * (a vDSO benchmark's per-thread states, a recorder's buffers).  Prints
 * "ns=N" or why not.
 */
#define BENCH_FORK_ARG "--bench-fork"

static int bench_fork_main(const char *arg)
{
	unsigned int count;
	char err[256];
	uint64_t ns;

	if (sscanf(arg, "%u", &count) != 1 || !count) {
		printf("bad count '%s'\n", arg);
		return 2;
	}
	if (bench_fork(count, &ns, err, sizeof(err))) {
		printf("%s\n", err);
		return 1;
	}
	printf("ns=%llu\n", (unsigned long long)ns);
	return 0;
}

/* "bench-fork COUNT": COUNT fork()s and waits, timed by the guest's clock. */
static int cmd_bench_fork(const char *args)
{
	unsigned long long ns;
	char arg[16], out[512];
	unsigned int count;

	if (sscanf(args, "%u", &count) != 1 || !count)
		return -EINVAL;
	snprintf(arg, sizeof(arg), "%u", count);
	out[0] = 0;
	if (net_run((char *[]){ "/proc/self/exe", BENCH_FORK_ARG, arg, NULL }, out, sizeof(out)) ||
	    sscanf(out, "ns=%llu", &ns) != 1) {
		reply("error=bench-fork: %s", strtok(out, "\n") ? out : "no output");
		return -EIO;
	}
	reply("ns=%llu", ns);
	reply("calls_per_s=%llu", count * 1000000000ull / (ns ? ns : 1));
	return 0;
}

/*
 * "burst DEV DST PORT COUNT": COUNT datagrams, timed until DEV (a device,
 * or a counter's file) has sent them (bench.h).
 */
static int cmd_burst(const char *args)
{
	char dev[128], dst[64], err[256];
	unsigned long long count;
	unsigned int port;
	struct burst b;

	if (sscanf(args, "%127s %63s %u %llu", dev, dst, &port, &count) != 4)
		return -EINVAL;
	if (bench_burst(dev, dst, port, count, &b, err, sizeof(err))) {
		reply("error=%s", err);
		return -EIO;
	}
	reply("sent=%llu", (unsigned long long)b.sent);
	reply("elapsed_ns=%llu", (unsigned long long)(b.end_ns - b.start_ns));
	reply("idle_ns=%llu", (unsigned long long)b.idle_ns);
	reply("ctxt=%llu", (unsigned long long)b.ctxt);
	return 0;
}

/* "bench-xmit DEV COUNT": COUNT packets through WireGuard's send path in place (bench.h). */
static int cmd_bench_xmit(const char *args)
{
	char dev[32], err[256];
	unsigned long long count;
	uint64_t ns;

	if (sscanf(args, "%31s %llu", dev, &count) != 2)
		return -EINVAL;
	if (bench_xmit(dev, count, &ns, err, sizeof(err))) {
		reply("error=%s", err);
		return -EIO;
	}
	reply("packets=%llu", count);
	reply("ns=%llu", (unsigned long long)ns);
	return 0;
}

/* "reseeds": crng reseeds since boot (bench kernels). */
/* 32 bytes of getrandom(), the first output a restored clone gives. */
static int cmd_sample(const char *args)
{
	uint8_t b[32];
	char hex[2 * sizeof(b) + 1];
	size_t i;

	(void)args;
	if (getrandom(b, sizeof(b), 0) != sizeof(b)) {
		reply("error=getrandom: %s", strerror(errno));
		return -EIO;
	}
	for (i = 0; i < sizeof(b); i++)
		sprintf(hex + 2 * i, "%02x", b[i]);
	reply("bytes=%s", hex);
	return 0;
}

static int cmd_reseeds(const char *args)
{
	uint64_t n;
	char err[256];

	(void)args;
	if (bench_reseeds(&n, err, sizeof(err))) {
		reply("error=%s", err);
		return -ENOENT;
	}
	reply("reseeds=%llu", (unsigned long long)n);
	return 0;
}

/* ---- networking (guest/net.c) -------------------------------------------- */

/* Runs a command; its output goes back as "out=" lines, its failure as err. */
static int run(char *const argv[])
{
	char out[4096], *line, *save;
	int rc = net_run(argv, out, sizeof(out));

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		reply("out=%s", line);
	if (rc) {
		reply("error=%s exited with %d", argv[0], rc);
		return -EIO;
	}
	return 0;
}

/* "net-up ADDR/PREFIX": eth0 up with that address. */
static int cmd_net_up(const char *args)
{
	char addr[64];

	if (sscanf(args, "%63s", addr) != 1)
		return -EINVAL;
	if (run((char *[]){ "/bin/ip", "link", "set", "lo", "up", NULL }) ||
	    run((char *[]){ "/bin/ip", "addr", "add", addr, "dev", "eth0", NULL }))
		return -EIO;
	return run((char *[]){ "/bin/ip", "link", "set", "eth0", "up", NULL });
}

/*
 * "wg-up PRIVATE-KEY PORT ADDR/PREFIX PEER-KEY ENDPOINT|- ALLOWED-IPS":
 * wg0 with one peer (keys in base64, as wg genkey/pubkey print them).
 */
static int cmd_wg_up(const char *args)
{
	char key[64], port[8], addr[64], peer[64], endpoint[64], allowed[64];
	char *set[16] = { "/usr/bin/wg", "set", "wg0", "private-key", "/tmp/wg.key",
			  "listen-port", port, "peer", peer, "allowed-ips", allowed };
	FILE *f;
	int fd;

	if (sscanf(args, "%63s %7s %63s %63s %63s %63s", key, port, addr, peer,
		   endpoint, allowed) != 6)
		return -EINVAL;
	/* The private key: readable by root alone, as wg(8) wants it. */
	fd = open("/tmp/wg.key", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	f = fd < 0 || fchmod(fd, 0600) ? NULL : fdopen(fd, "w");
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	if (fprintf(f, "%s\n", key) < 0) {
		fclose(f);
		return -EIO;
	}
	if (fclose(f))
		return -EIO;
	if (strcmp(endpoint, "-")) {
		set[11] = "endpoint";
		set[12] = endpoint;
	}
	if (run((char *[]){ "/bin/ip", "link", "add", "wg0", "type", "wireguard", NULL }) ||
	    run(set) ||
	    run((char *[]){ "/bin/ip", "addr", "add", addr, "dev", "wg0", NULL }))
		return -EIO;
	return run((char *[]){ "/bin/ip", "link", "set", "wg0", "up", NULL });
}

/*
 * "wg-port PORT": wg0 listens on another port and keeps its sessions, so
 * that it sends under them from an address its peer has not seen (what a
 * sibling clone holding the same keys can do) and hears nothing sent to
 * the old one.
 */
static int cmd_wg_port(const char *args)
{
	char port[8];

	if (sscanf(args, "%7[0-9]", port) != 1)
		return -EINVAL;
	return run((char *[]){ "/usr/bin/wg", "set", "wg0", "listen-port", port, NULL });
}

/*
 * "clock get" | "clock set SECONDS": the wall clock (CLOCK_REALTIME) in
 * seconds and nanoseconds, or set to SECONDS since the epoch.  WireGuard
 * stamps its handshake initiations with this clock; a peer refuses one not
 * later than the last it accepted, so a clone whose clock is behind cannot
 * rekey until it is stepped.
 */
static int cmd_clock(const char *args)
{
	struct timespec ts;
	long long secs;
	char op[8];

	if (sscanf(args, "%7s", op) != 1)
		return -EINVAL;
	if (!strcmp(op, "get")) {
		clock_gettime(CLOCK_REALTIME, &ts);
		reply("realtime_s=%lld", (long long)ts.tv_sec);
		reply("realtime_ns=%ld", ts.tv_nsec);
		return 0;
	}
	if (strcmp(op, "set") || sscanf(args, "%*s %lld", &secs) != 1 || secs <= 0)
		return -EINVAL;
	ts.tv_sec = secs;
	ts.tv_nsec = 0;
	if (clock_settime(CLOCK_REALTIME, &ts)) {
		int err = errno;

		reply("error=clock_settime: %s", strerror(err));
		return -err;
	}
	return 0;
}

/*
 * "gpe NUM disable|status": hold back the ACPI general-purpose event NUM
 * (QEMU raises the vmgenid notification as GPE 5), so that a fork is seen
 * only by what checks the ID itself; or its line in sysfs, "STS" when one
 * is pending.
 */
static int cmd_gpe(const char *args)
{
	char path[64], op[8], line[128];
	unsigned int num;
	FILE *f;

	if (sscanf(args, "%u %7s", &num, op) != 2 || num > 255)
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/firmware/acpi/interrupts/gpe%02X", num);
	if (!strcmp(op, "disable")) {
		f = fopen(path, "w");
		if (!f || fputs("disable\n", f) < 0 || fclose(f)) {
			reply("error=%s: %s", path, strerror(errno));
			return -EIO;
		}
		return 0;
	}
	if (strcmp(op, "status"))
		return -EINVAL;
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f)) {
		reply("error=%s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return -EIO;
	}
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	reply("gpe=%s", line);
	return 0;
}

/* "tcp-isn PORT": a loopback connection's ISN and the clock it was made at (net.h). */
static int cmd_tcp_isn(const char *args)
{
	unsigned int port;
	uint64_t ns;
	uint32_t isn;
	char err[256];
	int rc;

	if (sscanf(args, "%u", &port) != 1)
		return -EINVAL;
	/* A guest without net-up has lo down. */
	if (run((char *[]){ "/bin/ip", "link", "set", "lo", "up", NULL }))
		return -EIO;
	rc = tcp_isn(port, &isn, &ns, err, sizeof(err));
	if (rc) {
		reply("error=%s", err);
		return rc;
	}
	reply("isn=%u", isn);
	reply("realtime_ns=%llu", (unsigned long long)ns);
	reply("hash=%u", (uint32_t)(isn - (uint32_t)(ns >> 6)));
	return 0;
}

/* "wg-show": the peer's latest handshake (unix time) and transfer counters. */
static int cmd_wg_show(const char *args)
{
	char out[4096], *line, *save, *f[9], *fs;
	int rc = net_run((char *[]){ "/usr/bin/wg", "show", "wg0", "dump", NULL }, out, sizeof(out));
	int n;

	(void)args;
	if (rc) {
		reply("error=wg show exited with %d: %s", rc, out);
		return -EIO;
	}
	strtok_r(out, "\n", &save); /* the interface line */
	line = strtok_r(NULL, "\n", &save);
	if (!line) {
		reply("error=wg0 has no peer");
		return -ENOENT;
	}
	for (n = 0, fs = line; n < 9 && (f[n] = strsep(&fs, "\t")); n++)
		;
	if (n < 8)
		return -EIO;
	reply("endpoint=%s", f[2]);
	reply("latest_handshake=%s", f[4]);
	reply("rx_bytes=%s", f[5]);
	reply("tx_bytes=%s", f[6]);
	return 0;
}

/*
 * "kmsg TEXT": how many kernel log records hold TEXT, and the last
 * KMSG_KEEP of them as "line=" (their text only).  The log is read through
 * /dev/kmsg from its oldest record to the newest, without waiting; a
 * record overwritten while being read is skipped (EPIPE).
 */
#define KMSG_KEEP 32
static int cmd_kmsg(const char *args)
{
	static char kept[KMSG_KEEP][256], rec[8192];
	unsigned long n = 0, i;
	ssize_t len;
	char *text;
	int fd;

	if (!*args)
		return -EINVAL;
	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (fd < 0) {
		reply("error=/dev/kmsg: %s", strerror(errno));
		return -errno;
	}
	for (;;) {
		len = read(fd, rec, sizeof(rec) - 1);
		if (len < 0 && errno == EPIPE)
			continue;
		if (len <= 0)
			break;
		rec[len] = '\0';
		text = strchr(rec, ';');
		if (!text)
			continue;
		/* The text ends at the first newline; the lines after are the record's dictionary. */
		text[1 + strcspn(text + 1, "\n")] = '\0';
		if (strstr(text + 1, args))
			snprintf(kept[n++ % KMSG_KEEP], sizeof(kept[0]), "%s", text + 1);
	}
	if (len < 0 && errno != EAGAIN) {
		reply("error=/dev/kmsg: %s", strerror(errno));
		close(fd);
		return -EIO;
	}
	close(fd);
	reply("count=%lu", n);
	for (i = n > KMSG_KEEP ? n - KMSG_KEEP : 0; i < n; i++)
		reply("line=%s", kept[i % KMSG_KEEP]);
	return 0;
}

/* Writes value to a /proc file; -errno, with the reason said, on failure. */
static int proc_write(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY);
	ssize_t n = -1;

	if (fd >= 0)
		n = write(fd, value, strlen(value));
	if (n != (ssize_t)strlen(value)) {
		int e = fd < 0 || n < 0 ? errno : EIO;

		reply("error=%s: %s", path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	close(fd);
	return 0;
}

/* "sysctl NAME VALUE": VALUE into /proc/sys/NAME (dots for slashes). */
static int cmd_sysctl(const char *args)
{
	char name[128], value[64], path[160];
	int i;

	if (sscanf(args, "%127s %63s", name, value) != 2)
		return -EINVAL;
	for (i = 0; name[i]; i++)
		if (name[i] == '/' || (name[i] == '.' && name[i + 1] == '.'))
			return -EINVAL;
		else if (name[i] == '.')
			name[i] = '/';
	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	return proc_write(path, value);
}

/* "dyndbg QUERY": a dynamic debug query (CONFIG_DYNAMIC_DEBUG), e.g. "module wireguard +p". */
static int cmd_dyndbg(const char *args)
{
	if (!*args)
		return -EINVAL;
	return proc_write("/proc/dynamic_debug/control", args);
}

/*
 * "sh PATH [ARG...]": run a shell script the host packed into the
 * initramfs (a network of many WireGuard peers is a script, not a command
 * per peer) with up to SH_ARGS words as its arguments; its output back as
 * "out=" lines.
 */
#define SH_ARGS 8
static int cmd_sh(const char *args)
{
	char buf[1024], *argv[SH_ARGS + 3], *save;
	int argc = 0;

	if (strlen(args) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, args);
	argv[argc++] = "/bin/sh";
	for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (argc == SH_ARGS + 2)
			return -E2BIG;
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	if (argc < 2 || argv[1][0] != '/')
		return -EINVAL;
	if (access(argv[1], R_OK)) {
		reply("error=%s: %s", argv[1], strerror(errno));
		return -ENOENT;
	}
	return run(argv);
}

/* "stream start NAME DST PORT INTERVAL-US" | "stream stop|stat NAME" */
static int cmd_stream(const char *args)
{
	char op[8], name[32], dst[64], err[256];
	unsigned int port, interval;
	uint64_t sent, errors;
	int rc;

	if (sscanf(args, "%7s %31s", op, name) != 2)
		return -EINVAL;
	if (!strcmp(op, "start")) {
		if (sscanf(args, "%*s %*s %63s %u %u", dst, &port, &interval) != 3)
			return -EINVAL;
		rc = stream_start(name, dst, port, interval, err, sizeof(err));
		if (rc)
			reply("error=%s", err);
		return rc;
	}
	if (!strcmp(op, "stop"))
		return stream_stop(name);
	if (strcmp(op, "stat"))
		return -EINVAL;
	rc = stream_stat(name, &sent, &errors);
	if (rc)
		return rc;
	reply("sent=%llu", (unsigned long long)sent);
	reply("errors=%llu", (unsigned long long)errors);
	return 0;
}

static void reply_run(const char *key, const struct sink_run *r)
{
	reply("%s=%08x %llu %llu %llu", key, r->sender, (unsigned long long)r->count,
	      (unsigned long long)r->first_ns / 1000, (unsigned long long)r->last_ns / 1000);
}

/* "sink start PORT" | "sink stat" | "sink reset" | "sink runs" */
static int cmd_sink(const char *args)
{
	uint64_t received, max_seq, last_seq;
	static struct sink_view v;
	unsigned int port, i;
	char err[256];
	int rc;

	if (sscanf(args, "start %u", &port) == 1) {
		rc = sink_start(port, err, sizeof(err));
		if (rc)
			reply("error=%s", err);
		return rc;
	}
	if (!strcmp(args, "reset")) {
		sink_reset();
		return 0;
	}
	if (!strcmp(args, "runs")) {
		sink_runs(&v);
		reply("switches=%llu", (unsigned long long)v.switches);
		reply("runs_dropped=%llu", (unsigned long long)v.runs_dropped);
		reply("senders_dropped=%llu", (unsigned long long)v.senders_dropped);
		for (i = 0; i < v.nsenders; i++)
			reply_run("sender", &v.senders[i]);
		for (i = 0; i < v.nruns; i++)
			reply_run("run", &v.runs[i]);
		return 0;
	}
	if (strcmp(args, "stat"))
		return -EINVAL;
	sink_stat(&received, &max_seq, &last_seq);
	reply("received=%llu", (unsigned long long)received);
	reply("max_seq=%llu", (unsigned long long)max_seq);
	reply("last_seq=%llu", (unsigned long long)last_seq);
	return 0;
}

/* ---- /dev/vmgenid (guest/fork_signal.c) ------------------------------------------ */

/* "vmgenid-probe": what the device did with each use, as errno names' numbers. */
static int cmd_vmgenid_probe(const char *args)
{
	struct signal_probe p;
	int rc = signal_probe(&p);

	(void)args;
	if (rc) {
		reply("error=%s: %s", "/dev/vmgenid", strerror(-rc));
		return rc;
	}
	reply("generation=%llu", (unsigned long long)p.generation);
	reply("id_offset=%u", p.id_offset);
	reply("short_read=%d", p.short_read);
	reply("rw_open=%d", p.rw_open);
	reply("write=%d", p.write);
	reply("map_read=%d", p.map_read);
	reply("map_shared_write=%d", p.map_shared_write);
	reply("map_private_write=%d", p.map_private_write);
	reply("map_exec=%d", p.map_exec);
	reply("map_offset=%d", p.map_offset);
	reply("mprotect_write=%d", p.mprotect_write);
	reply("mprotect_exec=%d", p.mprotect_exec);
	reply("id_matches=%d", p.id_matches);
	return 0;
}

/* "vmgenid-watch start|status": poll() wakes and uevents, counted. */
static int cmd_vmgenid_watch(const char *args)
{
	unsigned int wakes, uevents;
	uint64_t gen;
	int rc;

	if (!strcmp(args, "start"))
		return signal_watch_start();
	if (strcmp(args, "status"))
		return -EINVAL;
	rc = signal_watch_status(&wakes, &uevents, &gen);
	if (rc)
		return rc;
	reply("wakes=%u", wakes);
	reply("uevents=%u", uevents);
	reply("generation=%llu", (unsigned long long)gen);
	return 0;
}

/* "vmgenid-maps start|status": the ID's page in the agent's own mappings. */
static int cmd_vmgenid_maps(const char *args)
{
	struct signal_maps m;
	int rc;

	if (!strcmp(args, "start"))
		return signal_maps_start();
	if (strcmp(args, "status"))
		return -EINVAL;
	rc = signal_maps_status(&m);
	if (rc)
		return rc;
	reply("dev_faults=%ld", m.dev_faults);
	reply("dev_id=%s", m.dev_id);
	reply("vvar=%d", m.vvar);
	if (!m.vvar)
		return 0;
	reply("vvar_faults=%ld", m.vvar_faults);
	reply("vvar_id=%s", m.vvar_id);
	reply("child_vvar_faults=%ld", m.child_vvar_faults);
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
	{ "credit", cmd_credit },
	{ "record", cmd_record },
	{ "bench", cmd_bench },
	{ "bench-u32", cmd_bench_u32 },
	{ "bench-fork", cmd_bench_fork },
	{ "burst", cmd_burst },
	{ "bench-xmit", cmd_bench_xmit },
	{ "sample", cmd_sample },
	{ "reseeds", cmd_reseeds },
	{ "vmgenid-probe", cmd_vmgenid_probe },
	{ "vmgenid-watch", cmd_vmgenid_watch },
	{ "vmgenid-maps", cmd_vmgenid_maps },
	{ "net-up", cmd_net_up },
	{ "wg-up", cmd_wg_up },
	{ "wg-show", cmd_wg_show },
	{ "wg-port", cmd_wg_port },
	{ "gpe", cmd_gpe },
	{ "clock", cmd_clock },
	{ "tcp-isn", cmd_tcp_isn },
	{ "kmsg", cmd_kmsg },
	{ "sysctl", cmd_sysctl },
	{ "dyndbg", cmd_dyndbg },
	{ "sh", cmd_sh },
	{ "stream", cmd_stream },
	{ "sink", cmd_sink },
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

#define PORT_WAIT_MS 10000

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
		if (fgets(name, sizeof(name), f) && !strncmp(name, AGENT_PORT, strlen(AGENT_PORT))) {
			snprintf(path, sizeof(path), "/dev/%s", d->d_name);
			fd = open(path, O_RDWR);
		}
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return fd;
}

int main(int argc, char **argv)
{
	char buf[AGENT_REQUEST_MAX], *nl;
	size_t len = 0;
	ssize_t n;
	int waited;

	if (argc == 4 && !strcmp(argv[1], EXEC_LINK_ARG))
		return recorder_exec_link(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], BENCH_FORK_ARG))
		return bench_fork_main(argv[2]);
	if (crng_nowait())
		fprintf(stderr, "agent: not waiting for the crng (forksafe.crng=nowait)\n");
	else
		wait_for_crng();

	/* A port whose driver init loaded as a module comes a moment later. */
	for (waited = 0; (port = open_port()) < 0 && waited < PORT_WAIT_MS; waited += 50)
		usleep(50000);
	if (port < 0) {
		fprintf(stderr, "agent: no virtio-serial port named %s\n", AGENT_PORT);
		return 1;
	}
	fprintf(stderr, "agent: listening on %s\n", AGENT_PORT);
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
