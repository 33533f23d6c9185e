/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cunit-main.h - the main() of every unit test program: register a
 * CU_SuiteInfo array, run it with CUnit's basic interface, and turn the
 * result into an automake test exit status:
 *   0 all passed, 1 a test failed, 77 skipped, 99 CUnit itself failed.
 */
#ifndef MEMMIG_CUNIT_MAIN_H
#define MEMMIG_CUNIT_MAIN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "memmig.h"

#define CUNIT_EXIT_SKIP 77
#define CUNIT_EXIT_ERROR 99

/*
 * Runs fn(arg) in a child of its own -- a case that may die of a signal, or
 * loop (killed after 30 s) -- and returns its wait status, or -1.
 */
static inline int cunit_in_child(int (*fn)(void *arg), void *arg)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		alarm(30);
		_exit(fn(arg));
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid ? status : -1;
}

/* Prints why the whole program is skipped; return its value from main(). */
static inline int cunit_skip(const char *reason)
{
	printf("SKIP: %s\n", reason);
	return CUNIT_EXIT_SKIP;
}

/*
 * Records a failed assertion with a formatted message (CUnit copies the
 * text), for checks inside loops where CU_ASSERT cannot say which case
 * failed.  Returns 0 so that it can end a check function.
 */
#define CUNIT_FAILF(...) cunit_failf(__LINE__, __FILE__, __VA_ARGS__)

__attribute__((format(printf, 3, 4))) static inline int
cunit_failf(unsigned int line, const char *file, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	CU_assertImplementation(CU_FALSE, line, msg, file, "", CU_FALSE);
	return 0;
}

/*
 * Failed cases found in loops: a test records the first CUNIT_MAX_REPORTS in
 * detail (when cunit_report() says so) and only counts the rest, which
 * cunit_reports_teardown() reports in one line.  Use the two as a suite's
 * pSetUpFunc and pTearDownFunc.
 */
#define CUNIT_MAX_REPORTS 10

static unsigned int cunit_reports __attribute__((unused));

static inline bool cunit_report(void)
{
	return cunit_reports++ < CUNIT_MAX_REPORTS;
}

static inline void cunit_reports_setup(void)
{
	cunit_reports = 0;
}

static inline void cunit_reports_teardown(void)
{
	if (cunit_reports > CUNIT_MAX_REPORTS)
		CUNIT_FAILF("%u more failed cases not shown",
			    cunit_reports - CUNIT_MAX_REPORTS);
}

static inline int cunit_main(CU_SuiteInfo *suites)
{
	unsigned int failed;
	CU_ErrorCode rc;

	if (CU_initialize_registry() != CUE_SUCCESS ||
	    CU_register_suites(suites) != CUE_SUCCESS) {
		fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return CUNIT_EXIT_ERROR;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	rc = CU_basic_run_tests();
	/* A suite whose init failed counts as failed; other errors are ours. */
	failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed() +
		 CU_get_number_of_suites_failed();
	if (rc != CUE_SUCCESS)
		fprintf(stderr, "CUnit: %s\n", CU_get_error_msg());
	CU_cleanup_registry();
	if (failed)
		return 1;
	return rc == CUE_SUCCESS ? 0 : CUNIT_EXIT_ERROR;
}

/*
 * True when libmemmig was built with the x86 primitives (not the portable
 * code of --enable-generic-arch or a non-x86 host): a CPU with every
 * feature then runs the movq loop.
 */
static inline bool memmig_test_x86_build(void)
{
	struct memmig_cpu_info all = { .sz = sizeof(all), .features = ~0ULL };

	return memmig_prim_supported(&all, MEMMIG_PRIM_MOVQ);
}

/*
 * cunit_main(suites) where have() finds what the tests need on this host,
 * else a skip that says why.  have() runs with *ctx a context of its own
 * (the tests' suites make theirs).
 */
static inline int cunit_main_if(CU_SuiteInfo *suites, struct memmig_ctx **ctx,
				bool (*have)(void), const char *why)
{
	bool ok;

	if (memmig_ctx_new(ctx))
		return CUNIT_EXIT_ERROR;
	ok = have();
	memmig_ctx_unref(*ctx);
	*ctx = NULL;
	return ok ? cunit_main(suites) : cunit_skip(why);
}

#endif
