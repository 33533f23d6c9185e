/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Jobs on real memory: progress to DONE, cancel at once and after the
 * first unit, unref of a running job, several jobs at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "migrate-util.h"

/* ------------------------------------------------------------------ */
/* Jobs: progress, cancel, several at once.                             */

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static struct mem big;		/* 1 GiB THP, shared by the job tests */
static uint64_t big_sum;

static int jobs_init(void)
{
	if (mt_suite_init())
		return 1;
	if (mt_mem_new(&big, K_THP, GiB, true))
		return 1;
	big_sum = mt_csum(big.map, big.len);
	return 0;
}

static int jobs_cleanup(void)
{
	mt_mem_free(&big);
	return mt_suite_cleanup();
}

static void test_job_progress(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 0);
	struct memmig_progress p = { .sz = sizeof(p) };
	struct memmig_report *rep = NULL, *rep2 = NULL;
	struct memmig_region *r = NULL;
	struct memmig_job *job = NULL;
	uint64_t last = 0, polls = 0, running = 0;
	bool ok = true;

	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, big.map, big.len, 0, &r), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_job_start(r, &o, &job), 0);
	for (;;) {
		if (memmig_job_get_progress(job, &p)) {
			CU_FAIL("get_progress");
			break;
		}
		polls++;
		if (p.bytes_done < last || p.bytes_done > p.bytes_total ||
		    p.bytes_total != big.len || p.elapsed_s < 0 || p.rate < 0 ||
		    (p.state != MEMMIG_JOB_RUNNING && p.state != MEMMIG_JOB_DONE)) {
			if (ok)
				CUNIT_FAILF("progress: done %" PRIu64 " after %" PRIu64
					    " of %" PRIu64 ", state %d, rate %g",
					    p.bytes_done, last, p.bytes_total, p.state,
					    p.rate);
			ok = false;
		}
		last = p.bytes_done;
		if (p.state == MEMMIG_JOB_DONE)
			break;
		running++;
		CU_ASSERT_EQUAL(p.result, 0);
		sleep_us(2000);
	}
	printf("\n  %" PRIu64 " progress polls, %" PRIu64 " while running ", polls,
	       running);
	CU_ASSERT(ok);
	CU_ASSERT_EQUAL(p.state, MEMMIG_JOB_DONE);
	CU_ASSERT_EQUAL(p.result, 0);
	EXPECT_EQ("job", "bytes_done at the end", p.bytes_done, big.len);
	CU_ASSERT(p.elapsed_s > 0);
	CU_ASSERT_EQUAL(memmig_job_wait(job, &rep), 0);
	/* Waiting again returns the same result and report. */
	CU_ASSERT_EQUAL(memmig_job_wait(job, &rep2), 0);
	CU_ASSERT_PTR_EQUAL(rep, rep2);
	CU_ASSERT_EQUAL(memmig_job_get_progress(job, &p), 0);
	CU_ASSERT(p.state == MEMMIG_JOB_DONE && p.result == 0);
	mt_mem_intact(&big, big_sum, "job");
	mt_check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_COPY, .addr = (uintptr_t)big.map,
		.len = big.len, .present = big.len / PAGE, .moved = big.len,
	}, "job");
	memmig_report_unref(rep);
	memmig_report_unref(rep2);
	memmig_job_unref(job);
	memmig_region_unref(r);
}

/*
 * Cancel once the first unit is done: what moved is exactly the units
 * whose frames changed, the rest stayed, and nothing is lost.
 */
