/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Injected failures (MEMMIG_FAULT_DEST_ALLOC, MEMMIG_FAULT_MOVE_PAGES[_AFTER]):
 * the right result, failed ranges and errno table, the rest moved intact.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migrate-util.h"

/* ------------------------------------------------------------------ */
/* Injected failures.                                                   */

/* The failed ranges: each with errno err, in whole units; their pages. */
static uint64_t failed_pages(const struct memmig_report *rep, int err, const char *what)
{
	int n = memmig_report_failed_count(rep);
	uint64_t pages = 0;

	for (int i = 0; i < n; i++) {
		uint64_t a = 0, l = 0;
		int e = 0;

		CU_ASSERT_EQUAL(memmig_report_get_failed(rep, (unsigned int)i, &a, &l, &e), 0);
		if (e != err || a % UNIT || l % UNIT)
			CUNIT_FAILF("%s: failed range %d [%#" PRIx64 ", +%#" PRIx64
				    ") errno %d, want whole units with %d",
				    what, i, a, l, e, err);
		pages += l / PAGE;
	}
	CU_ASSERT_EQUAL(memmig_report_get_failed(rep, (unsigned int)n, NULL, NULL, NULL),
			-EINVAL);
	return pages;
}

/* The errno table agrees with errno_pages() and counts every page once. */
static void check_errno_table(const struct memmig_report *rep, const char *what)
{
	int n = memmig_report_errno_count(rep);

	for (int i = 0; i < n; i++) {
		uint64_t pages = 0;
		int e = 0;

		CU_ASSERT_EQUAL(memmig_report_get_errno(rep, (unsigned int)i, &e, &pages), 0);
		if (e <= 0 || !pages || memmig_report_errno_pages(rep, e) != pages)
			CUNIT_FAILF("%s: errno entry %d: errno %d, %" PRIu64 " pages", what,
				    i, e, pages);
	}
	CU_ASSERT_EQUAL(memmig_report_get_errno(rep, (unsigned int)n, NULL, NULL), -EINVAL);
}

static void dest_alloc_case(unsigned int workers, int sticky, unsigned int nth)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, workers);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, *frames, fpages;
	char what[64];
	struct mem m;
	int rc;

	snprintf(what, sizeof(what), "dest_alloc #%u%s, %u workers", nth,
		 sticky ? " sticky" : "", workers);
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 64 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
	frames = mt_pfns_read(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_DEST_ALLOC, nth, ENOMEM,
					     sticky), 0);
	rc = memmig_migrate(r, &o, &rep);
	mt_disarm();
	EXPECT_EQ(what, "result", (int64_t)rc, (int64_t)-ENOMEM);
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ(what, "summary result", (int64_t)s.result, (int64_t)-ENOMEM);
	/* nth - 1 allocations succeeded, and each made one unit move. */
	EXPECT_EQ(what, "bytes_moved", s.bytes_moved, (nth - 1) * UNIT);
	EXPECT_EQ(what, "sum of the moved ranges",
		  mt_moved_ranges(rep, (uintptr_t)m.map, m.len, NULL, what), (nth - 1) * UNIT);
	fpages = failed_pages(rep, ENOMEM, what);
	EXPECT_EQ(what, "pages_failed", s.pages_failed, fpages);
	EXPECT_EQ(what, "ENOMEM pages", memmig_report_errno_pages(rep, ENOMEM), fpages);
	CU_ASSERT(memmig_report_errno_pages(rep, ENOMEM) > 0);
	check_errno_table(rep, what);
	if (workers == 1) {
		uint64_t a = 0, l = 0;
		int e = 0;

		EXPECT_EQ(what, "moved ranges", memmig_report_moved_count(rep), 1);
		memmig_report_get_moved(rep, 0, &a, &l);
		EXPECT_EQ(what, "moved from", a, (uintptr_t)m.map);
		EXPECT_EQ(what, "moved length", l, (nth - 1) * UNIT);
		EXPECT_EQ(what, "failed ranges", memmig_report_failed_count(rep), 1);
		memmig_report_get_failed(rep, 0, &a, &l, &e);
		EXPECT_EQ(what, "failed from", a, (uintptr_t)m.map + (nth - 1) * UNIT);
		EXPECT_EQ(what, "failed length", l, UNIT);
		EXPECT_EQ(what, "failed errno", e, ENOMEM);
	} else {
		/* One failed unit per worker at most: both stop there. */
		CU_ASSERT(fpages >= UNIT / PAGE && fpages <= workers * UNIT / PAGE);
	}
	mt_check_frames(rep, m.map, m.len, frames, what);
	mt_mem_intact(&m, sum, what);
	mt_mem_usable(&m, what);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	free(frames);
	mt_mem_free(&m);
}

