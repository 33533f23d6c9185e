/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dispatch policy memmig_policy_choose() and the default thresholds
 * memmig_tuning_default() on synthetic CPUs: pure functions, so the
 * expected tables below hold on any build machine.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "memmig.h"
#include "cunit-main.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)
#define NEVER MEMMIG_SIZE_NEVER

#define FLUSHES (MEMMIG_CPU_CLFLUSH | MEMMIG_CPU_CLFLUSHOPT | MEMMIG_CPU_CLWB)
#define AVX512 (MEMMIG_CPU_AVX2 | MEMMIG_CPU_AVX512F | MEMMIG_CPU_AVX512BW)

static const struct memmig_cpu_info zen3 = {
	.sz = sizeof(struct memmig_cpu_info), .vendor = "AuthenticAMD",
	.family = 0x19, .model = 0x01, .stepping = 1,
	.features = MEMMIG_CPU_SSE2 | MEMMIG_CPU_REP_GOOD | MEMMIG_CPU_AVX2 |
		    MEMMIG_CPU_CLWB | MEMMIG_CPU_CLFLUSHOPT | MEMMIG_CPU_CLFLUSH,
	.llc_size = 32 * MiB,
};

static const struct memmig_cpu_info cooper_lake = {
	.sz = sizeof(struct memmig_cpu_info), .vendor = "GenuineIntel",
	.family = 6, .model = 0x55, .stepping = 11,
	.features = MEMMIG_CPU_SSE2 | MEMMIG_CPU_REP_GOOD | MEMMIG_CPU_ERMS |
		    AVX512 | FLUSHES,
	.llc_size = 77 * MiB / 2,	/* 38.5 MiB */
};

static const struct memmig_cpu_info sapphire_rapids = {
	.sz = sizeof(struct memmig_cpu_info), .vendor = "GenuineIntel",
	.family = 6, .model = 0x8f, .stepping = 8,
	.features = MEMMIG_CPU_SSE2 | MEMMIG_CPU_REP_GOOD | MEMMIG_CPU_ERMS |
		    MEMMIG_CPU_FSRM | MEMMIG_CPU_FZRM | MEMMIG_CPU_FSRS |
		    MEMMIG_CPU_FSRC | AVX512 | FLUSHES | MEMMIG_CPU_MOVDIR64B,
	.llc_size = 105 * MiB,
};

static const struct memmig_cpu_info zen5 = {
	.sz = sizeof(struct memmig_cpu_info), .vendor = "AuthenticAMD",
	.family = 0x1a, .model = 0x02, .stepping = 1,
	.features = MEMMIG_CPU_SSE2 | MEMMIG_CPU_REP_GOOD | MEMMIG_CPU_ERMS |
		    MEMMIG_CPU_FSRM | AVX512 | FLUSHES,
	.llc_size = 32 * MiB,
};

static const struct memmig_cpu_info no_avx = {
	.sz = sizeof(struct memmig_cpu_info), .vendor = "GenuineIntel",
	.family = 6, .model = 0x3a, .stepping = 9,
	.features = MEMMIG_CPU_SSE2 | MEMMIG_CPU_REP_GOOD | MEMMIG_CPU_ERMS,
	.llc_size = 8 * MiB,
};

/* Neither x86 feature: what the generic build detects. */
static const struct memmig_cpu_info non_x86 = {
	.sz = sizeof(struct memmig_cpu_info), .vendor = "",
	.features = 0, .llc_size = 4 * MiB,
};

enum {
	MOVQ = MEMMIG_PRIM_MOVQ,
	MOVSQ = MEMMIG_PRIM_REP_MOVSQ,
	MOVSB = MEMMIG_PRIM_REP_MOVSB,
	NTI = MEMMIG_PRIM_NT_MOVNTI,
	NT2 = MEMMIG_PRIM_NT_AVX2,
	NT512 = MEMMIG_PRIM_NT_AVX512,
	V1 = MEMMIG_PRIM_VEC_SSE2,
	V2 = MEMMIG_PRIM_VEC_AVX2,
	V4 = MEMMIG_PRIM_VEC_AVX512,
};

