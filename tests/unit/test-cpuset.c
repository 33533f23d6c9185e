/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The util layer's node lists, cpuset and per-node usage (src/util/cpuset.c,
 * numa-usage.c), against this process as the kernel shows it.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cunit-main.h"
#include "util/cpuset.h"
#include "util/numa-usage.h"

static void test_nodelist_has(void)
{
	CU_ASSERT(util_nodelist_has("0", 0));
	CU_ASSERT(!util_nodelist_has("0", 1));
	CU_ASSERT(util_nodelist_has("0-2,4", 1));
	CU_ASSERT(util_nodelist_has("0-2,4", 4));
	CU_ASSERT(!util_nodelist_has("0-2,4", 3));
	CU_ASSERT(util_nodelist_has("1023", 1023));
	CU_ASSERT(util_nodelist_has("0\n", 0));	/* as sysfs has it */
	/* Anything unreadable has no node: never a guess. */
	CU_ASSERT(!util_nodelist_has("", 0));
	CU_ASSERT(!util_nodelist_has("2-1", 1));
	CU_ASSERT(!util_nodelist_has("0,,1", 1));
	CU_ASSERT(!util_nodelist_has("0-", 0));
	CU_ASSERT(!util_nodelist_has("1024", 0));
	CU_ASSERT(!util_nodelist_has("^0", 0));
}

static void test_nodelist_add(void)
{
	char out[UTIL_NODELIST_MAX], tiny[4];

	CU_ASSERT_EQUAL(util_nodelist_add("0", 1, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "0-1");
	CU_ASSERT_EQUAL(util_nodelist_add("0,2", 1, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "0-2");
	CU_ASSERT_EQUAL(util_nodelist_add("0-2,7", 4, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "0-2,4,7");
	CU_ASSERT_EQUAL(util_nodelist_add("3", 3, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "3");
	CU_ASSERT_EQUAL(util_nodelist_add("x", 1, out, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(util_nodelist_add("0", 1024, out, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(util_nodelist_add("0,2,4", 6, tiny, sizeof(tiny)), -ENOSPC);
}

/* Touched memory shows on the node numa_maps puts it; moved() does not
 * count it as moved: it left no node. */
static void test_usage(void)
{
	struct util_numa_usage *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	size_t len = 8 << 20;
	uint64_t total_a = 0, total_b = 0;
	char *p;

	CU_ASSERT_FATAL(a && b);
	CU_ASSERT_EQUAL(util_numa_usage_read(getpid(), a), 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(p != MAP_FAILED);
	memset(p, 1, len);
	CU_ASSERT_EQUAL(util_numa_usage_read(getpid(), b), 0);
	for (int n = 0; n < UTIL_USAGE_NODES; n++) {
		total_a += a->bytes[n];
		total_b += b->bytes[n];
	}
	CU_ASSERT(total_b >= total_a + len);
	CU_ASSERT_EQUAL(util_numa_usage_moved(a, b), 0);
	CU_ASSERT_EQUAL(util_numa_usage_moved(b, a), 0);	/* freed, not moved */
	CU_ASSERT_EQUAL(util_numa_usage_moved(b, b), 0);
	CU_ASSERT_EQUAL(util_numa_usage_read(-1, a), -ESRCH);
	munmap(p, len);
	free(a);
	free(b);
}

/* Readings made up: 3 MiB leave node 1 for node 0 while the process
 * touches 5 MiB more on node 0 and frees 1 MiB on node 2. */
static void test_usage_moved(void)
{
	struct util_numa_usage *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct util_numa_mark mark;

	CU_ASSERT_FATAL(a && b);
	a->bytes[0] = 10 << 20;
	a->bytes[1] = 4 << 20;
	a->bytes[2] = 2 << 20;
	util_numa_usage_mark(a, 0, &mark);
	CU_ASSERT_EQUAL(mark.on, 10 << 20);
	CU_ASSERT_EQUAL(mark.off, 6 << 20);
	b->bytes[0] = (10 + 3 + 5) << 20;
	b->bytes[1] = 1 << 20;
	b->bytes[2] = 1 << 20;
	/* Gained 8 MiB, lost 4 MiB: at most 4 MiB changed node. */
	CU_ASSERT_EQUAL(util_numa_usage_moved(a, b), 4 << 20);
	/* Node 0 gained 8 MiB, the others lost 4: at most 4 came from them. */
	CU_ASSERT_EQUAL(util_numa_usage_arrived(b, 0, &mark), 4 << 20);
	/* Nothing left the others: nothing arrived, whatever node 0 gained. */
	b->bytes[1] = 4 << 20;
	b->bytes[2] = 2 << 20;
	CU_ASSERT_EQUAL(util_numa_usage_arrived(b, 0, &mark), 0);
	free(a);
	free(b);
}

static void test_cpuset_self(void)
{
	struct util_cpuset cs;
	char msg[512] = "";

	CU_ASSERT_EQUAL(util_cpuset_get(getpid(), &cs), 0);
	/* Every node with memory here is allowed to the test, node 0 too. */
	CU_ASSERT(util_nodelist_has(cs.allowed, 0));
	CU_ASSERT_EQUAL(util_cpuset_check(getpid(), 0, msg, sizeof(msg)), 0);
	/* A node without memory is the move's to refuse, naming it. */
	CU_ASSERT_EQUAL(util_cpuset_check(getpid(), 1023, msg, sizeof(msg)), 0);
	CU_ASSERT_EQUAL(util_cpuset_get(-1, &cs), -ESRCH);
}

static CU_TestInfo tests[] = {
	{ "node lists: membership, refusing what does not parse", test_nodelist_has },
	{ "node lists: adding a node, ranges joined", test_nodelist_add },
	{ "per-node usage from numa_maps", test_usage },
	{ "moved and arrived: new and freed memory do not count", test_usage_moved },
	{ "this process's cpuset", test_cpuset_self },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "cpuset and usage", .pTests = tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
