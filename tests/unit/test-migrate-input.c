/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bad input to regions, migrations and jobs: the right errno, and the
 * memory and its page frames unchanged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migrate-util.h"

/* ------------------------------------------------------------------ */
/* Bad input: the right errno, nothing changed.                         */

static struct mem victim;	/* filled; checked after every failed call */
static uint64_t victim_sum;
static uint64_t *victim_frames;

static void victim_unchanged(const char *what)
{
	uint64_t *now;

	mt_mem_intact(&victim, victim_sum, what);
	if (!pfn_ok)
		return;
	now = mt_pfns_read(victim.map, victim.len);
	if (!now || memcmp(now, victim_frames, victim.len / PAGE * 8))
		CUNIT_FAILF("%s: page frames changed", what);
	free(now);
}

#define EXPECT_RC(what, call, want)                                            \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_ != (want))                                             \
			CUNIT_FAILF("%s: %s = %d, want %d", what, #call, rc_,  \
				    (want));                                   \
		else                                                           \
			CU_PASS(#call);                                        \
		victim_unchanged(what);                                        \
	} while (0)

static int bad_init(void)
{
	if (mt_suite_init() || mt_mem_new(&victim, K_THP, 8 * MiB, true))
		return 1;
	victim_sum = mt_csum(victim.map, victim.len);
	victim_frames = mt_pfns_read(victim.map, victim.len);
	return 0;
}

static int bad_cleanup(void)
{
	mt_mem_free(&victim);
	free(victim_frames);
	victim_frames = NULL;
	return mt_suite_cleanup();
}

/* A region that must be refused, and out untouched. */
static int region_rc(int pid, uint64_t addr, uint64_t len, int backing)
{
	struct memmig_region_desc d = {
		.sz = sizeof(d), .pid = pid, .addr = addr, .len = len, .backing = backing,
	};
	struct memmig_region *r = (struct memmig_region *)&d;
	int rc = memmig_region_new(ctx, &d, &r);

	if (rc == 0)
		memmig_region_unref(r);
	else if (r != (struct memmig_region *)&d)
		CUNIT_FAILF("region_new(%#" PRIx64 ", %#" PRIx64 ") = %d wrote *out",
			    addr, len, rc);
	return rc;
}

static void test_bad_region_args(void)
{
	uint64_t a = (uintptr_t)victim.map, l = victim.len;
	struct memmig_region_desc d = { .sz = sizeof(d), .addr = a, .len = l };
	struct memmig_region *r;
	unsigned int before = mt_log_mark();

	EXPECT_RC("unaligned addr", region_rc(0, a + 8, l - PAGE, 0), -EINVAL);
	EXPECT_RC("unaligned len", region_rc(0, a, l - 100, 0), -EINVAL);
	EXPECT_RC("len 0", region_rc(0, a, 0, 0), -EINVAL);
	EXPECT_RC("wraps", region_rc(0, UINT64_MAX - PAGE + 1, 2 * PAGE, 0), -EINVAL);
	EXPECT_RC("wraps to 0", region_rc(0, UINT64_MAX - PAGE + 1, PAGE, 0), -EINVAL);
	EXPECT_RC("huge len", region_rc(0, a, UINT64_MAX - PAGE + 1, 0), -EINVAL);
	EXPECT_RC("backing 99", region_rc(0, a, l, 99), -EINVAL);
	EXPECT_RC("backing -1", region_rc(0, a, l, -1), -EINVAL);
	EXPECT_RC("pid -1", region_rc(-1, a, l, 0), -EINVAL);
	EXPECT_RC("declared shmem", region_rc(0, a, l, MEMMIG_BACKING_SHMEM), -EINVAL);
	EXPECT_RC("declared file", region_rc(0, a, l, MEMMIG_BACKING_FILE), -EINVAL);
	EXPECT_RC("declared hugetlb", region_rc(0, a, l, MEMMIG_BACKING_HUGETLB), -EINVAL);
	EXPECT_RC("NULL ctx", memmig_region_new(NULL, &d, &r), -EINVAL);
	EXPECT_RC("NULL desc", memmig_region_new(ctx, NULL, &r), -EINVAL);
	EXPECT_RC("NULL out", memmig_region_new(ctx, &d, NULL), -EINVAL);
	d.sz = 0;
	EXPECT_RC("sz 0", memmig_region_new(ctx, &d, &r), -EINVAL);
	/* And the library said why. */
	CU_ASSERT(mt_log_mark() > before);
	/* The right description is accepted. */
	EXPECT_RC("declared anon", region_rc(0, a, l, MEMMIG_BACKING_ANON), 0);
	EXPECT_RC("own pid", region_rc(getpid(), a, l, 0), 0);
}

