// SPDX-License-Identifier: GPL-2.0
/*
 * forksafe-openssl on the host, under ASan and UBSan, in KTAP: OpenSSL
 * configured as an operator would (openssl-provider.c's header), a file
 * laid out like /dev/vmgenid standing in for the device and a pwrite() of
 * a new ID for the hypervisor's fork.  Each case runs in a process of its
 * own (libforksafe opens one device per process):
 *
 *   device   the provider checks the file: OpenSSL's public, private and
 *            primary DRBGs are the provider's; no reseed without a fork;
 *            one per DRBG per fork, a real one (the CTR-DRBG's own reseed
 *            counter moves); OpenSSL's reseed interval and its reseed on
 *            fork() still act; threads drawing while the ID changes
 *   check0   the same file with "check = 0": nothing reseeds on a fork
 *            (the positive control of the counts above)
 *   none     no device: "none", and the reason, and OpenSSL's DRBG works
 *
 *   forksafe-openssl-test PROVIDER.so SCRATCH-DIR
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include "forksafe.h"
#include "fake_vmgenid.h"
#include "openssl_conf.h"

#define THREADS 4
#define THREAD_CALLS 20000
#define FLIPS 50

static int planned, failures;

static void check(int ok, const char *what)
{
	printf("%s %d %s\n", ok ? "ok" : "not ok", ++planned, what);
	fflush(stdout);
	failures += !ok;
}

static void bail(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(2);
}

static const char *prov_param(OSSL_LIB_CTX *ctx, const char *key)
{
	static char value[256];
	const char *v = NULL;
	OSSL_PARAM p[] = { OSSL_PARAM_utf8_ptr(key, &v, 0), OSSL_PARAM_END };
	OSSL_PROVIDER *prov = OSSL_PROVIDER_load(ctx, "forksafe");

	if (!prov || !OSSL_PROVIDER_get_params(prov, p) || !v)
		snprintf(value, sizeof(value), "(no %s)", key);
	else
		snprintf(value, sizeof(value), "%s", v);
	OSSL_PROVIDER_unload(prov);
	return value;
}

/* A DRBG's uint64 or uint parameter; -1 when it has none. */
static long long drbg_param(EVP_RAND_CTX *r, const char *key, int wide)
{
	uint64_t v64 = 0;
	unsigned int v = 0;
	OSSL_PARAM p[] = { OSSL_PARAM_END, OSSL_PARAM_END };

	p[0] = wide ? OSSL_PARAM_construct_uint64(key, &v64) : OSSL_PARAM_construct_uint(key, &v);
	if (!r || !EVP_RAND_CTX_get_params(r, p))
		return -1;
	return wide ? (long long)v64 : (long long)v;
}

static long long reseeds(EVP_RAND_CTX *r)
{
	return drbg_param(r, "forksafe-reseeds", 1);
}

static long long inner_reseeds(EVP_RAND_CTX *r)
{
	return drbg_param(r, OSSL_DRBG_PARAM_RESEED_COUNTER, 0);
}

static int draw(OSSL_LIB_CTX *ctx, int n)
{
	unsigned char b[16];
	int ok = 1;

	while (n-- > 0)
		ok &= RAND_bytes_ex(ctx, b, sizeof(b), 0) == 1;
	return ok;
}

static const char *rand_name(EVP_RAND_CTX *r)
{
	return r ? EVP_RAND_get0_name(EVP_RAND_CTX_get0_rand(r)) : "(none)";
}

/* ---- device: the provider with a fork signal ------------------------------------ */

struct drawer {
	OSSL_LIB_CTX *ctx;
	int ok;
	long long reseeds;
};

static void *drawer_run(void *arg)
{
	struct drawer *w = arg;

	w->ok = draw(w->ctx, THREAD_CALLS);
	w->reseeds = reseeds(RAND_get0_public(w->ctx));
	return NULL;
}