static void test_job_cancel(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 1);
	struct memmig_region *r = NULL;
	int tries, cancelled = 0;

	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, big.map, big.len, 0, &r), 0);
	for (tries = 0; tries < 5 && !cancelled; tries++) {
		uint64_t first_seen;
		struct memmig_progress p = { .sz = sizeof(p) };
		struct memmig_report_summary s = { .sz = sizeof(s) };
		struct memmig_report *rep = NULL;
		struct memmig_job *job = NULL;
		uint64_t *frames = mt_pfns_read(big.map, big.len), moved;
		int rc;

		CU_ASSERT_EQUAL_FATAL(memmig_job_start(r, &o, &job), 0);
		while (!memmig_job_get_progress(job, &p) && !p.bytes_done &&
		       p.state == MEMMIG_JOB_RUNNING)
			;
		first_seen = p.bytes_done;
		CU_ASSERT_EQUAL(memmig_job_cancel(job), 0);
		rc = memmig_job_wait(job, &rep);
		CU_ASSERT(rc == -ECANCELED || rc == 0);
		CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
		CU_ASSERT_EQUAL(s.result, rc);
		moved = mt_moved_ranges(rep, (uintptr_t)big.map, big.len, NULL, "cancel");
		EXPECT_EQ("cancel", "sum of the moved ranges", moved, s.bytes_moved);
		EXPECT_EQ("cancel", "pages_failed", s.pages_failed, 0);
		EXPECT_EQ("cancel", "verified", s.pages_verified_on_target, big.len / PAGE);
		CU_ASSERT_EQUAL(memmig_job_get_progress(job, &p), 0);
		CU_ASSERT_EQUAL(p.state, MEMMIG_JOB_DONE);
		CU_ASSERT_EQUAL(p.result, rc);
		/* One worker walks in order: one range from the start, of
		 * whole units, and progress counted exactly those. */
		if (s.bytes_moved) {
			uint64_t a = 0, l = 0;

			EXPECT_EQ("cancel", "moved ranges", memmig_report_moved_count(rep), 1);
			memmig_report_get_moved(rep, 0, &a, &l);
			EXPECT_EQ("cancel", "moved from", a, (uintptr_t)big.map);
			CU_ASSERT(l % UNIT == 0);
		}
		EXPECT_EQ("cancel", "bytes_done", p.bytes_done, s.bytes_moved);
		mt_check_frames(rep, big.map, big.len, frames, "cancel");
		mt_mem_intact(&big, big_sum, "cancel");
		if (rc == -ECANCELED) {
			CU_ASSERT(s.bytes_moved < big.len);
			cancelled = s.bytes_moved > 0 && s.bytes_moved < big.len;
		} else {
			EXPECT_EQ("finished before the cancel", "bytes_moved",
				  s.bytes_moved, big.len);
		}
		printf("\n  try %d: %s, progress first at %" PRIu64 " MiB, %" PRIu64
		       " MiB moved ", tries + 1, rc ? "cancelled" : "finished",
		       first_seen >> 20, s.bytes_moved >> 20);
		/* Progress moves unit by unit, not a round's swap at a time: a
		 * cancel it drives lands within a few units of what it saw.
		 * Measured from what it saw, not from 0: on a busy host the
		 * polling thread may not run for many units (the worker, its
		 * prepare-ahead helper and a neighbour on 2 CPUs). */
		if (rc == -ECANCELED && s.bytes_moved >= first_seen + 32 * UNIT)
			CUNIT_FAILF("cancelled at progress %" PRIu64 " MiB, yet %" PRIu64
				    " MiB moved: progress lags the copy", first_seen >> 20,
				    s.bytes_moved >> 20);
		memmig_report_unref(rep);
		memmig_job_unref(job);
		free(frames);
	}
	CU_ASSERT(cancelled);
	memmig_region_unref(r);
}

/* Cancel before the job got to any unit: nothing moves. */
static void test_job_cancel_early(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 0);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	struct memmig_job *job = NULL;
	int rc;

	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, big.map, big.len, 0, &r), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_job_start(r, &o, &job), 0);
	CU_ASSERT_EQUAL(memmig_job_cancel(job), 0);
	CU_ASSERT_EQUAL(memmig_job_cancel(job), 0);	/* twice is fine */
	rc = memmig_job_wait(job, &rep);
	CU_ASSERT_EQUAL(rc, -ECANCELED);
	CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("early cancel", "sum of the moved ranges",
		  mt_moved_ranges(rep, (uintptr_t)big.map, big.len, NULL, "early cancel"),
		  s.bytes_moved);
	CU_ASSERT(s.bytes_moved < big.len);
	mt_mem_intact(&big, big_sum, "early cancel");
	memmig_report_unref(rep);
	memmig_job_unref(job);
	memmig_region_unref(r);
}

