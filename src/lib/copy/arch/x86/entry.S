/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig_copy_run(ctx (rdi), dst (rsi), src (rdx), len (rcx), flags (r8d)):
 * the checks of copy.c's C entry, then the copies of 1 to 32 bytes and
 * AVX-512's of 33 to 512 and 833 to 1024 bytes done here, the others by
 * its loop (vec.S), the rest in C: checks passed,
 * memmig_copy_run_inline() and memmig_copy_run_by_len(); else
 * memmig_copy_run_policy().  In assembly for the order of its branches:
 * a taken branch cost about 0.6 ns here, and GCC laid the C out with
 * three or four of them before a 128 B copy (hot 100-128 B 0.73-0.77x
 * glibc's speed on an Intel Emerald Rapids host, 512 B 0.79-0.85x).  Each length it copies takes at most one taken
 * branch to its moves, and returns there.
 *
 * The moves are AVX-512's, where ctx->widest_span says the context chose
 * them (AVX512VL for the 32-byte ones), from each end, every load before
 * the first store, in zmm16-31 and ymm16-31, which leave no dirty upper
 * state (no vzeroupper).
 */
#include "lib/copy/arch/x86/entry.h"

/* len (rcx) bytes of 1 to 2 w-byte moves' span: one w-byte move from
 * each end of src (rdx) into a and b, stored at dst's (rsi); returns 0. */
.macro	ENDS2 mov, w, a, b
	\mov	(%rdx), \a
	\mov	-\w(%rdx,%rcx), \b
	\mov	\a, (%rsi)
	\mov	\b, -\w(%rsi,%rcx)
	xor	%eax, %eax
	ret
.endm

/* n (2, 4 or 8) 64-byte moves from each end of src (rdx, len rcx) into
 * zmm16 on, every load before the first store, stored at dst's (rsi);
 * returns 0. */
.macro	ENDS_ZMM n
	.irp	r, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	.if	\r < 16 + \n
	vmovdqu64	64 * (\r - 16)(%rdx), %zmm\r
	.elseif	\r < 16 + 2 * \n
	vmovdqu64	-64 * (16 + 2 * \n - \r)(%rdx,%rcx), %zmm\r
	.endif
	.endr
	.irp	r, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	.if	\r < 16 + \n
	vmovdqu64	%zmm\r, 64 * (\r - 16)(%rsi)
	.elseif	\r < 16 + 2 * \n
	vmovdqu64	%zmm\r, -64 * (16 + 2 * \n - \r)(%rsi,%rcx)
	.endif
	.endr
	xor	%eax, %eax
	ret
.endm

/* AVX-512's loop (vec.S) for the rest, in its argument registers. */
.macro	TO_LOOP
	mov	%rsi, %rdi
	mov	%rdx, %rsi
	mov	%rcx, %rdx
	jmp	memmig_x86_copy_avx512_loop
.endm

	.text
	.globl	memmig_copy_run
	.type	memmig_copy_run, @function
	/*
	 * Laid out by measurement (Intel Emerald Rapids, hot copies): the
	 * checks' rare ways out come first, just before the entry, so that
	 * the jumps there are two bytes (backwards) and the checks and the
	 * length ladder fill two 64-byte lines from the entry's boundary;
	 * the 1-32 B block starts on a 32-byte boundary.  With the ways out
	 * last and the entry 32 bytes into a line, 64-128 B went at 0.80x
	 * glibc's speed; with the entry on a line, 512 B at 0.91x; this way
	 * 0.88x and 1.09x.
	 */
	.p2align 6
	.cfi_startproc
memmig_copy_run_out:	/* a local symbol, for profiles and debuggers */
.Lrun_flagged:
	/* A cold copy below cold_below is an unflagged one. */
	cmp	$MEMMIG_ARCH_COPY_COLD, %r8d
	jne	.Lrun_policy
	cmp	MEMMIG_ARCH_CTX_COLD_BELOW(%rdi), %rcx
	jb	.Lrun_checked
	jmp	.Lrun_policy
.Lrun_policy0:
	xor	%r8d, %r8d	/* as the C: the slow path copies it unflagged */
.Lrun_policy:
	jmp	memmig_copy_run_policy
	.p2align 6
memmig_copy_run:
	test	%rdi, %rdi
	jz	.Lrun_policy
	test	%r8d, %r8d
	jnz	.Lrun_flagged
.Lrun_checked:
	/* memmig_copy_fast_ok(): both addresses in [4 KiB, 2^62), the
	 * length below 2^62, and apart: dst - src + len - 1 >= 2 len - 1. */
	lea	-MEMMIG_ARCH_FAST_LO(%rsi), %rax
	lea	-MEMMIG_ARCH_FAST_LO(%rdx), %r9
	or	%rcx, %rax
	or	%r9, %rax
	shr	$MEMMIG_ARCH_FAST_SHIFT, %rax
	jnz	.Lrun_policy0
	lea	-1(%rsi,%rcx), %rax
	sub	%rdx, %rax
	lea	-1(%rcx,%rcx), %r9
	cmp	%r9, %rax
	jb	.Lrun_policy0
	/* The widest moves' lengths, in one compare. */
	mov	%rcx, %rax
	sub	MEMMIG_ARCH_CTX_WIDEST_MIN(%rdi), %rax
	cmp	MEMMIG_ARCH_CTX_WIDEST_SPAN(%rdi), %rax
	jae	.Lrun_narrow
	cmp	$64, %rcx
	jbe	.Lrun_ymm2
	cmp	$128, %rcx
	jbe	.Lrun_zmm2
	cmp	$256, %rcx
	jbe	.Lrun_zmm4
	cmp	$512, %rcx
	jbe	.Lrun_zmm8
	/*
	 * 513..832: AVX-512's loop (vec.S), the destination's lines stored
	 * aligned, each once.  Sixteen vectors from the two ends (then eight
	 * aligned from each end) stored some lines twice and others split:
	 * hot 513-576 B went at 0.67-0.79x glibc's speed, 520 B to a
	 * destination 8 or 33 bytes off a line 0.41-0.42x; the loop 0.82-1.12x
	 * there (Intel Emerald Rapids).  833..1024: the sixteen, where the
	 * loop makes 17 stores in three turns; but not where the loop runs
	 * down (the destination less than 512 bytes ahead of the source
	 * modulo 4 KiB, vec.S).  On an AMD Zen 5 host, hot 840-1024 B, the
	 * sixteen took 4.3-6.6 ns against the loop's 4.6-7.7 going up, but
	 * 5.5-6.0 against 4.9-5.5 going down to a destination on a line.
	 */
	cmp	$832, %rcx
	jbe	.Lrun_loop
	mov	%esi, %eax
	sub	%edx, %eax
	test	$(4096 - 512), %eax
	jnz	.Lrun_zmm16
.Lrun_loop:
	TO_LOOP
	.p2align 5
.Lrun_ymm2:	/* 33..64 */
	ENDS2	vmovdqu64, 32, %ymm16, %ymm17
	.p2align 5
.Lrun_zmm2:	/* 65..128 */
	ENDS2	vmovdqu64, 64, %zmm16, %zmm17
	/* Blocks of more than 32 bytes on a line, each in as few lines as
	 * it fits (AMD Zen 5: 256 B took 1.9 ns with this one 32 bytes into
	 * a line, 1.7 on it). */
	.p2align 6
.Lrun_zmm4:	/* 129..256 */
	ENDS_ZMM	2
	.p2align 6
.Lrun_zmm8:	/* 257..512 */
	ENDS_ZMM	4
	.p2align 5	/* see the top: placed by measurement */
.Lrun_narrow:
	/* Beyond the inline copies: the primitive of the length's range. */
	cmp	MEMMIG_ARCH_CTX_SMALL_INLINE(%rdi), %rcx
	ja	.Lrun_long
	/* 1..32 bytes as copy.c's copy_inline() makes them, overlapping
	 * moves from each end, the shorter with fewer taken branches (1-3 B
	 * took three: 0.55-0.70x glibc's speed, none 0.98-1.22x); the other
	 * inline copies in C. */
	cmp	$16, %rcx
	jae	.Lrun_16
	cmp	$8, %rcx
	jae	.Lrun_8
	cmp	$4, %rcx
	jae	.Lrun_4
	/* 1..3 (0 failed the checks): first, middle and last byte */
	movzbl	(%rdx), %eax
	movzbl	-1(%rdx,%rcx), %r8d
	mov	%rcx, %r9
	shr	%r9
	movzbl	(%rdx,%r9), %r10d
	mov	%al, (%rsi)
	mov	%r10b, (%rsi,%r9)
	mov	%r8b, -1(%rsi,%rcx)
	xor	%eax, %eax
	ret
.Lrun_4:
	ENDS2	mov, 4, %eax, %r8d
.Lrun_8:
	ENDS2	mov, 8, %rax, %r8
.Lrun_16:
	cmp	$32, %rcx
	ja	memmig_copy_run_inline
	ENDS2	movdqu, 16, %xmm0, %xmm1
.Lrun_long:
	/* Where that is AVX-512's, its loop straight away: the table and
	 * the primitive's length tests cost hot 2 KiB copies 0.93x glibc's
	 * speed on an Intel Emerald Rapids host. */
	cmp	MEMMIG_ARCH_CTX_WIDEST_LOOP_BELOW(%rdi), %rcx
	jae	memmig_copy_run_by_len
	TO_LOOP
	.p2align 6
.Lrun_zmm16:	/* 833..1024, the last: the blocks above stay where they were */
	ENDS_ZMM	8
	.cfi_endproc
	.size	memmig_copy_run, .-memmig_copy_run

	.section .note.GNU-stack, "", @progbits