static void fork_differs(OSSL_LIB_CTX *ctx)
{
	unsigned char mine[16], theirs[16];
	int fds[2], status;
	pid_t pid;

	if (pipe(fds))
		bail("pipe");
	pid = fork();
	if (pid < 0)
		bail("fork");
	if (!pid) {
		int ok = RAND_bytes_ex(ctx, theirs, sizeof(theirs), 0) == 1 &&
			 write(fds[1], theirs, sizeof(theirs)) == (ssize_t)sizeof(theirs);
		_exit(ok ? 0 : 1);
	}
	close(fds[1]);
	check(RAND_bytes_ex(ctx, mine, sizeof(mine), 0) == 1 &&
	      read(fds[0], theirs, sizeof(theirs)) == (ssize_t)sizeof(theirs) &&
	      waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status) &&
	      memcmp(mine, theirs, sizeof(mine)),
	      "device: after fork(), parent and child draw different bytes (OpenSSL's own reseed)");
	close(fds[0]);
}

static void case_device(const char *module, const char *dir)
{
	char dev[512], extra[600];
	struct drawer w[THREADS];
	pthread_t t[THREADS];
	long long before, inner, max = 0, min = -1;
	OSSL_LIB_CTX *ctx;
	int i, ok;

	snprintf(dev, sizeof(dev), "%s/vmgenid", dir);
	fake_vmgenid(dev, 1, FORKSAFE_ID_LEN, 0x11);
	snprintf(extra, sizeof(extra), "device = %s\n", dev);
	ctx = configured(dir, module, extra);

	check(!strcmp(prov_param(ctx, "forksafe-source"), "vmgenid"), "device: the provider's source is vmgenid");
	check(!strncmp(prov_param(ctx, "forksafe-status"), "checking vmgenid", 16),
	      "device: its status says it checks before every output");
	check(draw(ctx, 1), "device: RAND_bytes() works");
	check(!strcmp(rand_name(RAND_get0_public(ctx)), "FORKSAFE-DRBG") &&
	      !strcmp(rand_name(RAND_get0_private(ctx)), "FORKSAFE-DRBG") &&
	      !strcmp(rand_name(RAND_get0_primary(ctx)), "FORKSAFE-DRBG"),
	      "device: openssl.cnf makes the public, private and primary DRBGs the provider's");

	check(draw(ctx, 100) && reseeds(RAND_get0_public(ctx)) == 0, "device: no fork, no fork reseed");
	inner = inner_reseeds(RAND_get0_public(ctx));
	fake_vmgenid_set_id(dev, 0x22, FORKSAFE_ID_LEN);
	check(draw(ctx, 1) && reseeds(RAND_get0_public(ctx)) == 1,
	      "device: a new ID, and the public DRBG reseeds before its next output");
	check(inner_reseeds(RAND_get0_public(ctx)) == inner + 1,
	      "device: the reseed is real (the CTR-DRBG's own reseed counter moves by one)");
	check(draw(ctx, 100) && reseeds(RAND_get0_public(ctx)) == 1, "device: once per fork");
	ok = RAND_priv_bytes_ex(ctx, (unsigned char[16]){ 0 }, 16, 0) == 1;
	check(ok && reseeds(RAND_get0_private(ctx)) == 1, "device: the private DRBG reseeds on the same fork");

	before = inner_reseeds(RAND_get0_public(ctx));
	check(draw(ctx, 70000) && inner_reseeds(RAND_get0_public(ctx)) > before &&
	      reseeds(RAND_get0_public(ctx)) == 1,
	      "device: OpenSSL's own reseed interval (65,536 requests) still acts, counted apart");

	for (i = 0; i < THREADS; i++) {
		w[i] = (struct drawer){ .ctx = ctx };
		if (pthread_create(&t[i], NULL, drawer_run, &w[i]))
			bail("pthread_create");
	}
	for (i = 0; i < FLIPS; i++) {
		fake_vmgenid_set_id(dev, (uint8_t)(0x30 + i), FORKSAFE_ID_LEN);
		usleep(1000);
	}
	ok = 1;
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		ok &= w[i].ok;
		max = w[i].reseeds > max ? w[i].reseeds : max;
		min = min < 0 || w[i].reseeds < min ? w[i].reseeds : min;
	}
	check(ok, "device: threads drawing while the ID changes all get their bytes");
	check(min >= 0 && max <= FLIPS, "device: no thread's DRBG reseeds more often than the ID changed");
	printf("# threads' public DRBGs reseeded %lld to %lld times for %d changes\n", min, max, FLIPS);
	fork_differs(ctx);
	OSSL_LIB_CTX_free(ctx);
}

