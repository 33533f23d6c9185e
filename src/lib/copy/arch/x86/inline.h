/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wide vector copies of 65..512 bytes inline in memmig_copy_run(): two,
 * four or eight overlapping vectors from both ends, every load before the
 * first store (as vec.S does, so that a cold source's misses overlap).  A
 * call through the cached primitive pointer cost more than these copies
 * (hot 256 B: 4.5 ns against glibc's 2.3).  The library is built for
 * baseline x86-64, so the moves are inline assembly, run only where the
 * context chose that vector copy from CPUID and the tuning.
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
#define X86_ZCLOB , "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23"
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
		return 512;
	if (prim == MEMMIG_PRIM_VEC_AVX2)
		return 256;
	return 0;
}

static inline void x86_inline_zmm(unsigned char *d, const unsigned char *s, size_t n)
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
	else
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
}

static inline void x86_inline_ymm(unsigned char *d, const unsigned char *s, size_t n)
{
	unsigned char *de = d + n;
	const unsigned char *se = s + n;

	if (n <= 128)
		__asm__ volatile(
			"vmovdqu (%[s]), %%ymm0\n\t"
			"vmovdqu 32(%[s]), %%ymm1\n\t"
			"vmovdqu -64(%[se]), %%ymm2\n\t"
			"vmovdqu -32(%[se]), %%ymm3\n\t"
			"vmovdqu %%ymm0, (%[d])\n\t"
			"vmovdqu %%ymm1, 32(%[d])\n\t"
			"vmovdqu %%ymm2, -64(%[de])\n\t"
			"vmovdqu %%ymm3, -32(%[de])\n\t"
			"vzeroupper"
			: : [d] "r"(d), [s] "r"(s), [de] "r"(de), [se] "r"(se)
			: "memory" X86_YCLOB);
	else
		__asm__ volatile(
			"vmovdqu (%[s]), %%ymm0\n\t"
			"vmovdqu 32(%[s]), %%ymm1\n\t"
			"vmovdqu 64(%[s]), %%ymm2\n\t"
			"vmovdqu 96(%[s]), %%ymm3\n\t"
			"vmovdqu -128(%[se]), %%ymm4\n\t"
			"vmovdqu -96(%[se]), %%ymm5\n\t"
			"vmovdqu -64(%[se]), %%ymm6\n\t"
			"vmovdqu -32(%[se]), %%ymm7\n\t"
			"vmovdqu %%ymm0, (%[d])\n\t"
			"vmovdqu %%ymm1, 32(%[d])\n\t"
			"vmovdqu %%ymm2, 64(%[d])\n\t"
			"vmovdqu %%ymm3, 96(%[d])\n\t"
			"vmovdqu %%ymm4, -128(%[de])\n\t"
			"vmovdqu %%ymm5, -96(%[de])\n\t"
			"vmovdqu %%ymm6, -64(%[de])\n\t"
			"vmovdqu %%ymm7, -32(%[de])\n\t"
			"vzeroupper"
			: : [d] "r"(d), [s] "r"(s), [de] "r"(de), [se] "r"(se)
			: "memory" X86_YCLOB);
}

/* n bytes, 65..memmig_arch_inline_max(prim), with the moves of prim. */
static inline void memmig_arch_inline_copy(int prim, unsigned char *d,
					   const unsigned char *s, size_t n)
{
	if (prim == MEMMIG_PRIM_VEC_AVX512)
		x86_inline_zmm(d, s, n);
	else
		x86_inline_ymm(d, s, n);
}

#endif
