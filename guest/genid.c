// SPDX-License-Identifier: GPL-2.0
/*
 * Reading the VM generation ID from inside the guest, without the driver.
 *
 * The vmgenid driver in 6.1 keeps the ID to itself, so the guest agent finds
 * it the way QEMU's own vmgenid qtest does: scan the SSDTs for
 * "Name (VGIA, <dword>)", whose value the firmware patched to the guest
 * physical address of the blob, and map blob + 40 through /dev/mem.  That
 * needs CONFIG_DEVMEM; CONFIG_STRICT_DEVMEM refuses only System RAM, and the
 * firmware puts the blob in reserved memory (Debian's kernels allow it).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "genid.h"

#define VMGENID_GUID_OFFSET 40
#define AML_NAME_OP 0x08
#define AML_DWORD_PREFIX 0x0c
#define ACPI_TABLES "/sys/firmware/acpi/tables"

/* Find Name(VGIA, DWord) in one table; 0 if absent. */
static uint64_t vgia_in_table(const char *path)
{
	static const uint8_t pat[] = { AML_NAME_OP, 'V', 'G', 'I', 'A', AML_DWORD_PREFIX };
	uint8_t buf[65536];
	ssize_t n, i;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	for (i = 0; i + (ssize_t)sizeof(pat) + 4 <= n; i++) {
		if (memcmp(buf + i, pat, sizeof(pat)))
			continue;
		i += sizeof(pat);
		return (uint64_t)buf[i] | (uint64_t)buf[i + 1] << 8 |
		       (uint64_t)buf[i + 2] << 16 | (uint64_t)buf[i + 3] << 24;
	}
	return 0;
}

static uint64_t find_vgia(void)
{
	char path[512];
	struct dirent *d;
	uint64_t addr = 0;
	DIR *dir = opendir(ACPI_TABLES);

	if (!dir)
		return 0;
	while (!addr && (d = readdir(dir))) {
		if (strncmp(d->d_name, "SSDT", 4))
			continue;
		snprintf(path, sizeof(path), ACPI_TABLES "/%s", d->d_name);
		addr = vgia_in_table(path);
	}
	closedir(dir);
	return addr;
}

uint64_t genid_locate(char *err, size_t errlen)
{
	uint64_t addr = find_vgia();

	if (!addr) {
		snprintf(err, errlen, "no VGIA in the ACPI SSDTs (no vmgenid device, or CONFIG_ACPI missing)");
		return 0;
	}
	addr += VMGENID_GUID_OFFSET;
	if (addr % 8) {
		snprintf(err, errlen, "GUID address 0x%llx is not 8-byte aligned", (unsigned long long)addr);
		return 0;
	}
	return addr;
}

/*
 * Cached, as the vmgenid driver maps it: a kernel with PAT refuses a mapping
 * whose memory type conflicts with the driver's (EAGAIN), which an
 * uncached (O_SYNC) one does there.  The hypervisor's writes are coherent
 * with the CPU's caches either way.
 */
const volatile uint8_t *genid_map_at(uint64_t addr, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t base = addr & ~(uint64_t)(page - 1);
	size_t len = addr - base + GENID_LEN > (uint64_t)page ? page * 2 : page;
	void *map;
	int fd;

	fd = open("/dev/mem", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open /dev/mem: %s (CONFIG_DEVMEM missing?)", strerror(errno));
		return NULL;
	}
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)base);
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(err, errlen, "cannot map the GUID at 0x%llx through /dev/mem: %s%s",
			 (unsigned long long)addr, strerror(errno),
			 errno == EPERM ? " (CONFIG_STRICT_DEVMEM refuses it)" : "");
		return NULL;
	}
	return (const volatile uint8_t *)map + (addr - base);
}

const volatile uint8_t *genid_map(char *err, size_t errlen)
{
	uint64_t addr = genid_locate(err, errlen);

	return addr ? genid_map_at(addr, err, errlen) : NULL;
}

void genid_read(const volatile uint8_t *live, uint8_t out[GENID_LEN])
{
	const volatile uint64_t *w = (const volatile uint64_t *)live;
	uint64_t lo = w[0], hi = w[1];

	memcpy(out, &lo, 8);
	memcpy(out + 8, &hi, 8);
}

void genid_format(const uint8_t g[GENID_LEN], char out[37])
{
	/* Microsoft GUID layout: the first three fields are little-endian. */
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6],
		 g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15]);
}
