/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Correctness of the copy engine: every primitive this CPU runs (through
 * memmig_copy_with()), the dispatched memmig_copy_run() and the batched
 * memmig_copy_units(), over every length up to 4160, powers of two up to
 * 64 MiB, every source/destination misalignment within a cache line, and
 * the non-temporal, pmem, no-drain and no-flush paths.  Each copy must
 * leave the destination equal to the source and the 64 guard bytes on
 * either side of it untouched.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "memmig.h"
#include "cunit-main.h"

#define GUARD 64
#define GUARD_BYTE 0xc3
#define POISON 0xa5		/* the destination before the copy */
#define BIG_MAX (64UL << 20)
#define ALIGN_MAX 64		/* offsets 0..63 */

/* The ways to copy: each primitive, then the two dispatching entry points. */
enum { VIA_RUN = MEMMIG_PRIM_COUNT, VIA_UNITS, VIA_COUNT };

static struct memmig_ctx *ctx;
static struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
static uint8_t *src_base, *dst_base;
static size_t src_size, dst_size;
static int vias[VIA_COUNT], nvias;

static const char *via_name(int via)
{
	if (via == VIA_RUN)
		return "memmig_copy_run";
	if (via == VIA_UNITS)
		return "memmig_copy_units";
	return memmig_prim_name(via);
}

static int via_copy(int via, void *dst, const void *src, size_t len,
		    unsigned int flags)
{
	if (via == VIA_RUN)
		return memmig_copy_run(ctx, dst, src, len, flags);
	if (via == VIA_UNITS)
		return memmig_copy_units(ctx, dst, src, len, flags);
	return memmig_copy_with(ctx, via, dst, src, len, flags);
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* xorshift64*: cheap, not periodic at any small stride. */
static uint64_t prng_next(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dULL;
}

/* Random bytes that are never POISON or GUARD_BYTE, so that a byte the copy
 * missed or a guard byte it overwrote always shows. */
static void fill_random(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t state = seed;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = prng_next(&state);

		for (size_t k = 0; k < 8 && i + k < len; k++) {
			uint8_t b = (uint8_t)(v >> (8 * k));

			if (b == POISON || b == GUARD_BYTE)
				b ^= 0x10;
			p[i + k] = b;
		}
	}
}

static int suite_init(void)
{
	int rc = memmig_ctx_new(&ctx);

	if (rc < 0) {
		fprintf(stderr, "memmig_ctx_new: %s\n", strerror(-rc));
		return 1;
	}
	if (memmig_ctx_get_cpu(ctx, &cpu) < 0)
		return 1;
	for (int v = 0; v < VIA_COUNT; v++)
		if (v >= MEMMIG_PRIM_COUNT || memmig_prim_supported(&cpu, v))
			vias[nvias++] = v;
	src_size = BIG_MAX + 1 + ALIGN_MAX;
	dst_size = BIG_MAX + 1 + ALIGN_MAX + 2 * GUARD;
	src_base = map(src_size);
	dst_base = map(dst_size);
	if (!src_base || !dst_base)
		return 1;
	fill_random(src_base, src_size, 0x9e3779b97f4a7c15ULL);
	return 0;
}

static int suite_cleanup(void)
{
	if (src_base)
		munmap(src_base, src_size);
	if (dst_base)
		munmap(dst_base, dst_size);
	memmig_ctx_unref(ctx);
	return 0;
}

/* Records one failed case: the first few in detail, then only counts
 * them (cunit_report()). */
#define FAIL_CASE(fmt, ...)                                                    \
	do {                                                                   \
		if (cunit_report())                                             \
			CUNIT_FAILF("%s len %zu soff %zu doff %zu flags %#x: " fmt, \
				    via_name(via), len, soff, doff, flags,     \
				    __VA_ARGS__);                              \
	} while (0)

static size_t first_not(const uint8_t *p, uint8_t b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != b)
			return i;
	return len;
}

/*
 * One copy of len bytes from src_base + soff to a destination at offset doff
 * from a cache line, between two guards.  Returns true if it was right.
 */
