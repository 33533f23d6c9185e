/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Temporal copy primitives, System V ABI, returning 0 (eax):
 *   int fn(void *dst (rdi), const void *src (rsi), size_t len (rdx),
 *           unsigned int flags (ecx, ignored))
 * Written in assembly so that the compiler cannot turn them into a call to
 * memcpy or vectorize them: each must be exactly the instruction sequence the
 * dispatch policy chose.  Buffers do not overlap.
 */
	.text

/*
 * Unrolled movq loop: 32 bytes per iteration through four registers, then
 * the 0..31 byte tail with overlapping moves from the end (the bytes are
 * the same, so writing some twice is harmless).
 */
	.globl	memmig_x86_copy_movq
	.hidden	memmig_x86_copy_movq
	.type	memmig_x86_copy_movq, @function
	.p2align 5
memmig_x86_copy_movq:
	.cfi_startproc
	cmp	$32, %rdx
	jb	.Lmovq_small
	lea	-32(%rsi,%rdx), %r8	/* last 32 source bytes */
	lea	-32(%rdi,%rdx), %r9
	shr	$5, %rdx
	.p2align 4
.Lmovq_loop:
	mov	0(%rsi), %rax
	mov	8(%rsi), %rcx
	mov	16(%rsi), %r10
	mov	24(%rsi), %r11
	mov	%rax, 0(%rdi)
	mov	%rcx, 8(%rdi)
	mov	%r10, 16(%rdi)
	mov	%r11, 24(%rdi)
	lea	32(%rsi), %rsi
	lea	32(%rdi), %rdi
	dec	%rdx
	jnz	.Lmovq_loop
	mov	0(%r8), %rax
	mov	8(%r8), %rcx
	mov	16(%r8), %r10
	mov	24(%r8), %r11
	mov	%rax, 0(%r9)
	mov	%rcx, 8(%r9)
	mov	%r10, 16(%r9)
	mov	%r11, 24(%r9)
	xor	%eax, %eax
	ret
.Lmovq_small:			/* 0..31 bytes */
	cmp	$16, %edx
	jb	memmig_x86_copy_lt16
	mov	0(%rsi), %rax
	mov	8(%rsi), %rcx
	mov	-16(%rsi,%rdx), %r10
	mov	-8(%rsi,%rdx), %r11
	mov	%rax, 0(%rdi)
	mov	%rcx, 8(%rdi)
	mov	%r10, -16(%rdi,%rdx)
	mov	%r11, -8(%rdi,%rdx)
	xor	%eax, %eax
	ret
	.cfi_endproc
	.size	memmig_x86_copy_movq, .-memmig_x86_copy_movq

/*
 * 0..15 bytes with overlapping moves from both ends: the movq loop's and
 * the vector copies' shortest lengths (vec.S jumps here).
 */
	.globl	memmig_x86_copy_lt16
	.hidden	memmig_x86_copy_lt16
	.type	memmig_x86_copy_lt16, @function
	.p2align 4
memmig_x86_copy_lt16:
	.cfi_startproc
	cmp	$8, %edx
	jb	.Lmovq_lt8
	mov	0(%rsi), %rax
	mov	-8(%rsi,%rdx), %rcx
	mov	%rax, 0(%rdi)
	mov	%rcx, -8(%rdi,%rdx)
	xor	%eax, %eax
	ret
.Lmovq_lt8:
	cmp	$4, %edx
	jb	.Lmovq_lt4
	mov	0(%rsi), %eax
	mov	-4(%rsi,%rdx), %ecx
	mov	%eax, 0(%rdi)
	mov	%ecx, -4(%rdi,%rdx)
	xor	%eax, %eax
	ret
.Lmovq_lt4:
	test	%edx, %edx
	jz	.Lmovq_done
	movzbl	0(%rsi), %eax		/* 1..3: first, middle, last byte */
	movzbl	-1(%rsi,%rdx), %ecx
	mov	%rdx, %r8
	shr	$1, %r8
	movzbl	(%rsi,%r8), %r10d
	mov	%al, 0(%rdi)
	mov	%r10b, (%rdi,%r8)
	mov	%cl, -1(%rdi,%rdx)
.Lmovq_done:
	xor	%eax, %eax
	ret
	.cfi_endproc
	.size	memmig_x86_copy_lt16, .-memmig_x86_copy_lt16

/* rep movsq for len / 8 quadwords, rep movsb for the 0..7 byte tail. */
	.globl	memmig_x86_copy_movsq
	.hidden	memmig_x86_copy_movsq
	.type	memmig_x86_copy_movsq, @function
	.p2align 5
memmig_x86_copy_movsq:
	.cfi_startproc
	mov	%rdx, %rcx
	shr	$3, %rcx
	rep movsq
	mov	%edx, %ecx
	and	$7, %ecx
	rep movsb
	xor	%eax, %eax
	ret
	.cfi_endproc
	.size	memmig_x86_copy_movsq, .-memmig_x86_copy_movsq

/* rep movsb for everything: fast on ERMS/FSRM CPUs above their crossover. */
	.globl	memmig_x86_copy_movsb
	.hidden	memmig_x86_copy_movsb
	.type	memmig_x86_copy_movsb, @function
	.p2align 5
memmig_x86_copy_movsb:
	.cfi_startproc
	mov	%rdx, %rcx
	rep movsb
	xor	%eax, %eax
	ret
	.cfi_endproc
	.size	memmig_x86_copy_movsb, .-memmig_x86_copy_movsb

	.section .note.GNU-stack,"",@progbits
