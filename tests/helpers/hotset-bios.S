/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The firmware of hotset's QEMU guest (hotset-qemu.c): the last 4 KiB of
 * a 64 KiB BIOS image, which QEMU maps just below 4 GiB, the hot-set
 * guest's code (minivmm's guest-hot.S) at the image's start.  From the
 * reset vector it enters protected mode, builds page tables in low RAM,
 * enters long mode and runs the guest at virtual address 0 with its page
 * count (the image's hotset_bios_npages field, set by hotset) in rbx.
 *
 * Virtual [0, 1 GiB) maps guest-physical [2 MiB, 1 GiB + 2 MiB) by 2 MiB
 * pages, so that the guest's RAM is whole 2 MiB units, clear of the low
 * MiB where the BIOS is mapped again (0xf0000); the guest's code and
 * state block are copied to 2 MiB.  Virtual 0xffe00000 maps itself, for
 * this code.  Page tables: 0x1000 (PML4), 0x2000 (PDPT), 0x3000 (the
 * first GiB's directory), 0x4000 (the fourth's).
 */
#define BLOCK		0xfffff000	/* this block's address */
#define LIN(x)		(BLOCK + (x) - hotset_bios_start)
#define REAL(x)		(0xf000 + (x) - hotset_bios_start)	/* in CS 0xf000 */
#define GUEST		0xffff0000	/* the image's start: the guest's code */
#define GUEST_GPA	0x200000
#define PDE_2M		0x83		/* present, writable, 2 MiB */
#define PTE_TABLE	0x03

	.section .rodata.hotset_bios, "a"
	.globl	hotset_bios_start, hotset_bios_end, hotset_bios_npages
	.hidden	hotset_bios_start, hotset_bios_end, hotset_bios_npages
	.p2align 12
hotset_bios_start:
	.code16
real:
	cli
	cld
	lgdtl	%cs:REAL(gdt_desc)
	mov	%cr0, %eax
	or	$1, %eax
	mov	%eax, %cr0
	ljmpl	$0x08, $LIN(prot)

	.code32
prot:
	mov	$0x10, %ax
	mov	%ax, %ds
	mov	%ax, %es
	mov	%ax, %ss
	/* The guest's code and state block, to its page 0. */
	mov	$GUEST, %esi
	mov	$GUEST_GPA, %edi
	mov	$0x1000, %ecx
	rep movsb
	/* The tables, zeroed, then filled. */
	mov	$0x1000, %edi
	xor	%eax, %eax
	mov	$0x1000, %ecx
	rep stosl
	movl	$0x2000 | PTE_TABLE, 0x1000
	movl	$0x3000 | PTE_TABLE, 0x2000
	movl	$0x4000 | PTE_TABLE, 0x2000 + 3 * 8
	mov	$0x3000, %edi
	mov	$GUEST_GPA | PDE_2M, %eax
	mov	$512, %ecx
1:	mov	%eax, (%edi)
	add	$0x200000, %eax
	add	$8, %edi
	loop	1b
	movl	$0xffe00000 | PDE_2M, 0x4000 + 511 * 8
	/* PAE, the tables, EFER.LME, paging: long mode. */
	mov	%cr4, %eax
	or	$0x20, %eax
	mov	%eax, %cr4
	mov	$0x1000, %eax
	mov	%eax, %cr3
	mov	$0xc0000080, %ecx
	rdmsr
	or	$0x100, %eax
	wrmsr
	mov	%cr0, %eax
	or	$0x80000000, %eax
	mov	%eax, %cr0
	ljmpl	$0x18, $LIN(long64)

	.code64
long64:
	mov	hotset_bios_npages(%rip), %ebx
	xor	%eax, %eax
	jmp	*%rax

	.p2align 3
gdt:
	.quad	0
	.quad	0x00cf9a000000ffff	/* 0x08: 32-bit code */
	.quad	0x00cf92000000ffff	/* 0x10: data */
	.quad	0x00af9a000000ffff	/* 0x18: 64-bit code */
gdt_end:
gdt_desc:
	.word	gdt_end - gdt - 1
	.long	LIN(gdt)
hotset_bios_npages:
	.long	0

	/* The reset vector: CS base 0xffff0000, IP 0xfff0. */
	.code16
	.org	hotset_bios_start + 0xff0
	jmp	real
	.org	hotset_bios_start + 0x1000
hotset_bios_end:

	.section .note.GNU-stack, "", @progbits
