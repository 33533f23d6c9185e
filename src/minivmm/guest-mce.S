/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The machine-check guest: flat 32-bit protected mode, no paging, loaded
 * at guest-physical 0 like guest.S.  It loads its own GDT and IDT, takes
 * its stack at the top of page 1, sets CR4.MCE when the state block asks
 * (MINIVMM_STATE_MCE_CR4), then counts passes forever, reporting each on
 * MINIVMM_PORT_PASS: every report is an exit where the VMM may inject.
 * Each pass it also reads the guest-physical address the VMM put in
 * MINIVMM_STATE_TOUCH, if any: a lost page there makes KVM signal the
 * vCPU thread, and the VMM answers with an action-required machine check.
 *
 * Its #MC handler does what an OS does first: finds the bank with
 * MCi_STATUS.VAL (MCG_CAP gives the count), reports through
 * MINIVMM_PORT_MCE the bank, MCG_STATUS, MCi_STATUS, MCi_ADDR and
 * MCi_MISC (each MSR low dword first), clears the bank's status and
 * MCG_STATUS.MCIP -- so the next machine check is taken, not a triple
 * fault -- and ends the report on MINIVMM_PORT_MCE_END with the count of
 * machine checks taken, then returns where it was (MCG_STATUS.RIPV: the
 * guest does not consume the page, so it may go on).  Any other exception
 * is reported on MINIVMM_PORT_EXCEPTION with its vector.
 */
#include "minivmm/vmm.h"

#define MSR_MCG_CAP	0x179
#define MSR_MCG_STATUS	0x17a
#define MSR_MC0_STATUS	0x401	/* + 4 * bank; ADDR and MISC follow */
#define CR4_MCE		(1 << 6)
#define STACK_TOP	(2 * MINIVMM_PAGE)
#define SEL_CODE	0x08	/* as vcpu.c sets CS */
#define VECTOR_MC	18
#define IDT_VECTORS	32

/* Where a label of the blob lands: it is loaded at guest-physical 0. */
#define GPA(label)	((label) - minivmm_guest_mce_start)

	.section .rodata.minivmm_guest_mce, "a"
	.globl	minivmm_guest_mce_start, minivmm_guest_mce_end
	.hidden	minivmm_guest_mce_start, minivmm_guest_mce_end
	.code32
minivmm_guest_mce_start:
	lgdt	GPA(gdt_desc)
	lidt	GPA(idt_desc)
	mov	$STACK_TOP, %esp
	cmpl	$0, MINIVMM_STATE_MCE_CR4
	je	1f
	mov	%cr4, %eax
	or	$CR4_MCE, %eax
	mov	%eax, %cr4
1:	xor	%edi, %edi
.Lpass:
	inc	%edi
	mov	%edi, MINIVMM_STATE_PASS
	/* A page the VMM asks it to read, as a program would use its data. */
	mov	MINIVMM_STATE_TOUCH, %eax
	test	%eax, %eax
	jz	.Ltouched
.Ltouch:
	mov	(%eax), %eax
.Ltouched:
	mov	%edi, %eax
	out	%eax, $MINIVMM_PORT_PASS
	jmp	.Lpass

/* Reports MSR ecx, low dword then high; keeps ecx. */
report_msr:
	rdmsr
	out	%eax, $MINIVMM_PORT_MCE
	mov	%edx, %eax
	out	%eax, $MINIVMM_PORT_MCE
	ret

mc_handler:
	pusha
	mov	$MSR_MCG_CAP, %ecx
	rdmsr
	movzbl	%al, %ebx
	xor	%esi, %esi
2:	cmp	%ebx, %esi
	jae	3f
	lea	MSR_MC0_STATUS(,%esi,4), %ecx
	rdmsr
	test	$0x80000000, %edx	/* VAL, bit 63 */
	jnz	4f
	inc	%esi
	jmp	2b
3:	xor	%esi, %esi		/* none valid: say so, show bank 0 */
	mov	$-1, %eax
	jmp	5f
4:	mov	%esi, %eax
5:	out	%eax, $MINIVMM_PORT_MCE
	mov	$MSR_MCG_STATUS, %ecx
	call	report_msr
	lea	MSR_MC0_STATUS(,%esi,4), %ecx
	call	report_msr
	inc	%ecx			/* MCi_ADDR */
	call	report_msr
	inc	%ecx			/* MCi_MISC */
	call	report_msr
	xor	%eax, %eax
	xor	%edx, %edx
	lea	MSR_MC0_STATUS(,%esi,4), %ecx
	wrmsr
	mov	$MSR_MCG_STATUS, %ecx
	wrmsr
	incl	MINIVMM_STATE_MCES
	mov	MINIVMM_STATE_MCES, %eax
	out	%eax, $MINIVMM_PORT_MCE_END
	/* The read of a lost page is given up, as an OS would kill the task
	 * that consumed it: not retried, which would only fault again.  (Under
	 * KVM's instruction emulator the load completed, with all-ones, and
	 * the machine check comes after it.) */
	movl	$0, MINIVMM_STATE_TOUCH
	cmpl	$GPA(.Ltouch), 32(%esp)
	jne	6f
	movl	$GPA(.Ltouched), 32(%esp)
6:	popa
	/*
	 * iret by hand: KVM's instruction emulator, which runs this guest on
	 * some hosts, has IRET for real mode only.  CS stays what it was.
	 */
	push	8(%esp)
	popf
	ret	$8

/* Every other vector: report it and stop. */
	.irp	v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,19,20,21,22,23,24,25,26,27,28,29,30,31
exc_\v:
	push	$\v
	jmp	bad_exception
	.endr
bad_exception:
	pop	%eax
	out	%eax, $MINIVMM_PORT_EXCEPTION
	hlt
	jmp	bad_exception

	.p2align 3
gdt:
	.quad	0
	.quad	0x00cf9b000000ffff	/* 0x08: code, 4 GiB, 32-bit */
	.quad	0x00cf93000000ffff	/* 0x10: data, 4 GiB */
gdt_end:
gdt_desc:
	.word	gdt_end - gdt - 1
	.long	GPA(gdt)
idt_desc:
	.word	idt_end - idt - 1
	.long	GPA(idt)

/* 32-bit interrupt gates; every handler lies below 64 KiB. */
.macro	gate handler
	.word	GPA(\handler), SEL_CODE
	.byte	0, 0x8e
	.word	0
.endm
	.p2align 3
idt:
	.irp	v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17
	gate	exc_\v
	.endr
	gate	mc_handler
	.irp	v, 19,20,21,22,23,24,25,26,27,28,29,30,31
	gate	exc_\v
	.endr
idt_end:
	.if	idt_end - idt != IDT_VECTORS * 8
	.error	"the IDT lost a vector"
	.endif

	/* Up to the state block; the assembler fails if the code outgrew it. */
	.org	minivmm_guest_mce_start + MINIVMM_STATE_OFFSET
minivmm_guest_mce_end:
	.code64

	.section .note.GNU-stack, "", @progbits
