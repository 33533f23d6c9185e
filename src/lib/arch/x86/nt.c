/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Non-temporal copies: temporal stores up to the first cache-line boundary
 * of the destination, NT stores for whole lines, temporal stores for the
 * tail.  With a flush kind the temporally written head and tail lines are
 * written back, so that the whole range is persistent after the drain.
 */
#include <immintrin.h>
#include <stdint.h>

#include "../../arch.h"
#include "x86.h"

/* Below this the line-alignment work costs more than NT stores save. */
#define NT_SMALL 256

/* Copies whole lines to a line-aligned dst; returns the bytes copied. */
typedef size_t (*nt_lines_fn)(uint8_t *d, const uint8_t *s, size_t len);

static size_t lines_movnti(uint8_t *d, const uint8_t *s, size_t len)
{
	size_t n = len & ~(size_t)(MEMMIG_X86_LINE - 1);

	for (size_t i = 0; i < n; i += MEMMIG_X86_LINE) {
		long long q[8];

		__builtin_memcpy(q, s + i, sizeof(q));
		for (int k = 0; k < 8; k++)
			_mm_stream_si64((long long *)(d + i) + k, q[k]);
	}
	return n;
}

__attribute__((target("avx2"))) static size_t
lines_avx2(uint8_t *d, const uint8_t *s, size_t len)
{
	size_t n = len & ~(size_t)(MEMMIG_X86_LINE - 1), i = 0;

	for (; i + 128 <= n; i += 128) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
		__m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 64));
		__m256i e = _mm256_loadu_si256((const __m256i *)(s + i + 96));

		_mm256_stream_si256((__m256i *)(d + i), a);
		_mm256_stream_si256((__m256i *)(d + i + 32), b);
		_mm256_stream_si256((__m256i *)(d + i + 64), c);
		_mm256_stream_si256((__m256i *)(d + i + 96), e);
	}
	if (i < n) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));

		_mm256_stream_si256((__m256i *)(d + i), a);
		_mm256_stream_si256((__m256i *)(d + i + 32), b);
	}
	return n;
}

__attribute__((target("avx512f"))) static size_t
lines_avx512(uint8_t *d, const uint8_t *s, size_t len)
{
	size_t n = len & ~(size_t)(MEMMIG_X86_LINE - 1), i = 0;

	for (; i + 256 <= n; i += 256) {
		__m512i a = _mm512_loadu_si512(s + i);
		__m512i b = _mm512_loadu_si512(s + i + 64);
		__m512i c = _mm512_loadu_si512(s + i + 128);
		__m512i e = _mm512_loadu_si512(s + i + 192);

		_mm512_stream_si512((void *)(d + i), a);
		_mm512_stream_si512((void *)(d + i + 64), b);
		_mm512_stream_si512((void *)(d + i + 128), c);
		_mm512_stream_si512((void *)(d + i + 192), e);
	}
	for (; i < n; i += 64)
		_mm512_stream_si512((void *)(d + i), _mm512_loadu_si512(s + i));
	return n;
}

static inline __attribute__((always_inline)) void
nt_copy(void *dst, const void *src, size_t len, unsigned int flags,
	nt_lines_fn lines)
{
	enum memmig_flush_kind flush = memmig_flush_kind_of(flags);
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (len < NT_SMALL) {
		memmig_x86_copy_movq(d, s, len, 0);
		memmig_arch_flush(flush, d, len);
	} else {
		size_t head = -(uintptr_t)d & (MEMMIG_X86_LINE - 1), done;

		memmig_x86_copy_movq(d, s, head, 0);
		memmig_arch_flush(flush, d, head);
		d += head;
		s += head;
		len -= head;
		done = lines(d, s, len);
		memmig_x86_copy_movq(d + done, s + done, len - done, 0);
		memmig_arch_flush(flush, d + done, len - done);
	}
	/* NOFLUSH: the caller flushes, then drains once for everything. */
	if (!(flags & (MEMMIG_COPY_NODRAIN | MEMMIG_COPY_NOFLUSH)))
		memmig_arch_drain();
}

void memmig_x86_nt_movnti(void *dst, const void *src, size_t len,
			  unsigned int flags)
{
	nt_copy(dst, src, len, flags, lines_movnti);
}

void memmig_x86_nt_avx2(void *dst, const void *src, size_t len,
			unsigned int flags)
{
	nt_copy(dst, src, len, flags, lines_avx2);
}

void memmig_x86_nt_avx512(void *dst, const void *src, size_t len,
			  unsigned int flags)
{
	nt_copy(dst, src, len, flags, lines_avx512);
}
