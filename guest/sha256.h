/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_SHA256_H
#define FORKSAFE_SHA256_H
#include <stddef.h>
#include <stdint.h>

/* SHA-256 (FIPS 180-4), what systemd hashes its old and new seeds with. */
#define SHA256_LEN 32

struct sha256 {
	uint32_t h[8];
	uint64_t bytes;
	uint8_t block[64];
	size_t used;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN]);
void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);

#endif