static bool check_copy(int via, size_t soff, size_t doff, size_t len,
		       unsigned int flags)
{
	const uint8_t *s = src_base + soff;
	uint8_t *d = dst_base + GUARD + doff;
	size_t at;
	bool ok = true;
	int rc;

	memset(d - GUARD, GUARD_BYTE, GUARD);
	memset(d, POISON, len);
	memset(d + len, GUARD_BYTE, GUARD);
	rc = via_copy(via, d, s, len, flags);
	if (flags & MEMMIG_COPY_NODRAIN)
		memmig_copy_drain();
	if (rc != 0) {
		FAIL_CASE("returned %d", rc);
		return false;
	}
	if (memcmp(d, s, len)) {
		for (at = 0; at < len && d[at] == s[at]; at++)
			;
		FAIL_CASE("destination differs from byte %zu (%#x, want %#x)",
			  at, d[at], s[at]);
		ok = false;
	}
	at = first_not(d - GUARD, GUARD_BYTE, GUARD);
	if (at < GUARD) {
		FAIL_CASE("guard byte %zd before dst overwritten", (ssize_t)at - GUARD);
		ok = false;
	}
	at = first_not(d + len, GUARD_BYTE, GUARD);
	if (at < GUARD) {
		FAIL_CASE("guard byte %zu after dst overwritten", at);
		ok = false;
	}
	if (ok)
		CU_PASS("copy");
	return ok;
}

/* The primitive list must hold everything the CPU claims to run. */
static void test_vias(void)
{
	bool has_generic = false;

	for (int i = 0; i < nvias; i++)
		has_generic |= vias[i] == MEMMIG_PRIM_GENERIC;
	CU_ASSERT(has_generic);
	CU_ASSERT(nvias >= 3);
	if (memmig_test_x86_build()) {
		/* x86-64 has SSE2: the three temporal primitives and movnti run. */
		CU_ASSERT(memmig_prim_supported(&cpu, MEMMIG_PRIM_MOVQ));
		CU_ASSERT(memmig_prim_supported(&cpu, MEMMIG_PRIM_REP_MOVSQ));
		CU_ASSERT(memmig_prim_supported(&cpu, MEMMIG_PRIM_REP_MOVSB));
		CU_ASSERT(memmig_prim_supported(&cpu, MEMMIG_PRIM_NT_MOVNTI));
		CU_ASSERT_EQUAL(memmig_prim_supported(&cpu, MEMMIG_PRIM_NT_AVX2),
				!!(cpu.features & MEMMIG_CPU_AVX2));
		CU_ASSERT_EQUAL(memmig_prim_supported(&cpu, MEMMIG_PRIM_NT_AVX512),
				!!(cpu.features & MEMMIG_CPU_AVX512F));
	}
	for (int i = 0; i < nvias; i++)
		printf("[%s] ", via_name(vias[i]));
}

static void test_every_length(void)
{
	for (int v = 0; v < nvias; v++)
		for (size_t len = 0; len <= 4160; len++)
			check_copy(vias[v], 0, 0, len, 0);
}

static void test_powers_of_two(void)
{
	for (int v = 0; v < nvias; v++) {
		for (size_t len = 1; len <= BIG_MAX; len <<= 1) {
			check_copy(vias[v], 0, 0, len - 1, 0);
			check_copy(vias[v], 0, 0, len, 0);
			check_copy(vias[v], 0, 0, len + 1, 0);
		}
	}
}

/* MEMMIG_COPY_COLD on both sides of the cold threshold, wherever it is:
 * below it the small-copy path, from it the NT primitive. */
static void test_cold_threshold(void)
{
	static const size_t at[] = { 0, 1, 17, 64, 200, 256, 4096 };
	struct memmig_tuning saved = { .sz = sizeof(saved) }, t;

	CU_ASSERT_EQUAL_FATAL(memmig_ctx_get_tuning(ctx, &saved), 0);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		t = saved;
		t.nt_cold_min = at[i];
		CU_ASSERT_EQUAL_FATAL(memmig_ctx_set_tuning(ctx, &t), 0);
		for (size_t len = 0; len <= 4160; len++) {
			const int via = VIA_RUN;

			check_copy(via, 0, 0, len, MEMMIG_COPY_COLD);
			if (len % 61 == 0)
				check_copy(via, 13, 7, len, MEMMIG_COPY_COLD);
		}
		if (memmig_test_x86_build() && at[i])
			CU_ASSERT_TRUE(memmig_prim_is_nt(memmig_copy_query(ctx, at[i],
								 MEMMIG_COPY_COLD)));
	}
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &saved), 0);
}

