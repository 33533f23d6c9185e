/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CPU description: detection is in arch/, names and derived choices here. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "lib/copy/arch/arch.h"
#include "lib/core/memmig-private.h"

static const struct {
	uint64_t bit;
	const char *name;
} feature_names[] = {
	{ MEMMIG_CPU_SSE2, "sse2" },	     { MEMMIG_CPU_REP_GOOD, "rep_good" },
	{ MEMMIG_CPU_ERMS, "erms" },	     { MEMMIG_CPU_FSRM, "fsrm" },
	{ MEMMIG_CPU_FZRM, "fzrm" },	     { MEMMIG_CPU_FSRS, "fsrs" },
	{ MEMMIG_CPU_FSRC, "fsrc" },	     { MEMMIG_CPU_AVX2, "avx2" },
	{ MEMMIG_CPU_AVX512F, "avx512f" },   { MEMMIG_CPU_AVX512BW, "avx512bw" },
	{ MEMMIG_CPU_CLFLUSH, "clflush" },   { MEMMIG_CPU_CLFLUSHOPT, "clflushopt" },
	{ MEMMIG_CPU_CLWB, "clwb" },	     { MEMMIG_CPU_MOVDIR64B, "movdir64b" },
	{ MEMMIG_CPU_AVX512VL, "avx512vl" },
};

const char *memmig_cpu_feature_name(uint64_t feature)
{
	for (size_t i = 0; i < sizeof(feature_names) / sizeof(feature_names[0]); i++)
		if (feature_names[i].bit == feature)
			return feature_names[i].name;
	return NULL;
}

int memmig_cpu_detect(struct memmig_cpu_info *out)
{
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };

	memmig_arch_cpu_detect(&cpu);
	return memmig_struct_out(out, &cpu, sizeof(cpu));
}

int memmig_ctx_get_cpu(struct memmig_ctx *ctx, struct memmig_cpu_info *out)
{
	if (!ctx)
		return -EINVAL;
	return memmig_struct_out(out, &ctx->cpu, sizeof(ctx->cpu));
}

/* clwb keeps the line cached; clflushopt is weakly ordered; clflush is not. */
enum memmig_flush_kind memmig_flush_kind_for(const struct memmig_cpu_info *cpu)
{
	if (cpu->features & MEMMIG_CPU_CLWB)
		return MEMMIG_FLUSH_CLWB;
	if (cpu->features & MEMMIG_CPU_CLFLUSHOPT)
		return MEMMIG_FLUSH_CLFLUSHOPT;
	if (cpu->features & MEMMIG_CPU_CLFLUSH)
		return MEMMIG_FLUSH_CLFLUSH;
	return MEMMIG_FLUSH_NONE;
}

unsigned int memmig_usable_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) || !CPU_COUNT(&set))
		return 1;
	return (unsigned int)CPU_COUNT(&set);
}
