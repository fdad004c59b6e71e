// SPDX-License-Identifier: GPL-2.0
/*
 * Networking for the WireGuard scenarios (docs/protocol.md lists the agent
 * commands on top of this).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "clock.h"
#include "genid.h"
#include "net.h"

/* ---- running ip and wg -------------------------------------------------- */

int net_run(char *const argv[], char *out, size_t outlen)
{
	int pipefd[2], status;
	char scratch[256];
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(pipefd))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	while (len < outlen - 1 && (n = read(pipefd[0], out + len, outlen - len - 1)) > 0)
		len += n;
	out[len] = '\0';
	while (read(pipefd[0], scratch, sizeof(scratch)) > 0)
		; /* the rest, so that the child never blocks on a full pipe */
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* ---- streams -------------------------------------------------------------- */

#define MAX_STREAMS 4

struct stream {
	char name[16];
	pthread_t tid;
	int fd;
	struct sockaddr_in dst;
	unsigned int interval_us;
	const volatile uint8_t *genid;
	atomic_int running;
	atomic_uint_least64_t sent, errors;
};

static struct stream streams[MAX_STREAMS];

/* The live ID, mapped once for every stream; NULL (sender 0) without one. */
static const volatile uint8_t *live_genid;
static pthread_once_t live_genid_once = PTHREAD_ONCE_INIT;

static void live_genid_map(void)
{
	char err[256];

	live_genid = genid_map(err, sizeof(err));
}

static const volatile uint8_t *stream_genid(void)
{
	pthread_once(&live_genid_once, live_genid_map);
	return live_genid;
}

static uint32_t stream_sender(const volatile uint8_t *genid)
{
	uint8_t g[GENID_LEN];

	genid_read(genid, g);
	return (uint32_t)g[12] << 24 | (uint32_t)g[13] << 16 | (uint32_t)g[14] << 8 | g[15];
}

