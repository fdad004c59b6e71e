// SPDX-License-Identifier: GPL-2.0
/*
 * forksafe-openssl: an OpenSSL 3 provider whose DRBG checks the VM fork
 * signal before every output.
 *
 * OpenSSL's DRBGs keep their state in the process: a VM restored twice
 * from one snapshot gives the same output in both clones until the DRBG
 * next reseeds on its own (every 65,536 requests or 7 minutes for the
 * public and private ones), and no kernel reseed reaches that state.  This
 * provider offers FORKSAFE-DRBG, which OpenSSL's own configuration makes
 * the DRBG of every program linked to libcrypto, recompiling nothing:
 *
 *   [openssl_init]  providers = providers_sect  random = random_sect
 *   [providers_sect] default = default_sect  forksafe = forksafe_sect
 *   [default_sect]  activate = 1
 *   [forksafe_sect] activate = 1  module = .../forksafe-openssl.so
 *   [random_sect]   random = FORKSAFE-DRBG  properties = provider=forksafe
 *
 * Each instance is OpenSSL's CTR-DRBG (AES-256-CTR, from the default
 * provider, which does the cryptography and OpenSSL's own reseeds, on
 * fork() and by its intervals) behind a check of libforksafe's fork
 * signal: the ID page the kernel maps (/dev/vmgenid, vmclock: written by
 * the hypervisor before the VM runs again, so no window) or the kernel's
 * counter (/dev/sysgenid).  When it moved, the DRBG reseeds with
 * prediction resistance and 32 bytes of getrandom() as additional input
 * before it produces anything.
 *
 * Without any of those devices it is OpenSSL's CTR-DRBG and nothing more,
 * and says so once, in the provider's "forksafe-source" parameter ("none")
 * and "forksafe-status" (why).  Each DRBG instance counts the fork
 * reseeds it made in its "forksafe-reseeds" parameter.
 *
 * The provider's configuration section may name the device ("device =
 * PATH": a file laid out like /dev/vmgenid, for tests) or turn the check
 * off ("check = 0": the same DRBG, to measure what the check costs and
 * the window it closes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include "forksafe.h"

#define FS_DRBG_NAME "FORKSAFE-DRBG"
#define FS_PARAM_SOURCE "forksafe-source"
#define FS_PARAM_STATUS "forksafe-status"
#define FS_PARAM_RESEEDS "forksafe-reseeds"
#define FS_INNER "CTR-DRBG"
#define FS_INNER_CIPHER "AES-256-CTR"
#define FS_INNER_PROPS "provider=default"
#define FS_FRESH_LEN 32

/* ---- the provider -------------------------------------------------------------- */

/*
 * The fork signal is one per process (libforksafe), opened when the
 * provider is first initialised; check is 0 when there is none or the
 * configuration turned it off.
 */
struct fs_prov {
	OSSL_LIB_CTX *libctx;	/* a child of the application's: the default provider's CTR-DRBG */
	int check;
	const char *source;
	char status[160];
};

/* What the configuration section says, through the core. */
static const char *conf_value(const OSSL_CORE_HANDLE *handle, OSSL_FUNC_core_get_params_fn *get_params,
			      const char *key)
{
	const char *value = NULL;
	OSSL_PARAM p[] = {
		OSSL_PARAM_utf8_ptr(key, &value, 0),
		OSSL_PARAM_END
	};

	if (!get_params || !get_params(handle, p))
		return NULL;
	return value;
}

static void fs_prov_open(struct fs_prov *prov, const char *device, const char *check)
{
	int err;

	prov->check = !check || strcmp(check, "0");
	err = device ? forksafe_open_path(device) : forksafe_open();
	prov->source = forksafe_source_name(err ? FORKSAFE_NONE : forksafe_source());
	if (err) {
		prov->check = 0;
		snprintf(prov->status, sizeof(prov->status),
			 "no fork signal (%s: %s): OpenSSL's CTR-DRBG alone, a VM fork goes unseen",
			 device ? device : "/dev/vmgenid, /dev/vmclock0, /dev/sysgenid", strerror(-err));
	} else if (!prov->check) {
		snprintf(prov->status, sizeof(prov->status), "%s found, check = 0: forks are not checked",
			 prov->source);
	} else {
		snprintf(prov->status, sizeof(prov->status), "checking %s before every output", prov->source);
	}
}

/* ---- the DRBG ---------------------------------------------------------------------- */

