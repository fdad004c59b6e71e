// SPDX-License-Identifier: GPL-2.0
/*
 * forksafe-seed: a seed file for the kernel's RNG that survives crashes and
 * VM forks.
 *
 *   forksafe-seed [--dir DIR] load      at boot: feed the seed to the kernel,
 *                                       then write the next one
 *   forksafe-seed [--dir DIR] refresh   write a new seed now (at shutdown)
 *   forksafe-seed [--dir DIR] watch [--interval MS]
 *                                       refresh the seed whenever the VM forks
 *   forksafe-seed selftest              SHA-256 against known answers
 *   forksafe-seed fault-steps           the steps --fault can stop at
 *
 * The semantics are SeedRNG's, which is what systemd-random-seed also does:
 * a seed is unlinked, and the unlink made durable, before the kernel gets
 * it, so that no crash can make a machine credit one seed twice; a seed is
 * credited only when this machine wrote it as creditable (DIR/seed.credit,
 * written when getrandom() was ready without blocking; DIR/seed.no-credit
 * otherwise, mixed in without credit); the next seed is fresh output with
 * its last 32 bytes replaced by a hash of the old seed and the new one
 * (systemd da2862ef06f2), so a seed never has less entropy than the one
 * before; and a seed is written to a temporary file, synced and renamed, so
 * that no crash leaves a torn seed behind.
 *
 * A VM fork breaks "never credit one seed twice" from outside: every clone
 * of a snapshot holds the seed file that the original wrote for its next
 * boot, and each would credit it.  `watch` therefore refreshes the seed each
 * time the VM generation ID changes, mixing the new ID in, so that clones
 * never reboot on a shared seed.  With the forksafe series' /dev/vmgenid it
 * sleeps until the kernel counted a fork (libforksafe, forksafe.h); a stock
 * kernel tells user space nothing, so it polls the ID every --interval
 * (see genid.c for how it is read), and a reboot within that interval of
 * the fork still finds the shared seed.
 *
 * Testing: --fault STEP:kill|cut stops the tool at STEP (see steps[]) with
 * SIGKILL, or cuts the power there without syncing anything.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/random.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/reboot.h>
#include "forksafe.h"
#include "genid.h"
#include "sha256.h"

#define SEED_LEN 512 /* written; systemd's default */
#define SEED_MAX 512 /* read; a longer file's rest is ignored */
#define CREDIT_NAME "seed.credit"
#define NO_CREDIT_NAME "seed.no-credit"
#define TMP_NAME ".seed.new"

static const char *dir_path = "/var/lib/forksafe-seed";
static int dir_fd = -1;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * One write() per line: stderr is unbuffered, and a line written in pieces
 * on the console can have another writer's output land between them.
 */
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n = snprintf(line, sizeof(line), "forksafe-seed: ");

	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

static __attribute__((noreturn)) void die(const char *what)
{
	say("%s: %s", what, strerror(errno));
	exit(1);
}

/* ---- fault injection ----------------------------------------------------
 * Every point where a crash leaves a different state on disk.  The tests
 * stop the tool at each in turn, and check what the next boot finds.
 */
static const char *const steps[] = {
	"read",		/* a seed read, still on disk */
	"unlinked",	/* unlinked, the unlink not yet synced */
	"unlink-synced", /* the unlink durable, the kernel not yet fed */
	"credited",	/* the kernel fed, no next seed yet */
	"mid-write",	/* half the next seed in the temporary file */
	"written",	/* all of it, not synced */
	"synced",	/* synced, not renamed */
	"renamed",	/* renamed, the directory not synced */
	"done",		/* everything durable */
	NULL,
};
static const char *fault_step;
static int fault_cut;

static void set_fault(const char *spec)
{
	const char *colon = strchr(spec, ':');
	int i;

	if (!colon || (strcmp(colon + 1, "kill") && strcmp(colon + 1, "cut"))) {
		say("--fault wants STEP:kill or STEP:cut, not '%s'", spec);
		exit(2);
	}
	for (i = 0; steps[i]; i++)
		if (!strncmp(spec, steps[i], colon - spec) && !steps[i][colon - spec])
			break;
	if (!steps[i]) {
		say("--fault: no step '%.*s'", (int)(colon - spec), spec);
		exit(2);
	}
	fault_step = steps[i];
	fault_cut = !strcmp(colon + 1, "cut");
}

