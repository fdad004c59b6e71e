// SPDX-License-Identifier: GPL-2.0
/*
 * The RNG recorder: what a clone's RNG produced around a fork, in each of
 * the shapes in which user space gets it (guest/protocol.h lists them).
 *
 * A recording is a set of streams, each a run of records: a 64-bit
 * fingerprint of some output, CLOCK_MONOTONIC when it was produced, and
 * whether the live generation ID already differed from the one seen when
 * recording started at the moment the output was produced.  The host
 * starts a recording just before the snapshot; each clone resumes in the
 * middle of it, finishes it and the host dumps it.  Comparing clones
 * record by record shows how much a clone produced from the pre-fork
 * state after the hypervisor changed the ID.
 *
 *   getrandom-16, insecure-16: one thread per online CPU, pinned to it, a
 *	stream each, calls getrandom() (with GRND_INSECURE) for 16 bytes in
 *	a loop; the ID is read before each call.
 *   getrandom-16MiB, urandom-1MiB: one thread on CPU 0 calls getrandom() of
 *	16 MiB (read() of 1 MiB from /dev/urandom) again and again; stream 0
 *	has a record per 4 KiB page.  The buffer is registered with
 *	userfaultfd, so the kernel's first write to each page waits in a
 *	handler thread that reads the ID and the clock before it maps the
 *	page: CHANGED says what the ID was when the kernel wrote that page,
 *	and flips in the middle of a call that a fork interrupted.
 *   vdso-16: as getrandom-16, each call the vDSO's getrandom() (6.11+)
 *	with a state per thread (guest/vdso.c).
 *   drbg-16, drbg-checked-16: as getrandom-16, each call 16 bytes of a
 *	user-space DRBG per thread (libforksafe's reference DRBG, guest/
 *	forksafe.c), seeded once from getrandom(); the checked one compares
 *	the /dev/vmgenid mapping before each output and reseeds on a change.
 *   uuid: as getrandom-16, each call a read of
 *	/proc/sys/kernel/random/uuid (the kernel's get_random_bytes()).
 *   openssl-public-16 ... libuuid-16: one thread, each call 16 bytes from
 *	a library, drawn by a python3 process of the guest's in lock-step;
 *	openssl-fs-*: OpenSSL's, with forksafe-openssl as its DRBG.
 *   systemd-seed: the same process runs systemd-random-seed save, what a
 *	clone's shutdown runs, and each record is the seed file it wrote.
 *   exec: one process per CPU execs this binary again and again, each
 *	program recording its AT_RANDOM (stream 2 * CPU) and its stack and
 *	mmap bases (2 * CPU + 1); the ID is read before each execve().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/random.h>
#include <linux/userfaultfd.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "clock.h"
#include "forksafe.h"
#include "genid.h"
#include "protocol.h"
#include "recorder.h"
#include "vdso.h"

/* Debian 12's headers have it; older ones may not. */
#ifndef GRND_INSECURE
#define GRND_INSECURE 0x0004
#endif

/* ---- the recording -------------------------------------------------------- */

/*
 * A stream is written by one thread and read by the agent's: each record
 * is complete before count (release) says it exists.  SEQ is the index.
 */
struct record {
	uint64_t fp;
	int64_t t_ns;
	uint32_t changed;
};

struct stream {
	struct record *rec;
	_Atomic uint32_t count;
};

/* A thread that records, pinned to cpu, onto streams from stream on. */
struct worker {
	pthread_t tid;
	int cpu;
	int stream;
	_Atomic int started;
};

/*
 * A shape: the bytes a record stands for, the workers (one per online
 * CPU, or one on CPU 0), the streams each worker fills and its loop.
 */
struct shape {
	const char *name;
	uint32_t unit;
	int per_cpu;
	int streams;
	void (*run)(struct worker *w);
};

static const struct shape *shape;	/* set when a recording starts */
static struct stream streams[DUMP_MAX_STREAMS];
static int nstreams;
static uint32_t per_stream;
static struct worker workers[DUMP_MAX_STREAMS];
static int nworkers;
static _Atomic int nstarted;
static _Atomic int nended;
static const volatile uint8_t *live_id;
static uint64_t live_addr;
static uint8_t start_id[GENID_LEN];

/*
 * FNV-1a over 64-bit words, the last one padded with zeros.  Each step is
 * a bijection of the running value and of the word, so changing any one
 * byte of the output changes the fingerprint.
 */
static uint64_t fingerprint(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ULL, w;
	size_t i;

	for (i = 0; i < len; i += 8) {
		w = 0;
		memcpy(&w, b + i, len - i < 8 ? len - i : 8);
		h = (h ^ w) * 0x100000001b3ULL;
	}
	return h;
}

/* Does the live generation ID differ from the one recording started with? */
static int id_changed(void)
{
	uint8_t id[GENID_LEN];

	genid_read(live_id, id);
	return memcmp(id, start_id, GENID_LEN) != 0;
}

/* Append a record to stream s; false once the stream is full. */
static int add(int s, uint64_t fp, int64_t t_ns, int changed)
{
	struct stream *st = &streams[s];
	uint32_t n = atomic_load_explicit(&st->count, memory_order_relaxed);

	if (n >= per_stream)
		return 0;
	st->rec[n] = (struct record){ .fp = fp, .t_ns = t_ns, .changed = changed };
	atomic_store_explicit(&st->count, n + 1, memory_order_release);
	return n + 1 < per_stream;
}

/* Recording is under way on w's streams: recorder_start may answer. */
static void started(struct worker *w)
{
	if (!atomic_exchange(&w->started, 1))
		atomic_fetch_add(&nstarted, 1);
}

/* ---- failing ---------------------------------------------------------------- */

/*
 * The first failure of any thread ends the recording: every loop stops,
 * and `record status` answers err with the errno and the reason.  The
 * reason is written before the errno (release) says there is one.
 */
