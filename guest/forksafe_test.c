// SPDX-License-Identifier: GPL-2.0
/*
 * libforksafe on the host, under ASan and UBSan, in KTAP: a file laid out
 * like /dev/vmgenid (the structure at 0, the ID in page 0) stands in for
 * the device, and a pwrite() of a new ID for the hypervisor's fork.
 * The DRBG's known answers were computed independently (Python hashlib):
 * SHA-256(key || le64 counter || 'o'), then key = SHA-256(key || le64 counter+1 || 'k').
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "forksafe.h"
#include "fake_vmgenid.h"

#define PLAN 30

static int planned, failures;

static void check(int ok, const char *what)
{
	printf("%s %d %s\n", ok ? "ok" : "not ok", ++planned, what);
	failures += !ok;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* A fake device in DIR, its path (one of the last four made). */
static char *fake(const char *dir, const char *name, uint32_t id_len, uint8_t id_byte)
{
	static char path[4][512];
	static int n;
	char *p = path[n++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s", dir, name);
	fake_vmgenid(p, 7, id_len, id_byte);
	return p;
}

/* ---- vmclock: a page laid out as uapi linux/vmclock-abi.h says -------------- */

static void put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/* A vmclock page: MAGIC, SIZE, FLAGS, the seqcount SEQ and the counter GEN. */
static void vmclock_write(const char *path, uint32_t magic, uint32_t size, uint64_t flags, uint32_t seq,
			  uint64_t gen)
{
	uint8_t page[4096] = { 0 };
	int fd;

	put_le(page, magic, 4);
	put_le(page + FORKSAFE_VMCLOCK_SIZE_OFF, size, 4);
	put_le(page + 8, 1, 2);
	put_le(page + FORKSAFE_VMCLOCK_SEQ_OFF, seq, 4);
	put_le(page + FORKSAFE_VMCLOCK_FLAGS_OFF, flags, 8);
	put_le(page + FORKSAFE_VMCLOCK_GEN_OFF, gen, 8);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	if (fd < 0 || pwrite(fd, page, sizeof(page), 0) != (ssize_t)sizeof(page) || close(fd)) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
}

static void vmclock_tests(const char *dir)
{
	const uint64_t present = FORKSAFE_VMCLOCK_GEN_PRESENT;
	struct forksafe_id saved;
	char path[512];

	snprintf(path, sizeof(path), "%s/vmclock", dir);
	vmclock_write(path, 0x12345678, 4096, present, 2, 5);
	check(forksafe_open_source(FORKSAFE_VMCLOCK, path) == -EPROTO, "vmclock: a page without its magic: -EPROTO");
	vmclock_write(path, FORKSAFE_VMCLOCK_MAGIC, 0x68, present, 2, 5);
	check(forksafe_open_source(FORKSAFE_VMCLOCK, path) == -EPROTO,
	      "vmclock: a structure too small to hold vm_generation_counter: -EPROTO");
	vmclock_write(path, FORKSAFE_VMCLOCK_MAGIC, 4096, 0, 2, 5);
	check(forksafe_open_source(FORKSAFE_VMCLOCK, path) == -ENOTSUP,
	      "vmclock: without VM_GEN_COUNTER_PRESENT: -ENOTSUP");
	vmclock_write(path, FORKSAFE_VMCLOCK_MAGIC, 4096, present, 2, 0x0102030405060708ULL);
	check(forksafe_open_source(FORKSAFE_VMCLOCK, path) == 0 && forksafe_source() == FORKSAFE_VMCLOCK,
	      "vmclock: a page with the counter opens");
	check(forksafe_generation() == 0x0102030405060708LL,
	      "vmclock: the counter is read little-endian at 0x68");
	forksafe_mark(&saved);
	check(forksafe_forked(&saved) == 0, "vmclock: no fork since the mark");
	vmclock_write(path, FORKSAFE_VMCLOCK_MAGIC, 4096, present, 4, 0x0102030405060709ULL);
	check(forksafe_forked(&saved) == 1, "vmclock: a new counter is a fork");
	check(forksafe_forked(&saved) == 0, "vmclock: and only one");
	vmclock_write(path, FORKSAFE_VMCLOCK_MAGIC, 4096, present, 5, 0x0102030405060709ULL);
	check(forksafe_forked(&saved) == 1,
	      "vmclock: an update in progress (odd seqcount) that never ends errs towards a fork");
	vmclock_write(path, FORKSAFE_VMCLOCK_MAGIC, 4096, present, 6, 0x0102030405060709ULL);
	check(forksafe_forked(&saved) == 1 && forksafe_forked(&saved) == 0,
	      "vmclock: once the update ends, the mark moves to the counter again");
	unlink(path);
}

/* ---- sysgenid: the 4-byte counter AWS-LC maps ---------------------------------- */

static void sysgenid_write(const char *path, const void *bytes, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, bytes, len) != (ssize_t)len || close(fd)) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
}