struct fs_drbg {
	struct fs_prov *prov;
	EVP_RAND_CTX *inner;
	struct forksafe_id seen;
	CRYPTO_RWLOCK *lock;
	uint64_t fork_reseeds;
	size_t max_request;	/* the CTR-DRBG's, asked once */
};

static void *fs_drbg_new(void *provctx, void *parent, const OSSL_DISPATCH *parent_dispatch)
{
	struct fs_prov *prov = provctx;
	OSSL_PARAM p[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_DRBG_PARAM_CIPHER, (char *)FS_INNER_CIPHER, 0),
		OSSL_PARAM_END
	};
	struct fs_drbg *d;
	EVP_RAND *rand;

	/* Seeded from the operating system, as OpenSSL's primary DRBG is. */
	(void)parent;
	(void)parent_dispatch;
	d = OPENSSL_zalloc(sizeof(*d));
	if (!d)
		return NULL;
	d->prov = prov;
	rand = EVP_RAND_fetch(prov->libctx, FS_INNER, FS_INNER_PROPS);
	if (rand) {
		d->inner = EVP_RAND_CTX_new(rand, NULL);
		EVP_RAND_free(rand);
	}
	if (!d->inner || !EVP_RAND_CTX_set_params(d->inner, p)) {
		EVP_RAND_CTX_free(d->inner);
		OPENSSL_free(d);
		return NULL;
	}
	return d;
}

static void fs_drbg_free(void *vd)
{
	struct fs_drbg *d = vd;

	if (!d)
		return;
	EVP_RAND_CTX_free(d->inner);
	CRYPTO_THREAD_lock_free(d->lock);
	OPENSSL_clear_free(d, sizeof(*d));
}

/*
 * OpenSSL's configuration hands its DRBGs the cipher, digest and properties
 * of [random], meant for this DRBG's selection, not for the CTR-DRBG
 * inside: only the reseed intervals go through.
 */
