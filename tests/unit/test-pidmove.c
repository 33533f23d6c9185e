/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process move memmig-cli and memmigd share (src/shared/pidmove.c):
 * bad requests fail before any work, ranges and whole processes move with
 * their bytes intact, cancel leaves the data where it was, and progress and
 * report add up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migrate-util.h"
#include "shared/pidmove.h"

static int64_t rep_int(struct json_object *rep, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(rep, key, &v))
		return INT64_MIN;
	return json_object_get_int64(v);
}

static int new_move(int pid, const struct proto_range *r, unsigned int n,
		    int node, int strategy, struct pidmove **out)
{
	struct pidmove_req req = {
		.pid = pid, .ranges = r, .nranges = n, .to_node = node,
		.strategy = strategy, .threads = 2,
	};

	return pidmove_new(ctx, &req, out);
}

static void test_bad(void)
{
	struct proto_range unmapped = { 0x1000, 0x1000 }, odd = { 0, 100 };
	struct pidmove *m = NULL;
	pid_t gone = fork();

	if (!gone)
		_exit(0);
	waitpid(gone, NULL, 0);
	CU_ASSERT_EQUAL(new_move(0, NULL, 0, 0, 0, &m), -EINVAL);
	CU_ASSERT_EQUAL(new_move(getpid(), NULL, 0, -1, 0, &m), -EINVAL);
	CU_ASSERT_EQUAL(new_move(getpid(), NULL, 0, 999, 0, &m), -ENOENT);
	CU_ASSERT_EQUAL(new_move(getpid(), NULL, PROTO_MAX_RANGES + 1, 0, 0, &m), -EINVAL);
	CU_ASSERT_EQUAL(new_move(gone, NULL, 0, 0, 0, &m), -ESRCH);
	CU_ASSERT_EQUAL(new_move(getppid(), NULL, 0, 0, MEMMIG_STRATEGY_COPY, &m), -EINVAL);
	CU_ASSERT_EQUAL(new_move(getpid(), &unmapped, 1, 0, 0, &m), -EFAULT);
	CU_ASSERT_EQUAL(new_move(getpid(), &odd, 1, 0, 0, &m), -EINVAL);
	CU_ASSERT_PTR_NULL(m);
}

/* Two ranges of this process, with the kernel strategy: every byte moved
 * and counted once. */
static void test_ranges(void)
{
	struct mem a, b;
	struct pidmove *m;
	struct pidmove_progress p;
	struct json_object *rep;
	uint64_t sa, sb;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&a, K_THP, 16 * MiB, true), 0);
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&b, K_MEMFD, 8 * MiB, true), 0);
	sa = mt_csum(a.map, a.len);
	sb = mt_csum(b.map, b.len);
	struct proto_range r[2] = {
		{ (uintptr_t)a.map, a.len }, { (uintptr_t)b.map, b.len },
	};
	CU_ASSERT_EQUAL_FATAL(new_move(getpid(), r, 2, 0, MEMMIG_STRATEGY_KERNEL, &m), 0);
	pidmove_get_progress(m, &p);
	CU_ASSERT_FALSE(p.finished);
	EXPECT_EQ("ranges", "bytes_total before", p.bytes_total, 24 * MiB);
	EXPECT_EQ("ranges", "regions", p.regions, 2);
	CU_ASSERT_EQUAL(pidmove_run(m), 0);
	pidmove_get_progress(m, &p);
	CU_ASSERT_TRUE(p.finished);
	CU_ASSERT_EQUAL(p.result, 0);
	EXPECT_EQ("ranges", "bytes_done", p.bytes_done, 24 * MiB);
	EXPECT_EQ("ranges", "regions_done", p.regions_done, 2);
	rep = pidmove_report_json(m);
	EXPECT_EQ("ranges", "report pid", rep_int(rep, "pid"), getpid());
	EXPECT_EQ("ranges", "report result", rep_int(rep, "result"), 0);
	EXPECT_EQ("ranges", "report regions", rep_int(rep, "regions"), 2);
	EXPECT_EQ("ranges", "report bytes_total", rep_int(rep, "bytes_total"), 24 * MiB);
	EXPECT_EQ("ranges", "report pages_failed", rep_int(rep, "pages_failed"), 0);
	EXPECT_EQ("ranges", "report pages_on_target", rep_int(rep, "pages_on_target"),
		  24 * MiB / PAGE);
	json_object_put(rep);
	pidmove_free(m);
	mt_mem_intact(&a, sa, "anonymous range");
	mt_mem_intact(&b, sb, "memfd range");
	mt_mem_free(&a);
	mt_mem_free(&b);
}

/* Cancelled before it starts: nothing moves, the result says so. */
static void test_cancel_first(void)
{
	struct mem a;
	struct pidmove *m;
	struct json_object *rep;
	uint64_t sa;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&a, K_THP, 8 * MiB, true), 0);
	sa = mt_csum(a.map, a.len);
	struct proto_range r = { (uintptr_t)a.map, a.len };
	CU_ASSERT_EQUAL_FATAL(new_move(getpid(), &r, 1, 0, 0, &m), 0);
	pidmove_cancel(m);
	CU_ASSERT_EQUAL(pidmove_run(m), -ECANCELED);
	rep = pidmove_report_json(m);
	EXPECT_EQ("cancel", "result", rep_int(rep, "result"), -ECANCELED);
	EXPECT_EQ("cancel", "bytes_moved", rep_int(rep, "bytes_moved"), 0);
	json_object_put(rep);
	pidmove_free(m);
	mt_mem_intact(&a, sa, "cancelled");
	mt_mem_free(&a);
}

/* Another process, every mapping: it checks its own bytes afterwards. */
static void test_child(void)
{
	int go[2], done[2];
	struct pidmove *m;
	struct json_object *rep;
	char c = 0;
	pid_t child;
	int st;

	CU_ASSERT_FATAL(pipe(go) == 0 && pipe(done) == 0);
	child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (!child) {
		struct mem a;
		uint64_t s;

		if (mt_mem_new(&a, K_THP, 32 * MiB, true))
			_exit(2);
		s = mt_csum(a.map, a.len);
		if (write(done[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(3);
		_exit(mt_csum(a.map, a.len) == s ? 0 : 1);
	}
	CU_ASSERT_FATAL(read(done[0], &c, 1) == 1);
	CU_ASSERT_EQUAL(new_move(child, NULL, 0, 0, 0, &m), 0);
	if (m) {
		CU_ASSERT_EQUAL(pidmove_run(m), 0);
		rep = pidmove_report_json(m);
		CU_ASSERT(rep_int(rep, "regions") >= 2);
		CU_ASSERT(rep_int(rep, "pages_on_target") >= (int64_t)(32 * MiB / PAGE));
		EXPECT_EQ("child", "pages_failed", rep_int(rep, "pages_failed"), 0);
		json_object_put(rep);
		pidmove_free(m);
	}
	CU_ASSERT(write(go[1], "g", 1) == 1);
	CU_ASSERT_EQUAL(waitpid(child, &st, 0), child);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static CU_TestInfo tests[] = {
	{ "bad requests fail before any work", test_bad },
	{ "two ranges of this process", test_ranges },
	{ "cancelled before it starts", test_cancel_first },
	{ "every mapping of another process", test_child },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	MT_SUITE("process move", mt_suite_init, mt_suite_cleanup, tests),
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return mt_main(suites);
}