static void sysgenid_tests(const char *dir)
{
	uint8_t c[4] = { 9, 0, 0, 0 };
	struct forksafe_id saved;
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/sysgenid", dir);
	sysgenid_write(path, c, 2);
	check(forksafe_open_source(FORKSAFE_SYSGENID, path) == -EPROTO,
	      "sysgenid: a file shorter than the counter: -EPROTO (no SIGBUS)");
	sysgenid_write(path, c, 4);
	check(forksafe_open_source(FORKSAFE_SYSGENID, path) == 0 && forksafe_source() == FORKSAFE_SYSGENID,
	      "sysgenid: a 4-byte counter opens");
	check(forksafe_generation() == 9, "sysgenid: the counter is read");
	forksafe_mark(&saved);
	check(forksafe_forked(&saved) == 0, "sysgenid: no fork since the mark");
	c[0] = 10;
	fd = open(path, O_WRONLY);
	if (fd < 0 || pwrite(fd, c, 4, 0) != 4 || close(fd)) {
		printf("Bail out! cannot rewrite %s\n", path);
		exit(1);
	}
	check(forksafe_forked(&saved) == 1 && forksafe_generation() == 10, "sysgenid: a new counter is a fork");
	check(!strcmp(forksafe_source_name(FORKSAFE_SYSGENID), "sysgenid") &&
	      !strcmp(forksafe_source_name(FORKSAFE_VMCLOCK), "vmclock") &&
	      !strcmp(forksafe_source_name(FORKSAFE_VMGENID), "vmgenid"),
	      "each source has its name");
	unlink(path);
}

int main(void)
{
	char dir[] = "/tmp/forksafe-test.XXXXXX", got[65];
	struct forksafe_drbg d, clone, unchecked;
	struct forksafe_id saved;
	uint8_t a[16], b[16], c[16];
	const char *dev;
	int i;

	printf("KTAP version 1\n1..%d\n", PLAN);
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	check(forksafe_open_path("/nonexistent/vmgenid") == -ENOENT, "no device: -ENOENT");
	check(forksafe_open_path(fake(dir, "bad", 8, 1)) == -EPROTO, "an ID length other than 16: -EPROTO");
	check(forksafe_forked(&saved) == -EBADF, "forksafe_forked() before a successful open: -EBADF");
	dev = fake(dir, "dev", FORKSAFE_ID_LEN, 1);
	check(forksafe_open_path(dev) == 0, "a device laid out as the uapi says opens");

	forksafe_mark(&saved);
	check(forksafe_forked(&saved) == 0, "no fork since the mark");
	fake_vmgenid_set_id(dev, 2, FORKSAFE_ID_LEN);
	check(forksafe_forked(&saved) == 1, "a new ID through the shared mapping is a fork");
	check(forksafe_forked(&saved) == 0, "and only one: saved moved on");
	fake_vmgenid_set_id(dev, 3, 8);
	check(forksafe_forked(&saved) == 1, "half an ID rewritten (a torn write) is a fork too");

	/* Known answers: fast key erasure over SHA-256. */
	forksafe_drbg_init(&d, 0);
	for (i = 0; i < 32; i++)
		d.key[i] = (uint8_t)i;
	d.counter = 0;
	forksafe_drbg_generate(&d, a, sizeof(a));
	hex(a, sizeof(a), got);
	check(!strcmp(got, "df36d91d2061b9fafeb051a57f6be548"), "DRBG output 1 is the known answer");
	forksafe_drbg_generate(&d, a, sizeof(a));
	hex(a, sizeof(a), got);
	check(!strcmp(got, "9d55a3948bdbcab80b1384829d44667b"), "DRBG output 2 is the known answer (the key was replaced)");

	/* A fork copies the DRBG: the clone is a copy of its state. */
	check(forksafe_drbg_init(&d, 1) == 0, "a checked DRBG seeds");
	clone = d;
	unchecked = d;
	unchecked.check = 0;
	forksafe_drbg_generate(&unchecked, c, sizeof(c));
	forksafe_drbg_generate(&d, a, sizeof(a));
	check(!memcmp(a, c, sizeof(a)) && d.reseeds == 0,
	      "without a fork, the checked DRBG makes what the unchecked copy makes");
	fake_vmgenid_set_id(dev, 4, FORKSAFE_ID_LEN);
	forksafe_drbg_generate(&clone, b, sizeof(b));
	check(memcmp(b, c, sizeof(b)) && clone.reseeds == 1,
	      "after the ID changed, the clone's checked DRBG reseeds before its first output");
	unchecked = d;
	unchecked.check = 0;
	clone = unchecked;
	forksafe_drbg_generate(&unchecked, a, sizeof(a));
	forksafe_drbg_generate(&clone, b, sizeof(b));
	check(!memcmp(a, b, sizeof(a)), "unchecked copies go on from the same key (positive control)");

	unlink(dev);
	unlink(fake(dir, "bad", 8, 1));
	forksafe_close();
	vmclock_tests(dir);
	forksafe_close();
	sysgenid_tests(dir);
	forksafe_close();
	rmdir(dir);
	if (planned != PLAN) {
		printf("# planned %d tests, ran %d\n", PLAN, planned);
		failures++;
	}
	printf("# %d passed, %d failed\n", planned - failures, failures);
	return failures != 0;
}
