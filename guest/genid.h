/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_GENID_H
#define FORKSAFE_GENID_H
#include <stddef.h>
#include <stdint.h>

#define GENID_LEN 16

/*
 * Map the live VM generation ID from guest memory.  QEMU publishes the
 * address of its fw_cfg blob as the named DWORD VGIA in an SSDT; the GUID
 * sits 40 bytes into it.  On failure, returns NULL and says why in err.
 */
const volatile uint8_t *genid_map(char *err, size_t errlen);

/*
 * The two steps of genid_map: the GUID's guest physical address (0 on
 * failure), and mapping it from there, for a process that knows it.
 */
uint64_t genid_locate(char *err, size_t errlen);
const volatile uint8_t *genid_map_at(uint64_t addr, char *err, size_t errlen);

/* Copy the GUID out, 8 bytes at a time as the hypervisor writes it. */
void genid_read(const volatile uint8_t *live, uint8_t out[GENID_LEN]);

/* The canonical string form (as QMP prints it) of the little-endian GUID. */
void genid_format(const uint8_t g[GENID_LEN], char out[37]);

#endif