static const size_t odd_lengths[] = { 1, 7, 63, 64, 65, 255, 256, 257, 1000,
				      4096 + 13 };
#define NODD (sizeof(odd_lengths) / sizeof(odd_lengths[0]))

static void test_misaligned(void)
{
	for (int v = 0; v < nvias; v++)
		for (size_t i = 0; i < NODD; i++)
			for (size_t so = 0; so < ALIGN_MAX; so++)
				for (size_t d = 0; d < ALIGN_MAX; d++)
					check_copy(vias[v], so, d,
						   odd_lengths[i], 0);
}

/*
 * The vector copies: every length from 0 to 4 KiB at every pair of source
 * and destination offsets within a cache line, each primitive called
 * directly and through memmig_copy_run() with the tuning forcing it.
 * Their overlapping head and tail moves change at every multiple of the
 * vector, and the aligned loop at each destination offset.  The loop runs
 * down when the destination is just ahead of the source modulo 4 KiB (as
 * here: 1 to 127 bytes) and up otherwise: the lengths that reach it go
 * again with the destination 2 KiB further.
 */
static void check_vec_all(int via)
{
	for (size_t so = 0; so < ALIGN_MAX; so++)
		for (size_t d = 0; d < ALIGN_MAX; d++) {
			for (size_t len = 0; len <= 4096; len++)
				if (!check_copy(via, so, d, len, 0))
					return;	/* the first failure says it */
			for (size_t len = 257; len <= 4096; len++)
				if (!check_copy(via, so, 2048 + d, len, 0))
					return;
		}
}

static void test_vec_exhaustive(void)
{
	struct memmig_tuning saved = { .sz = sizeof(saved) }, t;
	int n = 0;

	CU_ASSERT_EQUAL_FATAL(memmig_ctx_get_tuning(ctx, &saved), 0);
	for (int p = MEMMIG_PRIM_VEC_SSE2; p <= MEMMIG_PRIM_VEC_AVX512; p++) {
		if (!memmig_prim_supported(&cpu, p))
			continue;
		n++;
		check_vec_all(p);
		t = saved;
		t.vec_prim = p;
		t.vec_wide_prim = p;
		t.vec_max = MEMMIG_SIZE_NEVER;
		t.vec_wide_min = MEMMIG_SIZE_NEVER;
		CU_ASSERT_EQUAL_FATAL(memmig_ctx_set_tuning(ctx, &t), 0);
		CU_ASSERT_EQUAL(memmig_copy_query(ctx, 4096, 0), p);
		CU_ASSERT_EQUAL(memmig_copy_query(ctx, 0, 0), p);
		check_vec_all(VIA_RUN);
		printf("[%s] ", memmig_prim_name(p));
	}
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &saved), 0);
	if (memmig_test_x86_build())
		CU_ASSERT(n >= 1);	/* SSE2 at least */
}

/*
 * Small unflagged copies where the tuning changes primitive early: a vector
 * copy below vec_wide_min, another from it, rep movsb from movsb_min.  The
 * inline path runs through the first vector ranges (copy.c's
 * apply_inline()); every length across those bounds must copy right, at
 * a matching and an odd alignment.
 */
static void test_inline_ranges(void)
{
	static const size_t wide_at[] = { 17, 32, 63, 64, 65, 100, 128, 129, 300 };
	static const size_t movsb_at[] = { MEMMIG_SIZE_NEVER, 40, 200 };
	struct memmig_tuning saved = { .sz = sizeof(saved) }, t;

	CU_ASSERT_EQUAL_FATAL(memmig_ctx_get_tuning(ctx, &saved), 0);
	for (int a = MEMMIG_PRIM_VEC_SSE2; a <= MEMMIG_PRIM_VEC_AVX512; a++)
		for (int b = MEMMIG_PRIM_VEC_SSE2; b <= MEMMIG_PRIM_VEC_AVX512; b++) {
			if (!memmig_prim_supported(&cpu, a) || !memmig_prim_supported(&cpu, b))
				continue;
			for (size_t w = 0; w < sizeof(wide_at) / sizeof(wide_at[0]); w++)
				for (size_t m = 0; m < sizeof(movsb_at) / sizeof(movsb_at[0]); m++) {
					t = saved;
					t.vec_prim = a;
					t.vec_wide_prim = b;
					t.vec_wide_min = wide_at[w];
					t.vec_max = MEMMIG_SIZE_NEVER;
					t.movsb_min = movsb_at[m];
					t.movsq_min = MEMMIG_SIZE_NEVER;
					CU_ASSERT_EQUAL_FATAL(memmig_ctx_set_tuning(ctx, &t), 0);
					for (size_t len = 0; len <= 600; len++)
						if (!check_copy(VIA_RUN, 0, 0, len, 0) ||
						    !check_copy(VIA_RUN, 13, 7, len, 0))
							goto out;	/* the first says it */
				}
		}
out:
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &saved), 0);
}