static int fs_drbg_pass_intervals(struct fs_drbg *d, const OSSL_PARAM params[])
{
	static const char *const keys[] = {
		OSSL_DRBG_PARAM_RESEED_REQUESTS, OSSL_DRBG_PARAM_RESEED_TIME_INTERVAL,
	};
	OSSL_PARAM one[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
	const OSSL_PARAM *p;
	size_t i;

	for (i = 0; params && i < sizeof(keys) / sizeof(keys[0]); i++) {
		p = OSSL_PARAM_locate_const(params, keys[i]);
		if (!p)
			continue;
		one[0] = *p;
		if (!EVP_RAND_CTX_set_params(d->inner, one))
			return 0;
	}
	return 1;
}

static int fs_drbg_instantiate(void *vd, unsigned int strength, int prediction_resistance,
			       const unsigned char *pstr, size_t pstr_len, const OSSL_PARAM params[])
{
	struct fs_drbg *d = vd;
	OSSL_PARAM p[] = { OSSL_PARAM_construct_size_t(OSSL_RAND_PARAM_MAX_REQUEST, &d->max_request),
			   OSSL_PARAM_END };

	if (!fs_drbg_pass_intervals(d, params) || !EVP_RAND_CTX_get_params(d->inner, p))
		return 0;
	/* What the VM is now: a fork after this is one the next output must see. */
	forksafe_mark(&d->seen);
	return EVP_RAND_instantiate(d->inner, strength, prediction_resistance, pstr, pstr_len, NULL);
}

static int fs_drbg_uninstantiate(void *vd)
{
	struct fs_drbg *d = vd;

	return EVP_RAND_uninstantiate(d->inner);
}

/*
 * The check before every output.  A fork since the last one reseeds the
 * CTR-DRBG with fresh entropy (prediction resistance) and getrandom()'s
 * bytes as additional input, which the kernel has drawn after reseeding
 * on the same fork (the forksafe series checks the ID before producing
 * output too).  A failed reseed produces nothing.
 */
static int fs_drbg_fork_check(struct fs_drbg *d)
{
	unsigned char fresh[FS_FRESH_LEN];
	int ok;

	if (!d->prov->check || forksafe_forked(&d->seen) != 1)
		return 1;
	if (getrandom(fresh, sizeof(fresh), 0) != (ssize_t)sizeof(fresh))
		return 0;
	ok = EVP_RAND_reseed(d->inner, 1, NULL, 0, fresh, sizeof(fresh));
	OPENSSL_cleanse(fresh, sizeof(fresh));
	d->fork_reseeds += ok;
	return ok;
}

static int fs_drbg_generate(void *vd, unsigned char *out, size_t outlen, unsigned int strength,
			    int prediction_resistance, const unsigned char *adin, size_t adinlen)
{
	struct fs_drbg *d = vd;

	if (!fs_drbg_fork_check(d))
		return 0;
	return EVP_RAND_generate(d->inner, out, outlen, strength, prediction_resistance, adin, adinlen);
}

static int fs_drbg_reseed(void *vd, int prediction_resistance, const unsigned char *ent, size_t ent_len,
			  const unsigned char *adin, size_t adinlen)
{
	struct fs_drbg *d = vd;

	return EVP_RAND_reseed(d->inner, prediction_resistance, ent, ent_len, adin, adinlen);
}

/* OpenSSL's primary DRBG is shared by threads: the core locks it through these. */
static int fs_drbg_enable_locking(void *vd)
{
	struct fs_drbg *d = vd;

	if (!d->lock)
		d->lock = CRYPTO_THREAD_lock_new();
	return d->lock != NULL;
}

static int fs_drbg_lock(void *vd)
{
	struct fs_drbg *d = vd;

	return !d->lock || CRYPTO_THREAD_write_lock(d->lock);
}

static void fs_drbg_unlock(void *vd)
{
	struct fs_drbg *d = vd;

	if (d->lock)
		CRYPTO_THREAD_unlock(d->lock);
}

static const OSSL_PARAM *fs_drbg_gettable_ctx_params(void *vd, void *provctx)
{
	static const OSSL_PARAM known[] = {
		OSSL_PARAM_int(OSSL_RAND_PARAM_STATE, NULL),
		OSSL_PARAM_uint(OSSL_RAND_PARAM_STRENGTH, NULL),
		OSSL_PARAM_size_t(OSSL_RAND_PARAM_MAX_REQUEST, NULL),
		OSSL_PARAM_uint(OSSL_DRBG_PARAM_RESEED_REQUESTS, NULL),
		OSSL_PARAM_uint(OSSL_DRBG_PARAM_RESEED_COUNTER, NULL),
		OSSL_PARAM_uint64(FS_PARAM_RESEEDS, NULL),
		OSSL_PARAM_END
	};

	(void)vd;
	(void)provctx;
	return known;
}

/*
 * OpenSSL asks for the largest request before every output it hands out
 * (EVP_RAND_generate()); that one question is answered here, from the
 * CTR-DRBG's answer at instantiation, rather than passed on: a second
 * round of parameter lookups under the CTR-DRBG's lock per call.
 */
static int fs_drbg_get_ctx_params(void *vd, OSSL_PARAM params[])
{
	struct fs_drbg *d = vd;
	OSSL_PARAM *p;

	if (d->max_request && params && params[0].key && !params[1].key &&
	    !strcmp(params[0].key, OSSL_RAND_PARAM_MAX_REQUEST))
		return OSSL_PARAM_set_size_t(&params[0], d->max_request);
	p = OSSL_PARAM_locate(params, FS_PARAM_RESEEDS);
	if (p && !OSSL_PARAM_set_uint64(p, d->fork_reseeds))
		return 0;
	return EVP_RAND_CTX_get_params(d->inner, params);
}

static const OSSL_PARAM *fs_drbg_settable_ctx_params(void *vd, void *provctx)
{
	static const OSSL_PARAM known[] = {
		OSSL_PARAM_uint(OSSL_DRBG_PARAM_RESEED_REQUESTS, NULL),
		OSSL_PARAM_time_t(OSSL_DRBG_PARAM_RESEED_TIME_INTERVAL, NULL),
		OSSL_PARAM_END
	};

	(void)vd;
	(void)provctx;
	return known;
}

static int fs_drbg_set_ctx_params(void *vd, const OSSL_PARAM params[])
{
	return fs_drbg_pass_intervals(vd, params);
}

static int fs_drbg_verify_zeroization(void *vd)
{
	struct fs_drbg *d = vd;

	return EVP_RAND_verify_zeroization(d->inner);
}

static const OSSL_DISPATCH fs_drbg_functions[] = {
	{ OSSL_FUNC_RAND_NEWCTX, (void (*)(void))fs_drbg_new },
	{ OSSL_FUNC_RAND_FREECTX, (void (*)(void))fs_drbg_free },
	{ OSSL_FUNC_RAND_INSTANTIATE, (void (*)(void))fs_drbg_instantiate },
	{ OSSL_FUNC_RAND_UNINSTANTIATE, (void (*)(void))fs_drbg_uninstantiate },
	{ OSSL_FUNC_RAND_GENERATE, (void (*)(void))fs_drbg_generate },
	{ OSSL_FUNC_RAND_RESEED, (void (*)(void))fs_drbg_reseed },
	{ OSSL_FUNC_RAND_ENABLE_LOCKING, (void (*)(void))fs_drbg_enable_locking },
	{ OSSL_FUNC_RAND_LOCK, (void (*)(void))fs_drbg_lock },
	{ OSSL_FUNC_RAND_UNLOCK, (void (*)(void))fs_drbg_unlock },
	{ OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS, (void (*)(void))fs_drbg_gettable_ctx_params },
	{ OSSL_FUNC_RAND_GET_CTX_PARAMS, (void (*)(void))fs_drbg_get_ctx_params },
	{ OSSL_FUNC_RAND_SETTABLE_CTX_PARAMS, (void (*)(void))fs_drbg_settable_ctx_params },
	{ OSSL_FUNC_RAND_SET_CTX_PARAMS, (void (*)(void))fs_drbg_set_ctx_params },
	{ OSSL_FUNC_RAND_VERIFY_ZEROIZATION, (void (*)(void))fs_drbg_verify_zeroization },
	{ 0, NULL }
};

static const OSSL_ALGORITHM fs_rands[] = {
	{ FS_DRBG_NAME, "provider=forksafe", fs_drbg_functions, "a CTR-DRBG that reseeds on a VM fork" },
	{ NULL, NULL, NULL, NULL }
};

/* ---- the provider's entry points ------------------------------------------------ */

static const OSSL_ALGORITHM *fs_query(void *provctx, int operation_id, int *no_cache)
{
	(void)provctx;
	*no_cache = 0;
	return operation_id == OSSL_OP_RAND ? fs_rands : NULL;
}

static const OSSL_PARAM *fs_gettable_params(void *provctx)
{
	static const OSSL_PARAM known[] = {
		OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_NAME, NULL, 0),
		OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_VERSION, NULL, 0),
		OSSL_PARAM_uint(OSSL_PROV_PARAM_STATUS, NULL),
		OSSL_PARAM_utf8_ptr(FS_PARAM_SOURCE, NULL, 0),
		OSSL_PARAM_utf8_ptr(FS_PARAM_STATUS, NULL, 0),
		OSSL_PARAM_END
	};

	(void)provctx;
	return known;
}

