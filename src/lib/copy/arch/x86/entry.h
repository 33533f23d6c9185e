/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What entry.S knows of the C, as numbers an assembler reads: where
 * struct memmig_ctx (core/memmig-private.h) keeps what memmig_copy_run()
 * reads, a flag of memmig.h, and memmig_copy_fast_ok()'s bounds
 * (copy-private.h).  copy.c asserts each against the C.
 */
#ifndef MEMMIG_ARCH_X86_ENTRY_H
#define MEMMIG_ARCH_X86_ENTRY_H

/* memmig_copy_run() is entry.S's. */
#define MEMMIG_ARCH_COPY_ENTRY 1

#define MEMMIG_ARCH_CTX_COLD_BELOW	8
#define MEMMIG_ARCH_CTX_SMALL_INLINE	16
#define MEMMIG_ARCH_CTX_WIDEST_MIN	32
#define MEMMIG_ARCH_CTX_WIDEST_SPAN	40
#define MEMMIG_ARCH_CTX_WIDEST_LOOP_BELOW 48
#define MEMMIG_ARCH_COPY_COLD		0x20
#define MEMMIG_ARCH_FAST_LO		4096
#define MEMMIG_ARCH_FAST_SHIFT		62

#endif
