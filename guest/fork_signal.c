// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's checks of /dev/vmgenid, the kernel's fork signal for user
 * space (the series' "virt: vmgenid: add a fork signal for user space"):
 * what each misuse gets, and a thread that counts poll() wakes, so that
 * the host can tell that it wakes exactly once per fork.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/netlink.h>
#include "forksafe.h"
#include "genid.h"
#include "fork_signal.h"

/* errno of a call that should fail, 0 if it succeeded. */
static int fails(long rc)
{
	return rc < 0 ? errno : 0;
}

static int map_fails(int fd, int prot, int flags, off_t offset)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, prot, flags, fd, offset);

	if (p == MAP_FAILED)
		return errno;
	munmap(p, page);
	return 0;
}

int signal_probe(struct signal_probe *p)
{
	long page = sysconf(_SC_PAGESIZE);
	struct vmgenid_generation g;
	uint64_t small;
	const volatile uint8_t *dev_mem;
	uint8_t a[GENID_LEN], b[GENID_LEN];
	char err[256];
	void *map;
	int fd, rw;

	memset(p, 0, sizeof(*p));
	fd = open(FORKSAFE_DEVICE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (read(fd, &g, sizeof(g)) != (ssize_t)sizeof(g)) {
		close(fd);
		return -EIO;
	}
	p->generation = g.generation;
	p->id_offset = g.id_offset;
	p->short_read = fails(read(fd, &small, sizeof(small)));
	p->map_exec = map_fails(fd, PROT_READ | PROT_EXEC, MAP_SHARED, 0);
	p->map_private_write = map_fails(fd, PROT_READ | PROT_WRITE, MAP_PRIVATE, 0);
	p->map_offset = map_fails(fd, PROT_READ, MAP_SHARED, page);
	/*
	 * The misuses the driver itself must refuse need a file opened for
	 * writing (root can open one, whatever the node's mode): on a
	 * read-only file the VFS refuses write() (EBADF) and a shared writable
	 * mapping (EACCES) before the driver is asked.  So write() on it
	 * reaches the missing .write (EINVAL), and mprotect() on its read-only
	 * mapping reaches only the VM_MAYWRITE and VM_MAYEXEC the driver took
	 * away (EACCES).
	 */
	rw = open(FORKSAFE_DEVICE, O_RDWR | O_CLOEXEC);
	if (rw < 0) {
		p->rw_open = errno;
		close(fd);
		return 0;
	}
	p->write = fails(write(rw, &g, sizeof(g)));
	p->map_shared_write = map_fails(rw, PROT_READ | PROT_WRITE, MAP_SHARED, 0);
	map = mmap(NULL, page, PROT_READ, MAP_SHARED, rw, 0);
	if (map == MAP_FAILED) {
		p->map_read = errno;
	} else {
		p->mprotect_write = fails(mprotect(map, page, PROT_READ | PROT_WRITE));
		p->mprotect_exec = fails(mprotect(map, page, PROT_READ | PROT_EXEC));
		dev_mem = genid_map(err, sizeof(err));
		if (dev_mem && g.id_offset <= page - GENID_LEN) {
			genid_read(dev_mem, a);
			genid_read((const volatile uint8_t *)map + g.id_offset, b);
			p->id_matches = !memcmp(a, b, GENID_LEN);
		}
		munmap(map, page);
	}
	close(rw);
	close(fd);
	return 0;
}

/* ---- poll() wakes and uevents -------------------------------------------------- */

static atomic_uint wakes, uevents;
static atomic_uint_fast64_t last_generation;
static atomic_int watch_errno;
static int watch_fd = -1;

/* Each wake is read at once, which makes the file see the new generation. */
static void *watch(void *arg)
{
	struct pollfd p = { .fd = watch_fd, .events = POLLIN };
	struct vmgenid_generation g;

	(void)arg;
	for (;;) {
		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			atomic_store(&watch_errno, errno);
			return NULL;
		}
		if (read(watch_fd, &g, sizeof(g)) != (ssize_t)sizeof(g)) {
			atomic_store(&watch_errno, errno ? errno : EIO);
			return NULL;
		}
		atomic_store(&last_generation, g.generation);
		atomic_fetch_add(&wakes, 1);
	}
}

/* The kernel's uevents, counting those that carry VMGENID_GENERATION=. */
static void *listen_uevents(void *arg)
{
	static const char key[] = "VMGENID_GENERATION=";
	int fd = (int)(intptr_t)arg;
	char buf[8192];
	ssize_t n, i;

	for (;;) {
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0) {
			if (errno == EINTR || errno == ENOBUFS)
				continue;
			atomic_store(&watch_errno, errno);
			return NULL;
		}
		buf[n] = 0;
		/* "ACTION@DEVPATH\0KEY=VALUE\0...": look at each string. */
		for (i = 0; i < n; i += strlen(buf + i) + 1)
			if (!strncmp(buf + i, key, sizeof(key) - 1))
				atomic_fetch_add(&uevents, 1);
	}
}

