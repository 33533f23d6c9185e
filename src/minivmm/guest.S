/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The guest: flat 32-bit protected mode, no paging, no stack, no
 * interrupts.  Loaded at guest-physical 0 and entered there with the
 * number of 4 KiB pages in ebx.  Forever, for pass P = 1, 2, ...: every
 * data page i in turn, pos = i first; the first dword of each of its
 * lines must hold P-1 and gets P; then its dword 1 must hold i (0 before
 * pass 1 wrote it) and gets i.  A failed check is counted and reported at
 * once; the end of a pass is reported too.  A write the host lost while
 * moving the memory is seen on the next pass.
 *
 * It is data to the host: it sits in .rodata, and is position
 * independent but for the state block's fixed guest-physical address.
 *
 * Registers: ebx pages, ecx page, edx line address, ebp end of the half
 * page, esi P-1 (what the lines hold), edi P.  eax is scratch.
 */
#include "minivmm/vmm.h"

/* Counts a failed check on page ecx and reports it (clobbers eax). */
.macro	report_error
	incl	MINIVMM_STATE_ERRORS
	mov	%ecx, %eax
	out	%eax, $MINIVMM_PORT_ERROR
.endm

	.section .rodata.minivmm_guest, "a"
	.globl	minivmm_guest_start, minivmm_guest_end
	.hidden	minivmm_guest_start, minivmm_guest_end
	.code32
minivmm_guest_start:
	xor	%esi, %esi
.Lpass:
	lea	1(%esi), %edi
	mov	$1, %ecx
	/*
	 * pass and pos together, in one 8-byte store: the vCPU stops between
	 * instructions, and a host that saw the new pass with the old pos
	 * (or the reverse) would take every page for lost.  cmpxchg8b is the
	 * one such store without SIMD, which KVM's instruction emulator (that
	 * runs this guest on some hosts) lacks.  It fails only if the host
	 * rewrote the block meanwhile, and retries.
	 */
	mov	%ebx, %ebp
	mov	%edi, %ebx
	mov	MINIVMM_STATE_PASS, %eax
	mov	MINIVMM_STATE_POS, %edx
3:	lock cmpxchg8b MINIVMM_STATE_PASS
	jnz	3b
	mov	%ebp, %ebx
	jmp	.Lpage
.Lnext_page:
	mov	%ecx, MINIVMM_STATE_POS
.Lpage:
	mov	%ecx, %edx
	shl	$12, %edx
	lea	MINIVMM_PAGE / 2(%edx), %ebp
.Lline:
	cmp	%esi, (%edx)
	je	1f
	report_error
1:	mov	%edi, (%edx)
	add	$MINIVMM_LINE, %edx
	cmp	%ebp, %edx
	jne	.Lline
	/*
	 * Where KVM emulates the guest, it notes each write in the dirty ring
	 * and checks for a full ring only between batches of instructions,
	 * which may overrun the ring's reserve: an exit each half page bounds
	 * a batch to 34 writes.
	 */
	cmpl	$0, MINIVMM_STATE_HALF_EXITS
	je	4f
	out	%eax, $MINIVMM_PORT_HALF
4:	add	$MINIVMM_PAGE / 2, %ebp
	test	$MINIVMM_PAGE - 1, %edx
	jnz	.Lline

	mov	MINIVMM_PAGENUM_OFFSET - MINIVMM_PAGE(%edx), %eax
	cmp	%ecx, %eax
	je	2f
	or	%esi, %eax		/* 0 is right before pass 1 */
	jz	2f
	report_error
2:	mov	%ecx, MINIVMM_PAGENUM_OFFSET - MINIVMM_PAGE(%edx)
	inc	%ecx
	cmp	%ebx, %ecx
	jb	.Lnext_page

	mov	%edi, %eax
	out	%eax, $MINIVMM_PORT_PASS
	mov	%edi, %esi
	jmp	.Lpass
	/* Up to the state block; the assembler fails if the code outgrew it. */
	.org	minivmm_guest_start + MINIVMM_STATE_OFFSET
minivmm_guest_end:
	.code64

	.section .note.GNU-stack, "", @progbits