static _Atomic int fail_claimed, fail_errno;
static char fail_why[192];

static void fail(int err, const char *fmt, ...)
{
	va_list ap;

	if (atomic_exchange(&fail_claimed, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(fail_why, sizeof(fail_why), fmt, ap);
	va_end(ap);
	atomic_store_explicit(&fail_errno, err > 0 ? err : EIO, memory_order_release);
}

static int failed(void)
{
	return atomic_load_explicit(&fail_errno, memory_order_acquire);
}

/* ---- getrandom-16, insecure-16, uuid: short calls on every CPU ------------- */

/*
 * The commonest use: a small request per key or nonce.  The ID is read
 * before the call, so a record marked changed came from a call that began
 * after the hypervisor changed the ID.  Under way after 16 calls.
 */
struct short_call {
	const char *what;
	ssize_t (*draw)(const struct short_call *c, char *out, size_t len);
	size_t len;		/* what one call returns, at most 64 bytes */
	unsigned int flags;	/* getrandom()'s */
	int fd;			/* the uuid file */
	void *state;		/* the vDSO's or the DRBG's, for this thread */
};

static void short_calls(struct worker *w, const struct short_call *c)
{
	char out[64];
	uint32_t i;
	ssize_t n;
	int changed;

	for (i = 1; !failed(); i++) {
		changed = id_changed();
		n = c->draw(c, out, c->len);
		if (n != (ssize_t)c->len) {
			fail(n < 0 ? errno : EIO, "%s: %s", c->what, n < 0 ? strerror(errno) : "short read");
			return;
		}
		if (!add(w->stream, fingerprint(out, c->len), mono_ns(), changed))
			return;
		if (i == 16)
			started(w);
	}
}

static ssize_t draw_getrandom(const struct short_call *c, char *out, size_t len)
{
	return getrandom(out, len, c->flags);
}

static void run_getrandom_16(struct worker *w)
{
	const struct short_call c = { "getrandom", draw_getrandom, RNG_BLOCK_BYTES, 0, -1, NULL };

	short_calls(w, &c);
}

/* For a crng that is not ready yet: GRND_INSECURE never blocks. */
static void run_insecure_16(struct worker *w)
{
	const struct short_call c = { "getrandom", draw_getrandom, RNG_BLOCK_BYTES, GRND_INSECURE, -1,
				      NULL };

	short_calls(w, &c);
}

/*
 * The vDSO's getrandom() makes its output in user space from a key of its
 * own per thread, and asks the kernel for a new key only when the
 * generation the kernel publishes in the vDSO data page moves: a fork is
 * seen there when the kernel reseeds, not when the ID changes.
 */
static ssize_t draw_vdso(const struct short_call *c, char *out, size_t len)
{
	return vdso_getrandom(c->state, out, len, c->flags);
}

static void run_vdso_16(struct worker *w)
{
	struct short_call c = { "vDSO getrandom", draw_vdso, RNG_BLOCK_BYTES, 0, -1, NULL };
	char why[128];
	int err = vdso_getrandom_init(why, sizeof(why));

	if (err) {
		fail(-err, "%s", why);
		return;
	}
	c.state = vdso_getrandom_state();
	if (!c.state) {
		fail(errno, "a vDSO getrandom() state: %s", strerror(errno));
		return;
	}
	short_calls(w, &c);
}

/*
 * A DRBG in user space holds a key of its own, which a fork copies into
 * every clone; no kernel change can reach it.  Without the check it goes
 * on from the pre-fork key forever (the window of user space); with it,
 * it reseeds before its first output after the ID changed.
 */
static ssize_t draw_drbg(const struct short_call *c, char *out, size_t len)
{
	int err = forksafe_drbg_generate(c->state, out, len);

	if (err) {
		errno = -err;
		return -1;
	}
	return (ssize_t)len;
}

static void drbg_calls(struct worker *w, int check)
{
	struct short_call c = { "DRBG", draw_drbg, RNG_BLOCK_BYTES, 0, -1, NULL };
	struct forksafe_drbg d;
	int err = check ? forksafe_open() : 0;

	if (!err)
		err = forksafe_drbg_init(&d, check);
	if (err) {
		fail(-err, "the DRBG: %s%s", strerror(-err),
		     err == -ENOENT ? " (no " FORKSAFE_DEVICE ": a kernel without the forksafe series)" : "");
		return;
	}
	c.state = &d;
	short_calls(w, &c);
	memset(&d, 0, sizeof(d));
}

static void run_drbg_16(struct worker *w)
{
	drbg_calls(w, 0);
}

static void run_drbg_checked_16(struct worker *w)
{
	drbg_calls(w, 1);
}

/*
 * The kernel's own get_random_bytes(), as user space sees it most
 * directly: every read of /proc/sys/kernel/random/uuid from offset 0
 * makes a new UUID from 16 bytes of it.  The record is the 36 characters.
 */
#define UUID_FILE "/proc/sys/kernel/random/uuid"

static ssize_t draw_uuid(const struct short_call *c, char *out, size_t len)
{
	return pread(c->fd, out, len, 0);
}

static void run_uuid(struct worker *w)
{
	struct short_call c = { UUID_FILE, draw_uuid, 36, 0, -1, NULL };

	c.fd = open(UUID_FILE, O_RDONLY | O_CLOEXEC);
	if (c.fd < 0) {
		fail(errno, UUID_FILE ": %s", strerror(errno));
		return;
	}
	short_calls(w, &c);
	close(c.fd);
}

/* ---- openssl-*, python-*, arc4random, libuuid: a library's RNG in user space - */

/*
 * What a program draws through a library keeps that library's state, which
 * a fork copies too.  A process of the guest's own python3 (an image's: the
 * initramfs has none) draws from one library per request, lock-step over a
 * socket: the agent reads the ID, asks for one output of 16 bytes and
 * records it, so a record marked changed was made after the ID changed.
 * The process runs across the fork, as a long-lived service's would.
 * OpenSSL through libcrypto's RAND_bytes() and RAND_priv_bytes() (its
 * public and private DRBGs, which reseed on their own schedule), Python's
 * random (a Mersenne Twister seeded once) and secrets, glibc's
 * arc4random_buf(), libuuid's uuid_generate_random().  openssl-fs-public-16
 * and openssl-fs-private-16 are OpenSSL's two with OPENSSL_CONF naming
 * forksafe-openssl's configuration (its Debian package installs it), as an
 * operator turns the provider on for a service; the process checks that
 * FORKSAFE-DRBG is the DRBG, else it exits and the recording fails with
 * what it said.  systemd-seed is no
 * library but a file: the seed systemd-random-seed saves at shutdown for
 * the next boot to load, one `save` per record, recorded as the SHA-256 of
 * the whole file (SEED_FILE_BYTES).
 */
#define PYTHON "/usr/bin/python3"
#define FORKSAFE_OPENSSL_CONF "OPENSSL_CONF=/etc/forksafe/openssl.cnf"

/*
 * openssl-tls-16 and openssl-fs-tls-16: a TLS server across the fork, the
 * attack of Ristenpart and Yilek (NDSS 2010).  The process starts
 * `openssl s_server` (TLS 1.3, a new P-256 key and certificate) on
 * loopback, and each record is one handshake begun with the same
 * ClientHello every time: a fixed client random, session ID and x25519
 * share (RFC 7748's test key: a client that draws nothing), so that what
 * differs between clones is the server's alone.  The record is the
 * SHA-256 of the ServerHello's random (OpenSSL's public DRBG) and its
 * x25519 share (a key made from the private DRBG), 16 bytes of it; the
 * connection closes after the ServerHello.  With openssl-fs-, s_server
 * inherits OPENSSL_CONF and draws from FORKSAFE-DRBG.
 */
#define TLS_PORT "4433"
#define TLS_CLIENT_SHARE "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
#define TLS_RETRY_RANDOM "cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c"

static const char library_py[] =
	"import ctypes, sys\n"
	"TLS_PORT, TLS_CLIENT_SHARE, TLS_RETRY_RANDOM = '" TLS_PORT "', '" TLS_CLIENT_SHARE "', '" TLS_RETRY_RANDOM "'\n"
	"b = ctypes.create_string_buffer(16)\n"
	"def lib(name, fn):\n"
	"    f = getattr(ctypes.CDLL(name), fn)\n"
	"    return lambda: (f(b, 16), b.raw)[1]\n"
	"s = sys.argv[1]\n"
	"if s.startswith('openssl-fs-'):\n"
	"    c = ctypes.CDLL('libcrypto.so.3')\n"
	"    for fn in ('RAND_get0_public', 'EVP_RAND_CTX_get0_rand', 'EVP_RAND_get0_name'):\n"
	"        getattr(c, fn).restype, getattr(c, fn).argtypes = ctypes.c_void_p, [ctypes.c_void_p]\n"
	"    drbg = ctypes.string_at(c.EVP_RAND_get0_name(c.EVP_RAND_CTX_get0_rand(c.RAND_get0_public(None))))\n"
	"    if drbg != b'FORKSAFE-DRBG':\n"
	"        sys.exit(s + ': OpenSSL draws from ' + drbg.decode() + ', not FORKSAFE-DRBG (forksafe-openssl installed?)')\n"
	"if s == 'openssl-public-16': f = lib('libcrypto.so.3', 'RAND_bytes')\n"
	"elif s == 'openssl-private-16': f = lib('libcrypto.so.3', 'RAND_priv_bytes')\n"
	"elif s in ('openssl-fs-public-16', 'openssl-fs-private-16'):\n"
	"    f = lib('libcrypto.so.3', 'RAND_bytes' if s == 'openssl-fs-public-16' else 'RAND_priv_bytes')\n"
	"elif s.endswith('tls-16'):\n"
	"    import atexit, hashlib, os, socket, subprocess, time\n"
	"    d = '/run/forksafe-tls'\n"
	"    os.makedirs(d, exist_ok=True)\n"
	"    q = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
	"    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',\n"
	"                    '-nodes', '-subj', '/CN=forksafe', '-days', '2', '-keyout', d + '/key.pem',\n"
	"                    '-out', d + '/cert.pem'], check=True, **q)\n"
	"    srv = subprocess.Popen(['openssl', 's_server', '-quiet', '-tls1_3', '-accept', '127.0.0.1:' + TLS_PORT,\n"
	"                            '-cert', d + '/cert.pem', '-key', d + '/key.pem'], **q)\n"
	"    atexit.register(srv.kill)\n"
	"    def ext(t, v): return t.to_bytes(2, 'big') + len(v).to_bytes(2, 'big') + v\n"
	"    share = bytes.fromhex(TLS_CLIENT_SHARE)\n"
	"    exts = (ext(0x2b, b'\\x02\\x03\\x04') + ext(0x0a, b'\\x00\\x02\\x00\\x1d') +\n"
	"            ext(0x33, b'\\x00\\x24\\x00\\x1d\\x00\\x20' + share) +\n"
	"            ext(0x0d, b'\\x00\\x08\\x04\\x03\\x08\\x04\\x04\\x01\\x08\\x07'))\n"
	"    body = (b'\\x03\\x03' + bytes(range(32)) + b'\\x20' + b'\\x11' * 32 + b'\\x00\\x06\\x13\\x01\\x13\\x02\\x13\\x03' +\n"
	"            b'\\x01\\x00' + len(exts).to_bytes(2, 'big') + exts)\n"
	"    hs = b'\\x01' + len(body).to_bytes(3, 'big') + body\n"
	"    hello = b'\\x16\\x03\\x01' + len(hs).to_bytes(2, 'big') + hs\n"
	"    def connect():\n"
	"        for _ in range(300):\n"
	"            try: return socket.create_connection(('127.0.0.1', int(TLS_PORT)), timeout=30)\n"
	"            except OSError: time.sleep(0.1)\n"
	"        sys.exit(s + ': openssl s_server never listened')\n"
	"    def take(c, n):\n"
	"        v = b''\n"
	"        while len(v) < n:\n"
	"            x = c.recv(n - len(v))\n"
	"            if not x: sys.exit(s + ': the server closed before its ServerHello')\n"
	"            v += x\n"
	"        return v\n"
	"    def f():\n"
	"        c = connect()\n"
	"        c.sendall(hello)\n"
	"        h = take(c, 5)\n"
	"        r = take(c, int.from_bytes(h[3:5], 'big'))\n"
	"        c.close()\n"
	"        if h[0] != 0x16 or r[0] != 2: sys.exit(s + ': no ServerHello: ' + (h + r[:8]).hex())\n"
	"        random, p = r[6:38], 39 + r[38] + 3\n"
	"        end, key = p + 2 + int.from_bytes(r[p:p + 2], 'big'), None\n"
	"        p += 2\n"
	"        while p + 4 <= end:\n"
	"            t, n = int.from_bytes(r[p:p + 2], 'big'), int.from_bytes(r[p + 2:p + 4], 'big')\n"
	"            if t == 0x33: key = r[p + 8:p + 4 + n]\n"
	"            p += 4 + n\n"
	"        if random.hex() == TLS_RETRY_RANDOM or not key or len(key) != 32:\n"
	"            sys.exit(s + ': a ServerHello without an x25519 share: ' + r.hex())\n"
	"        return hashlib.sha256(random + key).digest()[:16]\n"
	"elif s == 'arc4random-16': f = lib(None, 'arc4random_buf')\n"
	"elif s == 'libuuid-16':\n"
	"    g = ctypes.CDLL('libuuid.so.1').uuid_generate_random\n"
	"    f = lambda: (g(b), b.raw)[1]\n"
	"elif s == 'python-mt-16':\n"
	"    import random\n"
	"    f = lambda: random.getrandbits(128).to_bytes(16, 'little')\n"
	"elif s == 'python-secrets-16':\n"
	"    import secrets\n"
	"    f = lambda: secrets.token_bytes(16)\n"
	"elif s == 'systemd-seed':\n"
	"    import hashlib, subprocess\n"
	"    def f():\n"
	"        subprocess.run(['/lib/systemd/systemd-random-seed', 'save'], check=True,\n"
	"                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)\n"
	"        with open('/var/lib/systemd/random-seed', 'rb') as seed:\n"
	"            return hashlib.sha256(seed.read()).digest()[:16]\n"
	"else: sys.exit('unknown library ' + s)\n"
	"i, o = sys.stdin.buffer.raw, sys.stdout.buffer.raw\n"
	"while i.read(1): o.write(f())\n";

static ssize_t draw_library(const struct short_call *c, char *out, size_t len)
{
	size_t got = 0;
	ssize_t n;

	if (send(c->fd, "", 1, MSG_NOSIGNAL) != 1)
		return -1;
	while (got < len) {
		n = recv(c->fd, out + got, len - got, 0);
		if (n <= 0)
			return n < 0 ? -1 : (ssize_t)got;
		got += n;
	}
	return (ssize_t)got;
}

/* The shape's name says which library. */
static void run_library(struct worker *w)
{
	const char *library = shape->name;
	struct short_call c = { library, draw_library, RNG_BLOCK_BYTES, 0, -1, NULL };
	char *argv[] = { PYTHON, "-c", (char *)library_py, (char *)library, NULL };
	posix_spawn_file_actions_t fa;
	char **env = environ;
	int sv[2], status, err;
	size_t n = 0, i, m = 0;
	pid_t pid;

	if (access(PYTHON, X_OK)) {
		fail(ENOENT, "%s: no " PYTHON " in this guest (the library shapes run in an image)", library);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		fail(errno, "socketpair: %s", strerror(errno));
		return;
	}
	if (!strncmp(library, "openssl-fs-", 11)) {
		while (environ[n])
			n++;
		env = calloc(n + 2, sizeof(*env));
		if (!env) {
			close(sv[0]);
			close(sv[1]);
			fail(ENOMEM, "%s: no memory for the environment", library);
			return;
		}
		/* Ours, and no inherited one: getenv() takes the first. */
		env[m++] = (char *)FORKSAFE_OPENSSL_CONF;
		for (i = 0; i < n; i++)
			if (strncmp(environ[i], "OPENSSL_CONF=", 13))
				env[m++] = environ[i];
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
	err = posix_spawn(&pid, PYTHON, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	if (env != environ)
		free(env);
	close(sv[1]);
	if (err) {
		close(sv[0]);
		fail(err, "%s: cannot start " PYTHON ": %s", library, strerror(err));
		return;
	}
	c.fd = sv[0];
	short_calls(w, &c);
	/* End of input ends the process. */
	close(sv[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}


/* ---- getrandom-16MiB, urandom-1MiB: long reads, a record per page ------------ */

/*
 * A long read is recorded page by page, and what matters is the ID when
 * the kernel wrote each page, not when the call began: a fork lands
 * between two pages of one call.  The buffer is registered with
 * userfaultfd for missing pages and is empty before every call, so the
 * kernel's first write to each page faults into the handler thread,
 * which reads the ID and the clock and only then maps the page and lets
 * the kernel write it.  After the call every page is fingerprinted.
 */
struct page_seen {
	int64_t t_ns;
	uint32_t changed;
	_Atomic uint32_t call;	/* the call that faulted it: written last */
};

struct long_read {
	struct worker *w;
	const char *what;
	ssize_t (*fill)(struct long_read *lr);
	int fd;			/* what fill reads, if anything */
	uint8_t *buf;		/* mapped before the handler starts, never moved */
	size_t len, pages;
	struct page_seen *seen;
	_Atomic uint32_t call;	/* the call in progress, from 1 */
	int uffd;
	int stop[2];		/* a pipe: the reader tells the handler to end */
	pthread_t handler;
	int handler_runs;
};

static const uint8_t zero_page[RNG_PAGE_BYTES];

/* One message from the kernel: a missing page of ours, or a failure. */
static int page_fault(struct long_read *lr, const struct uffd_msg *m)
{
	uint64_t base = (uintptr_t)lr->buf, addr = m->arg.pagefault.address & ~(uint64_t)(RNG_PAGE_BYTES - 1);
	struct uffdio_copy copy = { .dst = addr, .src = (uintptr_t)zero_page, .len = RNG_PAGE_BYTES };
	struct uffdio_range range = { .start = addr, .len = RNG_PAGE_BYTES };
	uint32_t call = atomic_load_explicit(&lr->call, memory_order_acquire);
	struct page_seen *p;

	if (m->event != UFFD_EVENT_PAGEFAULT) {
		fail(EPROTO, "userfaultfd: unexpected event 0x%x", m->event);
		return -1;
	}
	if (addr < base || addr - base >= lr->len || (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)) {
		fail(EPROTO, "userfaultfd: unexpected fault at 0x%llx, flags 0x%llx",
		     (unsigned long long)addr, (unsigned long long)m->arg.pagefault.flags);
		return -1;
	}
	p = &lr->seen[(addr - base) / RNG_PAGE_BYTES];
	if (atomic_load_explicit(&p->call, memory_order_relaxed) != call) {
		p->changed = id_changed();
		p->t_ns = mono_ns();
		atomic_store_explicit(&p->call, call, memory_order_release);
	}
	/* Mapped already (a fault reported twice): wake the writer all the same. */
	if (ioctl(lr->uffd, UFFDIO_COPY, &copy) &&
	    (errno != EEXIST || ioctl(lr->uffd, UFFDIO_WAKE, &range))) {
		fail(errno, "UFFDIO_COPY: %s", strerror(errno));
		return -1;
	}
	started(lr->w);
	return 0;
}

/* Read the messages waiting; -1 once the recording failed. */
static int page_faults(struct long_read *lr)
{
	struct uffd_msg m[16];
	ssize_t n, i;

	n = read(lr->uffd, m, sizeof(m));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0 || n % sizeof(m[0])) {
		fail(n < 0 ? errno : EPROTO, "userfaultfd: read returned %zd: %s", n,
		     n < 0 ? strerror(errno) : "not whole messages");
		return -1;
	}
	for (i = 0; i < n / (ssize_t)sizeof(m[0]); i++)
		if (page_fault(lr, &m[i]))
			return -1;
	return 0;
}

/*
 * The handler thread, until the reader says stop or something fails.  A
 * failure unregisters the buffer, which wakes a fault still waiting and
 * lets later ones through unrecorded, so the reader never hangs: it sees
 * the failure once its call returns.  The reader checks for a failure
 * after it registers the buffer, so no registration outlives this.
 */
static void *fault_handler(void *arg)
{
	struct long_read *lr = arg;
	struct pollfd pfd[2] = { { .fd = lr->uffd, .events = POLLIN }, { .fd = lr->stop[0], .events = POLLIN } };
	struct uffdio_range all = { .start = (uintptr_t)lr->buf, .len = lr->len };

	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fail(errno, "poll: %s", strerror(errno));
			break;
		}
		if (pfd[1].revents)
			return NULL;
		if (pfd[0].revents & ~POLLIN) {
			fail(EPROTO, "userfaultfd: poll says 0x%x", pfd[0].revents);
			break;
		}
		if (pfd[0].revents && page_faults(lr))
			break;
	}
	ioctl(lr->uffd, UFFDIO_UNREGISTER, &all);
	return NULL;
}

/*
 * An empty buffer for the next call, registered: every page the call
 * writes faults.  A fresh mapping over the old one empties it (the guest
 * kernels have no madvise(), CONFIG_ADVISE_SYSCALLS being off), and a
 * new mapping must be registered again.
 */
static int buffer_empty(struct long_read *lr)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING,
				       .range = { .start = (uintptr_t)lr->buf, .len = lr->len } };

	if (mmap(lr->buf, lr->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0) == MAP_FAILED) {
		fail(errno, "mmap of %zu bytes: %s", lr->len, strerror(errno));
		return -1;
	}
	if (ioctl(lr->uffd, UFFDIO_REGISTER, &reg)) {
		fail(errno, "userfaultfd: cannot register the buffer: %s", strerror(errno));
		return -1;
	}
	if (!(reg.ioctls & (1ULL << _UFFDIO_COPY))) {
		fail(EOPNOTSUPP, "userfaultfd: no UFFDIO_COPY on the buffer");
		return -1;
	}
	return 0;
}

/*
 * The buffer, the userfaultfd and the handler thread.  The kernel must
 * hand over the faults of its own copies to user space, so the
 * userfaultfd is opened without UFFD_USER_MODE_ONLY (root may).
 */
static int long_read_setup(struct long_read *lr)
{
	struct uffdio_api api = { .api = UFFD_API };
	size_t i;

	lr->buf = mmap(NULL, lr->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (lr->buf == MAP_FAILED) {
		lr->buf = NULL;
		fail(errno, "mmap of %zu bytes: %s", lr->len, strerror(errno));
		return -1;
	}
	lr->seen = calloc(lr->pages, sizeof(*lr->seen));
	if (!lr->seen) {
		fail(ENOMEM, "no memory for %zu pages", lr->pages);
		return -1;
	}
	for (i = 0; i < lr->pages; i++)
		atomic_init(&lr->seen[i].call, 0);
	lr->uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (lr->uffd < 0) {
		fail(errno, "userfaultfd: %s (CONFIG_USERFAULTFD missing?)", strerror(errno));
		return -1;
	}
	if (ioctl(lr->uffd, UFFDIO_API, &api)) {
		fail(errno, "UFFDIO_API: %s", strerror(errno));
		return -1;
	}
	if (pipe2(lr->stop, O_CLOEXEC)) {
		fail(errno, "pipe: %s", strerror(errno));
		return -1;
	}
	if (pthread_create(&lr->handler, NULL, fault_handler, lr)) {
		fail(EAGAIN, "cannot start the page fault handler");
		return -1;
	}
	lr->handler_runs = 1;
	return 0;
}

static void long_read_teardown(struct long_read *lr)
{
	if (lr->handler_runs && write(lr->stop[1], "", 1) == 1)
		pthread_join(lr->handler, NULL);
	else if (lr->handler_runs)
		pthread_detach(lr->handler);
	if (lr->stop[0] >= 0) {
		close(lr->stop[0]);
		close(lr->stop[1]);
	}
	if (lr->uffd >= 0)
		close(lr->uffd);
	if (lr->buf)
		munmap(lr->buf, lr->len);
	free(lr->seen);
}

/* One call: every page written, each after its fault, appended. */
static int long_read_call(struct long_read *lr, uint32_t call)
{
	struct page_seen *p;
	ssize_t n;
	size_t i;

	if (buffer_empty(lr) || failed())
		return 0;
	atomic_store_explicit(&lr->call, call, memory_order_release);
	n = lr->fill(lr);
	if (failed())
		return 0;
	if (n < 0) {
		fail(errno, "%s: %s", lr->what, strerror(errno));
		return 0;
	}
	if ((size_t)n != lr->len) {
		fail(EIO, "%s: %zd of %zu bytes: pages left unwritten", lr->what, n, lr->len);
		return 0;
	}
	for (i = 0; i < lr->pages; i++) {
		p = &lr->seen[i];
		if (atomic_load_explicit(&p->call, memory_order_acquire) != call) {
			fail(EPROTO, "%s: page %zu of call %u was written without a fault", lr->what, i, call);
			return 0;
		}
		if (!add(lr->w->stream, fingerprint(lr->buf + i * RNG_PAGE_BYTES, RNG_PAGE_BYTES),
			 p->t_ns, p->changed))
			return 0;
	}
	return 1;
}

static void long_reads(struct long_read *lr)
{
	uint32_t call = 1;

	lr->pages = lr->len / RNG_PAGE_BYTES;
	lr->uffd = lr->stop[0] = lr->stop[1] = -1;
	if (!long_read_setup(lr))
		while (long_read_call(lr, call))
			call++;
	long_read_teardown(lr);
}

static ssize_t fill_getrandom(struct long_read *lr)
{
	return getrandom(lr->buf, lr->len, 0);
}

static ssize_t fill_urandom(struct long_read *lr)
{
	return read(lr->fd, lr->buf, lr->len);
}

static void run_getrandom_16mib(struct worker *w)
{
	struct long_read lr = { .w = w, .what = "getrandom", .fill = fill_getrandom, .len = 16 << 20 };

	long_reads(&lr);
}

static void run_urandom_1mib(struct worker *w)
{
	struct long_read lr = { .w = w, .what = "read of /dev/urandom", .fill = fill_urandom, .len = 1 << 20 };

	lr.fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (lr.fd < 0) {
		fail(errno, "/dev/urandom: %s", strerror(errno));
		return;
	}
	long_reads(&lr);
	close(lr.fd);
}

/* ---- exec: what a new program gets ------------------------------------------- */

/*
 * A program gets randomness before it runs a line of its own: the 16
 * bytes of AT_RANDOM that execve() puts on its stack (the seed of its
 * stack protector and pointer guard, get_random_bytes()) and the bases
 * ASLR picks for its stack and its mappings (get_random_long(), batched).
 *
 * The programs run as a chain: one process per CPU execs this binary
 * again and again, each link recording what its execve() gave it before
 * it execs the next, as wrapper scripts that end in exec do.  A chain
 * never sleeps between programs.  A loop of fork, exec and wait would:
 * its parent sleeps at every program, the kernel's fork notification
 * runs in that gap, and a stock kernel then shows no window at all (0 of
 * 8 clones here, at 1 and 2 vCPUs), which says more about the loop than
 * about the kernel.
 *
 * The links share the recording through a memfd that survives execve(),
 * and write a byte to a pipe once 16 programs are recorded.  Each link
 * reads the live ID just before its execve(); that is what the next
 * link's record says, as for a call, the ID before the output was made.
 */
#define EXEC_UNDER_WAY 16

struct chain {
	uint64_t id_addr;		/* guest physical address of the live ID */
	uint8_t start_id[GENID_LEN];
	uint32_t n;			/* programs to record */
	uint32_t count;			/* recorded so far */
	uint32_t changed;		/* the ID before the last execve() */
	struct record rec[];		/* n AT_RANDOM, then n stack and mmap bases */
};

static size_t chain_size(uint32_t n)
{
	return sizeof(struct chain) + 2 * (size_t)n * sizeof(struct record);
}

/* The next link; returns only if execve() failed. */
static void chain_exec(const char *memfd, const char *sync)
{
	char *const argv[] = { "/proc/self/exe", EXEC_LINK_ARG, (char *)memfd, (char *)sync, NULL };
	char *const envp[] = { NULL };

	execve(argv[0], argv, envp);
}

int recorder_exec_link(const char *memfd_arg, const char *sync_arg)
{
	const void *at = (const void *)getauxval(AT_RANDOM);
	void *map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t where[2] = { (uintptr_t)&map, (uintptr_t)map };
	int64_t t = mono_ns();
	int memfd = atoi(memfd_arg), sync = atoi(sync_arg);
	const volatile uint8_t *live;
	uint8_t id[GENID_LEN];
	struct chain *c;
	struct stat st;
	char err[160];
	uint32_t i;

	if (!at || map == MAP_FAILED || fstat(memfd, &st) || (size_t)st.st_size < sizeof(*c))
		return 1;
	c = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (c == MAP_FAILED || chain_size(c->n) != (size_t)st.st_size || c->count >= c->n)
		return 1;
	i = c->count;
	c->rec[i] = (struct record){ fingerprint(at, 16), t, c->changed };
	c->rec[c->n + i] = (struct record){ fingerprint(where, sizeof(where)), t, c->changed };
	c->count = ++i;
	if (i == EXEC_UNDER_WAY && write(sync, "", 1) != 1)
		return 1;
	if (i == c->n)
		return 0;
	live = genid_map_at(c->id_addr, err, sizeof(err));
	if (!live)
		return 1;
	genid_read(live, id);
	c->changed = memcmp(id, c->start_id, GENID_LEN) != 0;
	chain_exec(memfd_arg, sync_arg);
	return 1;
}

/* Streams 2 * CPU: the chain's AT_RANDOM; 2 * CPU + 1: its bases. */
static void run_exec(struct worker *w)
{
	int memfd = memfd_create("forksafe-exec", MFD_CLOEXEC), sync[2] = { -1, -1 }, status;
	size_t size = chain_size(per_stream);
	struct chain *c = MAP_FAILED;
	char b, fds[2][16];
	pid_t pid = -1;
	uint32_t i;

	if (memfd < 0 || ftruncate(memfd, size) || pipe2(sync, O_CLOEXEC) ||
	    (c = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0)) == MAP_FAILED) {
		fail(errno, "exec chain: %s", strerror(errno));
		goto out;
	}
	c->id_addr = live_addr;
	memcpy(c->start_id, start_id, GENID_LEN);
	c->n = per_stream;
	snprintf(fds[0], sizeof(fds[0]), "%d", memfd);
	snprintf(fds[1], sizeof(fds[1]), "%d", sync[1]);
	pid = fork();
	if (!pid) {
		/* Only async-signal-safe calls in the child of a threaded process. */
		close(sync[0]);
		if (!fcntl(memfd, F_SETFD, 0) && !fcntl(sync[1], F_SETFD, 0))
			chain_exec(fds[0], fds[1]);
		_exit(127);
	}
	close(sync[1]);
	sync[1] = -1;
	if (pid < 0) {
		fail(errno, "fork: %s", strerror(errno));
		goto out;
	}
	/* Sleeps until the chain is under way, then until it ends. */
	if (read(sync[0], &b, 1) == 1)
		started(w);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			fail(errno, "waitpid: %s", strerror(errno));
			goto out;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) || c->count != c->n) {
		fail(EIO, "the exec chain stopped after %u of %u programs, status 0x%x",
		     c->count, c->n, status);
		goto out;
	}
	for (i = 0; i < c->n; i++) {
		add(w->stream, c->rec[i].fp, c->rec[i].t_ns, c->rec[i].changed);
		add(w->stream + 1, c->rec[c->n + i].fp, c->rec[c->n + i].t_ns, c->rec[c->n + i].changed);
	}
