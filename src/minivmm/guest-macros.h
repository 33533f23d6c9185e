/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the two guests that write their RAM (guest.S, guest-hot.S) share:
 * their error report, their clock of stalls, and the writing of a page's
 * lines.  Assembler macros; 64-bit code.
 */
#ifndef MINIVMM_GUEST_MACROS_H
#define MINIVMM_GUEST_MACROS_H

#include "minivmm/vmm.h"

/* Counts a failed check on page ecx and reports it (clobbers eax). */
.macro	report_error
	incl	MINIVMM_STATE_ERRORS
	mov	%ecx, %eax
	out	%eax, $MINIVMM_PORT_ERROR
.endm

/* rax = the TSC (clobbers rdx). */
.macro	tsc
	rdtsc
	shl	$32, %rdx
	or	%rdx, %rax
.endm

/*
 * The stall since the last page (r8: the TSC then, updated), kept in the
 * state block with its end if it is the longest; the VMM's reset first,
 * which notes when it was taken.  Clobbers rax, rdx, r9.
 */
.macro	stall_mark
	tsc
	mov	%rax, %r9
	sub	%r8, %rax
	mov	%r9, %r8
	cmpl	$0, MINIVMM_STATE_STALL_RESET
	je	5f
	movl	$0, MINIVMM_STATE_STALL_RESET
	mov	%r9, MINIVMM_STATE_STALL_FROM
	xor	%eax, %eax
	mov	%rax, MINIVMM_STATE_STALL_MAX
5:	cmp	MINIVMM_STATE_STALL_MAX, %rax
	jbe	6f
	mov	%rax, MINIVMM_STATE_STALL_MAX
	mov	%r9, MINIVMM_STATE_STALL_END
6:
.endm

/*
 * Page rcx's lines: the first dword of each must hold \old and gets \new
 * (32-bit registers).  Where the VMM asks, it exits each half page: where
 * KVM emulates the guest, it notes each write in the dirty ring and checks
 * for a full ring only between batches of instructions, which may overrun
 * the ring's reserve; an exit each half page bounds a batch to 34 writes.
 * Leaves rdx at the next page; clobbers rax, rbp.
 */
.macro	write_lines old, new
	mov	%rcx, %rdx
	shl	$12, %rdx
	lea	MINIVMM_PAGE / 2(%rdx), %rbp
1:	cmp	\old, (%rdx)
	je	2f
	report_error
2:	mov	\new, (%rdx)
	add	$MINIVMM_LINE, %rdx
	cmp	%rbp, %rdx
	jne	1b
	cmpl	$0, MINIVMM_STATE_HALF_EXITS
	je	3f
	out	%eax, $MINIVMM_PORT_HALF
3:	add	$MINIVMM_PAGE / 2, %rbp
	test	$MINIVMM_PAGE - 1, %edx
	jnz	1b
.endm

/* Then its number, dword 1: it must hold rcx, or 0 where esi (what the
 * lines held) is 0, before the page's first write.  Clobbers eax. */
.macro	write_pagenum
	mov	MINIVMM_PAGENUM_OFFSET - MINIVMM_PAGE(%rdx), %eax
	cmp	%ecx, %eax
	je	4f
	or	%esi, %eax
	jz	4f
	report_error
4:	mov	%ecx, MINIVMM_PAGENUM_OFFSET - MINIVMM_PAGE(%rdx)
.endm

#endif
