/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Non-temporal copies: temporal stores up to the first cache-line boundary
 * of the destination, NT stores for whole lines, temporal stores for the
 * tail.  With a flush kind the temporally written head and tail lines are
 * written back, so that the whole range is persistent after the drain.
 */
#include <immintrin.h>
#include <stdint.h>

#include "lib/copy/arch/arch.h"
#include "lib/copy/arch/x86/x86.h"

/* Below a line there is no whole line to stream.  Where the line-alignment
 * work costs more than NT stores save is host-dependent (on an AMD family
 * 17h host below 256 B, on an AMD family 1Ah host NT stores won a cold
 * 64-byte pmem copy, as libpmem's NT memcpy streams it): the policy
 * decides, from the calibrated pmem_nt_min and nt_cold_min. */
#define NT_SMALL 64

/* Copies whole lines to a line-aligned dst as flags say (how far ahead
 * to prefetch, whether by blocks); returns the bytes copied. */
typedef size_t (*nt_lines_fn)(uint8_t *d, const uint8_t *s, size_t len,
			      unsigned int flags);

static size_t lines_movnti(uint8_t *d, const uint8_t *s, size_t len,
			   unsigned int flags)
{
	size_t n = len & ~(size_t)(MEMMIG_X86_LINE - 1);
	size_t pf = memmig_prefetch_of(flags);

	for (size_t i = 0; i < n; i += MEMMIG_X86_LINE) {
		long long q[8];

		if (pf && i + pf < n)
			__builtin_prefetch(s + i + pf);

		__builtin_memcpy(q, s + i, sizeof(q));
		for (int k = 0; k < 8; k++)
			_mm_stream_si64((long long *)(d + i) + k, q[k]);
	}
	return n;
}

/*
 * Each line is loaded and streamed before the next one is loaded, four lines
 * an iteration.  Stores retire in order: a store that follows every load of
 * a block waits for the slowest of them, while a store right after its own
 * line's load goes out as soon as that line arrives.  With a cold source the
 * later loads still issue early (out of order), so the misses overlap
 * either way; measured here, loads-first blocks of 8 lines were up to 20%
 * slower than this on 256 B to 1 KiB cold copies.
 */
#define NT_LINE(T, W, LOAD, STREAM, off)                                      \
	do {                                                                  \
		_Pragma("GCC unroll 2")                                       \
		for (int j_ = 0; j_ < MEMMIG_X86_LINE / (W); j_++) {          \
			T v_ = LOAD((const void *)(s + (off) + (W) * j_));    \
			STREAM((void *)(d + (off) + (W) * j_), v_);           \
		}                                                             \
	} while (0)

/*
 * With pf, the four lines pf bytes ahead are prefetched first, when they
 * are inside the source: measured on an AMD family 1Ah host (cold pmem
 * copies), 4 KiB ahead took an 8 KiB copy from 1023 to 875 ns and 16 KiB
 * from 1736 to 1346, where libpmem's 32-lines-loaded-then-stored loop took
 * 1242 and 1546; the hardware prefetchers of other hosts may do it for
 * free, so calibration decides (nt_prefetch).
 */
#define NT_PREFETCH4(off)                                                     \
	do {                                                                  \
		if (pf && (off) + pf + 4 * MEMMIG_X86_LINE <= n) {           \
			__builtin_prefetch(s + (off) + pf);                   \
			__builtin_prefetch(s + (off) + pf + MEMMIG_X86_LINE); \
			__builtin_prefetch(s + (off) + pf + 2 * MEMMIG_X86_LINE); \
			__builtin_prefetch(s + (off) + pf + 3 * MEMMIG_X86_LINE); \
		}                                                             \
	} while (0)

/*
 * With MEMMIG_COPY__BLOCK, a copy of 8 KiB or more goes by blocks of L
 * lines first, every load of a block before its first store (libpmem's NT
 * memcpy loads 32 lines so), without prefetching.  Measured on an Intel
 * Emerald Rapids host (cold pmem copies, memmig-cli bench copy --pmem):
 * AVX-512 blocks of 16 lines took memmig from 0.95-0.98x libpmem at 64 KiB
 * to 1 GiB to 1.02-1.04x, and 8 KiB from 1.01-1.02x to 1.04-1.09x; blocks
 * of 8 or 32 lines gained less, and at 1-4 KiB blocks were 0-4% behind.
 * The AMD family 1Ah host's copies were faster line by line with the
 * prefetch (above): calibration decides (nt_block).
 */
#define NT_BLOCK_MIN 8192

/* The stores in address order: a line's write-combining buffer goes out
 * whole only when its stores follow each other (GCC reordered them here:
 * AVX2 blocks took 0.7-0.8x the line-by-line loop). */
#define NT_IN_ORDER() __asm__ volatile("" ::: "memory")

