// SPDX-License-Identifier: GPL-2.0
/*
 * forksafe-hooks: run the fork hooks of /etc/forksafe/fork.d/ once per VM
 * fork.
 *
 *   forksafe-hooks [--dir DIR] [--timeout SECONDS]
 *
 * What a clone must do once it knows it is one (refresh a seed file, step
 * the clock, renew a lease) cannot wait in every program's output path:
 * it is housekeeping, done once per fork.  This daemon sleeps in poll() on
 * the fork signal (libforksafe: /dev/vmgenid of the forksafe series,
 * vmclock, /dev/sysgenid) and, when the generation moves, runs every
 * executable of DIR whose name is made of letters, digits, '-' and '_'
 * (as run-parts does), in the order of their names, one at a time, each
 * with FORKSAFE_GENERATION (the new generation) and FORKSAFE_SOURCE in its
 * environment, stdin /dev/null, its output on ours (the journal under
 * systemd), and SECONDS (10) to finish: a hook still running then is
 * killed with its process group.  A hook that fails, hangs or crashes
 * stops neither the others nor the next fork; a fork while the hooks run
 * runs them again afterwards.  One line per hook says how it ended.
 *
 * The fork signal wakes the daemon once the kernel has handled the
 * hypervisor's notification; output that must never repeat across clones
 * needs the check in its own path (libforksafe's forksafe_forked(), the
 * OpenSSL provider), not a hook.  Exit status 1 with one line when no
 * fork signal can be opened or DIR cannot be read, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "forksafe.h"

#define HOOKS_DIR "/etc/forksafe/fork.d"
#define HOOK_TIMEOUT_S 10
#define MAX_HOOKS 256

static const char *dir = HOOKS_DIR;
static int timeout_s = HOOK_TIMEOUT_S;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line: a kernel message cannot split it. */
	if (write(STDOUT_FILENO, line, n) < 0)
		return;
}

/* ---- the hooks --------------------------------------------------------------- */

/* As run-parts: letters, digits, '-' and '_', so that "x.dpkg-old" is not run. */
static int hook_name(const char *name)
{
	if (!*name)
		return 0;
	for (; *name; name++)
		if (!(*name >= 'a' && *name <= 'z') && !(*name >= 'A' && *name <= 'Z') &&
		    !(*name >= '0' && *name <= '9') && *name != '-' && *name != '_')
			return 0;
	return 1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The hooks of DIR, sorted, in NAMES (freed by the caller); -1 if DIR cannot be read. */
static int list_hooks(char *names[MAX_HOOKS])
{
	char path[4096];
	struct dirent *e;
	struct stat st;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((e = readdir(d)) && n < MAX_HOOKS) {
		if (!hook_name(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode) || access(path, X_OK))
			continue;
		names[n] = strdup(e->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	return n;
}

static long long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000LL + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Runs one hook to its end or its timeout; says how it ended. */
static void run_hook(const char *name, int64_t generation)
{
	char path[4096], gen[32], src[64];
	struct timespec t0, tick = { 0, 10 * 1000 * 1000 };
	int status, fd;
	pid_t pid, got;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(gen, sizeof(gen), "%lld", (long long)generation);
	snprintf(src, sizeof(src), "%s", forksafe_source_name(forksafe_source()));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0) {
		say("forksafe-hooks: generation %s: %s: cannot fork: %s", gen, name, strerror(errno));
		return;
	}
	if (!pid) {
		/* Its own process group, so that a timeout ends what it started too. */
		setpgid(0, 0);
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0 && fd != STDIN_FILENO) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
		setenv("FORKSAFE_GENERATION", gen, 1);
		setenv("FORKSAFE_SOURCE", src, 1);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	while ((got = waitpid(pid, &status, WNOHANG)) == 0 && ms_since(&t0) < timeout_s * 1000LL)
		nanosleep(&tick, NULL);
	if (got == 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		say("forksafe-hooks: generation %s: %s: killed after %d s (timeout)", gen, name, timeout_s);
	} else if (got < 0) {
		say("forksafe-hooks: generation %s: %s: lost: %s", gen, name, strerror(errno));
	} else if (WIFEXITED(status)) {
		say("forksafe-hooks: generation %s: %s: exited %d after %lld ms", gen, name, WEXITSTATUS(status),
		    ms_since(&t0));
	} else {
		say("forksafe-hooks: generation %s: %s: killed by signal %d", gen, name, WTERMSIG(status));
	}
}

static void run_hooks(int64_t generation)
{
	char *names[MAX_HOOKS];
	int i, n = list_hooks(names);

	if (n < 0) {
		say("forksafe-hooks: generation %lld: cannot read %s: %s", (long long)generation, dir,
		    strerror(errno));
		return;
	}
	say("forksafe-hooks: generation %lld: %d hooks", (long long)generation, n);
	for (i = 0; i < n; i++) {
		run_hook(names[i], generation);
		free(names[i]);
	}
}

/* ---- the loop ------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr, "usage: forksafe-hooks [--dir DIR] [--timeout SECONDS]\n");
	exit(2);
}

static void parse(int argc, char **argv)
{
	char *end;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
			dir = argv[++i];
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			errno = 0;
			timeout_s = (int)strtol(argv[++i], &end, 10);
			if (errno || *end || timeout_s < 1 || timeout_s > 3600) {
				fprintf(stderr, "forksafe-hooks: --timeout wants 1 to 3600 seconds, not '%s'\n", argv[i]);
				exit(2);
			}
		} else {
			usage();
		}
	}
}

int main(int argc, char **argv)
{
	int64_t seen;
	int err;

	parse(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (access(dir, R_OK | X_OK)) {
		fprintf(stderr, "forksafe-hooks: cannot read %s: %s\n", dir, strerror(errno));
		return 1;
	}
	err = forksafe_open();
	if (err) {
		fprintf(stderr, "forksafe-hooks: no fork signal to wait on (/dev/vmgenid, /dev/vmclock0, /dev/sysgenid): %s\n",
			strerror(-err));
		return 1;
	}
	seen = forksafe_generation();
	if (seen < 0) {
		fprintf(stderr, "forksafe-hooks: cannot read the generation: %s\n", strerror((int)-seen));
		return 1;
	}
	say("forksafe-hooks: watching generation %lld through %s, hooks in %s", (long long)seen,
	    forksafe_source_name(forksafe_source()), dir);
	for (;;) {
		err = forksafe_wait((uint64_t)seen, -1);
		if (err < 0) {
			fprintf(stderr, "forksafe-hooks: waiting for a fork: %s\n", strerror(-err));
			return 1;
		}
		/* Read before the hooks run: a fork meanwhile runs them again. */
		seen = forksafe_generation();
		if (seen < 0) {
			fprintf(stderr, "forksafe-hooks: cannot read the generation: %s\n", strerror((int)-seen));
			return 1;
		}
		run_hooks(seen);
	}
}
