/* SPDX-License-Identifier: GPL-2.0 */
#ifndef FORKSAFE_TOOL_H
#define FORKSAFE_TOOL_H
#include <stddef.h>

/* The host tools' one way to give up: "TOOL_NAME: what\n" and exit 2. */
extern const char *tool_name;

void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...);

/* calloc(), or fail: the host tools have nothing to do without memory. */
void *xcalloc(size_t n, size_t size);

#endif
