/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reserves of destination memory, region lists, other processes and an
 * unprivileged caller.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migrate-util.h"

#define NOBODY 65534

/* ------------------------------------------------------------------ */
/* Reserve.                                                             */

static void test_reserve(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 0);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	struct memmig_ctx *c;
	uint64_t sum;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_reserved(c, 0), 0);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 9999, 2 * MiB), -ENOENT);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, -1, 2 * MiB), -ENOENT);
	CU_ASSERT_EQUAL(memmig_ctx_reserved(c, 9999), 0);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(NULL, 0, 2 * MiB), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_reserved(NULL, 0), 0);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 0, 64 * MiB), 0);
	EXPECT_EQ("reserve", "reserved", memmig_ctx_reserved(c, 0), 64 * MiB);

	/* 16 whole units take 16 chunks. */
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 32 * MiB, true), 0);
	mt_copy_all(c, &m, &o, "from the reserve");
	EXPECT_EQ("reserve", "reserved after 32 MiB", memmig_ctx_reserved(c, 0), 32 * MiB);

	/* Partial head and tail units do not take whole chunks. */
	sum = mt_csum(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(c, 0, m.map + PAGE, 8 * MiB, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	EXPECT_EQ("reserve", "reserved after partial units", memmig_ctx_reserved(c, 0),
		  26 * MiB);
	mt_mem_intact(&m, sum, "partial units from the reserve");
	EXPECT_EQ("reserve", "partial units moved",
		  mt_moved_ranges(rep, (uintptr_t)m.map + PAGE, 8 * MiB, NULL, "partial"),
		  8 * MiB);
	memmig_report_unref(rep);
	rep = NULL;
	memmig_region_unref(r);
	r = NULL;

	/* Calls add up, in whole units; len 0 frees. */
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 0, 1), 0);
	EXPECT_EQ("reserve", "after 1 byte more", memmig_ctx_reserved(c, 0), 28 * MiB);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 0, 0), 0);
	EXPECT_EQ("reserve", "after len 0", memmig_ctx_reserved(c, 0), 0);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 0, 0), 0);
	/* An impossible size fails and reserves nothing. */
	CU_ASSERT(memmig_ctx_reserve(c, 0, UINT64_MAX) < 0);
	CU_ASSERT(memmig_ctx_reserve(c, 0, UINT64_MAX - 4 * MiB) < 0);
	EXPECT_EQ("reserve", "after impossible sizes", memmig_ctx_reserved(c, 0), 0);

	/* Without a reserve the copy still works. */
	sum = mt_csum(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(c, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, NULL), 0);
	mt_mem_intact(&m, sum, "reserve freed");
	memmig_region_unref(r);

	/* A context that goes away with a reserve frees it. */
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 0, 4 * MiB), 0);
	EXPECT_EQ("reserve", "reserved before unref", memmig_ctx_reserved(c, 0), 4 * MiB);
	memmig_ctx_unref(c);
	mt_mem_free(&m);
}

/*
 * Two workers take runs of the reserve, one each, so that each swaps its
 * share in one mremap; the chunks a worker took and could not use (units
 * that may not have a THP) go back.
 */
static void test_reserve_runs(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 2);
	struct memmig_region *r = NULL;
	struct memmig_ctx *c;
	uint64_t sum;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_new_ctx(&c), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_ctx_reserve(c, 0, 64 * MiB), 0);
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 32 * MiB, true), 0);
	/* Units 2 and 3 of the first worker's 8: no THP, no reserve chunk. */
	CU_ASSERT_EQUAL_FATAL(madvise(m.map + 4 * MiB, 4 * MiB, MADV_NOHUGEPAGE), 0);
	mt_copy_all(c, &m, &o, "reserve runs");
	EXPECT_EQ("reserve", "reserved after 14 chunks used", memmig_ctx_reserved(c, 0),
		  36 * MiB);

	/* The chunks given back serve the next job. */
	sum = mt_csum(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(c, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, NULL), 0);
	EXPECT_EQ("reserve", "reserved after the second job", memmig_ctx_reserved(c, 0),
		  8 * MiB);
	mt_mem_intact(&m, sum, "reserve runs, again");
	memmig_region_unref(r);
	memmig_ctx_unref(c);
	mt_mem_free(&m);
}

/* ------------------------------------------------------------------ */
/* Other processes, region lists, permissions.                          */

struct child {
	pid_t pid;
	int to, from;		/* pipes: command to it, word from it */
};

/*
 * A child that writes the fill of seed into [p, p + len) (its own copy of
 * the pages), says so, and on 'c' checks them: exit 0 if intact.
 */
