// SPDX-License-Identifier: GPL-2.0
/*
 * What the patched kernel's checks cost, for make bench-rng and bench-wg.
 *
 * The RNG: the synchronous generation-ID check is what the patched kernel
 * adds to every call, so it is measured the way the fork matrix loads the
 * RNG, one pinned thread per vCPU: getrandom() in a tight loop, and
 * get_random_u32() through the hook of the *-bench kernels
 * (kernel-patches/6.1/bench/).
 *
 * WireGuard: the keypair's fork stamp is checked on every packet sent, so
 * a burst of datagrams through the tunnel is timed on the guest's clock,
 * from the first sendto() until the device has sent the last one.  In a
 * guest that counts instructions, that time less the idle time is the
 * instructions the whole send path executed.  The sender waits for the
 * device at times (its socket buffer is small, so that WireGuard never
 * drops), and the clock of a guest that counts instructions jumps ahead
 * while it idles: the idle time is taken in ns, not /proc/uptime's 10 ms.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "bench.h"
#include "clock.h"
#include "vdso.h"

#define MAX_THREADS 64
#define MAX_SIZE 4096
/* The hooks of the *-bench kernels (kernel-patches/6.1/bench/). */
#define BENCH_U32_PATH "/proc/sys/kernel/random/bench_u32"
#define BENCH_RESEEDS_PATH "/proc/sys/kernel/random/bench_reseeds"
#define BENCH_XMIT_PATH "/sys/module/wireguard/parameters/bench_xmit"

struct bench_thread {
	pthread_t tid;
	int cpu;
	uint64_t count;
	int error;
};

static size_t req_size;
static atomic_int stop;

static void pin(struct bench_thread *t)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		t->error = errno;
}

/* count = getrandom() calls until told to stop */
static void *getrandom_loop(void *arg)
{
	struct bench_thread *t = arg;
	unsigned char buf[MAX_SIZE];

	pin(t);
	while (!atomic_load_explicit(&stop, memory_order_relaxed) && !t->error) {
		if (getrandom(buf, req_size, 0) != (ssize_t)req_size)
			t->error = errno ? errno : EIO;
		t->count++;
	}
	return NULL;
}

/* The same through the vDSO's getrandom() (6.11+), a state per thread. */
static void *vdso_loop(void *arg)
{
	struct bench_thread *t = arg;
	unsigned char buf[MAX_SIZE];
	void *state;

	pin(t);
	state = vdso_getrandom_state();
	if (!state)
		t->error = errno ? errno : ENOMEM;
	while (!atomic_load_explicit(&stop, memory_order_relaxed) && !t->error) {
		if (vdso_getrandom(state, buf, req_size, 0) != (ssize_t)req_size)
			t->error = errno ? errno : EIO;
		t->count++;
	}
	return NULL;
}

/* One number from a hook: 0, or an errno. */
static int read_hook(const char *path, uint64_t *v)
{
	unsigned long long n;
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return errno;
	ok = fscanf(f, "%llu", &n) == 1;
	fclose(f);
	if (!ok)
		return EIO;
	*v = n;
	return 0;
}

/* count = get_random_u32() calls per second, as the kernel's hook timed them */
static void *u32_once(void *arg)
{
	struct bench_thread *t = arg;

	pin(t);
	if (!t->error)
		t->error = read_hook(BENCH_U32_PATH, &t->count);
	return NULL;
}

/*
 * One thread per online CPU running fn; with ms > 0 they are stopped after
 * ms milliseconds.  Sums their counts into *total.
 */
