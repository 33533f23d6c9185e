/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Temporal vector copies, one vector width each: SSE2 (16 bytes), AVX2
 * (32) and AVX-512F (64).  Same ABI as copy.S:
 *   void fn(void *dst (rdi), const void *src (rsi), size_t len (rdx),
 *           unsigned int flags (ecx, ignored))
 * The buffers do not overlap (copy.c checks), so loads and stores need no
 * ordering between them.  For a vector of V bytes:
 *  - below V: the next narrower copy (AVX-512 -> AVX2 -> SSE2 -> the 0..15
 *    byte moves of copy.S);
 *  - V..2V: the first and the last vector, overlapping in the middle;
 *  - up to 4V and up to 8V: two and four vectors from each end;
 *  - beyond: the first vector, a loop of four vectors stored to V-aligned
 *    destinations, then the last four vectors.
 * Writing some bytes twice is harmless (the same bytes).  Every load is
 * inside [src, src + len) and every store inside [dst, dst + len): a
 * guarded copy (mcsafe.c) faults only on its own bytes.
 * AVX2 ends with vzeroupper (SSE code after it pays no transition); the
 * AVX-512 copy uses zmm16-23 only, which leave no dirty upper state.
 */
	.text

.macro VRET vz
	.if \vz
	vzeroupper
	.endif
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

.macro VEC_COPY name, V, LDU, STU, STA, narrower, vz, r0, r1, r2, r3, r4, r5, r6, r7
	.globl	\name
	.hidden	\name
	.type	\name, @function
	.p2align 5
\name:
	.cfi_startproc
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
	ja	3f
	ENDS8	\V, \LDU, \STU, \r0, \r1, \r2, \r3, \r4, \r5, \r6, \r7
	VRET	\vz
3:	/* The first vector, then dst rounded up to the next V boundary:
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
	.cfi_endproc
	.size	\name, .-\name
.endm

	VEC_COPY memmig_x86_copy_sse2, 16, movdqu, movdqu, movdqa, \
		 memmig_x86_copy_lt16, 0, \
		 %xmm0, %xmm1, %xmm2, %xmm3, %xmm4, %xmm5, %xmm6, %xmm7
	VEC_COPY memmig_x86_copy_avx2, 32, vmovdqu, vmovdqu, vmovdqa, \
		 memmig_x86_copy_sse2, 1, \
		 %ymm0, %ymm1, %ymm2, %ymm3, %ymm4, %ymm5, %ymm6, %ymm7
	VEC_COPY memmig_x86_copy_avx512, 64, vmovdqu64, vmovdqu64, vmovdqa64, \
		 memmig_x86_copy_avx2, 0, \
		 %zmm16, %zmm17, %zmm18, %zmm19, %zmm20, %zmm21, %zmm22, %zmm23

	.section .note.GNU-stack,"",@progbits
