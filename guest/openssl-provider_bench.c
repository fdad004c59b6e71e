// SPDX-License-Identifier: GPL-2.0
/*
 * What forksafe-openssl costs per RAND_bytes(16), for make bench-openssl:
 * N calls on OpenSSL's public DRBG in one of three set-ups, each in a
 * library context of its own,
 *
 *   stock    OpenSSL's own CTR-DRBG (no configuration)
 *   nocheck  the provider's FORKSAFE-DRBG with "check = 0"
 *   check    the provider checking a file laid out like /dev/vmgenid
 *            before every output (a read of the mapped ID, no system call)
 *
 * and nothing else; the driver counts the instructions of a run of N and
 * of 2N calls under valgrind, so that all the set-up cancels out.  The
 * 16-byte outputs are folded into the exit status's check, so no call can
 * be optimized away.
 *
 *   forksafe-openssl-bench PROVIDER.so SCRATCH-DIR stock|nocheck|check N
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/rand.h>
#include "fake_vmgenid.h"
#include "openssl_conf.h"

int main(int argc, char **argv)
{
	char dev[512], extra[600];
	unsigned char b[16], fold = 0;
	OSSL_LIB_CTX *ctx = NULL;
	long n, i;
	char *end;

	if (argc != 5) {
		fprintf(stderr, "usage: forksafe-openssl-bench PROVIDER.so SCRATCH-DIR stock|nocheck|check N\n");
		return 2;
	}
	n = strtol(argv[4], &end, 10);
	if (*end || n < 1 || n > 100000000) {
		fprintf(stderr, "forksafe-openssl-bench: N is a number of calls, 1 to 100000000, not '%s'\n", argv[4]);
		return 2;
	}
	snprintf(dev, sizeof(dev), "%s/vmgenid", argv[2]);
	if (!strcmp(argv[3], "stock")) {
		ctx = OSSL_LIB_CTX_new();
	} else if (!strcmp(argv[3], "nocheck") || !strcmp(argv[3], "check")) {
		fake_vmgenid(dev, 1, FORKSAFE_ID_LEN, 0x11);
		snprintf(extra, sizeof(extra), "device = %s\n%s", dev, strcmp(argv[3], "check") ? "check = 0\n" : "");
		ctx = configured(argv[2], argv[1], extra);
	} else {
		fprintf(stderr, "forksafe-openssl-bench: '%s' is not stock, nocheck or check\n", argv[3]);
		return 2;
	}
	for (i = 0; i < n; i++) {
		if (RAND_bytes_ex(ctx, b, sizeof(b), 0) != 1) {
			fprintf(stderr, "forksafe-openssl-bench: RAND_bytes failed at call %ld\n", i);
			return 1;
		}
		fold ^= b[i % sizeof(b)];
	}
	OSSL_LIB_CTX_free(ctx);
	return fold == 0xff && n < 0; /* never true: the outputs are used */
}
