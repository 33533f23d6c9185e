/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Primitive names and the seed-derived default thresholds. */
#include <errno.h>
#include <string.h>

#include "lib/copy/arch/arch.h"
#include "lib/core/memmig-private.h"
#include "lib/copy/policy.h"

static const struct {
	const char *name;
	uint64_t needs;		/* CPU features the primitive requires */
	bool nt;
} prims[MEMMIG_PRIM_COUNT] = {
	[MEMMIG_PRIM_MOVQ] = { "movq", MEMMIG_CPU_SSE2, false },
	[MEMMIG_PRIM_REP_MOVSQ] = { "movsq", MEMMIG_CPU_SSE2, false },
	[MEMMIG_PRIM_REP_MOVSB] = { "movsb", MEMMIG_CPU_SSE2, false },
	[MEMMIG_PRIM_NT_MOVNTI] = { "nt-movnti", MEMMIG_CPU_SSE2, true },
	[MEMMIG_PRIM_NT_AVX2] = { "nt-avx2", MEMMIG_CPU_AVX2, true },
	[MEMMIG_PRIM_NT_AVX512] = { "nt-avx512", MEMMIG_CPU_AVX512F, true },
	[MEMMIG_PRIM_GENERIC] = { "generic", 0, false },
	[MEMMIG_PRIM_VEC_SSE2] = { "sse2", MEMMIG_CPU_SSE2, false },
	[MEMMIG_PRIM_VEC_AVX2] = { "avx2", MEMMIG_CPU_AVX2, false },
	/* below 64 bytes it goes on with the AVX2 copy */
	[MEMMIG_PRIM_VEC_AVX512] = { "avx512", MEMMIG_CPU_AVX512F | MEMMIG_CPU_AVX2, false },
};

static bool prim_valid(int prim)
{
	return prim >= 0 && prim < MEMMIG_PRIM_COUNT;
}

const char *memmig_prim_name(int prim)
{
	return prim_valid(prim) ? prims[prim].name : NULL;
}

int memmig_prim_parse(const char *name)
{
	for (int i = 0; name && i < MEMMIG_PRIM_COUNT; i++)
		if (!strcmp(name, prims[i].name))
			return i;
	return -EINVAL;
}

int memmig_prim_is_nt(int prim)
{
	return prim_valid(prim) && prims[prim].nt;
}

/* The caller's CPU read no further than its sz: fields it does not know
 * read as unknown (zero), as on a CPU that has not got them. */
static int cpu_in(struct memmig_cpu_info *c, const struct memmig_cpu_info *in)
{
	memset(c, 0, sizeof(*c));
	c->sz = sizeof(*c);
	return in ? memmig_struct_in(c, sizeof(*c), in) : -EINVAL;
}

/* Features name x86 instructions: they only count on an x86 build. */
int memmig_prim_supported(const struct memmig_cpu_info *cpu, int prim)
{
	struct memmig_cpu_info c;

	if (cpu_in(&c, cpu) < 0 || !prim_valid(prim))
		return 0;
	if (prim == MEMMIG_PRIM_GENERIC)
		return 1;
	return memmig_arch_prims[prim] &&
	       (c.features & prims[prim].needs) == prims[prim].needs;
}

int memmig_tuning_default(const struct memmig_cpu_info *in,
			  struct memmig_tuning *out)
{
	struct memmig_tuning t = { .sz = sizeof(t) };
	struct memmig_cpu_info c;
	const struct memmig_cpu_info *cpu = &c;
	bool amd;

	if (cpu_in(&c, in) < 0)
		return -EINVAL;
	amd = !strcmp(cpu->vendor, "AuthenticAMD") ||
	      !strcmp(cpu->vendor, "HygonGenuine");
	/*
	 * FSRM crossovers from the seed tables: on Ice Lake the movq loop still
	 * wins at 512 B and loses from 1 KiB; on Zen 5 rep movsb wins from
	 * 256 B.  Without FSRM, rep movsb pays off from 2048 B (seed 001:
	 * docs/sources.md).
	 */
	if (cpu->features & MEMMIG_CPU_FSRM)
		t.movsb_min = amd ? 256 : 1024;
	else
		t.movsb_min = 2048;
	/* Zen 3: movsq ties the movq loop at 512 B and wins from 1 KiB.  With
	 * ERMS, rep movsb takes over and movsq gets no window unless
	 * calibration finds one. */
	if (cpu->features & (MEMMIG_CPU_ERMS | MEMMIG_CPU_FSRM))
		t.movsq_min = MEMMIG_SIZE_NEVER;
	else
		t.movsq_min = 512;
	/* A copy caches source and destination: past half the LLC, cached
	 * stores only evict what the next unit needs. */
	t.nt_min = (cpu->llc_size ? cpu->llc_size : 8u << 20) / 2;
	t.nt_prim = memmig_policy_widest_nt(cpu);
	/* glibc's crossover from its vector loop to rep movsb: 2 KiB per
	 * 16 bytes of vector.  Without ERMS the vector loop goes on up to
	 * the NT threshold, where it is ahead of rep movsq (measured on an
	 * AMD family 17h host: 37-40 GB/s against 34-39 from 4 to 16 KiB). */
	t.vec_prim = memmig_policy_default_vec(cpu);
	if (cpu->features & (MEMMIG_CPU_ERMS | MEMMIG_CPU_FSRM))
		t.vec_max = t.vec_prim == MEMMIG_PRIM_VEC_AVX2 ? 4096 : 2048;
	else
		t.vec_max = MEMMIG_SIZE_NEVER;
	/* Cold, NT stores win once the lines a cached store would read first
	 * cost more than the NT stores' own overhead: from 256 B on that
	 * host.  A page is the least a migration copies. */
	t.nt_cold_min = MEMMIG_PAGE_SIZE;
	t.vec_wide_min = MEMMIG_SIZE_NEVER;
	t.vec_wide_prim = t.vec_prim;
	/* Descriptor tables: templates with NT stores, which need not read
	 * the lines they write (seed 002, measured on Intel).  Where plain
	 * stores win (AMD Zen 5: 0.8x), calibration says so. */
	t.desc_store = MEMMIG_DESC_STORE_NT;
	t.desc_slow = 0;
	/* Probing pays on a range 8 times its four probe segments. */
	t.desc_probe_min = 256 << 20;
	/* pmem: the NT primitive at every length, which streams every whole
	 * line, as libpmem's NT memcpy does; calibration measures where
	 * temporal stores and flushes win instead. */
	t.pmem_nt_min = 0;
	/* No software prefetch unless calibration measured it ahead. */
	t.nt_prefetch = 0;
	t.nt_block = 0;
	return memmig_struct_out(out, &t, sizeof(t));
}

int memmig_policy_choose(const struct memmig_cpu_info *cpu,
			 const struct memmig_tuning *t, size_t len,
			 unsigned int flags)
{
	struct memmig_tuning n = { .sz = sizeof(n) };
	struct memmig_cpu_info c;

	/* An older caller's tuning ends at its sz: the fields added since
	 * take this CPU's defaults, as memmig_ctx_set_tuning() gives them. */
	if (cpu_in(&c, cpu) < 0 || !t || memmig_tuning_default(&c, &n) < 0 ||
	    memmig_struct_in(&n, sizeof(n), t) < 0)
		return -EINVAL;
	return memmig_policy(&c, &n, len, flags);
}
