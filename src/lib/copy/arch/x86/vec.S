/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Temporal vector copies, one vector width each: SSE2 (16 bytes), AVX2
 * (32) and AVX-512F (64).  Same ABI as copy.S, returning 0 (eax):
 *   int fn(void *dst (rdi), const void *src (rsi), size_t len (rdx),
 *           unsigned int flags (ecx, ignored))
 * The buffers do not overlap (copy.c checks), so loads and stores need no
 * ordering between them.  For a vector of V bytes:
 *  - below V: the next narrower copy (AVX-512 -> AVX2 -> SSE2 -> the 0..15
 *    byte moves of copy.S);
 *  - V..2V: the first and the last vector, overlapping in the middle;
 *  - up to 4V, 8V and 16V: two, four and eight vectors from each end
 *    (no loop, whose branch and set-up cost a sixth of a 256-byte SSE2
 *    copy on an AMD family 17h host);
 *  - beyond: the first vector, a loop of four vectors stored to V-aligned
 *    destinations, then the last four vectors; or, when the destination is
 *    less than 8V ahead of the source modulo 4 KiB, the same from the end
 *    down: going up, each load would then wait on the stores just before
 *    it, whose addresses look the same to the CPU's 4 KiB alias check
 *    (glibc's memmove does the same; measured here, a 64 KiB SSE2 copy to
 *    64 bytes past the source's page offset took 2.3 us going up against
 *    glibc's 1.8).
 * Writing some bytes twice is harmless (the same bytes).  Every load is
 * inside [src, src + len) and every store inside [dst, dst + len): a
 * guarded copy (mcsafe.c) faults only on its own bytes.
 * AVX2 ends with vzeroupper (SSE code after it pays no transition); the
 * AVX-512 copy uses zmm16-31 only, which leave no dirty upper state.
 */
	.text

.macro VRET vz
	.if \vz
	vzeroupper
	.endif
	xor	%eax, %eax
	ret
.endm

/* Two ends, n vectors each: the loads, then the stores. */
.macro ENDS2 V, LDU, STU, r0, r1
	\LDU	(%rsi), \r0
	\LDU	-\V(%rsi,%rdx), \r1
	\STU	\r0, (%rdi)
	\STU	\r1, -\V(%rdi,%rdx)
.endm

.macro ENDS4 V, LDU, STU, r0, r1, r2, r3
	\LDU	(%rsi), \r0
	\LDU	\V(%rsi), \r1
	\LDU	-2*\V(%rsi,%rdx), \r2
	\LDU	-\V(%rsi,%rdx), \r3
	\STU	\r0, (%rdi)
	\STU	\r1, \V(%rdi)
	\STU	\r2, -2*\V(%rdi,%rdx)
	\STU	\r3, -\V(%rdi,%rdx)
.endm

.macro ENDS8 V, LDU, STU, r0, r1, r2, r3, r4, r5, r6, r7
	\LDU	(%rsi), \r0
	\LDU	\V(%rsi), \r1
	\LDU	2*\V(%rsi), \r2
	\LDU	3*\V(%rsi), \r3
	\LDU	-4*\V(%rsi,%rdx), \r4
	\LDU	-3*\V(%rsi,%rdx), \r5
	\LDU	-2*\V(%rsi,%rdx), \r6
	\LDU	-\V(%rsi,%rdx), \r7
	\STU	\r0, (%rdi)
	\STU	\r1, \V(%rdi)
	\STU	\r2, 2*\V(%rdi)
	\STU	\r3, 3*\V(%rdi)
	\STU	\r4, -4*\V(%rdi,%rdx)
	\STU	\r5, -3*\V(%rdi,%rdx)
	\STU	\r6, -2*\V(%rdi,%rdx)
	\STU	\r7, -\V(%rdi,%rdx)
.endm

/* Eight vectors from each end, in two halves of eight registers. */
.macro ENDS16 V, LDU, STU, r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15
	\LDU	(%rsi), \r0
	\LDU	\V(%rsi), \r1
	\LDU	2*\V(%rsi), \r2
	\LDU	3*\V(%rsi), \r3
	\LDU	4*\V(%rsi), \r4
	\LDU	5*\V(%rsi), \r5
	\LDU	6*\V(%rsi), \r6
	\LDU	7*\V(%rsi), \r7
	\LDU	-8*\V(%rsi,%rdx), \r8
	\LDU	-7*\V(%rsi,%rdx), \r9
	\LDU	-6*\V(%rsi,%rdx), \r10
	\LDU	-5*\V(%rsi,%rdx), \r11
	\LDU	-4*\V(%rsi,%rdx), \r12
	\LDU	-3*\V(%rsi,%rdx), \r13
	\LDU	-2*\V(%rsi,%rdx), \r14
	\LDU	-\V(%rsi,%rdx), \r15
	\STU	\r0, (%rdi)
	\STU	\r1, \V(%rdi)
	\STU	\r2, 2*\V(%rdi)
	\STU	\r3, 3*\V(%rdi)
	\STU	\r4, 4*\V(%rdi)
	\STU	\r5, 5*\V(%rdi)
	\STU	\r6, 6*\V(%rdi)
	\STU	\r7, 7*\V(%rdi)
	\STU	\r8, -8*\V(%rdi,%rdx)
	\STU	\r9, -7*\V(%rdi,%rdx)
	\STU	\r10, -6*\V(%rdi,%rdx)
	\STU	\r11, -5*\V(%rdi,%rdx)
	\STU	\r12, -4*\V(%rdi,%rdx)
	\STU	\r13, -3*\V(%rdi,%rdx)
	\STU	\r14, -2*\V(%rdi,%rdx)
	\STU	\r15, -\V(%rdi,%rdx)
.endm

/* The first four vectors of the copy. */
.macro FIRST4 V, LDU, STU, r0, r1, r2, r3
	\LDU	(%rsi), \r0
	\LDU	\V(%rsi), \r1
	\LDU	2*\V(%rsi), \r2
	\LDU	3*\V(%rsi), \r3
	\STU	\r0, (%rdi)
	\STU	\r1, \V(%rdi)
	\STU	\r2, 2*\V(%rdi)
	\STU	\r3, 3*\V(%rdi)
.endm

/* The last four vectors of what is left: rsi + rdx is the source's end. */
.macro LAST4 V, LDU, STU, r0, r1, r2, r3
	\LDU	-4*\V(%rsi,%rdx), \r0
	\LDU	-3*\V(%rsi,%rdx), \r1
	\LDU	-2*\V(%rsi,%rdx), \r2
	\LDU	-\V(%rsi,%rdx), \r3
	\STU	\r0, -4*\V(%rdi,%rdx)
	\STU	\r1, -3*\V(%rdi,%rdx)
	\STU	\r2, -2*\V(%rdi,%rdx)
	\STU	\r3, -\V(%rdi,%rdx)
.endm

.macro VEC_COPY name, V, LDU, STU, STA, narrower, vz, r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15
	.globl	\name, \name\()_loop
	.hidden	\name, \name\()_loop
	.type	\name, @function
	.p2align 5
\name:
	.cfi_startproc
	/* The loop's lengths first: behind the four tests of the shorter
	 * ones, a 520 B AVX2 copy took 1 ns more (AMD Zen 3; taken branches). */
	cmp	$16*\V, %rdx
	ja	3f
	cmp	$\V, %rdx
	jb	\narrower
	cmp	$2*\V, %rdx
	ja	1f
	ENDS2	\V, \LDU, \STU, \r0, \r1
	VRET	\vz
1:	cmp	$4*\V, %rdx
	ja	2f
	ENDS4	\V, \LDU, \STU, \r0, \r1, \r2, \r3
	VRET	\vz
2:	cmp	$8*\V, %rdx
	ja	5f
	ENDS8	\V, \LDU, \STU, \r0, \r1, \r2, \r3, \r4, \r5, \r6, \r7
	VRET	\vz
5:	ENDS16	\V, \LDU, \STU, \r0, \r1, \r2, \r3, \r4, \r5, \r6, \r7, \r8, \r9, \r10, \r11, \r12, \r13, \r14, \r15
	VRET	\vz
/* entry.S's way in, past the length tests: above 8V, where the first
 * vector and the skip to a V boundary leave more than 4V to the loop.
 * On a line of its own: behind a change of 3 bytes in the code before
 * it, a hot 4 KiB copy through entry.S went 5 % slower (AMD Zen 5). */
	.p2align 6
\name\()_loop:
3:	mov	%edi, %ecx
	sub	%esi, %ecx
	test	$(4096 - 8*\V), %ecx	/* dst - src mod 4 KiB below 8V? */
	jz	6f
	/* The first vector, then dst rounded up to the next V boundary:
	 * the 1..V bytes skipped are inside the first vector. */
	\LDU	(%rsi), \r4
	\STU	\r4, (%rdi)
	mov	%rdi, %rcx
	add	$\V, %rdi
	and	$-\V, %rdi
	sub	%rdi, %rcx		/* minus the bytes skipped */
	sub	%rcx, %rsi
	add	%rcx, %rdx		/* still more than 7V */
	.p2align 4
4:	\LDU	(%rsi), \r0
	\LDU	\V(%rsi), \r1
	\LDU	2*\V(%rsi), \r2
	\LDU	3*\V(%rsi), \r3
	\STA	\r0, (%rdi)
	\STA	\r1, \V(%rdi)
	\STA	\r2, 2*\V(%rdi)
	\STA	\r3, 3*\V(%rdi)
	add	$4*\V, %rsi
	add	$4*\V, %rdi
	sub	$4*\V, %rdx
	cmp	$4*\V, %rdx
	ja	4b
	/* 1..4V bytes left: the last four vectors of the whole copy. */
	LAST4	\V, \LDU, \STU, \r0, \r1, \r2, \r3
	VRET	\vz
6:	/* Down: the last vector, then the end less one rounded down to a V
	 * boundary (the 1..V bytes skipped are inside the last vector, as
	 * going up; skipping none at an aligned end stored its last line
	 * twice, and a 576 B copy took two turns of the loop where one does:
	 * 4.4 ns against glibc's 3.1 on an AMD Zen 5 host); r8 and r9 walk
	 * down the destination and the source, rdx counts what is left
	 * below them. */
	\LDU	-\V(%rsi,%rdx), \r4
	\STU	\r4, -\V(%rdi,%rdx)
	lea	(%rdi,%rdx), %r8
	lea	(%rsi,%rdx), %r9
	mov	%r8, %rcx
	dec	%r8
	and	$-\V, %r8
	sub	%r8, %rcx		/* the bytes skipped */
	sub	%rcx, %r9
	sub	%rcx, %rdx		/* still more than 7V */
	.p2align 4
7:	\LDU	-\V(%r9), \r0
	\LDU	-2*\V(%r9), \r1
	\LDU	-3*\V(%r9), \r2
	\LDU	-4*\V(%r9), \r3
	\STA	\r0, -\V(%r8)
	\STA	\r1, -2*\V(%r8)
	\STA	\r2, -3*\V(%r8)
	\STA	\r3, -4*\V(%r8)
	sub	$4*\V, %r9
	sub	$4*\V, %r8
	sub	$4*\V, %rdx
	cmp	$4*\V, %rdx
	ja	7b
	/* 1..4V bytes left: the first four vectors of the whole copy. */
	FIRST4	\V, \LDU, \STU, \r0, \r1, \r2, \r3
	VRET	\vz
	.cfi_endproc
	.size	\name, .-\name
.endm

	VEC_COPY memmig_x86_copy_sse2, 16, movdqu, movdqu, movdqa, \
		 memmig_x86_copy_lt16, 0, \
		 %xmm0, %xmm1, %xmm2, %xmm3, %xmm4, %xmm5, %xmm6, %xmm7, \
		 %xmm8, %xmm9, %xmm10, %xmm11, %xmm12, %xmm13, %xmm14, %xmm15
	VEC_COPY memmig_x86_copy_avx2, 32, vmovdqu, vmovdqu, vmovdqa, \
		 memmig_x86_copy_sse2, 1, \
		 %ymm0, %ymm1, %ymm2, %ymm3, %ymm4, %ymm5, %ymm6, %ymm7, \
		 %ymm8, %ymm9, %ymm10, %ymm11, %ymm12, %ymm13, %ymm14, %ymm15
	VEC_COPY memmig_x86_copy_avx512, 64, vmovdqu64, vmovdqu64, vmovdqa64, \
		 memmig_x86_copy_avx2, 0, \
		 %zmm16, %zmm17, %zmm18, %zmm19, %zmm20, %zmm21, %zmm22, %zmm23, \
		 %zmm24, %zmm25, %zmm26, %zmm27, %zmm28, %zmm29, %zmm30, %zmm31

	.section .note.GNU-stack,"",@progbits
