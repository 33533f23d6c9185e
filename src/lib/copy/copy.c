/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The checked copy entry points: validate, dispatch, flush, drain. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/copy/arch/arch.h"
#include MEMMIG_ARCH_INLINE
#include "lib/core/memmig-private.h"
#include "lib/copy/copy-private.h"
#include "lib/copy/policy.h"

static int copy_generic(void *d, const void *s, size_t n, unsigned int f)
{
	memcpy(d, s, n);
	return 0;
}

static memmig_prim_fn prim_fn(int prim)
{
	return prim == MEMMIG_PRIM_GENERIC ? copy_generic : memmig_arch_prims[prim];
}

memmig_prim_fn memmig_copy_prim_fn(int prim)
{
	return prim_fn(prim);
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

/* copy_check() out of the fast path's way: nothing of it is computed
 * before the fast check fails. */
static __attribute__((noinline)) int
copy_check_cold(const void *dst, const void *src, size_t len)
{
	return copy_check(dst, src, len);
}

/* 16 bytes, as one vector register (SSE2 on x86-64). */
typedef struct { unsigned char b[16]; } copy_v16;

/*
 * k 16-byte vectors from each end, n from 16 * k to 32 * k bytes: every
 * load before the first store, as the primitives do, so that a cold
 * source's misses overlap (the compiler cannot move a load above a store
 * that may alias it).
 */
#define COPY_ENDS(d, s, n, k)                                                  \
	do {                                                                   \
		copy_v16 h_[k], t_[k];                                         \
		_Pragma("GCC unroll 8")                                        \
		for (size_t i_ = 0; i_ < (k); i_++) {                          \
			__builtin_memcpy(&h_[i_], (s) + 16 * i_, 16);          \
			__builtin_memcpy(&t_[i_], (s) + (n) - 16 * (i_ + 1), 16); \
		}                                                              \
		_Pragma("GCC unroll 8")                                        \
		for (size_t i_ = 0; i_ < (k); i_++) {                          \
			__builtin_memcpy((d) + 16 * i_, &h_[i_], 16);          \
			__builtin_memcpy((d) + (n) - 16 * (i_ + 1), &t_[i_], 16); \
		}                                                              \
	} while (0)

/*
 * 0..128 bytes with overlapping 16-byte moves from both ends: the SSE2
 * copy's own cases (vec.S) up to 8 vectors, inline where the call costs
 * more than the copy (glibc memcpy at 16 B is 2.5 ns on an AMD family 17h
 * host, and a call through the cached pointer added 2.4).  Up to 64 bytes
 * the wider copies move the same bytes, and 16-byte moves need no
 * vzeroupper after them (2 ns there).
 */
static inline __attribute__((always_inline)) void
copy_inline(unsigned char *d, const unsigned char *s, size_t n)
{
	if (__builtin_expect(n >= 16, 1)) {
		if (n <= 32)
			COPY_ENDS(d, s, n, 1);
		else if (n <= 64)
			COPY_ENDS(d, s, n, 2);
		else
			COPY_ENDS(d, s, n, 4);
	} else if (n >= 8) {
		uint64_t a, b;

		__builtin_memcpy(&a, s, 8);
		__builtin_memcpy(&b, s + n - 8, 8);
		__builtin_memcpy(d, &a, 8);
		__builtin_memcpy(d + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;

		__builtin_memcpy(&a, s, 4);
		__builtin_memcpy(&b, s + n - 4, 4);
		__builtin_memcpy(d, &a, 4);
		__builtin_memcpy(d + n - 4, &b, 4);
	} else if (n) {
		unsigned char a = s[0], m = s[n / 2], z = s[n - 1];

		d[0] = a;
		d[n / 2] = m;
		d[n - 1] = z;
	}
}

/* Up to ctx->small_inline bytes that the widest moves do not take
 * (copy_unflagged()): from inline_wide_min the wide moves of the
 * primitive chosen there (arch inline.h), else copy_inline()'s. */
static inline __attribute__((always_inline)) void
copy_inline_any(const struct memmig_ctx *ctx, unsigned char *d,
		const unsigned char *s, size_t len)
{
	if (len >= ctx->inline_wide_min)
		memmig_arch_inline_copy(d, s, len);
	else
		copy_inline(d, s, len);
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
	if (memmig_policy_is_nt(prim))
		flags |= ctx->nt_bits;
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

/* An unflagged copy from the first threshold: the primitive cached for
 * its length range, tail-called (it returns 0).  Out of line, and called
 * last, so that the inline copies keep no frame and no moved arguments. */
__attribute__((noinline)) int
memmig_copy_run_by_len(struct memmig_ctx *ctx, void *dst, const void *src, size_t len)
{
	const struct memmig_len_prim *r = ctx->by_len;

	while (__builtin_expect(len >= r->below, 0))
		r++;
	return r->fn(dst, src, len, 0);
}

/*
 * An unflagged copy whose checks passed, of a length the arch's widest
 * moves do not take (the arch entry did those): the other inline copies,
 * else the primitive cached for the length.
 */
static inline __attribute__((always_inline)) int
copy_narrow(struct memmig_ctx *ctx, void *dst, const void *src, size_t len)
{
	if (len <= ctx->small_inline) {
		copy_inline_any(ctx, dst, src, len);
		return 0;
	}
	return memmig_copy_run_by_len(ctx, dst, src, len);
}

int memmig_copy_run_inline(struct memmig_ctx *ctx, void *dst, const void *src, size_t len)
{
	copy_inline_any(ctx, dst, src, len);
	return 0;
}

/* memmig_copy_run() beyond its small unflagged copies, and those whose
 * one-branch check failed (flags 0). */
int memmig_copy_run_policy(struct memmig_ctx *ctx, void *dst, const void *src, size_t len,
			   unsigned int flags)
{
	int prim, rc;

	if (!ctx)
		return -EINVAL;
	/*
	 * A plain pmem copy from pmem_nt_min: the NT primitive, found without
	 * the policy, which flushes and drains what it wrote itself.  A cold
	 * pmem copy pays for every instruction before its first load (its
	 * misses cannot start earlier): libpmem's pmem_memcpy is a few.
	 */
	if (flags == MEMMIG_COPY_PMEM && ctx->pmem_fn && len >= ctx->tuning.pmem_nt_min &&
	    len < MEMMIG_SMALL_MAX) {	/* memmig_copy_fast_ok()'s bound */
		if (__builtin_expect(!memmig_copy_fast_ok(dst, src, len), 0)) {
			rc = copy_check_cold(dst, src, len);
			if (rc || !len)
				return len ? rc : 0;
		}
		return ctx->pmem_fn(dst, src, len, MEMMIG_COPY_PMEM |
				    ctx->nt_bits | (unsigned int)ctx->flush_kind <<
				    MEMMIG_COPY__FLUSH_SHIFT);
	}
	/* Unflagged, and not memmig_copy_fast_ok(): the primitive for this
	 * length, found without the policy (any length: no inline moves). */
	if (!flags) {
		if (!len)
			return 0;	/* as copy_checked(): no primitive, no drain */
		rc = copy_check(dst, src, len);
		return rc ? rc : memmig_copy_run_by_len(ctx, dst, src, len);
	}
	prim = memmig_policy(&ctx->cpu, &ctx->tuning, len, flags);
	if (prim < 0)
		return prim;
	return copy_checked(ctx, prim, dst, src, len, flags);
}

#ifdef MEMMIG_ARCH_COPY_ENTRY
/* What the arch's memmig_copy_run() reads, where it reads it. */
_Static_assert(offsetof(struct memmig_ctx, cold_below) == MEMMIG_ARCH_CTX_COLD_BELOW,
	       "entry: cold_below");
_Static_assert(offsetof(struct memmig_ctx, small_inline) == MEMMIG_ARCH_CTX_SMALL_INLINE,
	       "entry: small_inline");
_Static_assert(offsetof(struct memmig_ctx, widest_min) == MEMMIG_ARCH_CTX_WIDEST_MIN,
	       "entry: widest_min");
_Static_assert(offsetof(struct memmig_ctx, widest_span) == MEMMIG_ARCH_CTX_WIDEST_SPAN,
	       "entry: widest_span");
_Static_assert(offsetof(struct memmig_ctx, widest_loop_below) ==
	       MEMMIG_ARCH_CTX_WIDEST_LOOP_BELOW, "entry: widest_loop_below");
_Static_assert(MEMMIG_ARCH_COPY_COLD == MEMMIG_COPY_COLD, "entry: MEMMIG_COPY_COLD");
_Static_assert(MEMMIG_ARCH_FAST_LO == MEMMIG_FAST_LO && MEMMIG_ARCH_FAST_SHIFT == MEMMIG_FAST_SHIFT,
	       "entry: memmig_copy_fast_ok()");
#else
/*
 * Small unflagged copies, the common case, take a few nanoseconds, with no
 * frame of this function's own: everything but the inline copies is out
 * of line and tail-called (a glibc memcpy is one jump).  Below the cold
 * threshold a cold copy is what an unflagged one is.  The one-branch check
 * (memmig_copy_fast_ok()) also sends lengths from MEMMIG_SMALL_MAX away.
 */
int memmig_copy_run(struct memmig_ctx *ctx, void *dst, const void *src,
		    size_t len, unsigned int flags)
{
	if (__builtin_expect(!ctx || (flags && (flags != MEMMIG_COPY_COLD ||
						len >= ctx->cold_below)), 0))
		return memmig_copy_run_policy(ctx, dst, src, len, flags);
	if (__builtin_expect(!memmig_copy_fast_ok(dst, src, len), 0))
		return memmig_copy_run_policy(ctx, dst, src, len, 0);
	return copy_narrow(ctx, dst, src, len);
}
#endif

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

memmig_prim_fn memmig_copy_direct(struct memmig_ctx *ctx, int prim,
				  unsigned int *flags)
{
	if ((*flags & MEMMIG_COPY_PMEM) && !(*flags & MEMMIG_COPY_NOFLUSH)) {
		if (!memmig_policy_is_nt(prim))
			return NULL;	/* the flushes come after the call */
		*flags |= (unsigned int)ctx->flush_kind << MEMMIG_COPY__FLUSH_SHIFT;
	}
	if (memmig_policy_is_nt(prim))
		*flags |= ctx->nt_bits;
	return prim_fn(prim);
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

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

/* ctx->by_len: the unflagged choice between consecutive thresholds, with
 * neighbours that choose alike merged. */
static void apply_by_len(struct memmig_ctx *ctx, size_t *at, size_t n)
{
	int prim = memmig_policy(&ctx->cpu, &ctx->tuning, 0, 0);
	size_t k = 0;

	qsort(at, n, sizeof(*at), cmp_size);
	for (size_t i = 0; i < n; i++) {
		int p = memmig_policy(&ctx->cpu, &ctx->tuning, at[i], 0);

		if (p == prim)
			continue;
		ctx->by_len[k++] = (struct memmig_len_prim){ at[i], memmig_copy_prim_fn(prim) };
		prim = p;
	}
	ctx->by_len[k] = (struct memmig_len_prim){ MEMMIG_SIZE_NEVER,
						    memmig_copy_prim_fn(prim) };
}

/* The most bytes of a copy by prim that copy_inline_any() does with prim's
 * own moves: 128 for SSE2 (copy_inline()'s), for a wider vector what the
 * arch code has inline, else 64 (copy_inline()'s two-vector case); 0 for
 * a primitive that is no vector copy. */
static size_t inline_cap(int prim)
{
	if (prim == MEMMIG_PRIM_VEC_SSE2)
		return 128;
	if (memmig_arch_inline_max(prim))
		return memmig_arch_inline_max(prim);
	return memmig_policy_is_vec(prim) ? 64 : 0;
}

/*
 * Where the range of by_len past small_inline ends, when its primitive is
 * the arch's widest and small_inline reaches its loop's lengths: copies
 * there skip the table and the primitive's own length tests (x86's
 * entry.S).  Hot 2 KiB went at 0.93x glibc's speed through them, on an
 * Intel Emerald Rapids host.  0 for none.
 */
static size_t widest_loop_below(const struct memmig_ctx *ctx)
{
	const struct memmig_len_prim *r = ctx->by_len;
	size_t min = memmig_arch_widest_loop_min();

	if (!min || ctx->small_inline + 1 < min || !ctx->widest_span)
		return 0;
	while (ctx->small_inline + 1 >= r->below)
		r++;
	if (r->fn != memmig_copy_prim_fn(MEMMIG_ARCH_INLINE_WIDEST))
		return 0;
	return r->below < ctx->small_below ? r->below : ctx->small_below;
}

/*
 * How far the inline path goes: through the ranges of by_len whose
 * primitives are vector copies, up to 64 bytes whichever they are, and
 * above 64 with the primitive of the range that holds 65 bytes, up to its
 * inline width and the end of its range.  A calibration that chose SSE2
 * from 64 bytes over AVX2 below had stopped the inline path at 63: a 64 B
 * copy went out of line, 5.9 ns against glibc's 2.8 on an AMD Zen 3 host.
 */
static void apply_inline(struct memmig_ctx *ctx)
{
	size_t start = 0;
	int wide = MEMMIG_PRIM_GENERIC;	/* the primitive whose moves go above 64 */

	/* The first range (start 0, end >= 0) always sets both. */
	for (const struct memmig_len_prim *r = ctx->by_len;; start = r++->below) {
		int prim = memmig_policy(&ctx->cpu, &ctx->tuning, start, 0);
		size_t cap = inline_cap(prim);
		size_t end = r->below - 1 < cap ? r->below - 1 : cap;

		if (end < start)	/* no vector copy, or not inline here */
			break;
		ctx->small_inline = end;
		wide = prim;
		/* Above 64 bytes, one primitive's moves; or its range goes on. */
		if (end > 64 || end < r->below - 1)
			break;
	}
	/*
	 * The arch code's wide moves from 65 bytes, and from as far below as
	 * the lengths choose the same primitive, down to 33: two 32-byte
	 * moves where copy_inline() makes four of 16 (hot 64 B on an AMD Zen 3
	 * host: 3.7 ns against 4.0, glibc's 2.8).
	 */
	ctx->widest_span = 0;
	ctx->widest_loop_below = 0;
	ctx->inline_wide_min = SIZE_MAX;
	if (!memmig_arch_inline_max(wide))
		return;
	ctx->inline_wide_min = 65;
	while (ctx->inline_wide_min > 33 &&
	       memmig_policy(&ctx->cpu, &ctx->tuning, ctx->inline_wide_min - 1, 0) == wide)
		ctx->inline_wide_min--;
	/*
	 * The widest moves from as low as they go, whatever the lengths below
	 * 64 chose: the calibration times the primitives there (a call each),
	 * at 16 and 64 bytes only, and two 32-byte moves into ymm16-31 are
	 * fewer than copy_inline()'s four of 16, with no vzeroupper.  Hot
	 * 40-56 B on an Intel Emerald Rapids host, whose calibration chose
	 * SSE2 below 64: 0.72-0.74x glibc's speed with four, 0.98-1.00x with
	 * two.
	 */
	ctx->widest_min = memmig_arch_inline_widest_min(&ctx->cpu);
	if (wide == MEMMIG_ARCH_INLINE_WIDEST && ctx->small_inline >= ctx->widest_min)
		ctx->widest_span = ctx->small_inline - ctx->widest_min + 1;
	ctx->widest_loop_below = widest_loop_below(ctx);
}

/*
 * What memmig_copy_run() caches from the thresholds.  The unflagged choice
 * can change only at a threshold: by_len has the choice between each two,
 * and the first range is the small-copy path's.
 */
void memmig_ctx_apply_tuning(struct memmig_ctx *ctx,
			     const struct memmig_tuning *t)
{
	size_t at[MEMMIG_TUNING_THRESHOLDS] = { t->vec_max, t->vec_wide_min,
						t->movsb_min, t->movsq_min, t->nt_min };
	int pmem_prim = memmig_policy(&ctx->cpu, t, MEMMIG_SMALL_MAX, MEMMIG_COPY_PMEM);

	ctx->tuning = *t;
	apply_by_len(ctx, at, MEMMIG_TUNING_THRESHOLDS);
	/* memmig_copy_fast_ok() counts on copies being below this. */
	ctx->small_below = MEMMIG_SMALL_MAX;
	ctx->cold_below = t->nt_cold_min < ctx->small_below ? t->nt_cold_min :
							       ctx->small_below;
	apply_inline(ctx);
	ctx->pmem_fn = memmig_policy_is_nt(pmem_prim) ? prim_fn(pmem_prim) : NULL;
	ctx->nt_bits = memmig_prefetch_bits(t->nt_prefetch) |
		       (t->nt_block ? MEMMIG_COPY__BLOCK : 0);
}