static void test_fault_dest_alloc(void)
{
	dest_alloc_case(1, 0, 5);
}

static void test_fault_dest_alloc_sticky(void)
{
	dest_alloc_case(1, 1, 5);
	dest_alloc_case(2, 1, 5);
}

/* One worker, no reserve, two CPUs or more: a helper prepares the
 * destinations up to 16 units ahead.  Its failure at the 20th reaches the
 * worker at that unit, after it ran past it; the rest stays intact. */
static void test_fault_dest_alloc_ahead(void)
{
	dest_alloc_case(1, 0, 20);
	dest_alloc_case(1, 1, 20);
}

/* After a fault fired, the next migration (re-armed or disarmed) works. */
static void test_fault_disarm(void)
{
	mt_run_case(&(struct mcase){ K_THP, 16 * MiB, 0, 16 * MiB, MEMMIG_STRATEGY_COPY,
				     MEMMIG_MIGRATE_FORCE, 0 });
	/* nth beyond the number of units: never fires. */
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_DEST_ALLOC, 100, EIO, 0), 0);
	mt_run_case(&(struct mcase){ K_THP, 16 * MiB, 0, 16 * MiB, MEMMIG_STRATEGY_COPY,
				     MEMMIG_MIGRATE_FORCE, 0 });
	mt_disarm();
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(NULL, 0, 1, ENOMEM, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_COUNT, 1, ENOMEM, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, -1, 1, ENOMEM, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, 0, 1, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, 0, 1, -ENOMEM, 0), -EINVAL);
}

/* The shared path of the copy strategy (mbind) counts allocations too. */
static void test_fault_dest_alloc_memfd(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 1);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, a = 0, l = 0;
	struct mem m;
	int e = 0;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_MEMFD, 32 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_DEST_ALLOC, 3, ENOMEM, 0), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), -ENOMEM);
	mt_disarm();
	mt_check_report(rep, &(struct expect){
		.result = -ENOMEM, .strategy = MEMMIG_STRATEGY_COPY,
		.addr = (uintptr_t)m.map, .len = m.len, .present = m.len / PAGE,
		.failed = UNIT / PAGE,
	}, "memfd dest_alloc");
	EXPECT_EQ("memfd dest_alloc", "failed ranges", memmig_report_failed_count(rep), 1);
	memmig_report_get_failed(rep, 0, &a, &l, &e);
	CU_ASSERT(a == (uintptr_t)m.map + 2 * UNIT && l == UNIT && e == ENOMEM);
	mt_mem_intact(&m, sum, "memfd dest_alloc");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
}

/*
 * move_pages(2) failing: on one node only units with pages elsewhere or
 * absent reach the system call, so the region is half present.  One call
 * covers 16 units of 4 KiB pages: the second call fails as a whole.
 * Each case starts from a fresh half-written region whose other half was
 * never touched (absent: -ENOENT on every kernel).  Reading that half maps
 * the shared zero page, whose move_pages status kernels give differently
 * (-EFAULT on some, a node on others; test_zero_pages).
 *
 * A failed call may have moved part of its pages (Linux 6.12 on a full
 * node), so where they are is asked: here every written page is on node
 * 0, the target, and none may be counted failed for the call's error.
 * Where a page did stay behind (a full second node) is test-multinode's.
 */