static int run_per_cpu(void *(*fn)(void *), unsigned int ms, uint64_t *total,
		       int *threads, char *err, size_t errlen)
{
	static struct bench_thread t[MAX_THREADS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	int i, n = 0, rc = 0;

	if (cpus < 1 || cpus > MAX_THREADS) {
		snprintf(err, errlen, "%ld CPUs, at most %d supported", cpus, MAX_THREADS);
		return -1;
	}
	atomic_store(&stop, 0);
	for (i = 0; i < cpus; i++, n++) {
		t[i] = (struct bench_thread){ .cpu = i };
		if (pthread_create(&t[i].tid, NULL, fn, &t[i]))
			break;
	}
	if (ms)
		nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	*total = 0;
	for (i = 0; i < n; i++) {
		pthread_join(t[i].tid, NULL);
		*total += t[i].count;
		if (t[i].error && !rc) {
			snprintf(err, errlen, "thread %d: %s", i, strerror(t[i].error));
			rc = -1;
		}
	}
	if (n < cpus && !rc) {
		snprintf(err, errlen, "started %d of %ld threads", n, cpus);
		rc = -1;
	}
	*threads = n;
	return rc;
}

int bench_getrandom(size_t size, unsigned int ms, int vdso, uint64_t *calls, int *threads,
		    char *err, size_t errlen)
{
	if (size < 1 || size > MAX_SIZE || ms < 1 || ms > 600000) {
		snprintf(err, errlen, "size must be 1..%d, ms 1..600000", MAX_SIZE);
		return -1;
	}
	if (vdso && vdso_getrandom_init(err, errlen))
		return -1;
	req_size = size;
	return run_per_cpu(vdso ? vdso_loop : getrandom_loop, ms, calls, threads, err, errlen);
}

int bench_u32(uint64_t *calls_per_s, int *threads, char *err, size_t errlen)
{
	if (access(BENCH_U32_PATH, R_OK)) {
		snprintf(err, errlen, "%s: %s (boot a *-bench kernel)", BENCH_U32_PATH, strerror(errno));
		return -1;
	}
	return run_per_cpu(u32_once, 0, calls_per_s, threads, err, errlen);
}

int bench_reseeds(uint64_t *reseeds, char *err, size_t errlen)
{
	int rc = read_hook(BENCH_RESEEDS_PATH, reseeds);

	if (rc)
		snprintf(err, errlen, "%s: %s (boot a *-bench kernel)", BENCH_RESEEDS_PATH, strerror(rc));
	return rc ? -1 : 0;
}

/* ---- fork ------------------------------------------------------------------ */

int bench_fork(unsigned int count, uint64_t *ns, char *err, size_t errlen)
{
	char buf[16], why[256];
	int64_t start;
	unsigned int i;
	void *state;
	int status;
	pid_t pid;

	if (!vdso_getrandom_init(why, sizeof(why)) && (state = vdso_getrandom_state()))
		vdso_getrandom(state, buf, sizeof(buf), 0);
	start = mono_ns();
	for (i = 0; i < count; i++) {
		pid = fork();
		if (pid < 0) {
			snprintf(err, errlen, "fork: %s", strerror(errno));
			return -1;
		}
		if (!pid)
			_exit(0);
		if (waitpid(pid, &status, 0) != pid) {
			snprintf(err, errlen, "waitpid: %s", strerror(errno));
			return -1;
		}
	}
	*ns = (uint64_t)(mono_ns() - start);
	return 0;
}

/* ---- a burst through the tunnel ------------------------------------------- */

#define BURST_MAX (10u * 1000 * 1000)
#define BURST_DRAIN_NS (30ull * 1000000000)
#define BURST_SNDBUF 16384	/* blocks the sender rather than letting WireGuard drop */

/*
 * Idle time over all CPUs, in ns: the sum of the idle and iowait sleep
 * times that /proc/timer_list shows for each CPU (NO_HZ_COMMON), where
 * /proc/uptime rounds to 10 ms.  0 or an errno.
 */
static int idle_ns(uint64_t *ns)
{
	unsigned long long v;
	char line[256], name[32];
	FILE *f = fopen("/proc/timer_list", "r");
	int found = 0;

	if (!f)
		return errno;
	*ns = 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " .%31[a-z_] : %llu nsecs", name, &v) == 2 &&
		    (!strcmp(name, "idle_sleeptime") || !strcmp(name, "iowait_sleeptime"))) {
			*ns += v;
			found = 1;
		}
	fclose(f);
	return found ? 0 : ENOENT;
}

/* Context switches since boot, from /proc/stat's ctxt line; 0 or an errno. */
static int ctxt_count(uint64_t *n)
{
	unsigned long long v;
	char line[256];
	FILE *f = fopen("/proc/stat", "r");
	int rc = ENOENT;

	if (!f)
		return errno;
	while (rc && fgets(line, sizeof(line), f))
		if (sscanf(line, "ctxt %llu", &v) == 1) {
			*n = v;
			rc = 0;
		}
	fclose(f);
	return rc;
}

/*
 * Packets DEV has sent, from /proc/net/dev, or the counter in the file DEV
 * if it is a path; 0 or an errno.
 */
