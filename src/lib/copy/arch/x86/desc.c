/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Descriptor fill with NT stores: the template stays in registers, only
 * its first 16 bytes (offset, head) change from one descriptor to the
 * next, by one vector add.  Nothing is read from the table, so no line is
 * fetched for ownership (the slow path's regular stores fetch each one).
 */
#include <immintrin.h>

#include "lib/copy/arch/arch.h"

__attribute__((target("avx512f"))) static void
fill_avx512(struct memmig_desc *d, const struct memmig_desc *tmpl, size_t n,
	    uint64_t offset, uint64_t head, uint64_t head_step)
{
	__m512i v = _mm512_load_si512(tmpl);
	__m512i step = _mm512_set_epi64(0, 0, 0, 0, 0, 0, (long long)head_step,
					 MEMMIG_DESC_PAGE_SIZE);

	v = _mm512_mask_mov_epi64(v, 0x3, _mm512_set_epi64(0, 0, 0, 0, 0, 0,
		(long long)head, (long long)offset));
	for (size_t k = 0; k < n; k++) {
		_mm512_stream_si512((void *)&d[k], v);
		v = _mm512_add_epi64(v, step);
	}
}

__attribute__((target("avx2"))) static void
fill_avx2(struct memmig_desc *d, const struct memmig_desc *tmpl, size_t n,
	  uint64_t offset, uint64_t head, uint64_t head_step)
{
	const __m256i *t = (const __m256i *)tmpl;
	__m256i lo = _mm256_load_si256(t), hi = _mm256_load_si256(t + 1);
	__m256i step = _mm256_set_epi64x(0, 0, (long long)head_step,
					 MEMMIG_DESC_PAGE_SIZE);

	lo = _mm256_blend_epi32(lo, _mm256_set_epi64x(0, 0, (long long)head,
						      (long long)offset), 0x0f);
	for (size_t k = 0; k < n; k++) {
		__m256i *p = (__m256i *)&d[k];

		_mm256_stream_si256(p, lo);
		_mm256_stream_si256(p + 1, hi);
		lo = _mm256_add_epi64(lo, step);
	}
}

/* SSE2 is the x86-64 baseline. */
static void fill_sse2(struct memmig_desc *d, const struct memmig_desc *tmpl,
		      size_t n, uint64_t offset, uint64_t head,
		      uint64_t head_step)
{
	const __m128i *t = (const __m128i *)tmpl;
	__m128i a = _mm_set_epi64x((long long)head, (long long)offset);
	__m128i b = _mm_load_si128(t + 1), c = _mm_load_si128(t + 2);
	__m128i e = _mm_load_si128(t + 3);
	__m128i step = _mm_set_epi64x((long long)head_step, MEMMIG_DESC_PAGE_SIZE);

	for (size_t k = 0; k < n; k++) {
		__m128i *p = (__m128i *)&d[k];

		_mm_stream_si128(p, a);
		_mm_stream_si128(p + 1, b);
		_mm_stream_si128(p + 2, c);
		_mm_stream_si128(p + 3, e);
		a = _mm_add_epi64(a, step);
	}
}

memmig_desc_fill_fn memmig_arch_desc_filler(int nt_prim)
{
	switch (nt_prim) {
	case MEMMIG_PRIM_NT_AVX512:
		return fill_avx512;
	case MEMMIG_PRIM_NT_AVX2:
		return fill_avx2;
	default:
		return fill_sse2;
	}
}