/* A copy with flags over lengths 0..600, the odd lengths at a few
 * alignments, and a few larger sizes. */
static void check_flags(int via, unsigned int flags)
{
	static const size_t offs[][2] = { { 0, 0 }, { 1, 0 }, { 0, 1 },
					  { 13, 63 }, { 63, 31 }, { 32, 32 } };
	static const size_t big[] = { 4096, 65536 + 3, (1u << 20) + 5,
				      (5u << 20) + 17 };

	for (size_t len = 0; len <= 600; len++)
		check_copy(via, 0, 0, len, flags);
	for (size_t i = 0; i < NODD; i++)
		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++)
			check_copy(via, offs[k][0], offs[k][1], odd_lengths[i],
				   flags);
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		check_copy(via, 0, 0, big[i], flags);
		check_copy(via, 5, 3, big[i], flags);
	}
}

static const unsigned int nt_flags[] = {
	MEMMIG_COPY_PMEM,
	MEMMIG_COPY_NODRAIN,
	MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH,
	MEMMIG_COPY_PMEM | MEMMIG_COPY_NODRAIN,
	MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH | MEMMIG_COPY_NODRAIN,
	MEMMIG_COPY_NONTEMPORAL,
};

static void test_nt_flags(void)
{
	int n = 0;

	for (int v = 0; v < nvias; v++) {
		if (!memmig_prim_is_nt(vias[v]))
			continue;
		n++;
		for (size_t f = 0; f < sizeof(nt_flags) / sizeof(nt_flags[0]); f++)
			check_flags(vias[v], nt_flags[f]);
	}
	if (memmig_test_x86_build())
		CU_ASSERT(n >= 1);
}

/*
 * The NT loops' ways of reading the source (the tuning's nt_prefetch and
 * nt_block): every length across the first blocks' ends and a line's
 * offsets, and the powers of two, each way set on the context.
 */
static void test_nt_ways(void)
{
	static const struct { size_t pf, block; } way[] = {
		{ 0, 0 }, { 1024, 0 }, { 4096, 0 }, { 0, 1024 }, { 4096, 512 },
	};
	struct memmig_tuning saved = { .sz = sizeof(saved) }, t;
	int n = 0;

	CU_ASSERT_EQUAL_FATAL(memmig_ctx_get_tuning(ctx, &saved), 0);
	for (size_t w = 0; w < sizeof(way) / sizeof(way[0]); w++) {
		t = saved;
		t.nt_prefetch = way[w].pf;
		t.nt_block = way[w].block;
		CU_ASSERT_EQUAL_FATAL(memmig_ctx_set_tuning(ctx, &t), 0);
		for (int v = 0; v < nvias; v++) {
			if (!memmig_prim_is_nt(vias[v]))
				continue;
			n++;
			for (size_t len = 8000; len <= 9300; len++)
				if (!check_copy(vias[v], len % 61, len % 67, len,
						MEMMIG_COPY_PMEM))
					break;
			for (size_t len = 4096; len <= BIG_MAX; len <<= 2) {
				check_copy(vias[v], 0, 0, len, 0);
				check_copy(vias[v], 5, 3, len + 1, MEMMIG_COPY_PMEM);
			}
		}
	}
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &saved), 0);
	if (memmig_test_x86_build())
		CU_ASSERT(n >= 5);
}

static void test_temporal_pmem(void)
{
	static const unsigned int flags[] = {
		MEMMIG_COPY_PMEM,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_NODRAIN,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH,
	};
	int n = 0;

	for (int v = 0; v < nvias; v++) {
		if (vias[v] >= MEMMIG_PRIM_COUNT || memmig_prim_is_nt(vias[v]))
			continue;
		n++;
		for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++)
			check_flags(vias[v], flags[f]);
	}
	CU_ASSERT(n >= 1);
}