static void *stream_loop(void *arg)
{
	struct stream *s = arg;
	struct datagram d = { 0 };
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (atomic_load(&s->running)) {
		d.mono_ns = mono_ns();
		d.sender = s->genid ? stream_sender(s->genid) : 0;
		if (getrandom(d.random, sizeof(d.random), 0) != sizeof(d.random))
			memset(d.random, 0, sizeof(d.random));
		if (sendto(s->fd, &d, sizeof(d), 0, (struct sockaddr *)&s->dst, sizeof(s->dst)) < 0)
			atomic_fetch_add(&s->errors, 1);
		else
			atomic_fetch_add(&s->sent, 1);
		d.seq++;
		next.tv_nsec += (long)s->interval_us * 1000;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		/* A long pause (a snapshot) must not turn into a burst. */
		if ((uint64_t)mono_ns() > (uint64_t)next.tv_sec * 1000000000ull + next.tv_nsec + 100000000ull)
			clock_gettime(CLOCK_MONOTONIC, &next);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return NULL;
}

static struct stream *stream_find(const char *name)
{
	int i;

	for (i = 0; i < MAX_STREAMS; i++)
		if (streams[i].name[0] && !strcmp(streams[i].name, name))
			return &streams[i];
	return NULL;
}

int stream_start(const char *name, const char *dst, unsigned int port,
		 unsigned int interval_us, char *err, size_t errlen)
{
	struct stream *s = NULL;
	int i;

	if (strlen(name) >= sizeof(s->name) || stream_find(name)) {
		snprintf(err, errlen, "stream name '%s' too long or in use", name);
		return -EINVAL;
	}
	if (!port || port > 65535 || interval_us < 100 || interval_us > 10000000) {
		snprintf(err, errlen, "port 1..65535, interval 100..10000000 us");
		return -EINVAL;
	}
	for (i = 0; i < MAX_STREAMS && !s; i++)
		if (!streams[i].name[0])
			s = &streams[i];
	if (!s) {
		snprintf(err, errlen, "at most %d streams", MAX_STREAMS);
		return -ENOSPC;
	}
	memset(s, 0, sizeof(*s));
	s->dst.sin_family = AF_INET;
	s->dst.sin_port = htons(port);
	if (inet_pton(AF_INET, dst, &s->dst.sin_addr) != 1) {
		snprintf(err, errlen, "bad IPv4 address '%s'", dst);
		return -EINVAL;
	}
	s->fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (s->fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	s->interval_us = interval_us;
	s->genid = stream_genid();
	atomic_store(&s->running, 1);
	if (pthread_create(&s->tid, NULL, stream_loop, s)) {
		close(s->fd);
		snprintf(err, errlen, "pthread_create failed");
		return -EAGAIN;
	}
	snprintf(s->name, sizeof(s->name), "%s", name);
	return 0;
}

int stream_stop(const char *name)
{
	struct stream *s = stream_find(name);

	if (!s)
		return -ENOENT;
	atomic_store(&s->running, 0);
	pthread_join(s->tid, NULL);
	close(s->fd);
	s->name[0] = '\0';
	return 0;
}

int stream_stat(const char *name, uint64_t *sent, uint64_t *errors)
{
	struct stream *s = stream_find(name);

	if (!s)
		return -ENOENT;
	*sent = atomic_load(&s->sent);
	*errors = atomic_load(&s->errors);
	return 0;
}

/* ---- the TCP secret ------------------------------------------------------ */

static void tcp_close(const int fds[3])
{
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static int tcp_fail(const int fds[3], char *err, size_t errlen, const char *what)
{
	int e = errno;

	snprintf(err, errlen, "%s: %s", what, strerror(e));
	tcp_close(fds);
	return -e;
}

static int tcp_bound(unsigned int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

int tcp_isn(unsigned int port, uint32_t *isn, uint64_t *realtime_ns, char *err, size_t errlen)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fds[3] = { -1, -1, -1 }, on = 1, queue = TCP_SEND_QUEUE;
	uint32_t write_seq;
	socklen_t len = sizeof(write_seq);
	struct timespec ts;

	if (!port || port >= 65535) {
		snprintf(err, errlen, "port 1..65534");
		return -EINVAL;
	}
	fds[0] = tcp_bound(port);
	if (fds[0] < 0 || listen(fds[0], 1))
		return tcp_fail(fds, err, errlen, "listen");
	fds[1] = tcp_bound(port + 1);
	if (fds[1] < 0)
		return tcp_fail(fds, err, errlen, "bind");
	clock_gettime(CLOCK_REALTIME, &ts);
	if (connect(fds[1], (struct sockaddr *)&to, sizeof(to)))
		return tcp_fail(fds, err, errlen, "connect");
	/* The SYN took one: write_seq is the ISN + 1.  Closed in repair mode, it sends nothing. */
	if (setsockopt(fds[1], IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)) ||
	    setsockopt(fds[1], IPPROTO_TCP, TCP_REPAIR_QUEUE, &queue, sizeof(queue)) ||
	    getsockopt(fds[1], IPPROTO_TCP, TCP_QUEUE_SEQ, &write_seq, &len))
		return tcp_fail(fds, err, errlen, "TCP_REPAIR");
	fds[2] = accept(fds[0], NULL, NULL);
	*isn = write_seq - 1;
	*realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	tcp_close(fds);
	return 0;
}

/* ---- the sink ----------------------------------------------------------- */

/*
 * Besides counting, the sink keeps who sent what: per sender
 * (stream_sender()) its datagrams and its first and last arrival, and in
 * order each run of datagrams from one sender, so that a peer talking to
 * two clones of one VM shows which one it heard, for how long, and how
 * often it went from one to the other.  "sink reset" starts both (and
 * their clock) over.
 */
static struct {
	int fd;
	pthread_t tid;
	atomic_uint_least64_t received, max_seq, last_seq;
	pthread_mutex_t lock;
	uint64_t t0_ns, switches, runs_dropped, senders_dropped;
	unsigned int nruns, nsenders;
	struct sink_run runs[SINK_RUNS], senders[SINK_SENDERS];
} sink = { .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

/* The sender's total, or NULL when every slot is another's. */
static struct sink_run *sink_sender(uint32_t sender, uint64_t t)
{
	unsigned int i;

	for (i = 0; i < sink.nsenders; i++)
		if (sink.senders[i].sender == sender)
			return &sink.senders[i];
	if (sink.nsenders == SINK_SENDERS)
		return NULL;
	sink.senders[sink.nsenders] = (struct sink_run){ sender, 0, t, t };
	return &sink.senders[sink.nsenders++];
}

static void sink_note(uint32_t sender)
{
	struct sink_run *r, *total;
	uint64_t t;

	pthread_mutex_lock(&sink.lock);
	t = mono_ns() - sink.t0_ns;
	total = sink_sender(sender, t);
	if (total) {
		total->count++;
		total->last_ns = t;
	} else {
		sink.senders_dropped++;
	}
	r = sink.nruns ? &sink.runs[sink.nruns - 1] : NULL;
	if (r && r->sender == sender) {
		r->count++;
		r->last_ns = t;
	} else {
		if (r)
			sink.switches++;
		if (sink.nruns < SINK_RUNS) {
			r = &sink.runs[sink.nruns++];
		} else {
			/* The last slot takes every later run, counted as dropped. */
			sink.runs_dropped++;
		}
		*r = (struct sink_run){ sender, 1, t, t };
	}
	pthread_mutex_unlock(&sink.lock);
}

static void *sink_loop(void *arg)
{
	struct datagram d;
	uint64_t max;

	(void)arg;
	for (;;) {
		if (recv(sink.fd, &d, sizeof(d), 0) != sizeof(d))
			continue;
		atomic_fetch_add(&sink.received, 1);
		atomic_store(&sink.last_seq, d.seq);
		max = atomic_load(&sink.max_seq);
		if (d.seq > max)
			atomic_store(&sink.max_seq, d.seq);
		sink_note(d.sender);
	}
	return NULL;
}

int sink_start(unsigned int port, char *err, size_t errlen)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	if (sink.fd >= 0) {
		snprintf(err, errlen, "the sink is already running");
		return -EBUSY;
	}
	sink_reset();
	sink.fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (sink.fd < 0 || bind(sink.fd, (struct sockaddr *)&a, sizeof(a))) {
		snprintf(err, errlen, "udp port %u: %s", port, strerror(errno));
		if (sink.fd >= 0)
			close(sink.fd);
		sink.fd = -1;
		return -EINVAL;
	}
	if (pthread_create(&sink.tid, NULL, sink_loop, NULL)) {
		snprintf(err, errlen, "pthread_create failed");
		return -EAGAIN;
	}
	return 0;
}

void sink_stat(uint64_t *received, uint64_t *max_seq, uint64_t *last_seq)
{
	*received = atomic_load(&sink.received);
	*max_seq = atomic_load(&sink.max_seq);
	*last_seq = atomic_load(&sink.last_seq);
}

void sink_reset(void)
{
	pthread_mutex_lock(&sink.lock);
	sink.t0_ns = mono_ns();
	sink.switches = sink.runs_dropped = sink.senders_dropped = 0;
	sink.nruns = sink.nsenders = 0;
	pthread_mutex_unlock(&sink.lock);
}

void sink_runs(struct sink_view *v)
{
	pthread_mutex_lock(&sink.lock);
	v->nruns = sink.nruns;
	v->nsenders = sink.nsenders;
	memcpy(v->runs, sink.runs, sink.nruns * sizeof(v->runs[0]));
	memcpy(v->senders, sink.senders, sink.nsenders * sizeof(v->senders[0]));
	v->switches = sink.switches;
	v->runs_dropped = sink.runs_dropped;
	v->senders_dropped = sink.senders_dropped;
	pthread_mutex_unlock(&sink.lock);
}
