/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_VDSO_H
#define FORKSAFE_VDSO_H
#include <stddef.h>
#include <sys/types.h>

/* Find __vdso_getrandom and its parameters: 0, or -errno and why in ERR. */
int vdso_getrandom_init(char *err, size_t errlen);

/* A state for one thread (after a successful init), or NULL. */
void *vdso_getrandom_state(void);

/* getrandom() through the vDSO with STATE: bytes, or -1 and errno. */
ssize_t vdso_getrandom(void *state, void *buf, size_t len, unsigned int flags);

#endif