static void fault_move_pages_case(int point, int err, int sticky, int result,
				  const char *what)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, npages;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new_half(&m, 64 * MiB, &sum), 0);
	npages = m.len / PAGE;
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, point, sticky ? 1 : 2, err, sticky), 0);
	EXPECT_EQ(what, "result", memmig_migrate(r, &o, &rep), result);
	mt_disarm();
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ(what, "pages_failed", s.pages_failed, 0);
	EXPECT_EQ(what, "failed ranges", memmig_report_failed_count(rep), 0);
	EXPECT_EQ(what, "pages with the call's errno", memmig_report_errno_pages(rep, err), 0);
	EXPECT_EQ(what, "bytes_moved", s.bytes_moved, 0);
	EXPECT_EQ(what, "max node", memmig_report_max_node(rep), 0);
	EXPECT_EQ(what, "verified", s.pages_verified_on_target, npages / 2);
	if (!sticky)	/* every call reached the pages: all absent ones said so */
		EXPECT_EQ(what, "ENOENT pages", memmig_report_errno_pages(rep, ENOENT),
			  npages / 2);
	check_errno_table(rep, what);
	mt_half_intact(&m, sum, what);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
}

static void test_fault_move_pages(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum;
	struct mem m;

	/* The second call fails before the kernel sees it: nothing was left
	 * off the target, so the job did all it had to. */
	fault_move_pages_case(MEMMIG_FAULT_MOVE_PAGES, ENOMEM, 0, 0, "move_pages ENOMEM");
	/* Another errno ends the job at once, whatever the pages say. */
	fault_move_pages_case(MEMMIG_FAULT_MOVE_PAGES, EIO, 1, -EIO, "move_pages EIO");

	/* All there already: move_pages is never called, nothing fails. */
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_MOVE_PAGES, 1, ENOMEM, 1), 0);
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 16 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	mt_disarm();
	CU_ASSERT_EQUAL(memmig_report_errno_pages(rep, ENOMEM), 0);
	mt_mem_intact(&m, sum, "move_pages armed, all on target");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
}

/*
 * The kernel ran the call, then failed it with its status array unwritten
 * (garbage here): the statuses must come from asking, not from the array
 * nor from the call's error.
 */
static void test_fault_move_pages_after(void)
{
	fault_move_pages_case(MEMMIG_FAULT_MOVE_PAGES_AFTER, ENOMEM, 0, 0,
			      "move_pages_after ENOMEM");
	fault_move_pages_case(MEMMIG_FAULT_MOVE_PAGES_AFTER, ENOMEM, 1, 0,
			      "move_pages_after ENOMEM sticky");
}

/*
 * A page the kernel could not take off its LRU list (reclaim, compaction
 * or khugepaged had it) it skips with -EBUSY in its status, and the call
 * returns 0: asked again, it is where it should be (here, one node: where
 * it was), and nothing failed.  That it moves when asked again, and what a
 * page busy every time reports, is test-multinode's.
 */
static void test_fault_move_pages_busy(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	const char *what = "move_pages_busy";
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new_half(&m, 16 * MiB, &sum), 0);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_MOVE_PAGES_BUSY, 1, EBUSY, 0), 0);
	EXPECT_EQ(what, "result", memmig_migrate(r, &o, &rep), 0);
	mt_disarm();
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ(what, "pages_failed", s.pages_failed, 0);
	EXPECT_EQ(what, "pages failed busy", memmig_report_failed_errno_pages(rep, EBUSY), 0);
	EXPECT_EQ(what, "verified", s.pages_verified_on_target, m.len / PAGE / 2);
	check_errno_table(rep, what);
	mt_half_intact(&m, sum, what);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
}

/*
 * Memory read but never written maps the shared zero page.  Kernels answer
 * move_pages' query for it differently: -EFAULT (it cannot move), or the
 * node of the zero page (seen on some 6.18 hosts).  Either way there is
 * nothing to move: no failure, no byte moved, the memory still reads zero,
 * with either strategy.  Prints which behaviour this kernel has.
 */
