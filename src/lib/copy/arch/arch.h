/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The architecture interface.  Makefile.am builds exactly one of arch/x86/
 * and arch/generic/; nothing else in libmemmig depends on the architecture.
 */
#ifndef MEMMIG_ARCH_H
#define MEMMIG_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memmig.h"

/*
 * Cache-line write-back method, passed from copy.c to the primitives in the
 * bits above the public flags so that a primitive needs no context.
 */
enum memmig_flush_kind {
	MEMMIG_FLUSH_NONE = 0,
	MEMMIG_FLUSH_CLFLUSH = 1,
	MEMMIG_FLUSH_CLFLUSHOPT = 2,
	MEMMIG_FLUSH_CLWB = 3,
};
#define MEMMIG_COPY__FLUSH_SHIFT 24
#define MEMMIG_COPY__FLUSH_MASK (3u << MEMMIG_COPY__FLUSH_SHIFT)

static inline enum memmig_flush_kind memmig_flush_kind_of(unsigned int flags)
{
	return (flags & MEMMIG_COPY__FLUSH_MASK) >> MEMMIG_COPY__FLUSH_SHIFT;
}

/*
 * How far ahead of its loads an NT primitive prefetches the source (inside
 * it), in the same spare bits: k, 1..7, is 256 << k bytes, 0 none.  The
 * tuning's nt_prefetch, measured by calibration.
 */
#define MEMMIG_COPY__PF_SHIFT 26
#define MEMMIG_COPY__PF_MASK (7u << MEMMIG_COPY__PF_SHIFT)

static inline size_t memmig_prefetch_of(unsigned int flags)
{
	unsigned int k = (flags & MEMMIG_COPY__PF_MASK) >> MEMMIG_COPY__PF_SHIFT;

	return k ? (size_t)256 << k : 0;
}

/*
 * Loads-first blocks in the NT loops, from 8 KiB: the tuning's nt_block,
 * measured by calibration.  A block is as many lines as the primitive's
 * registers hold (nt.c).
 */
#define MEMMIG_COPY__BLOCK (1u << 29)

/* The bits for a distance in bytes: the nearest power of two of 512 B to
 * 32 KiB below it, 0 below 512 B. */
static inline unsigned int memmig_prefetch_bits(size_t bytes)
{
	unsigned int k = 0;

	while (k < 7 && ((size_t)256 << (k + 1)) <= bytes)
		k++;
	return k << MEMMIG_COPY__PF_SHIFT;
}

/*
 * A copy primitive.  flags are the public copy flags plus the flush kind
 * (MEMMIG_COPY__FLUSH_MASK); only the non-temporal primitives look at them:
 * they write unaligned heads and tails with temporal stores, flush those
 * lines when a flush kind is given, and drain unless MEMMIG_COPY_NODRAIN or
 * MEMMIG_COPY_NOFLUSH.  It returns 0, so that a dispatcher that returns 0
 * after it can tail-call it instead (0.5 ns of a hot 520 B copy through
 * the length table on an AMD Zen 3 host).
 */
typedef int (*memmig_prim_fn)(void *dst, const void *src, size_t len,
			      unsigned int flags);

/* Indexed by enum memmig_prim; NULL where this architecture lacks one.
 * MEMMIG_PRIM_GENERIC is not here: copy.c has it on every architecture. */
extern const memmig_prim_fn memmig_arch_prims[MEMMIG_PRIM_COUNT];

void memmig_arch_cpu_detect(struct memmig_cpu_info *out);
void memmig_arch_drain(void);
void memmig_arch_flush(enum memmig_flush_kind kind, const void *addr,
		       size_t len);

/*
 * Writes n descriptors, each tmpl with its offset and head fields replaced:
 * the k-th gets offset + k * 4 KiB and head + k * head_step.  NT or plain
 * stores as the filler was asked, no drain; d is 64-byte aligned.
 */
typedef void (*memmig_desc_fill_fn)(struct memmig_desc *d,
				    const struct memmig_desc *tmpl, size_t n,
				    uint64_t offset, uint64_t head,
				    uint64_t head_step);

/* The filler as wide as the NT primitive the tuning picked (enum
 * memmig_prim), with the stores *store asks for (enum memmig_desc_store);
 * *store becomes the kind it got (plain stores where there are no NT
 * ones). */
memmig_desc_fill_fn memmig_arch_desc_filler(int nt_prim, int *store);

#endif
