/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The probing schedule of desc-probe.h fed the timings of hosts this test
 * need not run on: it keeps to the faster store whichever one the tuning
 * starts with, never times the first segment after a change of store,
 * follows a host that changes its ranking half-way, stays put on a tie,
 * and spends a small share of a long range on the losing store.
 */
#include "lib/desc/desc-probe.h"
#include "cunit-main.h"

#define NT MEMMIG_DESC_STORE_NT
#define TMP MEMMIG_DESC_STORE_TEMPORAL

/* GB/s of a store on segment i of a simulated host. */
typedef double (*host_fn)(int store, unsigned int i);

static double host_nt_fast(int store, unsigned int i)
{
	(void)i;
	return store == NT ? 60 : 35;	/* the Zen 5 host, NT ahead */
}

static double host_tmp_fast(int store, unsigned int i)
{
	(void)i;
	return store == NT ? 22 : 30;	/* the same host an hour before */
}

static double host_intel(int store, unsigned int i)
{
	(void)i;
	return store == NT ? 22 : 8.7;	/* bench desc on Emerald Rapids */
}

static double host_tie(int store, unsigned int i)
{
	return store == NT ? 30 : 30.5 + (i % 2) * 0.3;	/* within the margin */
}

/* NT ahead for the first 100 segments, then plain stores. */
static double host_flips(int store, unsigned int i)
{
	return i < 100 ? host_nt_fast(store, i) : host_tmp_fast(store, i);
}

struct run {
	uint64_t segs[2];
	int cur;			/* the steady store at the end */
	int cur_from;			/* the segment from which cur held */
	unsigned int untimed_ok;	/* untimed exactly after a change */
	unsigned int bad_timing;
};

/* n segments; untimed segments report a rate the schedule must not use. */
static struct run simulate(host_fn host, int tuned, unsigned int n)
{
	struct desc_probe p;
	struct run r = { .cur_from = 0 };
	int prev = -1;

	desc_probe_start(&p, tuned);
	for (unsigned int i = 0; i < n; i++) {
		bool timed;
		int s = desc_probe_next(&p, &timed), was = p.cur;

		if (timed != (s == prev))
			r.bad_timing++;
		/* An untimed segment's rate is garbage: 1000 GB/s. */
		desc_probe_record(&p, s, timed, timed ? host(s, i) : 1000);
		if (p.cur != was)
			r.cur_from = (int)i + 1;
		prev = s;
	}
	r.segs[NT] = p.segs[NT];
	r.segs[TMP] = p.segs[TMP];
	r.cur = p.cur;
	return r;
}

static void test_picks_faster(void)
{
	static const struct {
		const char *what;
		host_fn host;
		int tuned, want;
	} cases[] = {
		{ "NT ahead, tuned NT", host_nt_fast, NT, NT },
		{ "NT ahead, tuned temporal", host_nt_fast, TMP, NT },
		{ "temporal ahead, tuned NT", host_tmp_fast, NT, TMP },
		{ "temporal ahead, tuned temporal", host_tmp_fast, TMP, TMP },
		{ "a tie stays with NT", host_tie, NT, NT },
		{ "a tie stays with temporal", host_tie, TMP, TMP },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct run r = simulate(cases[k].host, cases[k].tuned, 200);

		if (r.cur != cases[k].want || r.bad_timing)
			CUNIT_FAILF("%s: ends on %d, want %d; %u segments timed wrongly",
				    cases[k].what, r.cur, cases[k].want, r.bad_timing);
		/* From the fifth segment on, the faster store writes. */
		if (cases[k].host != host_tie && r.segs[cases[k].want] < 180)
			CUNIT_FAILF("%s: %llu of 200 segments on the faster store",
				    cases[k].what,
				    (unsigned long long)r.segs[cases[k].want]);
	}
}

/* The host changes its ranking at segment 100: the schedule follows at
 * its next probe (here the one of segments 146-147: 4 to start, then 142
 * steady ones, NT being 1.7x ahead). */
static void test_follows_flip(void)
{
	struct run r = simulate(host_flips, NT, 600);

	CU_ASSERT_EQUAL(r.cur, TMP);
	CU_ASSERT_EQUAL(r.bad_timing, 0);
	if (r.cur_from < 100 || r.cur_from > 150)
		CUNIT_FAILF("temporal stores steady from segment %d", r.cur_from);
}

/* A long stable range: the losing store writes its two probe segments
 * at the start and two per probe, the probes spaced so that each costs
 * 1 % of the time between them: the slower the loser, the rarer. */
static void test_small_share(void)
{
	static const struct {
		host_fn host;
		int start;
		double slow_share;	/* at most, of 5000 segments */
	} cases[] = {
		{ host_nt_fast, TMP, 0.016 },	/* NT 1.7x ahead: every 142 */
		{ host_tmp_fast, NT, 0.028 },	/* 1.36x: every 72 */
		{ host_intel, NT, 0.008 },	/* 2.5x: every 300 */
	};
	struct run r = simulate(host_nt_fast, TMP, 5000);

	/* The majority: the store the table reports. */
	CU_ASSERT_EQUAL(desc_probe_majority(&(struct desc_probe){
		.segs = { [NT] = r.segs[NT], [TMP] = r.segs[TMP] } }), NT);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct run q = simulate(cases[k].host, cases[k].start, 5000);
		int fast = cases[k].host(NT, 0) > cases[k].host(TMP, 0) ? NT : TMP;

		CU_ASSERT_EQUAL(q.cur, fast);
		if (q.segs[!fast] > cases[k].slow_share * 5000)
			CUNIT_FAILF("case %zu: %llu of 5000 segments on the slower store",
				    k, (unsigned long long)q.segs[!fast]);
	}
	/* A 1.6 GB table on one thread (200 segments) where NT stores are
	 * 2.5x ahead: the first probe's two temporal segments, no more
	 * (backing off by doubling from 32 took six). */
	r = simulate(host_intel, NT, 200);
	CU_ASSERT_EQUAL(r.segs[TMP], 2);
}

static CU_TestInfo probe_tests[] = {
	{ "keeps to the faster store, whatever the start", test_picks_faster },
	{ "follows a host whose ranking changes", test_follows_flip },
	{ "the slower store's share of a long range", test_small_share },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "descriptor stores probed while writing", .pTests = probe_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
