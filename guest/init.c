// SPDX-License-Identifier: GPL-2.0
/*
 * PID 1 of the forksafe test guests.
 *
 * It mounts the pseudo filesystems, runs the boot services the kernel
 * command line asks for, reads its role from there (forksafe.role=...),
 * runs that role and powers the machine off when the role ends, so the host
 * sees QEMU exit.  Everything else the guest does lives in the agent, which
 * the host drives over virtio-serial.
 *
 * Roles: agent (the default), cold (forksafe-cold, with the seed mode of
 * forksafe.cold=), none (the boot services alone), probe, shell.
 *
 * Boot services, as a distribution's init would run them: the disk whose
 * serial is forksafe-seed (ext4), if there is one, is mounted as the seed
 * tool's directory; forksafe.seed=load runs
 * forksafe-seed load before the role (forksafe.seedfault=STEP:ACTION passes
 * --fault), forksafe.seed=load,watch also keeps forksafe-seed watch running
 * beside it (forksafe.seedwatch=MS its interval).  forksafe.hooks=DIR keeps
 * forksafe-hooks running beside the role with the hooks of DIR
 * (forksafe.hooktimeout=S each hook's time).
 *
 * Before all that, the modules a distribution kernel needs (kernel.sh packs
 * them into an archive of their own, which machine.sh appends) are loaded
 * in the order /lib/modules/forksafe.load lists them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define SEED_DIR "/var/lib/forksafe-seed"
#define SEED_TOOL "/bin/forksafe-seed"
#define SEED_SERIAL "forksafe-seed" /* machine.sh --seed-disk */
#define MODULES_LOAD "/lib/modules/forksafe.load"
#define HOOKS_TOOL "/bin/forksafe-hooks"

static void say(const char *fmt, const char *arg)
{
	/* The console is the host's only view when the agent is not running. */
	printf("forksafe-init: ");
	printf(fmt, arg);
	putchar('\n');
	fflush(stdout);
}

static pid_t seed_watch, hooks;
static int seed_disk;

static __attribute__((noreturn)) void power_off(void)
{
	/* A clean shutdown: the watchers end, the seed disk unmounts. */
	if (seed_watch > 0 && !kill(seed_watch, SIGTERM))
		waitpid(seed_watch, NULL, 0);
	if (hooks > 0 && !kill(hooks, SIGTERM))
		waitpid(hooks, NULL, 0);
	sync();
	if (seed_disk > 0 && umount(SEED_DIR))
		say("cannot unmount the seed disk: %s", strerror(errno));
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

/* The value of forksafe.<key>= on the kernel command line (a copy), or NULL. */
static char *cmdline_param(const char *key)
{
	char line[4096];
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
			return strdup(tok + strlen(want));
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

/* ---- boot services ------------------------------------------------------ */

/*
 * The seed disk: the virtio disk whose serial is SEED_SERIAL, ext4.  -1 if
 * there is one and it does not mount.
 */
static int mount_seed_disk(void)
{
	char path[64], serial[64], dev[32];
	struct dirent *d;
	FILE *f;
	DIR *dir = opendir("/sys/block");

	while (dir && (d = readdir(dir))) {
		snprintf(path, sizeof(path), "/sys/block/%.16s/serial", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(serial, sizeof(serial), f))
			serial[0] = '\0';
		fclose(f);
		if (strncmp(serial, SEED_SERIAL, strlen(SEED_SERIAL)))
			continue;
		snprintf(dev, sizeof(dev), "/dev/%.16s", d->d_name);
		mkdir(SEED_DIR, 0700);
		seed_disk = mount(dev, SEED_DIR, "ext4", 0, NULL) ? -1 : 1;
		if (seed_disk < 0)
			say("cannot mount the seed disk: %s", strerror(errno));
		break;
	}
	if (dir)
		closedir(dir);
	return seed_disk < 0 ? -1 : 0;
}

static void seed_services(void)
{
	char *want = cmdline_param("seed"), *fault = cmdline_param("seedfault");
	char *interval = cmdline_param("seedwatch");
	char *load[] = { SEED_TOOL, "load", NULL, NULL, NULL };
	char *watch[] = { SEED_TOOL, "watch", NULL, NULL, NULL };
	char status[16];

	if (mount_seed_disk() && want) {
		/* Seeds written to the initramfs would vanish at power-off. */
		say("%s", "no seed services: the seed disk did not mount");
		return;
	}
	if (!want)
		return;
	if (strstr(want, "load")) {
		if (fault) {
			load[1] = "--fault";
			load[2] = fault;
			load[3] = "load";
		}
		snprintf(status, sizeof(status), "%d", run(load));
		say("forksafe-seed load exited with status %s", status);
	}
	if (strstr(want, "watch")) {
		if (interval) {
			watch[1] = "--interval";
			watch[2] = interval;
			watch[3] = "watch";
		}
		seed_watch = fork();
		if (!seed_watch) {
			execv(watch[0], watch);
			_exit(127);
		}
	}
}

static void hooks_service(void)
{
	char *argv[] = { HOOKS_TOOL, "--dir", cmdline_param("hooks"), "--timeout", "10", NULL };
	char *timeout = cmdline_param("hooktimeout");

	if (!argv[2])
		return;
	if (timeout)
		argv[4] = timeout;
	hooks = fork();
	if (!hooks) {
		execv(argv[0], argv);
		_exit(127);
	}
}

/* A module that does not load says so; what needed it then fails visibly. */
static void load_modules(void)
{
	char path[256], why[320];
	FILE *f = fopen(MODULES_LOAD, "r");
	int fd;

	if (!f)
		return;
	while (fgets(path, sizeof(path), f)) {
		path[strcspn(path, "\n")] = '\0';
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) && errno != EEXIST)) {
			snprintf(why, sizeof(why), "%s: %s", path, strerror(errno));
			say("cannot load the module %s", why);
		}
		if (fd >= 0)
			close(fd);
	}
	fclose(f);
}

int main(void)
{
	char *role, *agent[] = { "/bin/forksafe-agent", NULL };
	char *shell[] = { "/bin/sh", NULL };
	char *cold[] = { "/bin/forksafe-cold", NULL, NULL };
	char status[16];

	mount_or_warn("proc", "/proc", "proc");
	mount_or_warn("sysfs", "/sys", "sysfs");
	mount_or_warn("devtmpfs", "/dev", "devtmpfs");
	mount_or_warn("tmpfs", "/tmp", "tmpfs");
	setenv("PATH", "/bin:/sbin:/usr/bin", 1);

	load_modules();
	seed_services();
	hooks_service();
	role = cmdline_param("role");
	if (!role)
		role = "agent";
	say("role %s", role);

	if (!strcmp(role, "probe")) {
		/* The host's accelerator probe: reaching here is the answer. */
		say("%s", "probe ok");
	} else if (!strcmp(role, "cold")) {
		cold[1] = cmdline_param("cold");
		run(cold);
	} else if (!strcmp(role, "none")) {
		/* The boot services were the point. */
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
