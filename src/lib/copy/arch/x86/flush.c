/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cache-line write-back and the store fence. */
#include <stdint.h>

#include "lib/copy/arch/arch.h"
#include "lib/copy/arch/x86/x86.h"

void memmig_arch_drain(void)
{
	__asm__ volatile("sfence" ::: "memory");
}

void memmig_arch_flush(enum memmig_flush_kind kind, const void *addr,
		       size_t len)
{
	uintptr_t p = (uintptr_t)addr & ~(uintptr_t)(MEMMIG_X86_LINE - 1);
	uintptr_t end = (uintptr_t)addr + len;

	if (!len)
		return;
	switch (kind) {
	case MEMMIG_FLUSH_CLWB:
		for (; p < end; p += MEMMIG_X86_LINE)
			__asm__ volatile("clwb %0" : "+m"(*(volatile char *)p));
		break;
	case MEMMIG_FLUSH_CLFLUSHOPT:
		for (; p < end; p += MEMMIG_X86_LINE)
			__asm__ volatile("clflushopt %0" : "+m"(*(volatile char *)p));
		break;
	case MEMMIG_FLUSH_CLFLUSH:
		for (; p < end; p += MEMMIG_X86_LINE)
			__asm__ volatile("clflush %0" : "+m"(*(volatile char *)p));
		break;
	case MEMMIG_FLUSH_NONE:
		break;
	}
}
