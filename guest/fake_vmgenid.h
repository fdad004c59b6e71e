/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FAKE_VMGENID_H
#define FAKE_VMGENID_H
/*
 * For host tests of what reads /dev/vmgenid (forksafe_test.c,
 * openssl-provider_test.c): a file laid out like the device, struct
 * vmgenid_generation at 0 and the ID at FAKE_ID_OFFSET of one page, which
 * libforksafe opens with forksafe_open_path(); a pwrite() of a new ID
 * stands in for the hypervisor's fork.  A file that cannot be written
 * ends the test with a KTAP "Bail out!".
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "forksafe.h"

#define FAKE_ID_OFFSET 64

static inline void fake_vmgenid(const char *path, uint64_t generation, uint32_t id_len, uint8_t id_byte)
{
	struct vmgenid_generation g = { generation, FAKE_ID_OFFSET, id_len };
	uint8_t page[4096] = { 0 };
	int fd;

	memcpy(page, &g, sizeof(g));
	memset(page + FAKE_ID_OFFSET, id_byte, FORKSAFE_ID_LEN);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, page, sizeof(page)) != (ssize_t)sizeof(page) || close(fd)) {
		printf("Bail out! cannot write %s\n", path);
		exit(2);
	}
}

/* The first LEN bytes of the ID set to BYTE, in place. */
static inline void fake_vmgenid_set_id(const char *path, uint8_t byte, size_t len)
{
	uint8_t id[FORKSAFE_ID_LEN];
	int fd = open(path, O_WRONLY);

	memset(id, byte, sizeof(id));
	if (fd < 0 || pwrite(fd, id, len, FAKE_ID_OFFSET) != (ssize_t)len || close(fd)) {
		printf("Bail out! cannot rewrite %s\n", path);
		exit(2);
	}
}
#endif
