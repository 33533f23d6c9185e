/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The guest: 64-bit long mode, its RAM identity-mapped by 2 MiB pages
 * (vcpu.c builds the tables in a memslot of their own), no stack, no
 * interrupts.  Loaded at guest-physical 0 and entered there with the
 * number of 4 KiB pages in rbx: 64 GiB and more are addressed.  Forever, for pass P = 1, 2, ...: every
 * data page i in turn, pos = i first; the first dword of each of its
 * lines must hold P-1 and gets P; then its dword 1 must hold i (0 before
 * pass 1 wrote it) and gets i.  A failed check is counted and reported at
 * once; the end of a pass is reported too.  A write the host lost while
 * moving the memory is seen on the next pass.
 *
 * It is data to the host: it sits in .rodata, and is position
 * independent but for the state block's fixed guest-physical address.
 *
 * It times its own stalls by the TSC, from one page to the next, and keeps
 * the longest in the state block: a pause of the vCPU, a fault, the
 * host's scheduler alike.
 *
 * Registers: rbx pages, rcx page, rdx line address, rbp end of the half
 * page, esi P-1 (what the lines hold), edi P, r8 the TSC at the last page.
 * rax and r9 are scratch.  The state block's fields are absolute 32-bit
 * addresses in page 0.
 */
#include "minivmm/guest-macros.h"

	.section .rodata.minivmm_guest, "a"
	.globl	minivmm_guest_start, minivmm_guest_end
	.hidden	minivmm_guest_start, minivmm_guest_end
	.code64
minivmm_guest_start:
	xor	%esi, %esi
	tsc
	mov	%rax, %r8
.Lpass:
	lea	1(%rsi), %edi
	mov	$1, %ecx
	/*
	 * pass and pos together, in one 8-byte store: the vCPU stops between
	 * instructions, and a host that saw the new pass with the old pos
	 * (or the reverse) would take every page for lost.
	 */
	mov	%rcx, %rax
	shl	$32, %rax
	or	%rdi, %rax
	mov	%rax, MINIVMM_STATE_PASS
	jmp	.Lpage
.Lnext_page:
	mov	%ecx, MINIVMM_STATE_POS
.Lpage:
	stall_mark
	write_lines %esi, %edi

	write_pagenum
	inc	%rcx
	cmp	%rbx, %rcx
	jb	.Lnext_page

	mov	%edi, %eax
	out	%eax, $MINIVMM_PORT_PASS
	mov	%edi, %esi
	jmp	.Lpass
	/* Up to the state block; the assembler fails if the code outgrew it. */
	.org	minivmm_guest_start + MINIVMM_STATE_OFFSET
minivmm_guest_end:

	.section .note.GNU-stack, "", @progbits
