/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal to libmemmig: copy.c's checks and dispatch, for other copiers. */
#ifndef MEMMIG_COPY_PRIVATE_H
#define MEMMIG_COPY_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/memmig-private.h"

/* The context's thresholds at its creation: defaults, the calibration
 * file, then the environment (MEMMIG_CTX_NO_ENV: defaults only). */
int memmig_tuning_init(struct memmig_ctx *ctx, unsigned int flags);
/* Sets ctx->tuning and what is cached from it. */
void memmig_ctx_apply_tuning(struct memmig_ctx *ctx, const struct memmig_tuning *t);

/*
 * copy_check() in one branch for the common case of a copy below a
 * quarter of the address space: both addresses in [4 KiB, 2^62) and the
 * length below 2^62, so that neither is NULL and nothing can wrap, and no
 * overlap: |dst - src| >= len, which with x = dst - src modulo 2^64 is
 * x + len - 1 >= 2 * len - 1 (len 0 fails it).  Few instructions: in a
 * tight loop of 64-byte copies glibc's memcpy takes ~2 ns, and every check
 * before the first move counts.  false: memmig_copy_check() has the exact
 * answer.
 */
#define MEMMIG_FAST_LO ((uintptr_t)4096)
#define MEMMIG_FAST_SHIFT 62

static inline bool memmig_copy_fast_ok(const void *dst, const void *src, size_t len)
{
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;

	if (__builtin_expect(((d - MEMMIG_FAST_LO) | (s - MEMMIG_FAST_LO) | len) >>
			     MEMMIG_FAST_SHIFT, 0))
		return false;
	return d - s + len - 1 >= 2 * len - 1;
}

/* memmig_copy_run()'s C parts, for an arch that writes its entry
 * (MEMMIG_ARCH_COPY_ENTRY).  Unflagged copies whose checks passed, of a
 * length the arch's widest moves do not take: up to ctx->small_inline
 * the inline copies, beyond it the primitive of the length's range.  The
 * rest, unchecked, flags 0 where memmig_copy_fast_ok() failed. */
int memmig_copy_run_inline(struct memmig_ctx *ctx, void *dst, const void *src, size_t len);
int memmig_copy_run_by_len(struct memmig_ctx *ctx, void *dst, const void *src, size_t len);
int memmig_copy_run_policy(struct memmig_ctx *ctx, void *dst, const void *src, size_t len,
			   unsigned int flags);
/* The function of a valid primitive (enum memmig_prim). */
memmig_prim_fn memmig_copy_prim_fn(int prim);
/* 0 if [dst, dst+len) and [src, src+len) are usable for a copy, else
 * -EINVAL (NULL, overlap) or -EOVERFLOW (wraps). */
int memmig_copy_check(const void *dst, const void *src, size_t len);
/* Runs one primitive, flushing what pmem semantics ask for. */
void memmig_copy_dispatch(struct memmig_ctx *ctx, int prim, void *dst,
			  const void *src, size_t len, unsigned int flags);
/* What memmig_copy_dispatch() would call, with *flags made the ones to call
 * it with, when it is one call: NULL where more follows it (a temporal
 * primitive asked for pmem flushes after it). */
memmig_prim_fn memmig_copy_direct(struct memmig_ctx *ctx, int prim,
				  unsigned int *flags);

#endif