out:
	if (c != MAP_FAILED)
		munmap(c, size);
	if (sync[0] >= 0)
		close(sync[0]);
	if (sync[1] >= 0)
		close(sync[1]);
	if (memfd >= 0)
		close(memfd);
}

/* ---- starting, status, dump ---------------------------------------------------- */

static const struct shape shapes[] = {
	{ "getrandom-16", RNG_BLOCK_BYTES, 1, 1, run_getrandom_16 },
	{ "insecure-16", RNG_BLOCK_BYTES, 1, 1, run_insecure_16 },
	{ "vdso-16", RNG_BLOCK_BYTES, 1, 1, run_vdso_16 },
	{ "drbg-16", RNG_BLOCK_BYTES, 1, 1, run_drbg_16 },
	{ "drbg-checked-16", RNG_BLOCK_BYTES, 1, 1, run_drbg_checked_16 },
	{ "getrandom-16MiB", RNG_PAGE_BYTES, 0, 1, run_getrandom_16mib },
	{ "urandom-1MiB", RNG_PAGE_BYTES, 0, 1, run_urandom_1mib },
	{ "uuid", RNG_BLOCK_BYTES, 1, 1, run_uuid },
	{ "exec", RNG_BLOCK_BYTES, 1, 2, run_exec },
	{ "openssl-public-16", RNG_BLOCK_BYTES, 0, 1, run_library },
	{ "openssl-private-16", RNG_BLOCK_BYTES, 0, 1, run_library },
	{ "openssl-fs-public-16", RNG_BLOCK_BYTES, 0, 1, run_library },
	{ "openssl-fs-private-16", RNG_BLOCK_BYTES, 0, 1, run_library },
	{ "python-mt-16", RNG_BLOCK_BYTES, 0, 1, run_library },
	{ "python-secrets-16", RNG_BLOCK_BYTES, 0, 1, run_library },
	{ "arc4random-16", RNG_BLOCK_BYTES, 0, 1, run_library },
	{ "libuuid-16", RNG_BLOCK_BYTES, 0, 1, run_library },
	{ "systemd-seed", SEED_FILE_BYTES, 0, 1, run_library },
	{ "openssl-tls-16", RNG_BLOCK_BYTES, 0, 1, run_library },
	{ "openssl-fs-tls-16", RNG_BLOCK_BYTES, 0, 1, run_library },
};

