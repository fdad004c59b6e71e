// SPDX-License-Identifier: GPL-2.0
/*
 * getrandom() from the vDSO (Linux 6.11 and later on x86_64), called
 * directly: Debian 12's glibc does not use it yet.  The kernel maps its
 * vDSO into every process and says where in the auxiliary vector
 * (AT_SYSINFO_EHDR); the function is found by name in its dynamic symbol
 * table.  Each thread needs an opaque state of its own, allocated with the
 * protection and flags the vDSO asks for.  The calling convention is the
 * one tools/testing/selftests/vDSO/vdso_test_getrandom.c documents.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include "vdso.h"

/* What the vDSO answers when asked for its parameters (state_len ~0). */
struct vgetrandom_params {
	uint32_t size_of_opaque_state;
	uint32_t mmap_prot;
	uint32_t mmap_flags;
	uint32_t reserved[13];
};

typedef ssize_t (*vgetrandom_fn)(void *buf, size_t len, unsigned int flags, void *state,
				 size_t state_len);

/*
 * Set once, under init_lock, and only after params holds the vDSO's answer:
 * the recorder's workers each call vdso_getrandom_init(), and a worker that
 * saw the function before its parameters would map a state of 0 bytes
 * (EINVAL; seen once in fork_debug's vDSO row, 2 vCPUs on the debug kernel).
 */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static vgetrandom_fn vgetrandom;
static struct vgetrandom_params params;

/* The address of the vDSO's function NAME, or NULL. */
static void *vdso_sym(const char *name)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR), bias = 0;
	const Elf64_Ehdr *eh = (const void *)base;
	const Elf64_Phdr *ph;
	const Elf64_Dyn *dyn = NULL, *d;
	const Elf64_Sym *sym = NULL;
	const Elf32_Word *hash = NULL;
	const char *str = NULL;
	int i, have_load = 0;
	uint32_t k;

	if (!base || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	ph = (const void *)(base + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !have_load++)
			bias = base + ph[i].p_offset - ph[i].p_vaddr;
		else if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const void *)(base + ph[i].p_offset);
	}
	if (!have_load || !dyn)
		return NULL;
	for (d = dyn; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_SYMTAB)
			sym = (const void *)(bias + d->d_un.d_ptr);
		else if (d->d_tag == DT_STRTAB)
			str = (const void *)(bias + d->d_un.d_ptr);
		else if (d->d_tag == DT_HASH)
			hash = (const void *)(bias + d->d_un.d_ptr);
	}
	if (!sym || !str || !hash)
		return NULL;
	/* DT_HASH: nbucket, nchain; nchain is the number of symbols. */
	for (k = 0; k < hash[1]; k++)
		if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && sym[k].st_shndx != SHN_UNDEF &&
		    !strcmp(str + sym[k].st_name, name))
			return (void *)(bias + sym[k].st_value);
	return NULL;
}

int vdso_getrandom_init(char *err, size_t errlen)
{
	vgetrandom_fn fn;
	ssize_t r;
	int rc = 0;

	pthread_mutex_lock(&init_lock);
	if (vgetrandom)
		goto out;
	fn = (vgetrandom_fn)vdso_sym("__vdso_getrandom");
	if (!fn) {
		snprintf(err, errlen, "no __vdso_getrandom in this kernel's vDSO (Linux 6.11 and later)");
		rc = -ENOSYS;
		goto out;
	}
	r = fn(NULL, 0, 0, &params, ~0UL);
	if (r) {
		snprintf(err, errlen, "__vdso_getrandom refused its parameters: %s", strerror((int)-r));
		rc = r < 0 ? (int)r : -EIO;
		goto out;
	}
	vgetrandom = fn;
out:
	pthread_mutex_unlock(&init_lock);
	return rc;
}

void *vdso_getrandom_state(void)
{
	void *p = mmap(NULL, params.size_of_opaque_state, (int)params.mmap_prot, (int)params.mmap_flags,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

ssize_t vdso_getrandom(void *state, void *buf, size_t len, unsigned int flags)
{
	ssize_t r = vgetrandom(buf, len, flags, state, params.size_of_opaque_state);

	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}
