/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MEMMIG_POLICY_H
#define MEMMIG_POLICY_H

#include "lib/core/memmig-private.h"

/*
 * The dispatch policy: a pure function of (CPU, thresholds, length, flags).
 * The rules follow the kernel threads memmig grew from (docs/sources.md):
 *  - a scalar movq loop for small copies, where rep movs* start-up costs
 *    dominate (even with FSRM: the Sapphire Rapids 168-byte anomaly);
 *  - rep movsb from 2048 B on ERMS without FSRM, from the (lower) FSRM
 *    crossover with FSRM;
 *  - rep movsq on fast-string CPUs with neither (AMD Zen 3), where the movq
 *    loop loses 1.4-2x from 1 KB up;
 *  - below all of these, and instead of them where calibration finds it
 *    faster (CPUs without ERMS), a temporal vector copy with overlapping
 *    head and tail loads, as glibc's memcpy does: user space may use the
 *    vector registers the kernel avoids;
 *  - NT stores once the working set outgrows the cache, from a page when
 *    the caller says the destination is cold, always for NT requests, and
 *    for pmem from pmem_nt_min (below it temporal stores, every line
 *    flushed, where calibration measured them ahead).
 * It does not look at the running CPU, so tests can feed it any CPU.  Inline:
 * it runs before every copy, however small.
 */

static inline int memmig_policy_widest_nt(const struct memmig_cpu_info *cpu)
{
	if (cpu->features & MEMMIG_CPU_AVX512F)
		return MEMMIG_PRIM_NT_AVX512;
	if (cpu->features & MEMMIG_CPU_AVX2)
		return MEMMIG_PRIM_NT_AVX2;
	return MEMMIG_PRIM_NT_MOVNTI;
}

/* The widest vector copy whose registers every such CPU runs well:
 * AVX-512 only where calibration measured it ahead (frequency licences on
 * Intel, split 512-bit units on Zen 4). */
static inline int memmig_policy_default_vec(const struct memmig_cpu_info *cpu)
{
	return cpu->features & MEMMIG_CPU_AVX2 ? MEMMIG_PRIM_VEC_AVX2 :
						 MEMMIG_PRIM_VEC_SSE2;
}

static inline bool memmig_policy_vec_ok(const struct memmig_cpu_info *cpu,
					int prim)
{
	switch (prim) {
	case MEMMIG_PRIM_VEC_SSE2:
		return true;
	case MEMMIG_PRIM_VEC_AVX2:
		return cpu->features & MEMMIG_CPU_AVX2;
	case MEMMIG_PRIM_VEC_AVX512:
		return (cpu->features & MEMMIG_CPU_AVX512F) &&
		       (cpu->features & MEMMIG_CPU_AVX2);
	default:
		return false;
	}
}

/*
 * Temporal copies: the vector copy below vec_max, the wider one from
 * vec_wide_min (a calibrated choice this CPU cannot run falls back to the
 * default one), then rep movsb from
 * movsb_min on ERMS/FSRM CPUs, rep movsq from movsq_min on fast-string CPUs
 * (a window below movsb_min where calibration found it faster), the movq
 * loop below both.
 */
static inline int memmig_policy_temporal(const struct memmig_cpu_info *cpu,
					 const struct memmig_tuning *t,
					 size_t len)
{
	if (len < t->vec_max) {
		int v = len >= t->vec_wide_min ? t->vec_wide_prim : t->vec_prim;

		return memmig_policy_vec_ok(cpu, v) ? v : memmig_policy_default_vec(cpu);
	}
	if (len >= t->movsb_min &&
	    (cpu->features & (MEMMIG_CPU_ERMS | MEMMIG_CPU_FSRM)))
		return MEMMIG_PRIM_REP_MOVSB;
	if (len >= t->movsq_min && (cpu->features & MEMMIG_CPU_REP_GOOD))
		return MEMMIG_PRIM_REP_MOVSQ;
	return MEMMIG_PRIM_MOVQ;
}

/* memmig_prim_is_nt() for a valid primitive, inline for the copy path. */
static inline bool memmig_policy_is_nt(int prim)
{
	return prim >= MEMMIG_PRIM_NT_MOVNTI && prim <= MEMMIG_PRIM_NT_AVX512;
}

static inline bool memmig_policy_is_vec(int prim)
{
	return prim >= MEMMIG_PRIM_VEC_SSE2 && prim <= MEMMIG_PRIM_VEC_AVX512;
}

static inline bool memmig_policy_nt_ok(const struct memmig_cpu_info *cpu,
				       int prim)
{
	switch (prim) {
	case MEMMIG_PRIM_NT_MOVNTI:
		return true;
	case MEMMIG_PRIM_NT_AVX2:
		return cpu->features & MEMMIG_CPU_AVX2;
	case MEMMIG_PRIM_NT_AVX512:
		return cpu->features & MEMMIG_CPU_AVX512F;
	default:
		return false;
	}
}

static inline int memmig_policy(const struct memmig_cpu_info *cpu,
				const struct memmig_tuning *t, size_t len,
				unsigned int flags)
{
	bool nt;

	if (__builtin_expect(flags != 0, 0)) {
		if ((flags & ~MEMMIG_COPY_ALL_FLAGS) ||
		    ((flags & MEMMIG_COPY_NONTEMPORAL) &&
		     (flags & MEMMIG_COPY_TEMPORAL)) ||
		    ((flags & MEMMIG_COPY_NOFLUSH) && !(flags & MEMMIG_COPY_PMEM)))
			return -EINVAL;
	}
	if (!(cpu->features & MEMMIG_CPU_SSE2))
		return MEMMIG_PRIM_GENERIC; /* not x86-64: portable code */
	if (flags & MEMMIG_COPY_TEMPORAL)
		nt = false;
	else
		nt = (flags & MEMMIG_COPY_NONTEMPORAL) ||
		     ((flags & MEMMIG_COPY_PMEM) && len >= t->pmem_nt_min) ||
		     len >= t->nt_min ||
		     ((flags & MEMMIG_COPY_COLD) && len >= t->nt_cold_min);
	if (!nt)
		return memmig_policy_temporal(cpu, t, len);
	/* A calibrated choice this CPU cannot run falls back to the widest. */
	return memmig_policy_nt_ok(cpu, t->nt_prim) ? t->nt_prim :
						     memmig_policy_widest_nt(cpu);
}

#endif