#define NT_BLOCKS(T, W, LOAD, STREAM, L)                                      \
	do {                                                                  \
		if (!(flags & MEMMIG_COPY__BLOCK) || n < NT_BLOCK_MIN)        \
			break;                                                \
		for (; i + (L) * MEMMIG_X86_LINE <= n; i += (L) * MEMMIG_X86_LINE) { \
			T v_[(L) * MEMMIG_X86_LINE / (W)];                    \
			_Pragma("GCC unroll 32")                              \
			for (int k_ = 0; k_ < (L) * MEMMIG_X86_LINE / (W); k_++) \
				v_[k_] = LOAD((const void *)(s + i + (W) * k_)); \
			_Pragma("GCC unroll 32")                              \
			for (int k_ = 0; k_ < (L) * MEMMIG_X86_LINE / (W); k_++) { \
				STREAM((void *)(d + i + (W) * k_), v_[k_]);   \
				NT_IN_ORDER();                                \
			}                                                     \
		}                                                             \
	} while (0)

#define NT_LINES(T, W, LOAD, STREAM)                                          \
	do {                                                                  \
		size_t pf = memmig_prefetch_of(flags);                        \
									      \
		for (; i + 4 * MEMMIG_X86_LINE <= n; i += 4 * MEMMIG_X86_LINE) { \
			NT_PREFETCH4(i);                                      \
			NT_LINE(T, W, LOAD, STREAM, i);                       \
			NT_LINE(T, W, LOAD, STREAM, i + MEMMIG_X86_LINE);     \
			NT_LINE(T, W, LOAD, STREAM, i + 2 * MEMMIG_X86_LINE); \
			NT_LINE(T, W, LOAD, STREAM, i + 3 * MEMMIG_X86_LINE); \
		}                                                             \
		for (; i < n; i += MEMMIG_X86_LINE)                           \
			NT_LINE(T, W, LOAD, STREAM, i);                       \
	} while (0)

__attribute__((target("avx2"))) static inline __m256i load256(const void *p)
{
	return _mm256_loadu_si256(p);
}

__attribute__((target("avx2"))) static inline void stream256(void *p, __m256i v)
{
	_mm256_stream_si256(p, v);
}

/* Blocks of 8 lines: the 16 YMM registers. */
__attribute__((target("avx2"))) static size_t
lines_avx2(uint8_t *d, const uint8_t *s, size_t len, unsigned int flags)
{
	size_t n = len & ~(size_t)(MEMMIG_X86_LINE - 1), i = 0;

	NT_BLOCKS(__m256i, 32, load256, stream256, 8);
	NT_LINES(__m256i, 32, load256, stream256);
	return n;
}

__attribute__((target("avx512f"))) static inline __m512i load512(const void *p)
{
	return _mm512_loadu_si512(p);
}

__attribute__((target("avx512f"))) static inline void stream512(void *p, __m512i v)
{
	_mm512_stream_si512(p, v);
}

/* Blocks of 16 lines, half the ZMM registers (measured above). */
__attribute__((target("avx512f"))) static size_t
lines_avx512(uint8_t *d, const uint8_t *s, size_t len, unsigned int flags)
{
	size_t n = len & ~(size_t)(MEMMIG_X86_LINE - 1), i = 0;

	NT_BLOCKS(__m512i, 64, load512, stream512, 16);
	NT_LINES(__m512i, 64, load512, stream512);
	return n;
}

/* A part copied with temporal stores, written back when pmem asks. */
static inline __attribute__((always_inline)) void
temporal_part(uint8_t *d, const uint8_t *s, size_t n,
	      enum memmig_flush_kind flush)
{
	if (!n)
		return;
	memmig_x86_copy_movq(d, s, n, 0);
	if (flush != MEMMIG_FLUSH_NONE)
		memmig_arch_flush(flush, d, n);
}

static inline __attribute__((always_inline)) void
nt_copy(void *dst, const void *src, size_t len, unsigned int flags,
	nt_lines_fn lines)
{
	enum memmig_flush_kind flush = memmig_flush_kind_of(flags);
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (len < NT_SMALL) {
		temporal_part(d, s, len, flush);
	} else {
		size_t head = -(uintptr_t)d & (MEMMIG_X86_LINE - 1), done;

		temporal_part(d, s, head, flush);
		d += head;
		s += head;
		len -= head;
		done = lines(d, s, len, flags);
		temporal_part(d + done, s + done, len - done, flush);
	}
	/* NOFLUSH: the caller flushes, then drains once for everything. */
	if (!(flags & (MEMMIG_COPY_NODRAIN | MEMMIG_COPY_NOFLUSH)))
		memmig_arch_drain();
}

int memmig_x86_nt_movnti(void *dst, const void *src, size_t len,
			 unsigned int flags)
{
	nt_copy(dst, src, len, flags, lines_movnti);
	return 0;
}

int memmig_x86_nt_avx2(void *dst, const void *src, size_t len,
		       unsigned int flags)
{
	nt_copy(dst, src, len, flags, lines_avx2);
	return 0;
}

int memmig_x86_nt_avx512(void *dst, const void *src, size_t len,
			 unsigned int flags)
{
	nt_copy(dst, src, len, flags, lines_avx512);
	return 0;
}