static void step(const char *name)
{
	if (!fault_step || strcmp(name, fault_step))
		return;
	say("fault at %s: %s", name, fault_cut ? "power cut" : "SIGKILL");
	if (fault_cut)
		reboot(RB_POWER_OFF); /* no sync(): what is not on disk is lost */
	raise(SIGKILL);
}

/* ---- seeds on disk ------------------------------------------------------- */

static void hex(const uint8_t *b, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* What the log names a seed by: the first 8 bytes of its SHA-256. */
static const char *seed_id(const uint8_t *seed, size_t len)
{
	static char id[17];
	uint8_t h[SHA256_LEN];

	sha256(seed, len, h);
	hex(h, 8, id);
	return id;
}

static void sync_dir(void)
{
	if (fsync(dir_fd))
		die("fsync of the seed directory");
}

/* Read NAME into seed; its length, 0 when there is none. */
static size_t read_seed(const char *name, uint8_t seed[SEED_MAX])
{
	ssize_t n;
	int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		die(name);
	}
	n = read(fd, seed, SEED_MAX);
	if (n < 0)
		die(name);
	close(fd);
	return n;
}

/*
 * Write seed as DIR/seed.credit or DIR/seed.no-credit: a temporary file,
 * synced, renamed over the name, the directory synced.  A crash anywhere
 * leaves the old file or the new one, never part of one.
 */
static void write_seed(const uint8_t seed[SEED_LEN], int creditable)
{
	const char *name = creditable ? CREDIT_NAME : NO_CREDIT_NAME;
	const char *other = creditable ? NO_CREDIT_NAME : CREDIT_NAME;
	int fd;

	say("writing %s %s", name, seed_id(seed, SEED_LEN));
	fd = openat(dir_fd, TMP_NAME, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0400);
	if (fd < 0)
		die(TMP_NAME);
	if (write(fd, seed, SEED_LEN / 2) != SEED_LEN / 2)
		die(TMP_NAME);
	step("mid-write");
	if (write(fd, seed + SEED_LEN / 2, SEED_LEN / 2) != SEED_LEN / 2)
		die(TMP_NAME);
	step("written");
	if (fsync(fd))
		die(TMP_NAME);
	close(fd);
	step("synced");
	if (renameat(dir_fd, TMP_NAME, dir_fd, name))
		die(name);
	/* A seed of the other kind is older than this one: it must not stay. */
	if (unlinkat(dir_fd, other, 0) && errno != ENOENT)
		die(other);
	step("renamed");
	sync_dir();
	step("done");
	say("wrote %s %s", name, seed_id(seed, SEED_LEN));
}

/* ---- the kernel ----------------------------------------------------------- */

/* Fresh output for the next seed; 1 when the RNG was ready (creditable). */
static int fresh_output(uint8_t out[SEED_LEN])
{
	ssize_t n = getrandom(out, SEED_LEN, GRND_NONBLOCK);

	if (n == SEED_LEN)
		return 1;
	if (n < 0 && errno != EAGAIN)
		die("getrandom");
	/* Not ready: not creditable, but never worse than the seed it follows. */
	if (getrandom(out, SEED_LEN, GRND_INSECURE) != SEED_LEN)
		die("getrandom(GRND_INSECURE)");
	return 0;
}