static int child_start(struct child *c, uint8_t *p, uint64_t len, uint64_t seed)
{
	int down[2], up[2];
	char b;

	if (pipe2(down, O_CLOEXEC) || pipe2(up, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (!c->pid) {
		close(down[1]);
		close(up[0]);
		/* A setuid parent left it undumpable: its owner could not
		 * read its /proc files. */
		prctl(PR_SET_DUMPABLE, 1);
		mt_fill(p, len, seed, 0);
		if (write(up[1], "r", 1) != 1)
			_exit(2);
		if (read(down[0], &b, 1) != 1)
			_exit(3);
		_exit(mt_first_bad(p, len, seed, 0) < 0 ? 0 : 1);
	}
	close(down[0]);
	close(up[1]);
	c->to = down[1];
	c->from = up[0];
	if (read(c->from, &b, 1) != 1)
		return -EIO;
	return 0;
}

/* The child's verdict: its exit status, or -1. */
static int child_finish(struct child *c)
{
	int st = 0;

	if (write(c->to, "c", 1) != 1)
		kill(c->pid, SIGKILL);
	close(c->to);
	close(c->from);
	if (waitpid(c->pid, &st, 0) != c->pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The listed region that covers [addr, addr + len), or NULL. */
static struct memmig_region *list_find(struct memmig_region **list, unsigned int n,
				       const void *addr, uint64_t len, int pid)
{
	uint64_t a = (uintptr_t)addr, prev_end = 0;
	struct memmig_region *found = NULL;

	for (unsigned int i = 0; i < n; i++) {
		struct memmig_region_desc d = { .sz = sizeof(d) };

		CU_ASSERT_EQUAL(memmig_region_get_desc(list[i], &d), 0);
		if (d.pid != pid || !d.len || (d.addr | d.len) % PAGE || d.addr < prev_end ||
		    d.backing < MEMMIG_BACKING_ANON || d.backing > MEMMIG_BACKING_FILE)
			CUNIT_FAILF("listed region %u: pid %d, %#" PRIx64 "+%#" PRIx64
				    ", backing %d", i, d.pid, d.addr, d.len, d.backing);
		prev_end = d.addr + d.len;
		if (d.addr <= a && d.addr + d.len >= a + len) {
			CU_ASSERT_EQUAL(d.backing, MEMMIG_BACKING_ANON);
			found = list[i];
		}
	}
	return found;
}

static void test_list_self(void)
{
	struct memmig_region **list = NULL;
	unsigned int n = 0;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_4K, 8 * MiB, true), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_region_list_pid(ctx, getpid(), &list, &n), 0);
	CU_ASSERT(n > 0);
	CU_ASSERT_PTR_NOT_NULL(list_find(list, n, m.map, m.len, getpid()));
	memmig_region_list_free(list, n);
	list = NULL;
	CU_ASSERT_EQUAL_FATAL(memmig_region_list_pid(ctx, 0, &list, &n), 0);
	CU_ASSERT_PTR_NOT_NULL(list_find(list, n, m.map, m.len, 0));
	memmig_region_list_free(list, n);
	CU_ASSERT_EQUAL(memmig_region_list_pid(ctx, -1, &list, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_region_list_pid(NULL, 0, &list, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_region_list_pid(ctx, 0, NULL, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_region_list_pid(ctx, 0, &list, NULL), -EINVAL);
	mt_mem_free(&m);
}

/* Another process: listed, migrated with the kernel strategy (auto picks
 * it), refused for the copy strategy, its data intact. */
static void test_child(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 0);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_region **list = NULL, *found, *r = NULL;
	struct memmig_report *rep = NULL;
	struct child ch = { .pid = -1, .to = -1, .from = -1 };
	unsigned int n = 0;
	struct mem m;

	/* Not touched here: only the child's copy of the pages exists. */
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 32 * MiB, false), 0);
	CU_ASSERT_EQUAL_FATAL(child_start(&ch, m.map, m.len, m.seed), 0);

	CU_ASSERT_EQUAL(memmig_region_list_pid(ctx, ch.pid, &list, &n), 0);
	found = list_find(list, n, m.map, m.len, ch.pid);
	CU_ASSERT_PTR_NOT_NULL(found);
	if (found) {
		CU_ASSERT_EQUAL(memmig_migrate(found, &o, &rep), 0);
		CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
		CU_ASSERT_EQUAL(s.result, 0);
		CU_ASSERT_EQUAL(s.pages_failed, 0);
		CU_ASSERT(s.pages_verified_on_target >= m.len / PAGE);
		memmig_report_unref(rep);
		rep = NULL;
	}
	memmig_region_list_free(list, n);

	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, ch.pid, m.map, m.len, 0, &r), 0);
	o.strategy = MEMMIG_STRATEGY_COPY;
	o.flags = MEMMIG_MIGRATE_FORCE;
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), -EINVAL);
	CU_ASSERT_PTR_NULL(rep);
	o.strategy = MEMMIG_STRATEGY_AUTO;
	o.flags = 0;
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	mt_check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_KERNEL, .addr = (uintptr_t)m.map,
		.len = m.len, .present = m.len / PAGE,
	}, "child, auto");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	/* The parent never touched its own copy. */
	CU_ASSERT(mt_all_zero(m.map, m.len));
	CU_ASSERT_EQUAL(child_finish(&ch), 0);
	mt_mem_free(&m);
}