static void test_bad_region_mappings(void)
{
	uint8_t *p = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t a = (uintptr_t)p;
	int fd = memfd_create("test-migrate-mixed", MFD_CLOEXEC);

	CU_ASSERT_FATAL(p != MAP_FAILED);
	memset(p, 0x5a, 8 * MiB);
	/* A hole in the middle. */
	CU_ASSERT_EQUAL(munmap(p + 2 * MiB, 2 * MiB), 0);
	EXPECT_RC("hole", region_rc(0, a, 8 * MiB, 0), -EFAULT);
	EXPECT_RC("in the hole", region_rc(0, a + 2 * MiB, PAGE, 0), -EFAULT);
	EXPECT_RC("before the hole", region_rc(0, a, 2 * MiB, 0), 0);
	/* memfd next to anonymous memory. */
	CU_ASSERT_FATAL(fd >= 0 && ftruncate(fd, 2 * MiB) == 0);
	CU_ASSERT_FATAL(mmap(p + 2 * MiB, 2 * MiB, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_FIXED, fd, 0) == p + 2 * MiB);
	EXPECT_RC("anon + memfd", region_rc(0, a, 8 * MiB, 0), -EINVAL);
	EXPECT_RC("anon + memfd, declared anon", region_rc(0, a + MiB, 2 * MiB,
							   MEMMIG_BACKING_ANON), -EINVAL);
	EXPECT_RC("memfd declared anon", region_rc(0, a + 2 * MiB, 2 * MiB,
						   MEMMIG_BACKING_ANON), -EINVAL);
	EXPECT_RC("memfd declared shmem", region_rc(0, a + 2 * MiB, 2 * MiB,
						    MEMMIG_BACKING_SHMEM), 0);
	EXPECT_RC("memfd, auto", region_rc(0, a + 2 * MiB, 2 * MiB, 0), 0);
	close(fd);
	/* Gone altogether. */
	CU_ASSERT_EQUAL(munmap(p, 8 * MiB), 0);
	EXPECT_RC("unmapped", region_rc(0, a, 8 * MiB, 0), -EFAULT);
	EXPECT_RC("unmapped page", region_rc(0, a + 4 * MiB, PAGE, 0), -EFAULT);
	/* Special mappings: the vdso. */
	{
		FILE *f = fopen("/proc/self/maps", "re");
		char line[512];
		uint64_t s, e;

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "[vdso]") &&
			    sscanf(line, "%" SCNx64 "-%" SCNx64, &s, &e) == 2)
				EXPECT_RC("vdso", region_rc(0, s, e - s, 0), -EINVAL);
		if (f)
			fclose(f);
	}
}

static void test_bad_pid(void)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid)
		_exit(0);
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &st, 0), pid);
	EXPECT_RC("gone pid", region_rc(pid, (uintptr_t)victim.map, victim.len, 0), -ESRCH);
	{
		struct memmig_region **list = NULL;
		unsigned int n = 0;

		EXPECT_RC("list of a gone pid", memmig_region_list_pid(ctx, pid, &list, &n),
			  -ESRCH);
	}
}

