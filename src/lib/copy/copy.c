/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The checked copy entry points: validate, dispatch, flush, drain. */
#include <errno.h>
#include <string.h>

#include "lib/copy/arch/arch.h"
#include "lib/core/memmig-private.h"
#include "lib/copy/copy-private.h"
#include "lib/copy/policy.h"

static void copy_generic(void *d, const void *s, size_t n, unsigned int f)
{
	memcpy(d, s, n);
}

static memmig_prim_fn prim_fn(int prim)
{
	return prim == MEMMIG_PRIM_GENERIC ? copy_generic : memmig_arch_prims[prim];
}

/* 0 if [dst, dst+len) and [src, src+len) are usable for a copy. */
static int copy_check(const void *dst, const void *src, size_t len)
{
	uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;

	if (!dst || !src)
		return -EINVAL;
	if (d + len < d || s + len < s)
		return -EOVERFLOW;
	if (d < s + len && s < d + len)
		return -EINVAL;
	return 0;
}

/* A temporal primitive asked for pmem: every line it wrote is flushed.  Out
 * of line, so that the common path keeps nothing live across its call. */
static __attribute__((noinline)) void
copy_temporal_pmem(struct memmig_ctx *ctx, int prim, void *dst,
		   const void *src, size_t len, unsigned int flags)
{
	prim_fn(prim)(dst, src, len, flags);
	memmig_arch_flush(ctx->flush_kind, dst, len);
	if (!(flags & MEMMIG_COPY_NODRAIN))
		memmig_arch_drain();
}

/*
 * Runs one primitive with the flush kind added when pmem semantics apply.
 * NT primitives flush and drain what they wrote themselves, so the call is
 * the last thing done: no register has to be saved around it (measured
 * here, saving and restoring them around a 256 B cold pmem copy cost ~10%).
 * NOFLUSH leaves the flushes and so the drain to the caller.
 */
static inline __attribute__((always_inline)) void
copy_dispatch(struct memmig_ctx *ctx, int prim, void *dst,
			  const void *src, size_t len, unsigned int flags)
{
	if ((flags & MEMMIG_COPY_PMEM) && !(flags & MEMMIG_COPY_NOFLUSH)) {
		if (!memmig_policy_is_nt(prim)) {
			copy_temporal_pmem(ctx, prim, dst, src, len, flags);
			return;
		}
		flags |= (unsigned int)ctx->flush_kind << MEMMIG_COPY__FLUSH_SHIFT;
	}
	prim_fn(prim)(dst, src, len, flags);
}

/* The common tail of the copy calls: nothing to do, bad buffers, or copy. */
static inline __attribute__((always_inline)) int
copy_checked(struct memmig_ctx *ctx, int prim, void *dst, const void *src,
	     size_t len, unsigned int flags)
{
	int rc;

	if (!len)
		return 0;
	rc = copy_check(dst, src, len);
	if (rc < 0)
		return rc;
	copy_dispatch(ctx, prim, dst, src, len, flags);
	return 0;
}

int memmig_copy_query(struct memmig_ctx *ctx, size_t len, unsigned int flags)
{
	if (!ctx)
		return -EINVAL;
	return memmig_policy(&ctx->cpu, &ctx->tuning, len, flags);
}

int memmig_copy_run(struct memmig_ctx *ctx, void *dst, const void *src,
		    size_t len, unsigned int flags)
{
	int prim;

	if (!ctx)
		return -EINVAL;
	if (__builtin_expect(!flags && len < ctx->small_below, 1))
		prim = ctx->small_prim;
	else
		prim = memmig_policy(&ctx->cpu, &ctx->tuning, len, flags);
	if (prim < 0)
		return prim;
	return copy_checked(ctx, prim, dst, src, len, flags);
}

int memmig_copy_with(struct memmig_ctx *ctx, int prim, void *dst,
		     const void *src, size_t len, unsigned int flags)
{
	if (!ctx || (flags & ~MEMMIG_COPY_ALL_FLAGS))
		return -EINVAL;
	if (prim < 0 || prim >= MEMMIG_PRIM_COUNT)
		return -EINVAL;
	if (!(ctx->prims_ok & (1u << prim)))
		return -EOPNOTSUPP;
	return copy_checked(ctx, prim, dst, src, len, flags);
}

int memmig_copy_units(struct memmig_ctx *ctx, void *dst, const void *src,
		      size_t len, unsigned int flags)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	int prim, rc;

	if (!ctx)
		return -EINVAL;
	/* The whole batch is the working set: it decides NT or not. */
	prim = memmig_policy(&ctx->cpu, &ctx->tuning, len, flags);
	if (prim < 0)
		return prim;
	if (!len)
		return 0;
	rc = copy_check(dst, src, len);
	if (rc < 0)
		return rc;
	for (size_t off = 0; off < len; off += MEMMIG_UNIT_SIZE) {
		size_t n = len - off < MEMMIG_UNIT_SIZE ? len - off : MEMMIG_UNIT_SIZE;

		copy_dispatch(ctx, prim, d + off, s + off, n,
			      flags | MEMMIG_COPY_NODRAIN);
	}
	if (!(flags & (MEMMIG_COPY_NODRAIN | MEMMIG_COPY_NOFLUSH)))
		memmig_arch_drain();
	return 0;
}

int memmig_copy_check(const void *dst, const void *src, size_t len)
{
	return copy_check(dst, src, len);
}

void memmig_copy_dispatch(struct memmig_ctx *ctx, int prim, void *dst,
			  const void *src, size_t len, unsigned int flags)
{
	copy_dispatch(ctx, prim, dst, src, len, flags);
}

void memmig_copy_drain(void)
{
	memmig_arch_drain();
}

int memmig_copy_flush(struct memmig_ctx *ctx, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;

	if (!ctx || (!addr && len))
		return -EINVAL;
	if (a + len < a)
		return -EOVERFLOW;
	memmig_arch_flush(ctx->flush_kind, addr, len);
	return 0;
}