static void test_zero_pages(void)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	int strategies[] = { MEMMIG_STRATEGY_KERNEL, MEMMIG_STRATEGY_COPY };
	void *page;
	int st = 0;
	struct mem m;

	for (int i = 0; i < 2; i++) {
		struct memmig_migrate_opts o = mt_opts_of(strategies[i], MEMMIG_MIGRATE_FORCE, 1);

		CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_4K, 8 * MiB, false), 0);
		CU_ASSERT_FATAL(mt_all_zero(m.map, m.len));	/* maps the zero page */
		page = m.map;
		CU_ASSERT_EQUAL(syscall(SYS_move_pages, 0, 1, &page, NULL, &st, 0), 0);
		if (i == 0)
			printf("\n    this kernel's move_pages status for the zero page: %d (%s) ",
			       st, st == -EFAULT ? "-EFAULT" : st >= 0 ? "a node" : strerror(-st));
		CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
		CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
		CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
		EXPECT_EQ("zero pages", "pages_failed", s.pages_failed, 0);
		EXPECT_EQ("zero pages", "failed ranges", memmig_report_failed_count(rep), 0);
		if (strategies[i] == MEMMIG_STRATEGY_KERNEL)
			EXPECT_EQ("zero pages", "bytes_moved", s.bytes_moved, 0);
		CU_ASSERT(mt_all_zero(m.map, m.len));
		memmig_report_unref(rep);
		rep = NULL;
		memmig_region_unref(r);
		mt_mem_free(&m);
	}
}

/*
 * A page lost under its mapping (a poison marker: SIGBUS on access, as
 * after a memory error) in the middle of a copy migration: the guarded
 * copy survives it, the kernel moves the unit around it, the report names
 * exactly that page, and it still faults afterwards: nothing made it up.
 */
static void test_lost_page(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 2);
	const uint64_t bad = 5 * MiB + 7 * PAGE;
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t a = 0, l = 0, good;
	uint8_t probe[PAGE];
	struct mem m;
	int e = 0, rc;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 16 * MiB, true), 0);
	rc = memmig_poison_mark(ctx, m.map + bad, PAGE);
	if (rc == -EOPNOTSUPP) {
		printf("  (no UFFDIO_POISON in this kernel: not tested)\n");
		mt_mem_free(&m);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("lost page", "pages_failed", s.pages_failed, 1);
	EXPECT_EQ("lost page", "EHWPOISON pages",
		  memmig_report_errno_pages(rep, EHWPOISON), 1);
	EXPECT_EQ("lost page", "failed ranges", memmig_report_failed_count(rep), 1);
	memmig_report_get_failed(rep, 0, &a, &l, &e);
	CU_ASSERT(a == (uintptr_t)m.map + bad && l == PAGE && e == EHWPOISON);
	/* Every other byte is the one written. */
	good = mt_first_bad(m.map, bad, m.seed, 0) < 0 &&
	       mt_first_bad(m.map + bad + PAGE, m.len - bad - PAGE, m.seed,
			    (bad + PAGE) / 8) < 0;
	CU_ASSERT(good);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, probe, m.map + bad, PAGE, NULL), PAGE);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
}

/*
 * The same with SIGBUS blocked in the thread that starts the job, as in
 * QEMU, whose threads read it from a signalfd (the workers inherit the
 * mask): the guarded copy must not die of the fault.  In a child: before
 * the fix it was killed.  Exit 0 when the report and the bytes are right.
 */
static int lost_page_blocked_child(void *unused)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 2);
	const uint64_t bad = 3 * MiB + 5 * PAGE;
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	sigset_t bus, now;
	struct mem m;
	int rc;

	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	pthread_sigmask(SIG_BLOCK, &bus, NULL);
	if (mt_mem_new(&m, K_THP, 8 * MiB, true))
		return 10;
	rc = memmig_poison_mark(ctx, m.map + bad, PAGE);
	if (rc == -EOPNOTSUPP)
		return 77;
	if (rc || mt_region_of(ctx, 0, m.map, m.len, 0, &r))
		return 11;
	if (memmig_migrate(r, &o, &rep))
		return 12;
	if (memmig_report_errno_pages(rep, EHWPOISON) != 1)
		return 13;
	if (mt_first_bad(m.map, bad, m.seed, 0) >= 0 ||
	    mt_first_bad(m.map + bad + PAGE, m.len - bad - PAGE, m.seed, (bad + PAGE) / 8) >= 0)
		return 14;
	pthread_sigmask(SIG_BLOCK, NULL, &now);
	return sigismember(&now, SIGBUS) == 1 ? 0 : 15;
}

