/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The guest of bench live's QEMU peer: a multiboot kernel (QEMU's -kernel
 * loads it at 1 MiB and enters it in flat 32-bit protected mode, ebx the
 * multiboot information).  The writer rewrites the first dword of every
 * 64-byte line from 2 MiB to the end of low memory, pass after pass, as
 * minivmm's guest does; the idle one writes it once, then halts (memmig's
 * idle guest is a paused writer: its RAM is all written too).  bench-live-qemu.c puts the
 * multiboot header before it, with the entry point of either.
 * Position independent: data to memmig-cli, in .rodata.
 */
	.section .rodata.bench_qemu_guest, "a"
	.globl	bench_qemu_guest_start, bench_qemu_guest_end
	.globl	bench_qemu_guest_write, bench_qemu_guest_idle
	.hidden	bench_qemu_guest_start, bench_qemu_guest_end
	.hidden	bench_qemu_guest_write, bench_qemu_guest_idle
	.code32
bench_qemu_guest_start:
bench_qemu_guest_write:
	xor	%esi, %esi		/* passes without end */
	jmp	0f
bench_qemu_guest_idle:
	mov	$1, %esi		/* one pass, then halt */
0:	mov	8(%ebx), %ecx		/* mem_upper: KiB above 1 MiB */
	shl	$10, %ecx
	add	$0x100000, %ecx
	and	$~0xfff, %ecx		/* the end of low memory */
	xor	%eax, %eax
1:	inc	%eax			/* the next pass */
	mov	$0x200000, %edx
2:	mov	%eax, (%edx)
	add	$64, %edx
	cmp	%ecx, %edx
	jb	2b
	test	%esi, %esi
	jz	1b
	/* Idle from here; 2 at 2 MiB says all of the RAM was written, as
	 * the writer's second pass does. */
	movl	$2, 0x200000
	cli
3:	hlt
	jmp	3b
bench_qemu_guest_end:
	.section .note.GNU-stack, "", @progbits
