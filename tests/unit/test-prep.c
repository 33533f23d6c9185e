/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The copy strategy's prepare-ahead helper (src/lib/migrate/prep.c), with
 * callbacks that record who claimed and prepared each unit: claims in
 * order and within the window, each unit prepared once, each result the
 * worker's, and a worker that catches up preparing units itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cunit-main.h"
#include "lib/migrate/prep.h"

#define NUNITS 64
#define FIRST 5		/* units [FIRST, FIRST + NUNITS) */

struct rec {
	size_t window;
	long prepare_us;	/* each prepare sleeps this long */
	atomic_size_t at;	/* the worker's unit, as it last said */
	size_t claims[NUNITS];	/* in the order claimed */
	atomic_size_t nclaims;
	atomic_int prepared[NUNITS];
	atomic_int by_worker;
	atomic_int beyond_window;	/* claims past at + window */
	pthread_t worker;
};

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

	nanosleep(&ts, NULL);
}

/* Unit results to tell apart: claims of every 7th fail, prepares of every
 * 11th. */
static int claim_rc(size_t i)
{
	return i % 7 == 3 ? -ENOMEM : 0;
}

static int prepare_rc(size_t i)
{
	return i % 11 == 5 ? -EIO : 0;
}

static int rec_claim(void *arg, size_t i)
{
	struct rec *r = arg;

	/* Claims run one at a time: a plain store in order. */
	r->claims[atomic_fetch_add(&r->nclaims, 1)] = i;
	if (i >= atomic_load(&r->at) + r->window)
		atomic_fetch_add(&r->beyond_window, 1);
	return claim_rc(i);
}

static int rec_prepare(void *arg, size_t i)
{
	struct rec *r = arg;

	atomic_fetch_add(&r->prepared[i - FIRST], 1);
	if (pthread_equal(pthread_self(), r->worker))
		atomic_fetch_add(&r->by_worker, 1);
	sleep_us(r->prepare_us);
	return prepare_rc(i);
}

/* The worker's walk: each unit's result in order, copy_us a unit. */
static void walk(struct rec *r, struct memmig_prep *p, size_t upto, long copy_us)
{
	for (size_t i = FIRST; i < upto; i++) {
		int want = claim_rc(i) ? claim_rc(i) : prepare_rc(i);
		int rc;

		atomic_store(&r->at, i);
		rc = memmig_prep_wait(p, i);
		if (rc != want)
			CUNIT_FAILF("unit %zu: result %d, want %d", i, rc, want);
		sleep_us(copy_us);
	}
}

static void check_claims(const struct rec *r, size_t upto)
{
	size_t n = atomic_load(&r->nclaims);

	CU_ASSERT(n >= upto - FIRST && n <= NUNITS);
	for (size_t k = 0; k < n; k++)
		if (r->claims[k] != FIRST + k)
			CUNIT_FAILF("claim %zu was unit %zu, want %zu", k, r->claims[k], FIRST + k);
	for (size_t k = 0; k < NUNITS; k++) {
		int want = k < n && !claim_rc(FIRST + k) ? 1 : 0;

		if (atomic_load(&r->prepared[k]) != want)
			CUNIT_FAILF("unit %zu prepared %d times, want %d", FIRST + k,
				    atomic_load(&r->prepared[k]), want);
	}
	CU_ASSERT_EQUAL(atomic_load(&r->beyond_window), 0);
}

/* The helper with a window and a prepare time, and the worker walking
 * units [FIRST, FIRST + n) at copy_us a unit; then the claims checked. */
static void run(struct rec *r, size_t window, long prepare_us, size_t n, long copy_us)
{
	struct memmig_prep *p = NULL;

	memset(r, 0, sizeof(*r));
	r->window = window;
	r->prepare_us = prepare_us;
	atomic_store(&r->at, FIRST);
	r->worker = pthread_self();
	CU_ASSERT_EQUAL_FATAL(memmig_prep_start(FIRST, FIRST + NUNITS, window, rec_claim,
						rec_prepare, r, &p), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	walk(r, p, FIRST + n, copy_us);
	memmig_prep_stop(p);
	check_claims(r, FIRST + n);
}

/*
 * A slow worker: the helper keeps ahead, within its window.  Which thread
 * prepares a unit is the scheduler's (on a busy host the helper may sleep
 * past a copy, and the worker then prepares its unit): only the claims,
 * their order and window, and the results are the mechanism's.
 */
static void test_helper_ahead(void)
{
	struct rec r;

	run(&r, 4, 0, NUNITS, 1000);
}

/*
 * A worker that copies in no time, a prepare of 2 ms: the worker prepares
 * units itself instead of waiting for the helper (about half of them).
 */
static void test_worker_shares(void)
{
	struct rec r;

	run(&r, 4, 2000, NUNITS, 0);
	CU_ASSERT(atomic_load(&r.by_worker) > 0);
	printf("\n  the worker prepared %d of %d units\n", atomic_load(&r.by_worker), NUNITS);
}

/* A window of one: only the worker's own unit is ever claimed. */
static void test_window_one(void)
{
	struct rec r;

	run(&r, 1, 200, NUNITS, 100);
}

/* Stopped part way (a cancelled job): no unit prepared twice, none past
 * the window of the worker's last unit. */
static void test_stop_early(void)
{
	struct rec r;

	run(&r, 8, 500, 10, 0);
	CU_ASSERT(atomic_load(&r.nclaims) <= 10 - 1 + 8);
}

static CU_TestInfo tests[] = {
	{ "a slow worker: every unit claimed in order, prepared once", test_helper_ahead },
	{ "a worker that catches up prepares units itself", test_worker_shares },
	{ "a window of one unit", test_window_one },
	{ "stopped part way", test_stop_early },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "prepare ahead", .pTests = tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
