/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* No wide copies inline on the portable build: copy.c's own 16-byte ones. */
#ifndef MEMMIG_ARCH_GENERIC_INLINE_H
#define MEMMIG_ARCH_GENERIC_INLINE_H

#include <stddef.h>

#include "memmig.h"

static inline size_t memmig_arch_inline_max(int prim)
{
	return 0;
}

static inline void memmig_arch_inline_copy(unsigned char *d,
					   const unsigned char *s, size_t n)
{
}

/* No primitive: copy.c never calls the widest moves. */
#define MEMMIG_ARCH_INLINE_WIDEST (-1)

static inline size_t memmig_arch_inline_widest_min(const struct memmig_cpu_info *cpu)
{
	return 65;
}

/* No entry of its own to enter the widest loop from. */
static inline size_t memmig_arch_widest_loop_min(void)
{
	return 0;
}

#endif
