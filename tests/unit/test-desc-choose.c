/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The descriptor-init choice memmig_desc_choose() fed the figures of
 * machines this test need not run on: plain stores where they win (AMD
 * Zen 5), NT where NT wins (the Intel hosts), the seed's choice on a tie,
 * the slow path only where it beats both template stores.
 */
#include <math.h>

#include "lib/desc/desc-choose.h"
#include "cunit-main.h"

#define NT MEMMIG_DESC_STORE_NT
#define TMP MEMMIG_DESC_STORE_TEMPORAL

static const struct {
	const char *what;
	struct desc_measured m;		/* GB/s: slow, NT, temporal */
	int store, slow;
} cases[] = {
	/* bench desc on the Zen 5 host: NT stores 0.8x the slow path. */
	{ "AMD Zen 5", { 18.9, 15.4, 19.5 }, TMP, 0 },
	/* The Intel host: cold 1 GiB, NT ~10.5 GB/s, cached ~7.3. */
	{ "Intel Emerald Rapids", { 6.5, 10.5, 7.3 }, NT, 0 },
	{ "Zen 1 class", { 7.0, 8.5, 6.9 }, NT, 0 },
	{ "a tie", { 20, 20, 20 }, NT, 0 },
	/* Within the margin: noise, not a win. */
	{ "temporal 2% ahead", { 10, 10, 10.2 }, NT, 0 },
	{ "temporal 4% ahead", { 10, 10, 10.4 }, TMP, 0 },
	{ "slow 2% ahead", { 10.2, 10, 9 }, NT, 0 },
	/* The slow path against the better of the two stores. */
	{ "slow ahead of NT only", { 11, 10, 11.1 }, TMP, 0 },
	{ "slow ahead of both", { 13, 10, 11 }, TMP, 1 },
	{ "slow ahead, NT best", { 13, 11, 9 }, NT, 1 },
	/* Temporal ahead of NT within the margin, slow ahead of both:
	 * the slow path, measured against the better store. */
	{ "slow ahead, stores tied", { 12, 10, 10.2 }, NT, 1 },
};

static void test_cases(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct memmig_tuning t = { .sz = sizeof(t), .desc_store = -1,
					   .desc_slow = -1 };

		memmig_desc_choose(&cases[i].m, &t);
		if (t.desc_store != cases[i].store || t.desc_slow != cases[i].slow)
			CUNIT_FAILF("%s: store %d slow %d, want %d %d", cases[i].what,
				    t.desc_store, t.desc_slow, cases[i].store,
				    cases[i].slow);
	}
}

/* A failed measurement changes nothing: the tuning keeps what it had. */
static void test_bad_figures(void)
{
	static const struct desc_measured bad[] = {
		{ 0, 10, 12 }, { 10, 0, 12 }, { 10, 12, 0 }, { -1, 10, 12 },
		{ NAN, 10, 12 }, { 10, NAN, 12 }, { 10, 12, INFINITY },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct memmig_tuning t = { .sz = sizeof(t), .desc_store = TMP,
					   .desc_slow = 1 };

		memmig_desc_choose(&bad[i], &t);
		CU_ASSERT_EQUAL(t.desc_store, TMP);
		CU_ASSERT_EQUAL(t.desc_slow, 1);
	}
}

/* Only the two descriptor fields are the choice's. */
static void test_other_fields(void)
{
	struct desc_measured m = { 18.9, 15.4, 19.5 };
	struct memmig_tuning t = { .sz = sizeof(t), .movsb_min = 1, .nt_min = 2,
				   .nt_prim = MEMMIG_PRIM_NT_AVX2 };

	memmig_desc_choose(&m, &t);
	CU_ASSERT_EQUAL(t.movsb_min, 1);
	CU_ASSERT_EQUAL(t.nt_min, 2);
	CU_ASSERT_EQUAL(t.nt_prim, MEMMIG_PRIM_NT_AVX2);
	CU_ASSERT_EQUAL(t.desc_store, TMP);
}

static CU_TestInfo choose_tests[] = {
	{ "stores and path per machine", test_cases },
	{ "bad figures change nothing", test_bad_figures },
	{ "the other fields are left alone", test_other_fields },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "descriptor init choice", .pTests = choose_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