static void test_lost_page_blocked(void)
{
	int status = cunit_in_child(lost_page_blocked_child, NULL);

	CU_ASSERT_FATAL(status != -1);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		printf("  (no UFFDIO_POISON in this kernel: not tested)\n");
	else if (WIFSIGNALED(status))
		CUNIT_FAILF("SIGBUS blocked: the job was killed by signal %d", WTERMSIG(status));
	else if (WEXITSTATUS(status))
		CUNIT_FAILF("SIGBUS blocked: exit %d", WEXITSTATUS(status));
}

/*
 * A page unmapped after the region was registered: the job fails, and the
 * report says which page and why (EFAULT), not "nothing failed".  Every
 * other page keeps its bytes.
 */
static void test_unmapped_page(void)
{
	const int strategies[] = { MEMMIG_STRATEGY_COPY, MEMMIG_STRATEGY_KERNEL };
	const uint64_t hole = 3 * MiB + 5 * PAGE;

	for (int i = 0; i < 2; i++) {
		struct memmig_migrate_opts o = mt_opts_of(strategies[i], MEMMIG_MIGRATE_FORCE, 1);
		struct memmig_report_summary s = { .sz = sizeof(s) };
		struct memmig_report *rep = NULL;
		struct memmig_region *r = NULL;
		uint64_t a = 0, l = 0;
		struct mem m;
		int e = 0, rc;

		CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_4K, 8 * MiB, true), 0);
		CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
		CU_ASSERT_EQUAL_FATAL(munmap(m.map + hole, PAGE), 0);
		rc = memmig_migrate(r, &o, &rep);
		CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
		printf("  %s: rc %d, pages_failed %llu, failed ranges %d\n",
		       i ? "kernel" : "copy", rc, (unsigned long long)s.pages_failed,
		       memmig_report_failed_count(rep));
		CU_ASSERT(rc == -EFAULT || rc == 0);
		EXPECT_EQ("unmapped page", "pages_failed", s.pages_failed, 1);
		EXPECT_EQ("unmapped page", "EFAULT pages", memmig_report_errno_pages(rep, EFAULT), 1);
		/* The copy (forced) moved the rest, the hole's unit too; the
		 * kernel leaves what is on the target already. */
		if (strategies[i] == MEMMIG_STRATEGY_COPY)
			EXPECT_EQ("unmapped page", "bytes_moved", s.bytes_moved, m.len - PAGE);
		if (memmig_report_failed_count(rep) >= 1) {
			memmig_report_get_failed(rep, 0, &a, &l, &e);
			CU_ASSERT(a == (uintptr_t)m.map + hole && l == PAGE && e == EFAULT);
		}
		CU_ASSERT(mt_first_bad(m.map, hole, m.seed, 0) < 0);
		CU_ASSERT(mt_first_bad(m.map + hole + PAGE, m.len - hole - PAGE, m.seed,
				       (hole + PAGE) / 8) < 0);
		memmig_report_unref(rep);
		memmig_region_unref(r);
		mt_mem_free(&m);
	}
}

/* ------------------------------------------------------------------ */

static CU_TestInfo fault_tests[] = {
	{ "copy: a page lost under its mapping", test_lost_page },
	{ "copy: the same, SIGBUS blocked (a VMM's thread)", test_lost_page_blocked },
	{ "a page unmapped after registration: reported", test_unmapped_page },
	{ "dest_alloc: 5th allocation fails", test_fault_dest_alloc },
	{ "dest_alloc: sticky, 1 and 2 workers", test_fault_dest_alloc_sticky },
	{ "dest_alloc: the 20th, prepared ahead", test_fault_dest_alloc_ahead },
	{ "dest_alloc: memfd (mbind path)", test_fault_dest_alloc_memfd },
	{ "disarmed and unreached faults", test_fault_disarm },
	{ "move_pages: ENOMEM, EIO, not reached", test_fault_move_pages },
	{ "move_pages_after: placement asked, not assumed", test_fault_move_pages_after },
	{ "move_pages_busy: a page skipped as busy is asked again", test_fault_move_pages_busy },
	{ "zero pages: nothing to move, whatever the kernel says", test_zero_pages },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	MT_SUITE("fault injection", mt_suite_init, mt_suite_cleanup, fault_tests),
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return mt_main(suites);
}