static const struct shape *shape_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (!strcmp(shapes[i].name, name))
			return &shapes[i];
	return NULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fail(errno, "cannot pin a recorder to CPU %d: %s", w->cpu, strerror(errno));
	else
		shape->run(w);
	started(w); /* one that ended early must not hold recorder_start up */
	atomic_fetch_add(&nended, 1);
	return NULL;
}

int rng_reseed(void)
{
	int fd = open("/dev/urandom", O_RDONLY), rc;

	if (fd < 0)
		return -errno;
	rc = ioctl(fd, RNDRESEEDCRNG) ? -errno : 0;
	close(fd);
	return rc;
}

/*
 * Credit BITS to the input pool, as a guest with an entropy source of its
 * own would: RNDADDENTROPY on /dev/random, over BITS/8 bytes (at least 8).
 * The bytes come from GRND_INSECURE, which never blocks; what is measured
 * is the credit (136 bits take a CRNG_EMPTY kernel to CRNG_EARLY).
 */
int rng_credit(unsigned int bits)
{
	size_t len = (bits + 7) / 8 < 8 ? 8 : (bits + 7) / 8;
	struct rand_pool_info *p = calloc(1, sizeof(*p) + len + 3); /* buf is __u32[] */
	int fd, rc;

	if (!p)
		return -ENOMEM;
	p->entropy_count = bits;
	p->buf_size = len;
	fd = open("/dev/random", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		rc = -errno;
	else if (getrandom(p->buf, len, GRND_INSECURE) != (ssize_t)len)
		rc = -EIO;
	else
		rc = ioctl(fd, RNDADDENTROPY, p) ? -errno : 0;
	if (fd >= 0)
		close(fd);
	free(p);
	return rc;
}

/* Room for n records on each of the shape's streams; -1 (all freed) if not. */
static int streams_alloc(const struct shape *sh, int workers, unsigned long n)
{
	int s;

	nstreams = workers * sh->streams;
	per_stream = n;
	for (s = 0; s < nstreams; s++) {
		streams[s].rec = calloc(n, sizeof(struct record));
		if (!streams[s].rec)
			break;
	}
	if (s == nstreams)
		return 0;
	while (s--) {
		free(streams[s].rec);
		streams[s].rec = NULL;
	}
	nstreams = 0;
	return -1;
}

/*
 * A finished recording (every worker has returned) makes room for the
 * next: a chain of forks records again in a clone of a clone.
 */
static void recording_free(void)
{
	int s;

	for (s = 0; s < nstreams; s++) {
		free(streams[s].rec);
		streams[s].rec = NULL;
		atomic_store(&streams[s].count, 0);
	}
	memset(workers, 0, sizeof(workers));
	nstreams = 0;
	atomic_store(&nstarted, 0);
	atomic_store(&nended, 0);
	shape = NULL;
}

/* A thread that does not start fails the recording. */
static void workers_start(void)
{
	int i;

	for (i = 0; i < nworkers; i++) {
		workers[i].cpu = shape->per_cpu ? i : 0;
		workers[i].stream = i * shape->streams;
		if (pthread_create(&workers[i].tid, NULL, worker_main, &workers[i])) {
			fail(EAGAIN, "cannot start recorder thread %d", i);
			return;
		}
		pthread_detach(workers[i].tid);
	}
}

int recorder_start(const char *name, unsigned long n, char *err, size_t errlen)
{
	const struct shape *sh = shape_find(name);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int rc;

	if (shape && (atomic_load(&nended) < nworkers || failed())) {
		snprintf(err, errlen, "a recording is under way or has failed");
		return -1;
	}
	if (shape)
		recording_free();
	if (!sh) {
		snprintf(err, errlen, "unknown shape '%s' (guest/protocol.h lists them)", name);
		return -1;
	}
	nworkers = sh->per_cpu ? cpus : 1;
	if (n < 1 || n > DUMP_MAX_RECORDS || nworkers < 1 || nworkers * sh->streams > DUMP_MAX_STREAMS) {
		snprintf(err, errlen, "records must be 1..%d and streams 1..%d", DUMP_MAX_RECORDS,
			 DUMP_MAX_STREAMS);
		return -1;
	}
	if (!live_id) {
		live_addr = genid_locate(err, errlen);
		live_id = live_addr ? genid_map_at(live_addr, err, errlen) : NULL;
		if (!live_id)
			return -1;
	}
	genid_read(live_id, start_id);
	/*
	 * In its first two minutes the kernel reseeds about every second on
	 * its own.  Reseeding here pushes the next one out past the window we
	 * record, so what the clones share is the state at the snapshot.  A
	 * crng that is not ready yet (ENODATA) has no such schedule.
	 */
	rc = rng_reseed();
	if (rc && rc != -ENODATA) {
		snprintf(err, errlen, "RNDRESEEDCRNG: %s", strerror(-rc));
		return -1;
	}
	if (streams_alloc(sh, nworkers, n)) {
		snprintf(err, errlen, "no memory for %d streams of %lu records", nworkers * sh->streams, n);
		return -1;
	}
	shape = sh;
	workers_start();
	/* Recording is under way on every stream before we answer. */
	while (atomic_load(&nstarted) < nworkers && !failed())
		usleep(1000);
	if (failed()) {
		snprintf(err, errlen, "%s", fail_why);
		return -1;
	}
	return 0;
}

int recorder_status(uint32_t *done, uint32_t *total, char *why, size_t whylen)
{
	int s, err = failed();

	*done = 0;
	*total = nstreams * per_stream;
	for (s = 0; s < nstreams; s++)
		*done += atomic_load_explicit(&streams[s].count, memory_order_acquire);
	if (err)
		snprintf(why, whylen, "%s", fail_why);
	return err;
}

int recorder_dump(void (*out)(const char *line, void *ctx), void *ctx)
{
	char line[96];
	uint32_t i, n;
	int s;

	if (!shape)
		return -1;
	snprintf(line, sizeof(line), DUMP_HEADER_FMT, shape->name, shape->unit);
	out(line, ctx);
	for (s = 0; s < nstreams; s++) {
		n = atomic_load_explicit(&streams[s].count, memory_order_acquire);
		for (i = 0; i < n; i++) {
			const struct record *r = &streams[s].rec[i];

			snprintf(line, sizeof(line), DUMP_RECORD_FMT, s, i,
				 (unsigned long long)r->fp, (long long)r->t_ns, r->changed);
			out(line, ctx);
		}
	}
	return 0;
}
