/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wide vector copies of 33..512 bytes inline in memmig_copy_run()'s C
 * part: two, four, eight or sixteen overlapping vectors from each end,
 * every load before the first store (as vec.S does, so that a cold
 * source's misses overlap).  A call through the cached primitive pointer
 * cost more than these copies (hot 256 B: 4.5 ns against glibc's 2.3).
 * AVX-512's, to 1 KiB, are entry.S's, which is memmig_copy_run() itself.
 * The library is built for baseline x86-64, so the moves are inline
 * assembly, run only where the context chose that vector copy from CPUID
 * and the tuning.
 */
#ifndef MEMMIG_ARCH_X86_INLINE_H
#define MEMMIG_ARCH_X86_INLINE_H

#include <stddef.h>

#include "memmig.h"
#include "lib/copy/arch/x86/entry.h"

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

/* With ins, the k-th w-byte vector from base (k < 0: from the end) into
 * reg, and back: the assembler computes k * w. */
#define X86_VLD(ins, w, k, base, reg) ins " " #k "*" #w "(%[" #base "]), %%" #reg "\n\t"
#define X86_VST(ins, w, k, base, reg) ins " %%" #reg ", " #k "*" #w "(%[" #base "])\n\t"
/* Eight w-byte vectors from each end of s, then stored at d's: sixteen
 * registers, every load before the first store. */
#define X86_ENDS16(ins, w, r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15) \
	X86_VLD(ins, w, 0, s, r0) X86_VLD(ins, w, 1, s, r1) X86_VLD(ins, w, 2, s, r2)          \
	X86_VLD(ins, w, 3, s, r3) X86_VLD(ins, w, 4, s, r4) X86_VLD(ins, w, 5, s, r5)          \
	X86_VLD(ins, w, 6, s, r6) X86_VLD(ins, w, 7, s, r7) X86_VLD(ins, w, -8, se, r8)        \
	X86_VLD(ins, w, -7, se, r9) X86_VLD(ins, w, -6, se, r10) X86_VLD(ins, w, -5, se, r11)  \
	X86_VLD(ins, w, -4, se, r12) X86_VLD(ins, w, -3, se, r13) X86_VLD(ins, w, -2, se, r14) \
	X86_VLD(ins, w, -1, se, r15)                                                            \
	X86_VST(ins, w, 0, d, r0) X86_VST(ins, w, 1, d, r1) X86_VST(ins, w, 2, d, r2)          \
	X86_VST(ins, w, 3, d, r3) X86_VST(ins, w, 4, d, r4) X86_VST(ins, w, 5, d, r5)          \
	X86_VST(ins, w, 6, d, r6) X86_VST(ins, w, 7, d, r7) X86_VST(ins, w, -8, de, r8)        \
	X86_VST(ins, w, -7, de, r9) X86_VST(ins, w, -6, de, r10) X86_VST(ins, w, -5, de, r11)  \
	X86_VST(ins, w, -4, de, r12) X86_VST(ins, w, -3, de, r13) X86_VST(ins, w, -2, de, r14) \
	X86_VST(ins, w, -1, de, r15)

/*
 * The primitive whose moves entry.S makes (the widest), and the shortest
 * length it makes them for on cpu: 33 with AVX512VL, whose 32-byte moves
 * into ymm16-31 need no vzeroupper after them, else 65.  On an AMD Zen 5
 * host a hot 64 B copy took a cycle more with vzeroupper, on a busy core
 * 0.6 ns.
 */
#define MEMMIG_ARCH_INLINE_WIDEST MEMMIG_PRIM_VEC_AVX512

static inline size_t memmig_arch_inline_widest_min(const struct memmig_cpu_info *cpu)
{
	return cpu->features & MEMMIG_CPU_AVX512VL ? 33 : 65;
}

/* Past small_inline, entry.S sends the widest primitive's lengths to its
 * loop (vec.S) where small_inline has reached this: 1 KiB, where the
 * primitive's moves from each end stop. */
static inline size_t memmig_arch_widest_loop_min(void)
{
	return 16 * 64 + 1;
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
		X86_ENDS16("vmovdqu", 32, ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7,
			   ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14, ymm15)
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

/* n bytes, 33..512, of a wide copy that entry.S does not make: AVX2's,
 * and AVX-512's 33-64 B without AVX512VL (copy.c's apply_inline() sends
 * all of AVX-512's longer ones there). */
static inline __attribute__((always_inline)) void memmig_arch_inline_copy(unsigned char *d,
					   const unsigned char *s, size_t n)
{
	if (__builtin_expect(n <= 64, 1))
		x86_inline_ymm2(d, s, n);
	else
		x86_inline_ymm(d, s, n);
}

#endif
