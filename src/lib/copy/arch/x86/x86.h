/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Symbols shared by the x86 primitive files. */
#ifndef MEMMIG_X86_H
#define MEMMIG_X86_H

#include <stddef.h>

#define MEMMIG_X86_LINE 64

/* copy.S: memmig_prim_fn signature (they return 0), the flags argument is
 * ignored */
int memmig_x86_copy_movq(void *dst, const void *src, size_t len,
			 unsigned int flags);
int memmig_x86_copy_movsq(void *dst, const void *src, size_t len,
			  unsigned int flags);
int memmig_x86_copy_movsb(void *dst, const void *src, size_t len,
			  unsigned int flags);

/* vec.S: temporal vector copies; copy.S: below 16 bytes, for them */
int memmig_x86_copy_sse2(void *dst, const void *src, size_t len,
			 unsigned int flags);
int memmig_x86_copy_avx2(void *dst, const void *src, size_t len,
			 unsigned int flags);
int memmig_x86_copy_avx512(void *dst, const void *src, size_t len,
			   unsigned int flags);

/* nt.c */
int memmig_x86_nt_movnti(void *dst, const void *src, size_t len,
			 unsigned int flags);
int memmig_x86_nt_avx2(void *dst, const void *src, size_t len,
		       unsigned int flags);
int memmig_x86_nt_avx512(void *dst, const void *src, size_t len,
			 unsigned int flags);

#endif