/* Letting go of a running job stops it; the memory is whole. */
static void test_job_unref_running(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 1);
	struct memmig_progress p = { .sz = sizeof(p) };
	struct memmig_region *r = NULL;
	struct memmig_job *job = NULL;

	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, big.map, big.len, 0, &r), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_job_start(r, &o, &job), 0);
	while (!memmig_job_get_progress(job, &p) && !p.bytes_done &&
	       p.state == MEMMIG_JOB_RUNNING)
		;
	memmig_job_unref(job);
	/* The region outlives the job's reference to it. */
	memmig_region_unref(r);
	mt_mem_intact(&big, big_sum, "unref of a running job");
}

/*
 * The copy strategy works in rounds of 512 units, each swapped in by one
 * thread after its workers: 1 GiB + 4 MiB is two rounds.  Half a GiB of
 * reserve: the first round's first worker takes it all as one run, the
 * rest comes from the area; every byte and frame is checked.
 */
static void test_job_rounds(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 2);
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, GiB + 4 * MiB, true), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_ctx_reserve(ctx, 0, GiB / 2), 0);
	mt_copy_all(ctx, &m, &o, "rounds");
	EXPECT_EQ("rounds", "reserve left", memmig_ctx_reserved(ctx, 0), 0);
	memmig_ctx_reserve(ctx, 0, 0);
	mt_mem_free(&m);
}

static void test_jobs_concurrent(void)
{
	static const struct {
		int kind, strategy;
		unsigned int flags, workers;
	} spec[] = {
		{ K_THP, MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 0 },
		{ K_4K, MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 1 },
		{ K_THP, MEMMIG_STRATEGY_KERNEL, 0, 2 },
		{ K_4K, MEMMIG_STRATEGY_KERNEL, 0, 0 },	/* half present */
	};
	enum { N = sizeof(spec) / sizeof(spec[0]) };
	struct memmig_region *r[N] = { 0 };
	struct memmig_job *job[N] = { 0 };
	uint64_t sum[N], *frames[N] = { 0 };
	struct mem m[N];

	for (int i = 0; i < N; i++) {
		int rc = i == 3 ? mt_mem_new_half(&m[i], 64 * MiB, &sum[i]) :
				  mt_mem_new(&m[i], spec[i].kind, 64 * MiB, true);

		CU_ASSERT_EQUAL_FATAL(rc, 0);
		if (i != 3)
			sum[i] = mt_csum(m[i].map, m[i].len);
		frames[i] = mt_pfns_read(m[i].map, m[i].len);
		CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m[i].map, m[i].len, 0, &r[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		struct memmig_migrate_opts o = mt_opts_of(spec[i].strategy, spec[i].flags,
							  spec[i].workers);

		CU_ASSERT_EQUAL(memmig_job_start(r[i], &o, &job[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		struct memmig_report *rep = NULL;
		char what[32];
		int rc;

		snprintf(what, sizeof(what), "concurrent job %d", i);
		if (!job[i])
			continue;
		rc = memmig_job_wait(job[i], &rep);
		EXPECT_EQ(what, "result", (int64_t)rc, 0);
		mt_check_report(rep, &(struct expect){
			.strategy = spec[i].strategy, .addr = (uintptr_t)m[i].map,
			.len = m[i].len,
			.present = m[i].len / PAGE / (i == 3 ? 2 : 1),
			.enoent = i == 3 ? m[i].len / PAGE / 2 : 0,
			.moved = spec[i].strategy == MEMMIG_STRATEGY_COPY ? m[i].len : 0,
		}, what);
		mt_check_frames(rep, m[i].map, m[i].len, frames[i], what);
		if (i == 3)
			mt_half_intact(&m[i], sum[i], what);
		else
			mt_mem_intact(&m[i], sum[i], what);
		memmig_report_unref(rep);
		memmig_job_unref(job[i]);
	}
	for (int i = 0; i < N; i++) {
		memmig_region_unref(r[i]);
		free(frames[i]);
		mt_mem_free(&m[i]);
	}
}

/* ------------------------------------------------------------------ */

static CU_TestInfo job_tests[] = {
	{ "1 GiB job: progress to DONE", test_job_progress },
	{ "cancel after the first unit", test_job_cancel },
	{ "cancel at once", test_job_cancel_early },
	{ "unref of a running job", test_job_unref_running },
	{ "two rounds, reserve and area destinations", test_job_rounds },
	{ "four jobs at once", test_jobs_concurrent },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	MT_SUITE("jobs", jobs_init, jobs_cleanup, job_tests),
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return mt_main(suites);
}