/* RNDADDENTROPY: mix seed in, crediting its length in bits or nothing. */
static void feed_kernel(const uint8_t *seed, size_t len, int credit)
{
	struct {
		struct rand_pool_info info;
		uint8_t buf[SEED_MAX];
	} req;
	int fd = open("/dev/urandom", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("/dev/urandom");
	req.info.entropy_count = credit ? (int)len * 8 : 0;
	req.info.buf_size = len;
	memcpy(req.buf, seed, len);
	if (ioctl(fd, RNDADDENTROPY, &req))
		die("RNDADDENTROPY");
	close(fd);
}

/*
 * Fork detection reseeds base_crng from the input pool, which holds the new
 * generation ID, so that the next seed is not pre-fork output on a kernel
 * that reseeds asynchronously.  Needs CAP_SYS_ADMIN; without it, say so.
 */
static void reseed_kernel(void)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || ioctl(fd, RNDRESEEDCRNG))
		say("RNDRESEEDCRNG: %s; the next seed may come from pre-fork state", strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* ---- commands ------------------------------------------------------------- */

/*
 * The next seed: fresh output (creditable or not) whose last 32 bytes
 * become the hash of the old seeds (already in h), the output and extra.
 */
static void next_seed(struct sha256 *h, uint8_t seed[SEED_LEN], int creditable,
		      const void *extra, size_t extra_len)
{
	uint8_t digest[SHA256_LEN];
	uint64_t n = SEED_LEN;

	sha256_update(h, &n, sizeof(n));
	sha256_update(h, seed, SEED_LEN);
	sha256_update(h, extra, extra_len);
	sha256_final(h, digest);
	memcpy(seed + SEED_LEN - SHA256_LEN, digest, SHA256_LEN);
	write_seed(seed, creditable);
}

/* Hash one seed file, if there is one, into h; its length. */
static size_t hash_seed(struct sha256 *h, const char *name, uint8_t seed[SEED_MAX])
{
	size_t len = read_seed(name, seed);
	uint64_t n = len;

	if (len) {
		sha256_update(h, &n, sizeof(n));
		sha256_update(h, seed, len);
	}
	return len;
}

static int cmd_load(void)
{
	uint8_t seed[SEED_MAX], fresh[SEED_LEN];
	const char *name;
	struct sha256 h;
	size_t len;
	int credit, creditable;

	/* A temporary file is a write a crash interrupted: never a seed. */
	if (unlinkat(dir_fd, TMP_NAME, 0) == 0)
		say("removed %s, left by an interrupted write", TMP_NAME);
	/*
	 * The next seed's output is drawn before any seed is fed: after a
	 * credited seed the RNG is always ready, and a seed credited because
	 * of an earlier seed would make one seed's entropy count twice.
	 */
	creditable = fresh_output(fresh);
	sha256_init(&h);
	/* The uncreditable seed first, as SeedRNG does. */
	for (credit = 0; credit < 2; credit++) {
		name = credit ? CREDIT_NAME : NO_CREDIT_NAME;
		len = hash_seed(&h, name, seed);
		if (!len)
			continue;
		say("found %s %zu bytes %s", name, len, seed_id(seed, len));
		step("read");
		if (unlinkat(dir_fd, name, 0))
			die(name);
		step("unlinked");
		sync_dir();
		step("unlink-synced");
		feed_kernel(seed, len, credit);
		say("%s %s %s", credit ? "credited" : "mixed without credit", name, seed_id(seed, len));
		step("credited");
	}
	if (!creditable)
		say("the RNG was not ready before the seed: the next seed is not creditable");
	next_seed(&h, fresh, creditable, "load", 4);
	return 0;
}

/* A new seed over the old one, the old one hashed in, nothing credited. */
static int refresh(const void *extra, size_t extra_len)
{
	uint8_t seed[SEED_MAX], fresh[SEED_LEN];
	struct sha256 h;
	int creditable = fresh_output(fresh);

	sha256_init(&h);
	hash_seed(&h, NO_CREDIT_NAME, seed);
	hash_seed(&h, CREDIT_NAME, seed);
	next_seed(&h, fresh, creditable, extra, extra_len);
	return 0;
}

/* A fork: say so, reseed, and write a seed with the new ID mixed in. */
static void forked(const uint8_t now[GENID_LEN], char from[37])
{
	char to[37];

	genid_format(now, to);
	say("VM fork: generation ID %s -> %s", from, to);
	reseed_kernel();
	refresh(now, GENID_LEN);
	memcpy(from, to, 37);
}

/*
 * With the forksafe series' /dev/vmgenid, sleep in poll() until the kernel
 * counted a fork; the ID comes from its read-only mapping.
 */
static int watch_device(void)
{
	struct forksafe_id now;
	char from[37];
	int64_t gen = forksafe_generation();
	int rc;

	if (gen < 0) {
		say("watch: " FORKSAFE_DEVICE ": %s", strerror((int)-gen));
		return 1;
	}
	forksafe_mark(&now);
	genid_format(now.id, from);
	say("watching generation ID %s through " FORKSAFE_DEVICE, from);
	for (;;) {
		rc = forksafe_wait((uint64_t)gen, -1);
		if (rc < 0) {
			say("watch: " FORKSAFE_DEVICE ": %s", strerror(-rc));
			return 1;
		}
		gen = forksafe_generation();
		if (gen < 0) {
			say("watch: " FORKSAFE_DEVICE ": %s", strerror((int)-gen));
			return 1;
		}
		forksafe_mark(&now);
		forked(now.id, from);
	}
}

/* Without it (a stock kernel), poll the ID itself through /dev/mem. */
static int watch_memory(long interval_ms)
{
	const volatile uint8_t *live;
	uint8_t last[GENID_LEN], now[GENID_LEN];
	char err[256], from[37];
	struct timespec pause = { interval_ms / 1000, interval_ms % 1000 * 1000000 };

	live = genid_map(err, sizeof(err));
	if (!live) {
		say("watch: cannot read the VM generation ID: %s", err);
		return 1;
	}
	genid_read(live, last);
	genid_format(last, from);
	say("watching generation ID %s every %ld ms", from, interval_ms);
	for (;;) {
		nanosleep(&pause, NULL);
		genid_read(live, now);
		if (!memcmp(now, last, GENID_LEN))
			continue;
		forked(now, from);
		memcpy(last, now, GENID_LEN);
	}
}

static int cmd_watch(long interval_ms)
{
	return forksafe_open() ? watch_memory(interval_ms) : watch_device();
}

/* FIPS 180-4's examples. */
static int cmd_selftest(void)
{
	static const struct {
		const char *msg, *digest;
	} kat[] = {
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	uint8_t d[SHA256_LEN], a[1000];
	char got[2 * SHA256_LEN + 1];
	struct sha256 h;
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(kat) / sizeof(kat[0]); i++) {
		sha256(kat[i].msg, strlen(kat[i].msg), d);
		hex(d, SHA256_LEN, got);
		if (strcmp(got, kat[i].digest))
			say("selftest: sha256(\"%s\") = %s, want %s", kat[i].msg, got, kat[i].digest), bad++;
	}
	/* One million 'a', fed unevenly, for the block boundaries. */
	memset(a, 'a', sizeof(a));
	sha256_init(&h);
	for (i = 0; i < 1000000; i += 999)
		sha256_update(&h, a, i + 999 <= 1000000 ? 999 : 1000000 - i);
	sha256_final(&h, d);
	hex(d, SHA256_LEN, got);
	if (strcmp(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"))
		say("selftest: sha256 of a million 'a' = %s", got), bad++;
	if (!bad)
		say("selftest: sha256 passes 4 known answers");
	return bad ? 1 : 0;
}

static __attribute__((noreturn)) void usage(const char *why)
{
	say("%s (usage: forksafe-seed [--dir DIR] [--interval MS] [--fault STEP:kill|cut] "
	    "load|refresh|watch|selftest|fault-steps)", why);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "fault", required_argument, NULL, 'f' },
		{ "interval", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	long interval_ms = 1000;
	const char *cmd;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir_path = optarg;
			break;
		case 'f':
			set_fault(optarg);
			break;
		case 'i':
			interval_ms = strtol(optarg, &end, 10);
			if (*end || interval_ms < 1 || interval_ms > 3600000)
				usage("--interval wants milliseconds, 1 to 3600000");
			break;
		default:
			usage("unknown option");
		}
	}
	if (optind != argc - 1)
		usage("one command wanted");
	cmd = argv[optind];
	if (!strcmp(cmd, "selftest"))
		return cmd_selftest();
	if (!strcmp(cmd, "fault-steps")) {
		for (c = 0; steps[c]; c++)
			puts(steps[c]);
		return 0;
	}
	if (strcmp(cmd, "load") && strcmp(cmd, "refresh") && strcmp(cmd, "watch"))
		usage("unknown command");
	dir_fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		die(dir_path);
	if (!strcmp(cmd, "load"))
		return cmd_load();
	if (!strcmp(cmd, "refresh"))
		return refresh("refresh", 7);
	return cmd_watch(interval_ms);
}
