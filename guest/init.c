// SPDX-License-Identifier: GPL-2.0
/*
 * PID 1 of the forksafe test guests.
 *
 * It mounts the pseudo filesystems, reads its role from the kernel command
 * line (forksafe.role=...), runs that role and powers the machine off when
 * the role ends, so the host sees QEMU exit.  Everything else the guest does
 * lives in the agent, which the host drives over virtio-serial.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>

static void say(const char *fmt, const char *arg)
{
	/* The console is the host's only view when the agent is not running. */
	printf("forksafe-init: ");
	printf(fmt, arg);
	putchar('\n');
	fflush(stdout);
}

static __attribute__((noreturn)) void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	say("reboot(RB_POWER_OFF) failed: %s", strerror(errno));
	for (;;)
		pause();
}

static void mount_or_warn(const char *src, const char *dst, const char *type)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, 0, NULL) && errno != EBUSY)
		say("cannot mount %s", dst);
}

/* The value of forksafe.<key>= on the kernel command line, or NULL. */
static char *cmdline_param(const char *key)
{
	static char line[4096];
	char want[64], *tok, *save;
	FILE *f = fopen("/proc/cmdline", "r");

	if (!f)
		return NULL;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	snprintf(want, sizeof(want), "forksafe.%s=", key);
	for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strncmp(tok, want, strlen(want)))
			return tok + strlen(want);
	return NULL;
}

/* Run argv as a child, reaping every orphan until it exits. */
static int run(char *const argv[])
{
	pid_t child = fork(), pid;
	int status;

	if (child < 0)
		return -1;
	if (!child) {
		execv(argv[0], argv);
		say("cannot exec %s", argv[0]);
		_exit(127);
	}
	for (;;) {
		pid = wait(&status);
		if (pid == child)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (pid < 0 && errno != EINTR)
			return -1;
	}
}

int main(void)
{
	char *role, *agent[] = { "/bin/forksafe-agent", NULL };
	char *shell[] = { "/bin/sh", NULL };
	char status[16];

	mount_or_warn("proc", "/proc", "proc");
	mount_or_warn("sysfs", "/sys", "sysfs");
	mount_or_warn("devtmpfs", "/dev", "devtmpfs");
	mount_or_warn("tmpfs", "/tmp", "tmpfs");
	setenv("PATH", "/bin:/sbin:/usr/bin", 1);

	role = cmdline_param("role");
	if (!role)
		role = "agent";
	say("role %s", role);

	if (!strcmp(role, "probe")) {
		/* The host's accelerator probe: reaching here is the answer. */
		say("%s", "probe ok");
	} else if (!strcmp(role, "shell")) {
		run(shell);
	} else if (!strcmp(role, "agent")) {
		snprintf(status, sizeof(status), "%d", run(agent));
		say("agent exited with status %s", status);
	} else {
		say("unknown role '%s'", role);
	}
	say("%s", "powering off");
	power_off();
}