static void test_bad_opts(void)
{
	struct memmig_migrate_opts o;
	struct memmig_report *rep;
	struct memmig_region *r = NULL;
	struct memmig_job *job;
	uint64_t l = victim.len;

#define OPTS_RC(what, want, ...)                                                \
	do {                                                                   \
		o = mt_opts_of(MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 0); \
		__VA_ARGS__;                                                   \
		rep = (struct memmig_report *)&o;                              \
		job = (struct memmig_job *)&o;                                 \
		EXPECT_RC(what, memmig_migrate(r, &o, &rep), want);            \
		CU_ASSERT_PTR_EQUAL(rep, (struct memmig_report *)&o);          \
		EXPECT_RC(what, memmig_job_start(r, &o, &job), want);          \
		CU_ASSERT_PTR_EQUAL(job, (struct memmig_job *)&o);             \
	} while (0)

	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, victim.map, victim.len, 0, &r), 0);
	OPTS_RC("node 9999", -ENOENT, o.target_node = 9999);
	OPTS_RC("node -1", -ENOENT, o.target_node = -1);
	OPTS_RC("offset unaligned", -EINVAL, o.offset = 512);
	OPTS_RC("len unaligned", -EINVAL, o.len = PAGE + 8);
	OPTS_RC("offset at the end", -EINVAL, o.offset = l);
	OPTS_RC("offset beyond", -EINVAL, o.offset = l + PAGE);
	OPTS_RC("offset + len beyond", -EINVAL, o.offset = PAGE; o.len = l);
	OPTS_RC("len beyond", -EINVAL, o.len = l + PAGE);
	OPTS_RC("offset huge", -EINVAL, o.offset = UINT64_MAX - PAGE + 1; o.len = 2 * PAGE);
	OPTS_RC("len huge", -EINVAL, o.offset = PAGE; o.len = UINT64_MAX - PAGE + 1);
	OPTS_RC("strategy 3", -EINVAL, o.strategy = 3);
	OPTS_RC("strategy -1", -EINVAL, o.strategy = -1);
	OPTS_RC("flags 4", -EINVAL, o.flags = 4);
	OPTS_RC("flags ~0", -EINVAL, o.flags = ~0u);
	OPTS_RC("sz 0", -EINVAL, o.sz = 0);
	EXPECT_RC("NULL opts", memmig_migrate(r, NULL, NULL), -EINVAL);
	EXPECT_RC("NULL region", memmig_migrate(NULL, &o, NULL), -EINVAL);
	EXPECT_RC("NULL job", memmig_job_start(r, &o, NULL), -EINVAL);
	EXPECT_RC("cancel NULL", memmig_job_cancel(NULL), -EINVAL);
	EXPECT_RC("wait NULL", memmig_job_wait(NULL, NULL), -EINVAL);
	EXPECT_RC("progress NULL", memmig_job_get_progress(NULL, NULL), -EINVAL);
	EXPECT_RC("summary NULL", memmig_report_get_summary(NULL, NULL), -EINVAL);
	memmig_job_unref(NULL);
	memmig_report_unref(NULL);
	memmig_region_unref(NULL);
	memmig_region_list_free(NULL, 0);
	/* A good sub-range after all that, without the report. */
	o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 0);
	o.offset = l - PAGE;
	EXPECT_RC("last page, kernel", memmig_migrate(r, &o, NULL), 0);
	memmig_region_unref(r);
#undef OPTS_RC
}

/* ------------------------------------------------------------------ */

static CU_TestInfo bad_tests[] = {
	{ "region arguments", test_bad_region_args },
	{ "region mappings: holes, mixed, special", test_bad_region_mappings },
	{ "region of a gone pid", test_bad_pid },
	{ "migrate options", test_bad_opts },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	MT_SUITE("bad input", bad_init, bad_cleanup, bad_tests),
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return mt_main(suites);
}
