/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wide vector copies of 33..512 bytes inline in memmig_copy_run(), AVX-512
 * ones to 1 KiB: one, two, four, eight or sixteen overlapping vectors from
 * each end, every load before the first store (as vec.S does, so that a
 * cold source's misses overlap).  A call through the cached primitive
 * pointer cost more than these copies (hot 256 B: 4.5 ns against glibc's
 * 2.3; hot 1 KiB on an AMD Zen 5 host 0.92x glibc's speed, inline 1.11x).
 * The library is built for baseline x86-64, so the moves are inline
 * assembly, run only where the context chose that vector copy from CPUID
 * and the tuning.
 */
#ifndef MEMMIG_ARCH_X86_INLINE_H
#define MEMMIG_ARCH_X86_INLINE_H

#include <stddef.h>

#include "memmig.h"

/*
 * zmm16-31 leave no dirty upper state (no vzeroupper after them, as
 * vec.S's AVX-512 copy).  A compiler targeting baseline x86-64 cannot
 * allocate them, and refuses them as clobbers: listed only where it can.
 */
#ifdef __AVX512F__
#define X86_ZCLOB , "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", \
	"xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31"
#else
#define X86_ZCLOB
#endif
/* vzeroupper clears the upper half of every ymm: all sixteen clobbered. */
#define X86_YCLOB , "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", \
	"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

/* The widest copy done inline for a vector primitive, 0 for none. */
static inline size_t memmig_arch_inline_max(int prim)
{
	if (prim == MEMMIG_PRIM_VEC_AVX512)
		return 1024;
	if (prim == MEMMIG_PRIM_VEC_AVX2)
		return 512;
	return 0;
}

/* One 64-byte load from off(base) into zmm<r>, and one store back. */
#define X86_ZLD(off, base, r) "vmovdqu64 " #off "(%[" #base "]), %%zmm" #r "\n\t"
#define X86_ZST(off, base, r) "vmovdqu64 %%zmm" #r ", " #off "(%[" #base "])\n\t"

static inline __attribute__((always_inline)) void x86_inline_zmm(unsigned char *d, const unsigned char *s, size_t n)
{
	unsigned char *de = d + n;
	const unsigned char *se = s + n;

	if (n <= 128)
		__asm__ volatile(
			"vmovdqu64 (%[s]), %%zmm16\n\t"
			"vmovdqu64 -64(%[se]), %%zmm17\n\t"
			"vmovdqu64 %%zmm16, (%[d])\n\t"
			"vmovdqu64 %%zmm17, -64(%[de])"
			: : [d] "r"(d), [s] "r"(s), [de] "r"(de), [se] "r"(se)
			: "memory" X86_ZCLOB);
	else if (n <= 256)
		__asm__ volatile(
			"vmovdqu64 (%[s]), %%zmm16\n\t"
			"vmovdqu64 64(%[s]), %%zmm17\n\t"
			"vmovdqu64 -128(%[se]), %%zmm18\n\t"
			"vmovdqu64 -64(%[se]), %%zmm19\n\t"
			"vmovdqu64 %%zmm16, (%[d])\n\t"
			"vmovdqu64 %%zmm17, 64(%[d])\n\t"
			"vmovdqu64 %%zmm18, -128(%[de])\n\t"
			"vmovdqu64 %%zmm19, -64(%[de])"
			: : [d] "r"(d), [s] "r"(s), [de] "r"(de), [se] "r"(se)
			: "memory" X86_ZCLOB);
	else if (n <= 512)
		__asm__ volatile(
			"vmovdqu64 (%[s]), %%zmm16\n\t"
			"vmovdqu64 64(%[s]), %%zmm17\n\t"
			"vmovdqu64 128(%[s]), %%zmm18\n\t"
			"vmovdqu64 192(%[s]), %%zmm19\n\t"
			"vmovdqu64 -256(%[se]), %%zmm20\n\t"
			"vmovdqu64 -192(%[se]), %%zmm21\n\t"
			"vmovdqu64 -128(%[se]), %%zmm22\n\t"
			"vmovdqu64 -64(%[se]), %%zmm23\n\t"
			"vmovdqu64 %%zmm16, (%[d])\n\t"
			"vmovdqu64 %%zmm17, 64(%[d])\n\t"
			"vmovdqu64 %%zmm18, 128(%[d])\n\t"
			"vmovdqu64 %%zmm19, 192(%[d])\n\t"
			"vmovdqu64 %%zmm20, -256(%[de])\n\t"
			"vmovdqu64 %%zmm21, -192(%[de])\n\t"
			"vmovdqu64 %%zmm22, -128(%[de])\n\t"
			"vmovdqu64 %%zmm23, -64(%[de])"
			: : [d] "r"(d), [s] "r"(s), [de] "r"(de), [se] "r"(se)
			: "memory" X86_ZCLOB);
	else
		__asm__ volatile(
			X86_ZLD(0, s, 16) X86_ZLD(64, s, 17) X86_ZLD(128, s, 18) X86_ZLD(192, s, 19)
			X86_ZLD(256, s, 20) X86_ZLD(320, s, 21) X86_ZLD(384, s, 22) X86_ZLD(448, s, 23)
			X86_ZLD(-512, se, 24) X86_ZLD(-448, se, 25) X86_ZLD(-384, se, 26)
			X86_ZLD(-320, se, 27) X86_ZLD(-256, se, 28) X86_ZLD(-192, se, 29)
			X86_ZLD(-128, se, 30) X86_ZLD(-64, se, 31)
			X86_ZST(0, d, 16) X86_ZST(64, d, 17) X86_ZST(128, d, 18) X86_ZST(192, d, 19)
			X86_ZST(256, d, 20) X86_ZST(320, d, 21) X86_ZST(384, d, 22) X86_ZST(448, d, 23)
			X86_ZST(-512, de, 24) X86_ZST(-448, de, 25) X86_ZST(-384, de, 26)
			X86_ZST(-320, de, 27) X86_ZST(-256, de, 28) X86_ZST(-192, de, 29)
			X86_ZST(-128, de, 30) X86_ZST(-64, de, 31)
			: : [d] "r"(d), [s] "r"(s), [de] "r"(de), [se] "r"(se)
			: "memory" X86_ZCLOB);
}

/*
 * The primitive memmig_arch_inline_widest() copies as, and the shortest
 * length it copies on cpu: 33 with AVX512VL, whose 32-byte moves into
 * ymm16-31 need no vzeroupper after them, else 65.  On an AMD Zen 5 host a
 * hot 64 B copy took a cycle more with vzeroupper, on a busy core 0.6 ns.
 */
#define MEMMIG_ARCH_INLINE_WIDEST MEMMIG_PRIM_VEC_AVX512

static inline size_t memmig_arch_inline_widest_min(const struct memmig_cpu_info *cpu)
{
	return cpu->features & MEMMIG_CPU_AVX512VL ? 33 : 65;
}

/* n bytes, from memmig_arch_inline_widest_min() to 1 KiB. */
static inline __attribute__((always_inline)) void
memmig_arch_inline_widest(unsigned char *d, const unsigned char *s, size_t n)
{
	if (n > 64) {
		x86_inline_zmm(d, s, n);
		return;
	}
	__asm__ volatile(
		"vmovdqu64 (%[s]), %%ymm16\n\t"
		"vmovdqu64 -32(%[s],%[n]), %%ymm17\n\t"
		"vmovdqu64 %%ymm16, (%[d])\n\t"
		"vmovdqu64 %%ymm17, -32(%[d],%[n])"
		: : [d] "r"(d), [s] "r"(s), [n] "r"(n)
		: "memory" X86_ZCLOB);
}

/* One 32-byte load from off(base) into ymm<r>, and one store back. */
#define X86_YLD(off, base, r) "vmovdqu " #off "(%[" #base "]), %%ymm" #r "\n\t"
#define X86_YST(off, base, r) "vmovdqu %%ymm" #r ", " #off "(%[" #base "])\n\t"
#define X86_YOPS [d] "r"(d), [s] "r"(s), [de] "r"(d + n), [se] "r"(s + n)

/* 65..128 bytes: two 32-byte vectors from each end. */
static inline __attribute__((always_inline)) void
x86_inline_ymm4(unsigned char *d, const unsigned char *s, size_t n)
{
	__asm__ volatile(
		X86_YLD(0, s, 0) X86_YLD(32, s, 1) X86_YLD(-64, se, 2) X86_YLD(-32, se, 3)
		X86_YST(0, d, 0) X86_YST(32, d, 1) X86_YST(-64, de, 2) X86_YST(-32, de, 3)
		"vzeroupper"
		: : X86_YOPS : "memory" X86_YCLOB);
}

/* 129..256 bytes: four from each end. */
static inline __attribute__((always_inline)) void
x86_inline_ymm8(unsigned char *d, const unsigned char *s, size_t n)
{
	__asm__ volatile(
		X86_YLD(0, s, 0) X86_YLD(32, s, 1) X86_YLD(64, s, 2) X86_YLD(96, s, 3)
		X86_YLD(-128, se, 4) X86_YLD(-96, se, 5) X86_YLD(-64, se, 6) X86_YLD(-32, se, 7)
		X86_YST(0, d, 0) X86_YST(32, d, 1) X86_YST(64, d, 2) X86_YST(96, d, 3)
		X86_YST(-128, de, 4) X86_YST(-96, de, 5) X86_YST(-64, de, 6) X86_YST(-32, de, 7)
		"vzeroupper"
		: : X86_YOPS : "memory" X86_YCLOB);
}

/* 257..512 bytes: eight from each end, all sixteen registers (the call to
 * the primitive cost a hot 512 B copy 0.71x glibc's speed, inline 0.86x). */
static inline __attribute__((always_inline)) void
x86_inline_ymm16(unsigned char *d, const unsigned char *s, size_t n)
{
	__asm__ volatile(
		X86_YLD(0, s, 0) X86_YLD(32, s, 1) X86_YLD(64, s, 2) X86_YLD(96, s, 3)
		X86_YLD(128, s, 4) X86_YLD(160, s, 5) X86_YLD(192, s, 6) X86_YLD(224, s, 7)
		X86_YLD(-256, se, 8) X86_YLD(-224, se, 9) X86_YLD(-192, se, 10)
		X86_YLD(-160, se, 11) X86_YLD(-128, se, 12) X86_YLD(-96, se, 13)
		X86_YLD(-64, se, 14) X86_YLD(-32, se, 15)
		X86_YST(0, d, 0) X86_YST(32, d, 1) X86_YST(64, d, 2) X86_YST(96, d, 3)
		X86_YST(128, d, 4) X86_YST(160, d, 5) X86_YST(192, d, 6) X86_YST(224, d, 7)
		X86_YST(-256, de, 8) X86_YST(-224, de, 9) X86_YST(-192, de, 10)
		X86_YST(-160, de, 11) X86_YST(-128, de, 12) X86_YST(-96, de, 13)
		X86_YST(-64, de, 14) X86_YST(-32, de, 15)
		"vzeroupper"
		: : X86_YOPS : "memory" X86_YCLOB);
}

static inline __attribute__((always_inline)) void
x86_inline_ymm(unsigned char *d, const unsigned char *s, size_t n)
{
	if (n <= 128)
		x86_inline_ymm4(d, s, n);
	else if (n <= 256)
		x86_inline_ymm8(d, s, n);
	else
		x86_inline_ymm16(d, s, n);
}

/*
 * 33..64 bytes, for either wide copy: two 32-byte moves where SSE2 needs
 * four 16-byte ones (a hot 64 B copy 3.7 ns against 4.0 on an AMD Zen 3
 * host, glibc's 2.8).
 */
static inline __attribute__((always_inline)) void x86_inline_ymm2(unsigned char *d, const unsigned char *s, size_t n)
{
	__asm__ volatile(
		"vmovdqu (%[s]), %%ymm0\n\t"
		"vmovdqu -32(%[s],%[n]), %%ymm1\n\t"
		"vmovdqu %%ymm0, (%[d])\n\t"
		"vmovdqu %%ymm1, -32(%[d],%[n])\n\t"
		"vzeroupper"
		: : [d] "r"(d), [s] "r"(s), [n] "r"(n)
		: "memory" X86_YCLOB);
}

/* n bytes, 33..memmig_arch_inline_max(prim), with the moves of prim (up to
 * 64 bytes, two 32-byte ones for either). */
static inline __attribute__((always_inline)) void memmig_arch_inline_copy(int prim, unsigned char *d,
					   const unsigned char *s, size_t n)
{
	if (__builtin_expect(n <= 64, 1))
		x86_inline_ymm2(d, s, n);
	else if (prim == MEMMIG_PRIM_VEC_AVX512)
		x86_inline_zmm(d, s, n);
	else
		x86_inline_ymm(d, s, n);
}

#endif
