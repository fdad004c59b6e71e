// SPDX-License-Identifier: GPL-2.0
/*
 * forksafe-cold: what a freshly booted clone's RNG gives, at three moments.
 *
 *   forksafe-cold [none|write|credit]
 *
 * Run by init as the guest's first program (forksafe.role=cold), with
 * nothing on the host talking to the guest, so that two boots of one image
 * under QEMU's instruction counting differ only where the machine
 * description differs.  It prints one console line per moment:
 *
 *   forksafe-cold: first  t_ms=T ready=0|1 entropy=BITS bytes=HEX
 *       GRND_INSECURE output as the first program reads it
 *   forksafe-cold: seeded ...   the same, after the golden image's seed
 *       (GOLDEN_SEED, which the host puts in the initramfs):
 *       none    no seed
 *       write   written to /dev/urandom without credit, as shell scripts
 *               do (dd if=seed of=/dev/urandom)
 *       credit  credited by forksafe-seed load, as systemd and SeedRNG do
 *   forksafe-cold: init   ...   the first blocking getrandom(), which
 *       returns when the crng is ready ("init blocked s=S" if it did not
 *       within BLOCK_LIMIT_S)
 *   forksafe-cold: later  ...   LATER_MS after that
 *   forksafe-cold: done
 *
 * T is CLOCK_BOOTTIME in ms; BITS is the input pool's entropy_avail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/wait.h>

#define SAMPLE_LEN 32
#define BLOCK_LIMIT_S 120
#define LATER_MS 2000
#define GOLDEN_SEED "/var/lib/forksafe-seed/seed.credit"

static long boot_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int rng_ready(void)
{
	return getrandom(NULL, 0, GRND_NONBLOCK) == 0;
}

static int entropy_avail(void)
{
	int bits = -1;
	FILE *f = fopen("/proc/sys/kernel/random/entropy_avail", "r");

	if (f) {
		if (fscanf(f, "%d", &bits) != 1)
			bits = -1;
		fclose(f);
	}
	return bits;
}

static void print_sample(const char *moment, const uint8_t *b)
{
	char hex[2 * SAMPLE_LEN + 1];
	int i;

	for (i = 0; i < SAMPLE_LEN; i++)
		sprintf(hex + 2 * i, "%02x", b[i]);
	printf("forksafe-cold: %s t_ms=%ld ready=%d entropy=%d bytes=%s\n",
	       moment, boot_ms(), rng_ready(), entropy_avail(), hex);
	fflush(stdout);
}

static void sample_insecure(const char *moment)
{
	uint8_t b[SAMPLE_LEN];

	if (getrandom(b, sizeof(b), GRND_INSECURE) != sizeof(b)) {
		printf("forksafe-cold: %s getrandom(GRND_INSECURE): %s\n", moment, strerror(errno));
		return;
	}
	print_sample(moment, b);
}

/* The shell scripts' way: the seed's bytes into the pool, no credit. */
static int seed_write(void)
{
	char buf[4096];
	ssize_t n;
	int in = open(GOLDEN_SEED, O_RDONLY), out = open("/dev/urandom", O_WRONLY);

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -1;
	close(in);
	close(out);
	return n < 0 ? -1 : 0;
}

static int seed_credit(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		execl("/bin/forksafe-seed", "forksafe-seed", "load", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* The blocking getrandom(), given up after BLOCK_LIMIT_S. */
static void sample_init(void)
{
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */
	uint8_t b[SAMPLE_LEN];
	long start = boot_ms();
	ssize_t n;

	sigaction(SIGALRM, &sa, NULL);
	alarm(BLOCK_LIMIT_S);
	n = getrandom(b, sizeof(b), 0);
	alarm(0);
	if (n == sizeof(b))
		print_sample("init", b);
	else if (n < 0 && errno == EINTR)
		printf("forksafe-cold: init blocked s=%ld\n", (boot_ms() - start) / 1000);
	else
		printf("forksafe-cold: init getrandom: %s\n", n < 0 ? strerror(errno) : "short read");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "none";
	struct timespec later = { LATER_MS / 1000, LATER_MS % 1000 * 1000000 };
	int rc = 0;

	sample_insecure("first");
	if (!strcmp(mode, "write"))
		rc = seed_write();
	else if (!strcmp(mode, "credit"))
		rc = seed_credit();
	else if (strcmp(mode, "none"))
		errno = EINVAL, rc = -1;
	if (rc) {
		printf("forksafe-cold: seed mode '%s' failed: %s\n", mode, strerror(errno));
		return 1;
	}
	sample_insecure("seeded");
	sample_init();
	nanosleep(&later, NULL);
	sample_insecure("later");
	printf("forksafe-cold: done\n");
	return 0;
}