static int fs_get_params(void *provctx, OSSL_PARAM params[])
{
	struct fs_prov *prov = provctx;
	OSSL_PARAM *p;

	p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_NAME);
	if (p && !OSSL_PARAM_set_utf8_ptr(p, "forksafe"))
		return 0;
	p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_VERSION);
	if (p && !OSSL_PARAM_set_utf8_ptr(p, "1"))
		return 0;
	p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_STATUS);
	if (p && !OSSL_PARAM_set_uint(p, 1))
		return 0;
	p = OSSL_PARAM_locate(params, FS_PARAM_SOURCE);
	if (p && !OSSL_PARAM_set_utf8_ptr(p, prov->source))
		return 0;
	p = OSSL_PARAM_locate(params, FS_PARAM_STATUS);
	return !p || OSSL_PARAM_set_utf8_ptr(p, prov->status);
}

static void fs_teardown(void *provctx)
{
	struct fs_prov *prov = provctx;

	OSSL_LIB_CTX_free(prov->libctx);
	free(prov);
}

static const OSSL_DISPATCH fs_provider_functions[] = {
	{ OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))fs_teardown },
	{ OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))fs_query },
	{ OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, (void (*)(void))fs_gettable_params },
	{ OSSL_FUNC_PROVIDER_GET_PARAMS, (void (*)(void))fs_get_params },
	{ 0, NULL }
};

__attribute__((visibility("default")))
int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
		       const OSSL_DISPATCH **out, void **provctx)
{
	OSSL_FUNC_core_get_params_fn *get_params = NULL;
	struct fs_prov *prov;
	const OSSL_DISPATCH *f;

	for (f = in; f->function_id; f++)
		if (f->function_id == OSSL_FUNC_CORE_GET_PARAMS)
			get_params = OSSL_FUNC_core_get_params(f);
	prov = calloc(1, sizeof(*prov));
	if (!prov)
		return 0;
	prov->libctx = OSSL_LIB_CTX_new_child(handle, in);
	if (!prov->libctx) {
		free(prov);
		return 0;
	}
	fs_prov_open(prov, conf_value(handle, get_params, "device"), conf_value(handle, get_params, "check"));
	*out = fs_provider_functions;
	*provctx = prov;
	return 1;
}