/* The dispatching entry points with every valid flag combination. */
static void test_dispatched_flags(void)
{
	static const unsigned int flags[] = {
		MEMMIG_COPY_NONTEMPORAL,
		MEMMIG_COPY_TEMPORAL,
		MEMMIG_COPY_NODRAIN,
		MEMMIG_COPY_NONTEMPORAL | MEMMIG_COPY_NODRAIN,
		MEMMIG_COPY_PMEM,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_NODRAIN,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_TEMPORAL,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_TEMPORAL | MEMMIG_COPY_NODRAIN,
		MEMMIG_COPY_COLD,
		MEMMIG_COPY_COLD | MEMMIG_COPY_NODRAIN,
		MEMMIG_COPY_COLD | MEMMIG_COPY_TEMPORAL,
	};

	for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		check_flags(VIA_RUN, flags[f]);
		check_flags(VIA_UNITS, flags[f]);
	}
}

/* Batches of several 2 MB units, with partial last units and offsets. */
static void test_units(void)
{
	static const size_t lens[] = { MEMMIG_UNIT_SIZE - 1, MEMMIG_UNIT_SIZE,
				       MEMMIG_UNIT_SIZE + 1,
				       2 * MEMMIG_UNIT_SIZE + 4096 + 13,
				       7 * MEMMIG_UNIT_SIZE + 3 };
	static const unsigned int flags[] = {
		0, MEMMIG_COPY_NONTEMPORAL, MEMMIG_COPY_TEMPORAL,
		MEMMIG_COPY_NODRAIN, MEMMIG_COPY_PMEM,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH, MEMMIG_COPY_COLD,
	};
	const int via = VIA_UNITS;

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
			check_copy(via, 0, 0, lens[i], flags[f]);
			check_copy(via, 7, 33, lens[i], flags[f]);
		}
	/* The dispatched entry points copy with the primitive the policy
	 * names: that primitive must run on this CPU. */
	for (size_t len = 1; len <= BIG_MAX; len <<= 1) {
		int prim = memmig_copy_query(ctx, len, 0);

		CU_ASSERT(prim >= 0 && memmig_prim_supported(&cpu, prim));
	}
}

/* Writing back cache lines must not change what is in them. */
static void test_flush_keeps_content(void)
{
	static const size_t lens[] = { 0, 1, 63, 64, 65, 4096 + 13,
				       (1u << 20) + 7 };
	static const size_t offs[] = { 0, 1, 31, 63 };
	uint8_t *d = dst_base + GUARD;

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
			size_t len = lens[i], o = offs[k];
			int rc;

			memcpy(d + o, src_base, len);
			rc = memmig_copy_flush(ctx, d + o, len);
			memmig_copy_drain();
			if (rc != 0)
				CUNIT_FAILF("flush len %zu off %zu: %d", len, o, rc);
			if (memcmp(d + o, src_base, len))
				CUNIT_FAILF("flush len %zu off %zu changed the data",
					    len, o);
		}
	}
	CU_ASSERT_EQUAL(memmig_copy_flush(ctx, NULL, 0), 0);
	/* Read-only data can be flushed too. */
	CU_ASSERT_EQUAL(memmig_copy_flush(ctx, "constant", 8), 0);
}

static CU_TestInfo copy_tests[] = {
	{ "primitives this CPU runs", test_vias },
	{ "every length 0..4160", test_every_length },
	{ "powers of two and +-1 up to 64 MiB", test_powers_of_two },
	{ "source and destination misalignment 0..63", test_misaligned },
	{ "vector copies: every length to 4 KiB, every alignment pair",
	  test_vec_exhaustive },
	{ "NT primitives with pmem/nodrain/noflush", test_nt_flags },
	{ "NT primitives prefetching and by blocks", test_nt_ways },
	{ "temporal primitives with pmem (flush path)", test_temporal_pmem },
	{ "copy_run and copy_units with flags", test_dispatched_flags },
	{ "copy_units over several units", test_units },
	{ "MEMMIG_COPY_COLD around the cold threshold", test_cold_threshold },
	{ "small copies across vector and movsb bounds", test_inline_ranges },
	{ "copy_flush keeps the content", test_flush_keeps_content },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "copy", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pSetUpFunc = cunit_reports_setup,
	  .pTearDownFunc = cunit_reports_teardown,
	  .pTests = copy_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
