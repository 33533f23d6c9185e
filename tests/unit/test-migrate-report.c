/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A report's failed ranges are bounded (issue 34).  When one page in two
 * fails -- in the multi-node tier, a process's pages shared copy-on-write
 * with a child (guest-daemon.sh); here, on any host, pages unmapped after
 * the region was planned -- each failed page is a range of its own: a
 * report kept every one (32753 ranges here, about 1.8 MB of JSON in memmigd's
 * job and its event).  It now keeps the first MEMMIG_REPORT_MAX_FAILED_RANGES
 * and counts the others, exactly: pages_failed and the errno table still
 * cover every page, adjacent failed pages with one errno are one range,
 * also across two regions of a move, and the JSON stays small.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <json-c/json.h>

#include "migrate-util.h"
#include "proto/report-json.h"

#define NPAGES	65536ULL		/* 256 MiB */
/* Where the memory goes: far below the mappings the library and glibc
 * make meanwhile, which the kernel places top-down in the highest gap that
 * fits -- one of the holes, were the memory among them. */
#define LOW_ADDR ((void *)0x100000000000ULL)
#define MAXR	MEMMIG_REPORT_MAX_FAILED_RANGES
#define JSON_MAX (16 * 1024)		/* the report's JSON, bytes, at most */

struct area {
	uint8_t *map;
	uint64_t len;
};

/* NPAGES present 4 KiB pages, low in the address space. */
static int mem_new(struct area *m)
{
	m->len = NPAGES * PAGE;
	m->map = mmap(LOW_ADDR, m->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m->map == MAP_FAILED)
		return -1;
	madvise(m->map, m->len, MADV_NOHUGEPAGE);
	for (uint64_t i = 0; i < NPAGES; i++)
		m->map[i * PAGE] = (uint8_t)i | 1;
	return 0;
}

static void mem_free(struct area *m)
{
	munmap(m->map, m->len);
}

struct holes {
	uint64_t pages, ranges;		/* unmapped: pages, and ranges of them */
	uint64_t kept_pages;		/* in the first MAXR ranges */
	uint64_t first[MAXR][2];	/* those ranges: first page, pages */
};

/* Unmaps pages [p, p + n) of m, one range of the expected list. */
static void hole(struct area *m, struct holes *h, uint64_t p, uint64_t n)
{
	CU_ASSERT_EQUAL_FATAL(munmap(m->map + p * PAGE, n * PAGE), 0);
	if (h->ranges < MAXR) {
		h->first[h->ranges][0] = p;
		h->first[h->ranges][1] = n;
		h->kept_pages += n;
	}
	h->ranges++;
	h->pages += n;
}

/* Every odd page in [from, to). */
static void odd_holes(struct area *m, struct holes *h, uint64_t from, uint64_t to)
{
	for (uint64_t p = from | 1; p < to; p += 2)
		hole(m, h, p, 1);
}

