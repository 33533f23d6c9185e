/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Portable build: no primitive of its own; a full fence stands for a drain. */
#include "lib/copy/arch/arch.h"

/* Only MEMMIG_PRIM_GENERIC, which copy.c provides everywhere. */
const memmig_prim_fn memmig_arch_prims[MEMMIG_PRIM_COUNT];

void memmig_arch_drain(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* No portable cache write-back exists; persistence needs arch code. */
void memmig_arch_flush(enum memmig_flush_kind kind, const void *addr,
		       size_t len)
{
}