/* ---- check0 and none: the positive control, and no device -------------------------- */

static void case_check0(const char *module, const char *dir)
{
	char dev[512], extra[600];
	OSSL_LIB_CTX *ctx;

	snprintf(dev, sizeof(dev), "%s/vmgenid", dir);
	fake_vmgenid(dev, 1, FORKSAFE_ID_LEN, 0x11);
	snprintf(extra, sizeof(extra), "device = %s\ncheck = 0\n", dev);
	ctx = configured(dir, module, extra);
	check(!strcmp(prov_param(ctx, "forksafe-source"), "vmgenid") &&
	      strstr(prov_param(ctx, "forksafe-status"), "check = 0"),
	      "check0: the source is found, and the status says forks are not checked");
	check(draw(ctx, 10), "check0: RAND_bytes() works");
	fake_vmgenid_set_id(dev, 0x22, FORKSAFE_ID_LEN);
	check(draw(ctx, 10) && reseeds(RAND_get0_public(ctx)) == 0,
	      "check0: a new ID, no fork reseed (positive control of the counts)");
	OSSL_LIB_CTX_free(ctx);
}

static void case_none(const char *module, const char *dir)
{
	char extra[600];
	OSSL_LIB_CTX *ctx;

	snprintf(extra, sizeof(extra), "device = %s/absent\n", dir);
	ctx = configured(dir, module, extra);
	check(!strcmp(prov_param(ctx, "forksafe-source"), "none"), "none: no device, the source is none");
	check(strstr(prov_param(ctx, "forksafe-status"), "no fork signal") != NULL,
	      "none: the status says why, once, in a parameter");
	printf("# %s\n", prov_param(ctx, "forksafe-status"));
	check(draw(ctx, 1000) && reseeds(RAND_get0_public(ctx)) == 0 &&
	      !strcmp(rand_name(RAND_get0_public(ctx)), "FORKSAFE-DRBG"),
	      "none: OpenSSL's DRBG works behind the provider, without checks");
	OSSL_LIB_CTX_free(ctx);
}

/* Each case in a child; its checks are numbered after the ones before. */
static const struct {
	const char *name;
	void (*run)(const char *module, const char *dir);
	int checks;
} cases[] = {
	{ "device", case_device, 13 },
	{ "check0", case_check0, 3 },
	{ "none", case_none, 3 },
};

int main(int argc, char **argv)
{
	int i, n = 0, status;
	pid_t pid;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PROVIDER.so SCRATCH-DIR\n", argv[0]);
		return 2;
	}
	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++)
		n += cases[i].checks;
	printf("TAP version 13\n1..%d\n", n);
	fflush(stdout);
	n = 0;
	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		pid = fork();
		if (pid < 0)
			bail("fork");
		if (!pid) {
			planned = n;
			cases[i].run(argv[1], argv[2]);
			if (planned != n + cases[i].checks) {
				int ran = planned - n;

				printf("not ok %d %s: ran %d checks, not %d\n", ++planned, cases[i].name, ran,
				       cases[i].checks);
				failures++;
			}
			fflush(stdout);
			_exit(failures ? 1 : 0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) > 1) {
			printf("not ok %d %s: the case did not finish (status %d)\n", ++n, cases[i].name, status);
			failures++;
			continue;
		}
		failures += WEXITSTATUS(status);
		n += cases[i].checks;
	}
	return failures ? 1 : 0;
}