/* The report against the holes, and its JSON. */
static void check(const struct memmig_report *rep, const struct area *m, const struct holes *h,
		  const char *what)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct json_object *o, *failed;
	const char *text;
	int n = memmig_report_failed_count(rep);
	size_t bytes;

	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	printf("  %s: %" PRIu64 " pages failed, %d ranges kept, %" PRIu64 " ranges (%" PRIu64
	       " pages) omitted\n", what, s.pages_failed, n, s.failed_ranges_omitted,
	       s.failed_pages_omitted);
	EXPECT_EQ(what, "pages_failed", s.pages_failed, h->pages);
	EXPECT_EQ(what, "EFAULT pages", memmig_report_errno_pages(rep, EFAULT), h->pages);
	EXPECT_EQ(what, "failed EFAULT pages", memmig_report_failed_errno_pages(rep, EFAULT),
		  h->pages);
	EXPECT_EQ(what, "failed ranges kept", n, MAXR);
	EXPECT_EQ(what, "failed_ranges_omitted", s.failed_ranges_omitted, h->ranges - MAXR);
	EXPECT_EQ(what, "failed_pages_omitted", s.failed_pages_omitted, h->pages - h->kept_pages);
	for (int i = 0; i < n && i < MAXR; i++) {
		uint64_t a = 0, l = 0;
		int e = 0;

		CU_ASSERT_EQUAL(memmig_report_get_failed(rep, (unsigned int)i, &a, &l, &e), 0);
		if (a != (uintptr_t)m->map + h->first[i][0] * PAGE || l != h->first[i][1] * PAGE ||
		    e != EFAULT) {
			CUNIT_FAILF("%s: failed range %d: [%#" PRIx64 ", +%#" PRIx64 ") errno %d, "
				    "want page %" PRIu64 ", %" PRIu64 " pages, EFAULT", what, i,
				    a, l, e, h->first[i][0], h->first[i][1]);
			break;
		}
	}
	CU_ASSERT_EQUAL(memmig_report_get_failed(rep, (unsigned int)n, NULL, NULL, NULL), -EINVAL);

	o = report_json(rep);
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	bytes = strlen(text);
	printf("  %s: the report's JSON: %zu bytes\n", what, bytes);
	CU_ASSERT(bytes < JSON_MAX);
	CU_ASSERT_FATAL(json_object_object_get_ex(o, "failed_ranges", &failed));
	EXPECT_EQ(what, "JSON failed_ranges", json_object_array_length(failed), MAXR);
	EXPECT_EQ(what, "JSON failed_ranges_omitted",
		  json_object_get_int64(json_object_object_get(o, "failed_ranges_omitted")),
		  h->ranges - MAXR);
	EXPECT_EQ(what, "JSON failed_pages_omitted",
		  json_object_get_int64(json_object_object_get(o, "failed_pages_omitted")),
		  h->pages - h->kept_pages);
	EXPECT_EQ(what, "JSON pages_failed",
		  json_object_get_int64(json_object_object_get(o, "pages_failed")), h->pages);
	json_object_put(o);
}

/*
 * One job: 16 adjacent pages unmapped (one range), then every other page
 * from page 32 on (32752 ranges of a page).
 */
static void test_job(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 2);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	struct holes h = { 0 };
	struct area m;
	int rc;

	CU_ASSERT_EQUAL_FATAL(mem_new(&m), 0);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	hole(&m, &h, 0, 16);
	odd_holes(&m, &h, 32, NPAGES);
	rc = memmig_migrate(r, &o, &rep);
	CU_ASSERT(rc == -EFAULT || rc == 0);
	CU_ASSERT_FATAL(rep != NULL);
	check(rep, &m, &h, "one job");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mem_free(&m);
}

/*
 * A move of two ranges, each a region with a report of its own that the
 * move adds up: every other page of each half, and 16 adjacent pages
 * across the two, which are one range in the move's report.  The first
 * half alone has more ranges than a report keeps.
 */
static void test_move(void)
{
	const uint64_t half = NPAGES / 2;
	struct memmig_range ranges[2];
	struct memmig_move_opts o = {
		.sz = sizeof(o), .pid = getpid(), .ranges = ranges, .nranges = 2,
		.target_node = 0, .strategy = MEMMIG_STRATEGY_KERNEL, .workers = 2,
	};
	struct memmig_report *rep = NULL;
	struct memmig_move *mv = NULL;
	struct holes h = { 0 };
	struct area m;
	int rc;

	CU_ASSERT_EQUAL_FATAL(mem_new(&m), 0);
	ranges[0] = (struct memmig_range){ (uintptr_t)m.map, half * PAGE };
	ranges[1] = (struct memmig_range){ (uintptr_t)m.map + half * PAGE, half * PAGE };
	CU_ASSERT_EQUAL_FATAL(memmig_move_new(ctx, &o, &mv), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_move_plan(mv), 0);
	odd_holes(&m, &h, 0, half - 9);
	hole(&m, &h, half - 8, 16);
	odd_holes(&m, &h, half + 9, NPAGES);
	CU_ASSERT_EQUAL_FATAL(memmig_move_start(mv), 0);
	rc = memmig_move_wait(mv, &rep);
	CU_ASSERT(rc == -EFAULT || rc == 0);
	CU_ASSERT_FATAL(rep != NULL);
	check(rep, &m, &h, "a move of two regions");
	memmig_report_unref(rep);
	memmig_move_unref(mv);
	mem_free(&m);
}

static CU_TestInfo report_tests[] = {
	{ "a job: one page in two fails, the failed ranges bounded", test_job },
	{ "a move of two regions: the same, added up", test_move },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	MT_SUITE("report bounds", mt_suite_init, mt_suite_cleanup, report_tests),
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return mt_main(suites);
}
