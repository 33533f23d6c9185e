/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Descriptor fill: the template stays in registers, only its first 16
 * bytes (offset, head) change from one descriptor to the next, by one
 * vector add.  With NT stores nothing is read from the table, so no line
 * is fetched for ownership; with plain stores each line is written whole
 * by one (AVX-512) or a few back-to-back vector stores, which some CPUs
 * (AMD Zen 5) retire faster than NT stores all the same.  Calibration
 * says which (memmig_tuning.desc_store).
 */
#include <immintrin.h>
#include <stdbool.h>

#include "lib/copy/arch/arch.h"

/* One body per width, the store kind a constant of each caller. */
#define FILL_INLINE static inline __attribute__((always_inline))

__attribute__((target("avx512f"))) FILL_INLINE void
fill_avx512(struct memmig_desc *d, const struct memmig_desc *tmpl, size_t n,
	    uint64_t offset, uint64_t head, uint64_t head_step, bool nt)
{
	__m512i v = _mm512_load_si512(tmpl);
	__m512i step = _mm512_set_epi64(0, 0, 0, 0, 0, 0, (long long)head_step,
					 MEMMIG_DESC_PAGE_SIZE);

	v = _mm512_mask_mov_epi64(v, 0x3, _mm512_set_epi64(0, 0, 0, 0, 0, 0,
		(long long)head, (long long)offset));
	for (size_t k = 0; k < n; k++) {
		if (nt)
			_mm512_stream_si512((void *)&d[k], v);
		else
			_mm512_store_si512((void *)&d[k], v);
		v = _mm512_add_epi64(v, step);
	}
}

__attribute__((target("avx2"))) FILL_INLINE void
fill_avx2(struct memmig_desc *d, const struct memmig_desc *tmpl, size_t n,
	  uint64_t offset, uint64_t head, uint64_t head_step, bool nt)
{
	const __m256i *t = (const __m256i *)tmpl;
	__m256i lo = _mm256_load_si256(t), hi = _mm256_load_si256(t + 1);
	__m256i step = _mm256_set_epi64x(0, 0, (long long)head_step,
					 MEMMIG_DESC_PAGE_SIZE);

	lo = _mm256_blend_epi32(lo, _mm256_set_epi64x(0, 0, (long long)head,
						      (long long)offset), 0x0f);
	for (size_t k = 0; k < n; k++) {
		__m256i *p = (__m256i *)&d[k];

		if (nt) {
			_mm256_stream_si256(p, lo);
			_mm256_stream_si256(p + 1, hi);
		} else {
			_mm256_store_si256(p, lo);
			_mm256_store_si256(p + 1, hi);
		}
		lo = _mm256_add_epi64(lo, step);
	}
}

/* SSE2 is the x86-64 baseline. */
FILL_INLINE void fill_sse2(struct memmig_desc *d, const struct memmig_desc *tmpl,
			   size_t n, uint64_t offset, uint64_t head,
			   uint64_t head_step, bool nt)
{
	const __m128i *t = (const __m128i *)tmpl;
	__m128i a = _mm_set_epi64x((long long)head, (long long)offset);
	__m128i b = _mm_load_si128(t + 1), c = _mm_load_si128(t + 2);
	__m128i e = _mm_load_si128(t + 3);
	__m128i step = _mm_set_epi64x((long long)head_step, MEMMIG_DESC_PAGE_SIZE);

	for (size_t k = 0; k < n; k++) {
		__m128i *p = (__m128i *)&d[k];

		if (nt) {
			_mm_stream_si128(p, a);
			_mm_stream_si128(p + 1, b);
			_mm_stream_si128(p + 2, c);
			_mm_stream_si128(p + 3, e);
		} else {
			_mm_store_si128(p, a);
			_mm_store_si128(p + 1, b);
			_mm_store_si128(p + 2, c);
			_mm_store_si128(p + 3, e);
		}
		a = _mm_add_epi64(a, step);
	}
}

#define FILLERS(w, target)						\
	target static void w##_nt(struct memmig_desc *d,		\
				  const struct memmig_desc *tmpl,	\
				  size_t n, uint64_t offset,		\
				  uint64_t head, uint64_t head_step)	\
	{								\
		fill_##w(d, tmpl, n, offset, head, head_step, true);	\
	}								\
	target static void w##_temporal(struct memmig_desc *d,		\
					const struct memmig_desc *tmpl,	\
					size_t n, uint64_t offset,	\
					uint64_t head,			\
					uint64_t head_step)		\
	{								\
		fill_##w(d, tmpl, n, offset, head, head_step, false);	\
	}

FILLERS(avx512, __attribute__((target("avx512f"))))
FILLERS(avx2, __attribute__((target("avx2"))))
FILLERS(sse2, )

memmig_desc_fill_fn memmig_arch_desc_filler(int nt_prim, int *store)
{
	bool nt = *store == MEMMIG_DESC_STORE_NT;

	*store = nt ? MEMMIG_DESC_STORE_NT : MEMMIG_DESC_STORE_TEMPORAL;
	switch (nt_prim) {
	case MEMMIG_PRIM_NT_AVX512:
		return nt ? avx512_nt : avx512_temporal;
	case MEMMIG_PRIM_NT_AVX2:
		return nt ? avx2_nt : avx2_temporal;
	default:
		return nt ? sse2_nt : sse2_temporal;
	}
}