static int start_uevents(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	pthread_t t;
	int fd, err;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	err = pthread_create(&t, NULL, listen_uevents, (void *)(intptr_t)fd);
	if (err) {
		close(fd);
		return -err;
	}
	pthread_detach(t);
	return 0;
}

int signal_watch_start(void)
{
	struct vmgenid_generation g;
	pthread_t t;
	int err;

	if (watch_fd >= 0)
		return -EBUSY;
	watch_fd = open(FORKSAFE_DEVICE, O_RDONLY | O_CLOEXEC);
	if (watch_fd < 0)
		return -errno;
	err = read(watch_fd, &g, sizeof(g)) == (ssize_t)sizeof(g) ? 0 : -EIO;
	if (!err) {
		atomic_store(&last_generation, g.generation);
		err = start_uevents();
	}
	if (!err)
		err = -pthread_create(&t, NULL, watch, NULL);
	if (err) {
		/* Nothing started: a later start may try again. */
		close(watch_fd);
		watch_fd = -1;
		return err;
	}
	pthread_detach(t);
	return 0;
}

int signal_watch_status(unsigned int *n, unsigned int *n_uevents, uint64_t *generation)
{
	if (watch_fd < 0)
		return -ENOENT;
	if (atomic_load(&watch_errno))
		return -atomic_load(&watch_errno);
	*n = atomic_load(&wakes);
	*n_uevents = atomic_load(&uevents);
	*generation = atomic_load(&last_generation);
	return 0;
}

/* ---- The ID's page in the agent's own mappings ---------------------------------- */

/*
 * x86's vvar area on the 6.12 series: vmgenid_page is the fifth page, after
 * the vvar, pvclock, hvclock and timens pages (the series' "random: vDSO:
 * check the VM generation ID before returning output").
 */
#define VVAR_VMGENID_PAGE 4

static const volatile uint8_t *dev_page, *vvar_page;
static uint32_t maps_id_offset;

/* The minor faults of one read of P by this thread. */
static long read_faults(const volatile uint8_t *p)
{
	struct rusage a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	getrusage(RUSAGE_THREAD, &a);
	(void)*p;
	getrusage(RUSAGE_THREAD, &b);
	return b.ru_minflt - a.ru_minflt;
}

/* How many faults P takes, then what ID it holds. */
static long read_page(const volatile uint8_t *p, char id[37])
{
	uint8_t g[GENID_LEN];
	long n = read_faults(p);

	genid_read(p + maps_id_offset, g);
	genid_format(g, id);
	return n;
}

/* vmgenid_page of this process's vvar area, or NULL if it has none. */
static const volatile uint8_t *find_vvar_page(void)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned long start, end;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	const volatile uint8_t *p = NULL;

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vvar]") && sscanf(line, "%lx-%lx", &start, &end) == 2 &&
		    (end - start) / page > VVAR_VMGENID_PAGE)
			p = (const volatile uint8_t *)(start + VVAR_VMGENID_PAGE * page);
	fclose(f);
	return p;
}

int signal_maps_start(void)
{
	long page = sysconf(_SC_PAGESIZE);
	struct vmgenid_generation g;
	void *map;
	int fd;

	if (dev_page)
		return -EBUSY;
	fd = open(FORKSAFE_DEVICE, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (read(fd, &g, sizeof(g)) != (ssize_t)sizeof(g) || g.id_offset > page - GENID_LEN) {
		close(fd);
		return -EIO;
	}
	map = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	maps_id_offset = g.id_offset;
	dev_page = map;
	vvar_page = find_vvar_page();
	(void)*dev_page;
	if (vvar_page)
		(void)*vvar_page;
	return 0;
}

/*
 * A child forked now: the faults of its first read of vmgenid_page, after a
 * read of its stack that faults in the code and stack it runs on.
 */
static long child_read_faults(void)
{
	volatile uint8_t warm = 0;
	int pfd[2], status;
	long n = -1;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		read_faults(&warm);
		n = read_faults(vvar_page);
		_exit(write(pfd[1], &n, sizeof(n)) == sizeof(n) ? 0 : 1);
	}
	close(pfd[1]);
	if (pid > 0) {
		if (read(pfd[0], &n, sizeof(n)) != sizeof(n))
			n = -1;
		waitpid(pid, &status, 0);
	}
	close(pfd[0]);
	return n;
}

int signal_maps_status(struct signal_maps *m)
{
	memset(m, 0, sizeof(*m));
	if (!dev_page)
		return -ENOENT;
	m->dev_faults = read_page(dev_page, m->dev_id);
	m->vvar = vvar_page != NULL;
	if (!vvar_page)
		return 0;
	m->vvar_faults = read_page(vvar_page, m->vvar_id);
	m->child_vvar_faults = child_read_faults();
	return 0;
}
