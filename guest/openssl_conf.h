/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_OPENSSL_CONF_H
#define FORKSAFE_OPENSSL_CONF_H
/*
 * For host programs that load forksafe-openssl (openssl-provider_test.c,
 * openssl-provider_bench.c): an OpenSSL library context configured by an
 * openssl.cnf written into DIR as an operator writes it, the provider's
 * DRBG selected by [random], with EXTRA lines in the provider's section
 * (its device, check = 0).  One that OpenSSL does not load ends the
 * program with a KTAP "Bail out!".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

static inline OSSL_LIB_CTX *configured(const char *dir, const char *module, const char *extra)
{
	char path[512];
	OSSL_LIB_CTX *ctx;
	FILE *f;

	snprintf(path, sizeof(path), "%s/openssl.cnf", dir);
	f = fopen(path, "w");
	if (!f) {
		printf("Bail out! %s: %s\n", path, strerror(errno));
		exit(2);
	}
	fprintf(f, "openssl_conf = openssl_init\n"
		   "[openssl_init]\nproviders = providers_sect\nrandom = random_sect\n"
		   "[providers_sect]\ndefault = default_sect\nforksafe = forksafe_sect\n"
		   "[default_sect]\nactivate = 1\n"
		   "[forksafe_sect]\nactivate = 1\nmodule = %s\n%s"
		   "[random_sect]\nrandom = FORKSAFE-DRBG\nproperties = provider=forksafe\n",
		module, extra);
	ctx = OSSL_LIB_CTX_new();
	if (fclose(f) || !ctx || !OSSL_LIB_CTX_load_config(ctx, path)) {
		printf("Bail out! OpenSSL does not load %s\n", path);
		exit(2);
	}
	return ctx;
}
#endif