/* Exit bits of the unprivileged child. */
enum {
	NOBODY_SETUID = 1 << 0,
	NOBODY_REGION = 1 << 1,
	NOBODY_LIST = 1 << 2,
	NOBODY_OWN = 1 << 3,
	NOBODY_OWN_MEMFD = 1 << 4,
	NOBODY_CTX = 1 << 5,
	NOBODY_SAME_USER = 1 << 6,
};

/*
 * As nobody: a root process is out of reach; a process of the same user
 * is not; its own memory still moves (move_pages and mbind without
 * MPOL_MF_MOVE_ALL, which needs CAP_SYS_NICE).
 */
static int nobody_child(pid_t root_pid, uint64_t addr, uint64_t len)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_region **list = NULL, *r = NULL;
	struct memmig_report *rep = NULL;
	struct child ch = { .pid = -1, .to = -1, .from = -1 };
	struct memmig_ctx *c;
	unsigned int n = 0;
	uint64_t sum;
	int bad = 0, rc;
	struct mem m;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) || getuid() != NOBODY)
		return NOBODY_SETUID;
	if (mt_new_ctx(&c))
		return NOBODY_CTX;
	rc = mt_region_of(c, root_pid, (void *)(uintptr_t)addr, len, 0, &r);
	if (rc != -EPERM) {
		fprintf(stderr, "nobody: region of a root process: %d\n", rc);
		bad |= NOBODY_REGION;
	}
	if (!rc)
		memmig_region_unref(r);
	r = NULL;
	rc = memmig_region_list_pid(c, root_pid, &list, &n);
	if (rc != -EPERM) {
		fprintf(stderr, "nobody: list of a root process: %d\n", rc);
		bad |= NOBODY_LIST;
	}
	if (!rc)
		memmig_region_list_free(list, n);

	/* A process of the same user. */
	if (mt_mem_new(&m, K_4K, 4 * MiB, false) ||
	       child_start(&ch, m.map, m.len, m.seed) ||
	       mt_region_of(c, ch.pid, m.map, m.len, 0, &r) ||
	       memmig_migrate(r, &o, &rep) || child_finish(&ch) != 0) {
		fprintf(stderr, "nobody: a process of the same user: %s\n", last_log);
		bad |= NOBODY_SAME_USER;
		if (ch.pid > 0)
			child_finish(&ch);
	}
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
	rep = NULL;
	r = NULL;

	if (mt_mem_new_half(&m, 16 * MiB, &sum) || mt_region_of(c, 0, m.map, m.len, 0, &r) ||
	       memmig_migrate(r, &o, &rep) || memmig_report_get_summary(rep, &s) ||
	       s.pages_failed || memmig_report_errno_pages(rep, ENOENT) != m.len / PAGE / 2 ||
	       !mt_half_intact(&m, sum, "nobody")) {
		fprintf(stderr, "nobody: kernel strategy on its own memory: %s\n", last_log);
		bad |= NOBODY_OWN;
	}
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
	rep = NULL;
	r = NULL;

	o = mt_opts_of(MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 1);
	if (mt_mem_new(&m, K_MEMFD, 8 * MiB, true) ||
	       (sum = mt_csum(m.map, m.len), mt_region_of(c, 0, m.map, m.len, 0, &r)) ||
	       memmig_migrate(r, &o, &rep) || memmig_report_get_summary(rep, &s) ||
	       s.pages_failed || mt_csum(m.map, m.len) != sum) {
		fprintf(stderr, "nobody: copy strategy on its memfd: %s\n", last_log);
		bad |= NOBODY_OWN_MEMFD;
	}
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
	memmig_ctx_unref(c);
	return bad;
}

/* (pid 1 is no target: here not even root may read its maps.) */
static void test_permission(void)
{
	struct child root = { .pid = -1, .to = -1, .from = -1 };
	struct mem m;
	pid_t pid;
	int st = 0;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_4K, 4 * MiB, false), 0);
	CU_ASSERT_EQUAL_FATAL(child_start(&root, m.map, m.len, m.seed), 0);
	fflush(NULL);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid)
		_exit(nobody_child(root.pid, (uintptr_t)m.map, m.len));
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT_EQUAL(child_finish(&root), 0);
	mt_mem_free(&m);
	CU_ASSERT_FATAL(WIFEXITED(st));
	if (WEXITSTATUS(st) == NOBODY_SETUID) {
		printf("\n  skipped: cannot setuid(%d) in a child ", NOBODY);
		return;
	}
	if (WEXITSTATUS(st))
		CUNIT_FAILF("unprivileged child: failures %#x (see stderr)", WEXITSTATUS(st));
	else
		CU_PASS("unprivileged child");
}

/* ------------------------------------------------------------------ */

static CU_TestInfo other_tests[] = {
	{ "reserve", test_reserve },
	{ "reserve: a run per worker, unused chunks given back", test_reserve_runs },
	{ "region list of this process", test_list_self },
	{ "another process", test_child },
	{ "unprivileged: EPERM, own memory moves", test_permission },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	MT_SUITE("reserve and processes", mt_suite_init, mt_suite_cleanup, other_tests),
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return mt_main(suites);
}