static const size_t sizes[] = { 16, 168, 512, 2 * KiB, 4 * KiB, 2 * MiB, GiB };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static const struct cpu_case {
	const char *name;
	const struct memmig_cpu_info *cpu;
	/* memmig_tuning_default() */
	size_t movsb_min, movsq_min, nt_min;
	int nt_prim;
	size_t vec_max;
	int vec_prim;
	/* memmig_policy_choose(..., sizes[i], 0) */
	int prim[NSIZES];
} cases[] = {
	/* REP_GOOD without ERMS/FSRM: rep movsq from 512 B (seed 000), but
	 * the AVX2 vector copy goes on up to the NT threshold. */
	{ "Zen 3", &zen3, 2048, 512, 16 * MiB, NT2, NEVER, V2,
	  { V2, V2, V2, V2, V2, V2, NT2 } },
	/* ERMS without FSRM: rep movsb from 2048 B (seed 001), after the
	 * AVX2 copy's 4 KiB (glibc's threshold for 32-byte vectors).  AVX-512
	 * only by calibration. */
	{ "Cooper Lake", &cooper_lake, 2048, NEVER, 77 * MiB / 4, NT512, 4096, V2,
	  { V2, V2, V2, V2, MOVSB, MOVSB, NT512 } },
	/* Intel FSRM: movsb from 1 KiB (seed 000 Ice Lake), below 4 KiB the
	 * vector copy; 168 B is no rep movsb (seed 004). */
	{ "Sapphire Rapids", &sapphire_rapids, 1024, NEVER, 105 * MiB / 2, NT512,
	  4096, V2, { V2, V2, V2, V2, MOVSB, MOVSB, NT512 } },
	/* AMD FSRM: rep movsb from 256 B (seed 000 Zen 5), the vector copy
	 * below 4 KiB. */
	{ "Zen 5", &zen5, 256, NEVER, 16 * MiB, NT512, 4096, V2,
	  { V2, V2, V2, V2, MOVSB, MOVSB, NT512 } },
	/* No AVX: SSE2 vectors below 2 KiB, movnti the only NT store; 2 MiB <
	 * nt_min (4 MiB). */
	{ "no AVX", &no_avx, 2048, NEVER, 4 * MiB, NTI, 2048, V1,
	  { V1, V1, V1, MOVSB, MOVSB, MOVSB, NTI } },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static const char *pname(int prim)
{
	const char *n = memmig_prim_name(prim);

	return n ? n : "(error)";
}

/* Asserts memmig_policy_choose() == want, naming the case if not. */
#define EXPECT(what, cpu, t, len, flags, want)                                 \
	expect(__LINE__, what, cpu, t, len, flags, want)

static void expect(unsigned int line, const char *what,
		   const struct memmig_cpu_info *cpu,
		   const struct memmig_tuning *t, size_t len,
		   unsigned int flags, int want)
{
	int got = memmig_policy_choose(cpu, t, len, flags);

	if (got == want)
		CU_assertImplementation(CU_TRUE, line, "policy", __FILE__, "",
					CU_FALSE);
	else
		cunit_failf(line, __FILE__,
			    "%s: len %zu flags %#x: got %s (%d), want %s (%d)",
			    what, len, flags, pname(got), got, pname(want), want);
}

static struct memmig_tuning tuning_of(const struct memmig_cpu_info *cpu)
{
	struct memmig_tuning t = { .sz = sizeof(t) };

	CU_ASSERT_EQUAL(memmig_tuning_default(cpu, &t), 0);
	return t;
}

static void test_defaults(void)
{
	for (size_t i = 0; i < NCASES; i++) {
		const struct cpu_case *c = &cases[i];
		struct memmig_tuning t = tuning_of(c->cpu);

		if (t.movsb_min != c->movsb_min || t.movsq_min != c->movsq_min ||
		    t.nt_min != c->nt_min || t.nt_prim != c->nt_prim)
			CUNIT_FAILF("%s: defaults movsb %zu movsq %zu nt %zu %s, "
				    "want %zu %zu %zu %s", c->name, t.movsb_min,
				    t.movsq_min, t.nt_min, pname(t.nt_prim),
				    c->movsb_min, c->movsq_min, c->nt_min,
				    pname(c->nt_prim));
		else if (t.vec_max != c->vec_max || t.vec_prim != c->vec_prim ||
			 t.nt_cold_min != 4 * KiB || t.vec_wide_min != NEVER ||
			 t.vec_wide_prim != c->vec_prim || t.pmem_nt_min != 0 ||
			 t.nt_prefetch != 0 || t.nt_block != 0)
			CUNIT_FAILF("%s: defaults vec_max %zu %s nt_cold_min %zu, "
				    "want %zu %s 4096", c->name, t.vec_max,
				    pname(t.vec_prim), t.nt_cold_min, c->vec_max,
				    pname(c->vec_prim));
		else
			CU_PASS(c->name);
		CU_ASSERT_EQUAL(t.sz, sizeof(t));
	}
}

static void test_default_edges(void)
{
	struct memmig_cpu_info cpu = zen3;
	struct memmig_tuning t = { .sz = sizeof(t) }, small = { .sz = 0 };

	/* Unknown LLC: half of an assumed 8 MiB. */
	cpu.llc_size = 0;
	t = tuning_of(&cpu);
	CU_ASSERT_EQUAL(t.nt_min, 4 * MiB);
	/* Hygon is AMD for the FSRM crossover. */
	cpu = zen5;
	strcpy(cpu.vendor, "HygonGenuine");
	CU_ASSERT_EQUAL(tuning_of(&cpu).movsb_min, 256);
	/* Portable build: movnti is the nominal NT primitive. */
	CU_ASSERT_EQUAL(tuning_of(&non_x86).nt_prim, NTI);

	CU_ASSERT_EQUAL(memmig_tuning_default(NULL, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_tuning_default(&zen3, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_tuning_default(&zen3, &small), -EINVAL);
}

static void test_table(void)
{
	for (size_t i = 0; i < NCASES; i++) {
		struct memmig_tuning t = tuning_of(cases[i].cpu);

		for (size_t k = 0; k < NSIZES; k++)
			EXPECT(cases[i].name, cases[i].cpu, &t, sizes[k], 0,
			       cases[i].prim[k]);
	}
}

/* The default crossovers sit exactly on the default thresholds. */
static void test_default_crossovers(void)
{
	for (size_t i = 0; i < NCASES; i++) {
		const struct cpu_case *c = &cases[i];
		const struct memmig_cpu_info *cpu = c->cpu;
		struct memmig_tuning t = tuning_of(cpu);

		EXPECT(c->name, cpu, &t, 0, 0, c->vec_prim);
		if (c->vec_max == NEVER) {
			EXPECT(c->name, cpu, &t, t.nt_min - 1, 0, c->vec_prim);
		} else {
			/* Every default vec_max is at or above movsb_min. */
			EXPECT(c->name, cpu, &t, c->vec_max - 1, 0, c->vec_prim);
			EXPECT(c->name, cpu, &t, c->vec_max, 0, MOVSB);
			EXPECT(c->name, cpu, &t, t.nt_min - 1, 0, MOVSB);
		}
		EXPECT(c->name, cpu, &t, t.nt_min, 0, c->nt_prim);
		EXPECT(c->name, cpu, &t, SIZE_MAX, 0, c->nt_prim);
		/* Without the vector copy, the string crossovers as before. */
		{
			bool erms = cpu->features & (MEMMIG_CPU_ERMS | MEMMIG_CPU_FSRM);
			size_t lo = erms ? t.movsb_min : t.movsq_min;
			int rep = erms ? MOVSB : MOVSQ;

			t.vec_max = 0;
			EXPECT(c->name, cpu, &t, 0, 0, MOVQ);
			EXPECT(c->name, cpu, &t, lo - 1, 0, MOVQ);
			EXPECT(c->name, cpu, &t, lo, 0, rep);
			EXPECT(c->name, cpu, &t, t.nt_min - 1, 0, rep);
		}
	}
}

/* A vector choice the CPU cannot run, or no vector at all, is the default
 * one; below vec_max the vector copy wins over every string window. */
static void test_vec(void)
{
	struct memmig_tuning t = tuning_of(&zen3);

	t.vec_prim = V4;
	EXPECT("Zen 3", &zen3, &t, 64, 0, V2);
	t.vec_prim = V1;
	EXPECT("Zen 3", &zen3, &t, 64, 0, V1);
	t.vec_prim = MOVSB;
	EXPECT("Zen 3", &zen3, &t, 64, 0, V2);
	t.vec_prim = NT2;
	EXPECT("Zen 3", &zen3, &t, 64, 0, V2);
	t.vec_prim = -1;
	EXPECT("Zen 3", &zen3, &t, 64, 0, V2);
	t.vec_prim = MEMMIG_PRIM_COUNT;
	EXPECT("Zen 3", &zen3, &t, 64, 0, V2);

	t = tuning_of(&no_avx);
	t.vec_prim = V2;
	EXPECT("no AVX", &no_avx, &t, 64, 0, V1);
	t.vec_prim = V4;
	EXPECT("no AVX", &no_avx, &t, 64, 0, V1);

	t = tuning_of(&zen5);
	t.vec_prim = V4;
	t.vec_max = 777;
	t.movsb_min = 100;
	t.movsq_min = 50;
	EXPECT("Zen 5", &zen5, &t, 0, 0, V4);
	EXPECT("Zen 5", &zen5, &t, 776, 0, V4);
	EXPECT("Zen 5", &zen5, &t, 777, 0, MOVSB);
	/* AVX-512 without AVX2 (no such CPU) would need AVX2 below 64 B. */
	{
		struct memmig_cpu_info odd = zen5;

		odd.features &= ~(uint64_t)MEMMIG_CPU_AVX2;
		EXPECT("AVX-512F only", &odd, &t, 64, 0, V1);
		CU_ASSERT_FALSE(memmig_prim_supported(&odd, V4));
	}
	/* A wider copy from vec_wide_min, still below vec_max; one the CPU
	 * cannot run is the default one. */
	t.vec_prim = V1;
	t.vec_wide_prim = V4;
	t.vec_wide_min = 300;
	EXPECT("Zen 5", &zen5, &t, 299, 0, V1);
	EXPECT("Zen 5", &zen5, &t, 300, 0, V4);
	EXPECT("Zen 5", &zen5, &t, 776, 0, V4);
	EXPECT("Zen 5", &zen5, &t, 777, 0, MOVSB);
	EXPECT("Zen 3", &zen3, &t, 300, 0, V2);
	t.vec_wide_min = NEVER;
	EXPECT("Zen 5", &zen5, &t, 776, 0, V1);
	t.vec_prim = V4;
	/* vec_max 0: no vector copy; never: up to the NT threshold. */
	t.vec_max = 0;
	EXPECT("Zen 5", &zen5, &t, 0, 0, MOVQ);
	EXPECT("Zen 5", &zen5, &t, 100, 0, MOVSB);
	t.vec_max = NEVER;
	EXPECT("Zen 5", &zen5, &t, t.nt_min - 1, 0, V4);
	EXPECT("Zen 5", &zen5, &t, t.nt_min, 0, NT512);
	EXPECT("Zen 5", &zen5, &t, GiB, MEMMIG_COPY_TEMPORAL, V4);
	/* The portable build has no vector copy. */
	t = tuning_of(&non_x86);
	EXPECT("non-x86", &non_x86, &t, 64, 0, MEMMIG_PRIM_GENERIC);
}

/* MEMMIG_COPY_COLD: NT from nt_cold_min (and from nt_min, whichever is
 * first); below it, and with TEMPORAL, what an unflagged copy gets. */
static void test_cold(void)
{
	for (size_t i = 0; i < NCASES; i++) {
		const struct cpu_case *c = &cases[i];
		struct memmig_tuning t = tuning_of(c->cpu);
		const unsigned int cold = MEMMIG_COPY_COLD;

		EXPECT(c->name, c->cpu, &t, 0, cold, c->vec_prim);
		EXPECT(c->name, c->cpu, &t, t.nt_cold_min - 1, cold,
		       memmig_policy_choose(c->cpu, &t, t.nt_cold_min - 1, 0));
		EXPECT(c->name, c->cpu, &t, t.nt_cold_min, cold, c->nt_prim);
		EXPECT(c->name, c->cpu, &t, GiB, cold, c->nt_prim);
		EXPECT(c->name, c->cpu, &t, 2 * MiB, cold | MEMMIG_COPY_NODRAIN,
		       c->nt_prim);
		EXPECT(c->name, c->cpu, &t, 2 * MiB, cold | MEMMIG_COPY_TEMPORAL,
		       c->prim[NSIZES - 2]);
		EXPECT(c->name, c->cpu, &t, 16, cold | MEMMIG_COPY_PMEM, c->nt_prim);
		EXPECT(c->name, c->cpu, &t, 16, cold | MEMMIG_COPY_NONTEMPORAL,
		       c->nt_prim);
		/* pmem below pmem_nt_min: the temporal choice (flushed by the
		 * dispatch); NT from it, and for NT requests at any length. */
		t.pmem_nt_min = 256;
		EXPECT(c->name, c->cpu, &t, 255, MEMMIG_COPY_PMEM,
		       memmig_policy_choose(c->cpu, &t, 255, MEMMIG_COPY_TEMPORAL));
		EXPECT(c->name, c->cpu, &t, 256, MEMMIG_COPY_PMEM, c->nt_prim);
		EXPECT(c->name, c->cpu, &t, 16, MEMMIG_COPY_PMEM | MEMMIG_COPY_NONTEMPORAL,
		       c->nt_prim);
		t.pmem_nt_min = 0;
		/* Unflagged, the same length stays temporal. */
		CU_ASSERT_FALSE(memmig_prim_is_nt(memmig_policy_choose(c->cpu, &t,
							t.nt_cold_min, 0)));
		/* A cold threshold above the NT one: nt_min still holds. */
		t.nt_cold_min = NEVER;
		EXPECT(c->name, c->cpu, &t, t.nt_min, cold, c->nt_prim);
		EXPECT(c->name, c->cpu, &t, t.nt_min - 1, cold,
		       memmig_policy_choose(c->cpu, &t, t.nt_min - 1, 0));
		t.nt_cold_min = 0;
		EXPECT(c->name, c->cpu, &t, 0, cold, c->nt_prim);
	}
}

static void test_forced_nt(void)
{
	static const unsigned int flags[] = {
		MEMMIG_COPY_NONTEMPORAL,
		MEMMIG_COPY_NONTEMPORAL | MEMMIG_COPY_NODRAIN,
		MEMMIG_COPY_PMEM,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_NODRAIN,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_NONTEMPORAL,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH | MEMMIG_COPY_NODRAIN,
	};
	static const size_t lens[] = { 0, 1, 16, 168, 512, 2 * KiB, 4 * KiB,
				       2 * MiB, GiB };

	for (size_t i = 0; i < NCASES; i++) {
		struct memmig_tuning t = tuning_of(cases[i].cpu);

		for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++)
			for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
				EXPECT(cases[i].name, cases[i].cpu, &t, lens[k],
				       flags[f], cases[i].nt_prim);
	}
}

/* TEMPORAL: never NT, even at 1 GiB and with PMEM; NODRAIN changes nothing. */
static void test_temporal(void)
{
	for (size_t i = 0; i < NCASES; i++) {
		const struct cpu_case *c = &cases[i];
		struct memmig_tuning t = tuning_of(c->cpu);

		for (size_t k = 0; k < NSIZES; k++) {
			int want = c->prim[k];

			if (memmig_prim_is_nt(want)) /* what the 2 MiB entry has */
				want = c->prim[NSIZES - 2];
			EXPECT(c->name, c->cpu, &t, sizes[k], MEMMIG_COPY_TEMPORAL,
			       want);
			EXPECT(c->name, c->cpu, &t, sizes[k],
			       MEMMIG_COPY_TEMPORAL | MEMMIG_COPY_PMEM, want);
			EXPECT(c->name, c->cpu, &t, sizes[k],
			       MEMMIG_COPY_TEMPORAL | MEMMIG_COPY_PMEM |
				       MEMMIG_COPY_NOFLUSH, want);
			EXPECT(c->name, c->cpu, &t, sizes[k], MEMMIG_COPY_NODRAIN,
			       c->prim[k]);
		}
		/* The largest length a copy can have (vec_max "never" is
		 * SIZE_MAX itself, which no copy reaches). */
		EXPECT(c->name, c->cpu, &t, SIZE_MAX - 1, MEMMIG_COPY_TEMPORAL,
		       c->prim[NSIZES - 2]);
	}
}

static void test_non_x86(void)
{
	struct memmig_tuning t = tuning_of(&non_x86);
	static const unsigned int flags[] = {
		0, MEMMIG_COPY_NONTEMPORAL, MEMMIG_COPY_TEMPORAL,
		MEMMIG_COPY_PMEM, MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH,
		MEMMIG_COPY_NODRAIN,
	};

	for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		for (size_t k = 0; k < NSIZES; k++)
			EXPECT("non-x86", &non_x86, &t, sizes[k], flags[f],
			       MEMMIG_PRIM_GENERIC);
		EXPECT("non-x86", &non_x86, &t, 0, flags[f], MEMMIG_PRIM_GENERIC);
	}
	/* Even with a tuning from an x86 CPU. */
	t = tuning_of(&sapphire_rapids);
	EXPECT("non-x86", &non_x86, &t, GiB, 0, MEMMIG_PRIM_GENERIC);
	/* Flags are checked before the architecture. */
	EXPECT("non-x86", &non_x86, &t, 16,
	       MEMMIG_COPY_NONTEMPORAL | MEMMIG_COPY_TEMPORAL, -EINVAL);
	/* No x86 primitive is runnable on it; the portable one always is. */
	for (int p = 0; p < MEMMIG_PRIM_COUNT; p++)
		CU_ASSERT_EQUAL(memmig_prim_supported(&non_x86, p),
				p == MEMMIG_PRIM_GENERIC);
}

static void test_invalid_flags(void)
{
	static const unsigned int bad[] = {
		MEMMIG_COPY_NONTEMPORAL | MEMMIG_COPY_TEMPORAL,
		MEMMIG_COPY_NONTEMPORAL | MEMMIG_COPY_TEMPORAL | MEMMIG_COPY_PMEM,
		MEMMIG_COPY_NOFLUSH,
		MEMMIG_COPY_NOFLUSH | MEMMIG_COPY_NONTEMPORAL,
		MEMMIG_COPY_NOFLUSH | MEMMIG_COPY_TEMPORAL,
		1u << 6, 1u << 15, 1u << 24, 3u << 24, 1u << 31, ~0u,
		MEMMIG_COPY_PMEM | (1u << 24),
	};

	for (size_t i = 0; i < NCASES; i++) {
		struct memmig_tuning t = tuning_of(cases[i].cpu);

		for (size_t f = 0; f < sizeof(bad) / sizeof(bad[0]); f++) {
			EXPECT(cases[i].name, cases[i].cpu, &t, 16, bad[f], -EINVAL);
			EXPECT(cases[i].name, cases[i].cpu, &t, GiB, bad[f], -EINVAL);
		}
	}
	for (size_t f = 0; f < sizeof(bad) / sizeof(bad[0]); f++) {
		struct memmig_tuning t = tuning_of(&non_x86);

		EXPECT("non-x86", &non_x86, &t, 16, bad[f], -EINVAL);
	}
	{
		struct memmig_tuning t = tuning_of(&zen3);

		CU_ASSERT_EQUAL(memmig_policy_choose(NULL, &t, 16, 0), -EINVAL);
		CU_ASSERT_EQUAL(memmig_policy_choose(&zen3, NULL, 16, 0), -EINVAL);
	}
}

/* A calibrated nt_prim is used when the CPU runs it, else the widest. */
static void test_nt_prim_fallback(void)
{
	struct memmig_tuning t = tuning_of(&no_avx);

	t.nt_prim = NT512;
	EXPECT("no AVX", &no_avx, &t, GiB, 0, NTI);
	EXPECT("no AVX", &no_avx, &t, 16, MEMMIG_COPY_NONTEMPORAL, NTI);
	t.nt_prim = NT2;
	EXPECT("no AVX", &no_avx, &t, GiB, 0, NTI);

	t = tuning_of(&zen3);
	t.nt_prim = NT512;
	EXPECT("Zen 3", &zen3, &t, GiB, 0, NT2);
	t.nt_prim = NTI;
	EXPECT("Zen 3", &zen3, &t, GiB, 0, NTI);
	EXPECT("Zen 3", &zen3, &t, 16, MEMMIG_COPY_PMEM, NTI);

	t = tuning_of(&cooper_lake);
	t.nt_prim = NT2;
	EXPECT("Cooper Lake", &cooper_lake, &t, GiB, 0, NT2);
	/* Not an NT primitive, or not a primitive at all: the widest. */
	t.nt_prim = MOVSB;
	EXPECT("Cooper Lake", &cooper_lake, &t, GiB, 0, NT512);
	t.nt_prim = MEMMIG_PRIM_GENERIC;
	EXPECT("Cooper Lake", &cooper_lake, &t, GiB, 0, NT512);
	t.nt_prim = -1;
	EXPECT("Cooper Lake", &cooper_lake, &t, GiB, 0, NT512);
	t.nt_prim = MEMMIG_PRIM_COUNT;
	EXPECT("Cooper Lake", &cooper_lake, &t, GiB, 0, NT512);
}

/* Custom thresholds move each crossover to exactly len == threshold. */
static void test_custom_thresholds(void)
{
	static const size_t th[] = { 1, 2, 17, 168, 169, 777, 4096, 100000,
				     3 * MiB + 5 };

	for (size_t i = 0; i < NCASES; i++) {
		const struct cpu_case *c = &cases[i];
		bool erms = c->cpu->features & (MEMMIG_CPU_ERMS | MEMMIG_CPU_FSRM);

		for (size_t k = 0; k < sizeof(th) / sizeof(th[0]); k++) {
			struct memmig_tuning t = tuning_of(c->cpu);

			t.vec_max = 0;	/* the string thresholds alone */
			t.movsb_min = th[k];
			t.movsq_min = th[k];
			t.nt_min = 4 * th[k] + 64;
			EXPECT(c->name, c->cpu, &t, th[k] - 1, 0, MOVQ);
			EXPECT(c->name, c->cpu, &t, th[k], 0, erms ? MOVSB : MOVSQ);
			EXPECT(c->name, c->cpu, &t, t.nt_min - 1, 0,
			       erms ? MOVSB : MOVSQ);
			EXPECT(c->name, c->cpu, &t, t.nt_min, 0, c->nt_prim);
			EXPECT(c->name, c->cpu, &t, t.nt_min, MEMMIG_COPY_TEMPORAL,
			       erms ? MOVSB : MOVSQ);
		}
		/* A calibrated movsq window below movsb_min on ERMS/FSRM
		 * CPUs (all of them have REP_GOOD); movsb_min means nothing
		 * without ERMS and FSRM. */
		{
			struct memmig_tuning t = tuning_of(c->cpu);

			t.vec_max = 0;
			t.movsq_min = 300;
			t.movsb_min = 1000;
			EXPECT(c->name, c->cpu, &t, 299, 0, MOVQ);
			EXPECT(c->name, c->cpu, &t, 300, 0, MOVSQ);
			EXPECT(c->name, c->cpu, &t, 999, 0, MOVSQ);
			EXPECT(c->name, c->cpu, &t, 1000, 0, erms ? MOVSB : MOVSQ);
			EXPECT(c->name, c->cpu, &t, 1000, MEMMIG_COPY_TEMPORAL,
			       erms ? MOVSB : MOVSQ);
			/* movsq_min above movsb_min: no window. */
			t.movsq_min = 5000;
			EXPECT(c->name, c->cpu, &t, 999, 0, MOVQ);
			EXPECT(c->name, c->cpu, &t, 4999, 0, erms ? MOVSB : MOVQ);
			EXPECT(c->name, c->cpu, &t, 5000, 0, erms ? MOVSB : MOVSQ);
		}
	}
	/* The Sapphire Rapids anomaly stays fixed whatever the threshold
	 * around it: 168 B is movq up to movsb_min = 169. */
	{
		struct memmig_tuning t = tuning_of(&sapphire_rapids);

		t.vec_max = 0;
		t.movsb_min = 169;
		EXPECT("Sapphire Rapids", &sapphire_rapids, &t, 168, 0, MOVQ);
		t.movsb_min = 168;
		EXPECT("Sapphire Rapids", &sapphire_rapids, &t, 168, 0, MOVSB);
	}
	/* nt_min 0: everything is NT; movsb_min 0: everything is movsb. */
	{
		struct memmig_tuning t = tuning_of(&cooper_lake);

		t.nt_min = 0;
		EXPECT("Cooper Lake", &cooper_lake, &t, 0, 0, NT512);
		EXPECT("Cooper Lake", &cooper_lake, &t, 1, 0, NT512);
		t = tuning_of(&cooper_lake);
		t.movsb_min = 0;
		t.vec_max = 0;
		EXPECT("Cooper Lake", &cooper_lake, &t, 1, 0, MOVSB);
	}
	/* ERMS without REP_GOOD (not what detection reports, but the
	 * policy must not use rep movsq without fast strings). */
	{
		struct memmig_cpu_info erms_only = no_avx;
		struct memmig_tuning t;

		erms_only.features = MEMMIG_CPU_SSE2 | MEMMIG_CPU_ERMS;
		t = tuning_of(&erms_only);
		t.vec_max = 0;
		t.movsq_min = 300;
		EXPECT("ERMS only", &erms_only, &t, 300, 0, MOVQ);
		EXPECT("ERMS only", &erms_only, &t, 2048, 0, MOVSB);
	}
	/* Without ERMS, FSRM or REP_GOOD: the SSE2 copy up to the NT
	 * threshold, and without it only movq is temporal. */
	{
		struct memmig_cpu_info plain = no_avx;
		struct memmig_tuning t;

		plain.features = MEMMIG_CPU_SSE2;
		t = tuning_of(&plain);
		for (size_t k = 0; k < NSIZES - 1; k++)
			EXPECT("plain SSE2", &plain, &t, sizes[k], 0, V1);
		EXPECT("plain SSE2", &plain, &t, GiB, 0, NTI);
		EXPECT("plain SSE2", &plain, &t, GiB, MEMMIG_COPY_TEMPORAL, V1);
		t.vec_max = 0;
		for (size_t k = 0; k < NSIZES - 1; k++)
			EXPECT("plain SSE2", &plain, &t, sizes[k], 0, MOVQ);
		EXPECT("plain SSE2", &plain, &t, GiB, MEMMIG_COPY_TEMPORAL, MOVQ);
	}
}

static void test_prim_table(void)
{
	static const char *const names[MEMMIG_PRIM_COUNT] = {
		[MEMMIG_PRIM_MOVQ] = "movq", [MEMMIG_PRIM_REP_MOVSQ] = "movsq",
		[MEMMIG_PRIM_REP_MOVSB] = "movsb",
		[MEMMIG_PRIM_NT_MOVNTI] = "nt-movnti",
		[MEMMIG_PRIM_NT_AVX2] = "nt-avx2",
		[MEMMIG_PRIM_NT_AVX512] = "nt-avx512",
		[MEMMIG_PRIM_GENERIC] = "generic",
		[MEMMIG_PRIM_VEC_SSE2] = "sse2",
		[MEMMIG_PRIM_VEC_AVX2] = "avx2",
		[MEMMIG_PRIM_VEC_AVX512] = "avx512",
	};

	for (int p = 0; p < MEMMIG_PRIM_COUNT; p++) {
		CU_ASSERT_STRING_EQUAL(pname(p), names[p]);
		CU_ASSERT_EQUAL(memmig_prim_is_nt(p),
				p == NTI || p == NT2 || p == NT512);
	}
	CU_ASSERT_FALSE(memmig_prim_is_nt(-1));
	CU_ASSERT_FALSE(memmig_prim_is_nt(MEMMIG_PRIM_COUNT));
	if (memmig_test_x86_build()) {
		/* Support follows the features on synthetic CPUs (x86 build). */
		CU_ASSERT_TRUE(memmig_prim_supported(&zen3, NT2));
		CU_ASSERT_FALSE(memmig_prim_supported(&zen3, NT512));
		CU_ASSERT_TRUE(memmig_prim_supported(&cooper_lake, NT512));
		CU_ASSERT_FALSE(memmig_prim_supported(&no_avx, NT2));
		CU_ASSERT_TRUE(memmig_prim_supported(&no_avx, NTI));
		CU_ASSERT_TRUE(memmig_prim_supported(&no_avx, MOVSB));
		CU_ASSERT_TRUE(memmig_prim_supported(&no_avx, MEMMIG_PRIM_VEC_SSE2));
		CU_ASSERT_FALSE(memmig_prim_supported(&no_avx, MEMMIG_PRIM_VEC_AVX2));
		CU_ASSERT_TRUE(memmig_prim_supported(&zen3, MEMMIG_PRIM_VEC_AVX2));
		CU_ASSERT_FALSE(memmig_prim_supported(&zen3, MEMMIG_PRIM_VEC_AVX512));
		CU_ASSERT_TRUE(memmig_prim_supported(&zen5, MEMMIG_PRIM_VEC_AVX512));
	}
	CU_ASSERT_FALSE(memmig_prim_supported(&zen3, -1));
	CU_ASSERT_FALSE(memmig_prim_supported(&zen3, MEMMIG_PRIM_COUNT));
	CU_ASSERT_FALSE(memmig_prim_supported(NULL, MOVQ));
}

/* Calibration on this CPU: every step reports its rows, and what it finds
 * is a ladder size or never, with an NT primitive this CPU runs. */
static unsigned int cal_rows[MEMMIG_CALIBRATE_DISPATCH + 1];

static void count_row(void *opaque, const struct memmig_calibrate_row *row)
{
	CU_ASSERT_PTR_EQUAL(opaque, cal_rows);
	CU_ASSERT_FATAL(row->step >= 0 && row->step <= MEMMIG_CALIBRATE_DISPATCH);
	CU_ASSERT(row->n >= 1 && row->n <= 4);
	for (unsigned int i = 0; i < row->n; i++)
		CU_ASSERT(row->gbps[i] > 0);
	cal_rows[row->step]++;
}

static bool on_ladder(size_t v)
{
	return v == MEMMIG_SIZE_NEVER || (v >= 16 && v <= (256UL << 20));
}

static void test_calibrate(void)
{
	struct memmig_calibrate_opts o = { .sz = sizeof(o), .row = count_row,
					   .opaque = cal_rows, .reps = 3 };
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
	struct memmig_tuning t = { .sz = sizeof(t) };
	struct memmig_ctx *ctx;

	CU_ASSERT_EQUAL_FATAL(memmig_ctx_new_flags(&ctx, MEMMIG_CTX_NO_ENV), 0);
	CU_ASSERT_EQUAL(memmig_tuning_calibrate(NULL, &o, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_tuning_calibrate(ctx, &o, NULL), -EINVAL);
	o.reps = 65;
	CU_ASSERT_EQUAL(memmig_tuning_calibrate(ctx, &o, &t), -EINVAL);
	o.reps = 3;
	CU_ASSERT_EQUAL_FATAL(memmig_tuning_calibrate(ctx, &o, &t), 0);
	memmig_ctx_get_cpu(ctx, &cpu);
	CU_ASSERT(on_ladder(t.movsb_min));
	CU_ASSERT(on_ladder(t.movsq_min));
	CU_ASSERT(on_ladder(t.nt_min));
	if (memmig_prim_is_nt(t.nt_prim)) {
		CU_ASSERT(memmig_prim_supported(&cpu, t.nt_prim));
		/* The stream, then cold pmem copies of 512 B, 2 and 16 KiB. */
		CU_ASSERT_EQUAL(cal_rows[MEMMIG_CALIBRATE_NT_PRIM], 4);
		CU_ASSERT(cal_rows[MEMMIG_CALIBRATE_NT_MIN] >= 10);
	}
	CU_ASSERT(on_ladder(t.vec_max));
	CU_ASSERT(on_ladder(t.nt_cold_min));
	CU_ASSERT(on_ladder(t.vec_wide_min));
	CU_ASSERT(t.vec_wide_min == NEVER ? t.vec_wide_prim == t.vec_prim :
					    t.vec_wide_prim != t.vec_prim);
	/* The dispatch itself, 64 B to 1 KiB (11 sizes, more up to a wide
	 * copy's threshold past it), only where the vector step found two
	 * copies. */
	CU_ASSERT(cal_rows[MEMMIG_CALIBRATE_DISPATCH] == 0 ||
		  cal_rows[MEMMIG_CALIBRATE_DISPATCH] >= 11);
	/* The descriptor step: one row, a choice of its two keys. */
	CU_ASSERT_EQUAL(cal_rows[MEMMIG_CALIBRATE_DESC], 1);
	CU_ASSERT(t.desc_store == MEMMIG_DESC_STORE_NT ||
		  t.desc_store == MEMMIG_DESC_STORE_TEMPORAL);
	CU_ASSERT(t.desc_slow == 0 || t.desc_slow == 1);
	if (memmig_test_x86_build()) {
		/* The vector copies: a choice between them where there are
		 * two; against the string copies over the whole ladder. */
		CU_ASSERT(memmig_prim_supported(&cpu, t.vec_prim));
		CU_ASSERT_EQUAL(cal_rows[MEMMIG_CALIBRATE_VEC_PRIM],
				memmig_prim_supported(&cpu, MEMMIG_PRIM_VEC_AVX2) ? 10 : 0);
		CU_ASSERT_EQUAL(cal_rows[MEMMIG_CALIBRATE_SMALL], 21);
		CU_ASSERT_EQUAL(cal_rows[MEMMIG_CALIBRATE_NT_COLD], 21);
		/* pmem, cold: temporal + flush against NT, 64 B to 4 KiB. */
		CU_ASSERT_EQUAL(cal_rows[MEMMIG_CALIBRATE_PMEM_NT], 7);
		CU_ASSERT(t.pmem_nt_min == 0 || (t.pmem_nt_min >= 128 &&
						 t.pmem_nt_min <= 8192));
		/* The NT loops' fetch, 8 KiB to 2 MiB: prefetching none,
		 * 1 KiB or 4 KiB ahead, or by the primitive's blocks. */
		CU_ASSERT_EQUAL(cal_rows[MEMMIG_CALIBRATE_NT_PREFETCH], 5);
		CU_ASSERT(t.nt_prefetch == 0 || t.nt_prefetch == 1024 ||
			  t.nt_prefetch == 4096);
		CU_ASSERT(t.nt_block == 0 ||
			  (t.nt_prefetch == 0 &&
			   t.nt_block == (t.nt_prim == MEMMIG_PRIM_NT_AVX512 ? 1024u : 512u)));
	}
	printf("\n  movsb from %zu, movsq from %zu, %s from %zu, %s below %zu, "
	       "cold NT from %zu ", t.movsb_min, t.movsq_min,
	       memmig_prim_name(t.nt_prim), t.nt_min, memmig_prim_name(t.vec_prim),
	       t.vec_max, t.nt_cold_min);
	memmig_ctx_unref(ctx);
}

static CU_TestInfo dispatch_tests[] = {
	{ "default thresholds per CPU", test_defaults },
	{ "default thresholds: edge cases", test_default_edges },
	{ "primitive per CPU and size", test_table },
	{ "default crossovers are exact", test_default_crossovers },
	{ "vector copy: fallback, vec_max", test_vec },
	{ "MEMMIG_COPY_COLD: NT from nt_cold_min", test_cold },
	{ "NONTEMPORAL and PMEM force NT", test_forced_nt },
	{ "TEMPORAL never gives NT", test_temporal },
	{ "non-x86 CPU gets generic", test_non_x86 },
	{ "invalid flags give -EINVAL", test_invalid_flags },
	{ "calibrated nt_prim and its fallback", test_nt_prim_fallback },
	{ "custom thresholds move the crossovers", test_custom_thresholds },
	{ "primitive names, NT and support", test_prim_table },
	{ "calibration on this CPU", test_calibrate },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "dispatch policy", .pTests = dispatch_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
