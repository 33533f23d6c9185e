/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The x86-64 primitive table. */
#include "lib/copy/arch/arch.h"
#include "lib/copy/arch/x86/x86.h"

/* The temporal primitives ignore flags: copy.c flushes after them. */
const memmig_prim_fn memmig_arch_prims[MEMMIG_PRIM_COUNT] = {
	[MEMMIG_PRIM_MOVQ] = memmig_x86_copy_movq,
	[MEMMIG_PRIM_REP_MOVSQ] = memmig_x86_copy_movsq,
	[MEMMIG_PRIM_REP_MOVSB] = memmig_x86_copy_movsb,
	[MEMMIG_PRIM_NT_MOVNTI] = memmig_x86_nt_movnti,
	[MEMMIG_PRIM_NT_AVX2] = memmig_x86_nt_avx2,
	[MEMMIG_PRIM_NT_AVX512] = memmig_x86_nt_avx512,
	[MEMMIG_PRIM_VEC_SSE2] = memmig_x86_copy_sse2,
	[MEMMIG_PRIM_VEC_AVX2] = memmig_x86_copy_avx2,
	[MEMMIG_PRIM_VEC_AVX512] = memmig_x86_copy_avx512,
};
