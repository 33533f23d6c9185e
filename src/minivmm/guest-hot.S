/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hot-set guest: like guest.S (64-bit long mode, identity-mapped, no
 * stack, entered at 0 with the page count in rbx), but it writes only a
 * window of its data pages, which the VMM moves (MINIVMM_STATE_HOT_FIRST,
 * MINIVMM_STATE_HOT_PAGES, read again at each pass): a working set to
 * tier.  Pages written at different rates hold different values, so each
 * page's count of writes is kept in a table of its own (a dword a page,
 * from page 1: MINIVMM_HOT_TABLE); data pages follow it.
 *
 * Forever, pass P = 1, 2, ...: for each page i of the window in turn, pos
 * = i first; v = table[i]; the first dword of each of its lines must hold
 * v and gets v + 1; its dword 1 must hold i (0 before its first write) and
 * gets i; then table[i] = v + 1.  A failed check is counted and reported
 * at once, the end of a pass too.  A write the host lost while moving a
 * page leaves it behind its table entry (or the table behind it), which
 * the next write of the page, or the host's check, sees.
 *
 * Registers: rbx pages, r10 the first data page, r11 data pages, r12 the
 * window's first (data index), r13 its length, r14 the index in it, rcx
 * the page, rdx the line address, rbp end of the half page, esi v, r9d
 * v + 1, r15 the table entry's address, edi P, r8 the TSC at the last
 * page.  rax is scratch.
 */
#include "minivmm/guest-macros.h"

	.section .rodata.minivmm_guest_hot, "a"
	.globl	minivmm_guest_hot_start, minivmm_guest_hot_end
	.hidden	minivmm_guest_hot_start, minivmm_guest_hot_end
	.code64
minivmm_guest_hot_start:
	/* The table: 4 bytes a page, whole pages, from page 1. */
	lea	MINIVMM_PAGE - 1(,%rbx,4), %r10
	shr	$12, %r10
	add	$MINIVMM_HOT_TABLE, %r10
	mov	%rbx, %r11
	sub	%r10, %r11
	xor	%edi, %edi
	tsc
	mov	%rax, %r8
.Lpass:
	inc	%edi
	mov	%edi, MINIVMM_STATE_PASS
	/* The window, as the VMM set it now: first mod data pages, and a
	 * length of 0 or past the end for all of them. */
	mov	MINIVMM_STATE_HOT_FIRST, %eax
	xor	%edx, %edx
	div	%r11
	mov	%rdx, %r12
	mov	MINIVMM_STATE_HOT_PAGES, %r13d
	test	%r13, %r13
	jz	3f
	cmp	%r11, %r13
	jbe	4f
3:	mov	%r11, %r13
4:	xor	%r14d, %r14d
.Lpage:
	lea	(%r12,%r14), %rcx
	cmp	%r11, %rcx
	jb	1f
	sub	%r11, %rcx
1:	add	%r10, %rcx
	mov	%ecx, MINIVMM_STATE_POS
	stall_mark
	lea	MINIVMM_HOT_TABLE * MINIVMM_PAGE(,%rcx,4), %r15
	mov	(%r15), %esi
	lea	1(%rsi), %r9d
	write_lines %esi, %r9d

	write_pagenum
	mov	%r9d, (%r15)
	inc	%r14
	cmp	%r13, %r14
	jb	.Lpage

	mov	%edi, %eax
	out	%eax, $MINIVMM_PORT_PASS
	jmp	.Lpass
	.org	minivmm_guest_hot_start + MINIVMM_STATE_OFFSET
minivmm_guest_hot_end:

	.section .note.GNU-stack, "", @progbits