static int tx_packets(const char *dev, uint64_t *n)
{
	unsigned long long v[10];
	char line[512], name[64];
	FILE *f;
	int rc = ENODEV;

	if (dev[0] == '/')
		return read_hook(dev, n);
	f = fopen("/proc/net/dev", "r");
	if (!f)
		return errno;
	while (rc && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!colon || sscanf(line, " %63[^:]", name) != 1 || strcmp(name, dev))
			continue;
		if (sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) != 10) {
			rc = EIO;
		} else {
			*n = v[9];
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

int bench_burst(const char *dev, const char *dst, unsigned int port, uint64_t count,
		struct burst *b, char *err, size_t errlen)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = -1, sndbuf = BURST_SNDBUF, rc = 0;
	uint64_t tx0 = 0, idle0 = 0, idle1 = 0, ctxt0 = 0, ctxt1 = 0, i, deadline;
	unsigned char d[32] = { 0 };

	memset(b, 0, sizeof(*b));
	if (!count || count > BURST_MAX || !port || port > 65535 || inet_pton(AF_INET, dst, &to.sin_addr) != 1) {
		snprintf(err, errlen, "burst: 1..%u datagrams to an IPv4 address and a port 1..65535", BURST_MAX);
		return -1;
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf))) {
		snprintf(err, errlen, "burst: socket: %s", strerror(errno));
		goto out;
	}
	rc = tx_packets(dev, &tx0);
	rc = rc ? rc : idle_ns(&idle0);
	rc = rc ? rc : ctxt_count(&ctxt0);
	if (rc) {
		snprintf(err, errlen, "burst: %s's packets, the idle time (/proc/timer_list) or the context switches (/proc/stat): %s",
			 dev, strerror(rc));
		goto out;
	}
	b->start_ns = mono_ns();
	for (i = 0; i < count; i++) {
		memcpy(d, &i, sizeof(i));
		if (sendto(fd, d, sizeof(d), 0, (struct sockaddr *)&to, sizeof(to)) != sizeof(d)) {
			snprintf(err, errlen, "burst: datagram %llu: %s", (unsigned long long)i, strerror(errno));
			goto out;
		}
	}
	/* Until the device has sent them all; a drop shows as a burst that never drains. */
	deadline = (uint64_t)mono_ns() + BURST_DRAIN_NS;
	for (;;) {
		rc = tx_packets(dev, &b->sent);
		b->sent -= tx0;
		if (rc || b->sent >= count || (uint64_t)mono_ns() > deadline)
			break;
		usleep(1000);
	}
	b->end_ns = mono_ns();
	rc = rc ? rc : idle_ns(&idle1);
	rc = rc ? rc : ctxt_count(&ctxt1);
	if (rc) {
		snprintf(err, errlen, "burst: %s's packets, the idle time (/proc/timer_list) or the context switches (/proc/stat): %s",
			 dev, strerror(rc));
		goto out;
	}
	b->idle_ns = idle1 - idle0;
	b->ctxt = ctxt1 - ctxt0;
	close(fd);
	if (b->sent < count) {
		snprintf(err, errlen, "burst: %s sent %llu of %llu datagrams", dev,
			 (unsigned long long)b->sent, (unsigned long long)count);
		return -1;
	}
	return 0;
out:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* ---- WireGuard's send path in place ------------------------------------- */

int bench_xmit(const char *dev, uint64_t count, uint64_t *ns, char *err, size_t errlen)
{
	char line[64];
	int fd, len, rc;

	if (!count || count > BURST_MAX || strlen(dev) > 15) {
		snprintf(err, errlen, "bench-xmit: a device name and 1..%u packets", BURST_MAX);
		return -1;
	}
	fd = open(BENCH_XMIT_PATH, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s (boot a *-bench kernel)", BENCH_XMIT_PATH, strerror(errno));
		return -1;
	}
	/* The kernel runs the packets in the write, and says why not in its errno. */
	len = snprintf(line, sizeof(line), "%s %llu\n", dev, (unsigned long long)count);
	errno = 0;
	rc = write(fd, line, len) == len ? 0 : errno ? errno : EIO;
	close(fd);
	if (rc) {
		snprintf(err, errlen, "bench-xmit: %s %llu: %s%s", dev, (unsigned long long)count, strerror(rc),
			 rc == EIO ? " (packets left unsent: no keypair yet?)" :
			 rc == EOPNOTSUPP ? " (needs wireguard.bench_sink=1 and one CPU)" : "");
		return -1;
	}
	rc = read_hook(BENCH_XMIT_PATH, ns);
	if (rc || !*ns) {
		snprintf(err, errlen, "bench-xmit: %s gives no time: %s", BENCH_XMIT_PATH,
			 rc ? strerror(rc) : "0 ns");
		return -1;
	}
	return 0;
}
