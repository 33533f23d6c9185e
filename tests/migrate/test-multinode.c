/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Migrations between real NUMA nodes, both strategies, checked three ways:
 * the bytes (checksums), the report, and the kernel's own view in
 * /proc/self/numa_maps.  Needs two nodes with memory: on fewer it exits 77;
 * the multi-node tier (tests/vm) runs it in a three-node guest where node 2
 * has no CPU, with a fourth node of CXL memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../unit/cunit-main.h"
#include "../helpers/numa-maps.h"

#define MiB (1UL << 20)
#define UNIT (2 * MiB)

static struct memmig_ctx *ctx;
static int nodes[16], nnodes;	/* the nodes of DRAM, or CPU-less DRAM */
static int cxl_node = -1;	/* a node of CXL memory, if any */

static uint64_t checksum(const void *p, size_t len)
{
	const uint64_t *q = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len / 8; i++)
		h = (h ^ q[i]) * 1099511628211ULL;
	return h;
}

static void fill(void *p, size_t len, uint64_t seed)
{
	uint64_t x = seed | 1, *q = p;

	for (size_t i = 0; i < len / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		q[i] = x;
	}
}

/* 2 MB-aligned anonymous memory, THP-advised or not, filled. */
static uint8_t *map_anon(size_t len, bool thp, uint64_t seed)
{
	uint8_t *p = mmap(NULL, len + UNIT, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	p = (uint8_t *)(((uintptr_t)p + UNIT - 1) & ~(uintptr_t)(UNIT - 1));
	madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	fill(p, len, seed);
	return p;
}

/* A shared memfd mapping, not touched yet. */
static uint8_t *memfd_map(size_t len)
{
	int fd = memfd_create("multinode", 0);
	uint8_t *p;

	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static uint8_t *map_memfd(size_t len, uint64_t seed)
{
	uint8_t *p = memfd_map(len);

	if (p)
		fill(p, len, seed);
	return p;
}

static struct memmig_region *region_of(void *p, size_t len)
{
	struct memmig_region_desc d = {
		.sz = sizeof(d), .addr = (uintptr_t)p, .len = len,
	};
	struct memmig_region *r = NULL;
	int rc = memmig_region_new(ctx, &d, &r);

	if (rc)
		CUNIT_FAILF("memmig_region_new: %d", rc);
	return r;
}

/* Moves all of r to node and checks report, numa_maps and bytes. */
static void move_and_check(struct memmig_region *r, uint8_t *p, size_t len,
			   int node, int strategy, unsigned int workers,
			   uint64_t sum, const char *what)
{
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = node, .strategy = strategy,
		.workers = workers,
	};
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	uint64_t before, after, pages = len / 4096;
	int rc = memmig_migrate(r, &o, &rep);

	if (rc || !rep) {
		CUNIT_FAILF("%s to node %d: %d", what, node, rc);
		memmig_report_unref(rep);
		return;
	}
	memmig_report_get_summary(rep, &s);
	memmig_report_node_pages(rep, node, &before, &after);
	if (s.pages_failed || s.pages_verified_on_target != pages || after != pages)
		CUNIT_FAILF("%s to node %d: failed %" PRIu64 ", on target %" PRIu64
			    ", after %" PRIu64 " of %" PRIu64, what, node,
			    s.pages_failed, s.pages_verified_on_target, after, pages);
	/* Moved: everything that was elsewhere before. */
	if (s.bytes_moved != (pages - before) * 4096)
		CUNIT_FAILF("%s to node %d: moved %" PRIu64 " bytes, %" PRIu64
			    " pages were elsewhere", what, node, s.bytes_moved,
			    pages - before);
	if (numa_maps_pages(p, len, node) != pages)
		CUNIT_FAILF("%s to node %d: numa_maps has %" PRIu64 " of %" PRIu64
			    " pages there", what, node, numa_maps_pages(p, len, node),
			    pages);
	if (checksum(p, len) != sum)
		CUNIT_FAILF("%s to node %d: the data changed", what, node);
	memmig_report_unref(rep);
}

/* Around the nodes backwards, 0 -> 2 -> 1 -> 0 on three nodes: every node
 * is a target once, the last one home. */
static void tour(uint8_t *p, size_t len, int strategy, unsigned int workers,
		 const char *what)
{
	struct memmig_region *r = region_of(p, len);
	uint64_t sum = checksum(p, len);

	if (!r)
		return;
	for (int i = nnodes - 1; i >= 0; i--)
		move_and_check(r, p, len, nodes[i], strategy, workers, sum, what);
	memmig_region_unref(r);
}

static void test_anon_thp_copy(void)
{
	uint8_t *p = map_anon(64 * MiB, true, 1);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	tour(p, 64 * MiB, MEMMIG_STRATEGY_COPY, 1, "anon THP, copy, 1 worker");
	tour(p, 64 * MiB, MEMMIG_STRATEGY_COPY, 2, "anon THP, copy, 2 workers");
	munmap(p, 64 * MiB);
}

static void test_anon_thp_kernel(void)
{
	uint8_t *p = map_anon(64 * MiB, true, 2);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	tour(p, 64 * MiB, MEMMIG_STRATEGY_KERNEL, 1, "anon THP, kernel, 1 worker");
	tour(p, 64 * MiB, MEMMIG_STRATEGY_KERNEL, 2, "anon THP, kernel, 2 workers");
	munmap(p, 64 * MiB);
}

static void test_anon_4k(void)
{
	uint8_t *p = map_anon(32 * MiB, false, 3);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	tour(p, 32 * MiB, MEMMIG_STRATEGY_KERNEL, 2, "anon 4K, kernel");
	tour(p, 32 * MiB, MEMMIG_STRATEGY_COPY, 2, "anon 4K, copy");
	munmap(p, 32 * MiB);
}

static void test_memfd(void)
{
	uint8_t *p = map_memfd(32 * MiB, 4);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	tour(p, 32 * MiB, MEMMIG_STRATEGY_COPY, 1, "memfd, copy (mbind)");
	tour(p, 32 * MiB, MEMMIG_STRATEGY_KERNEL, 2, "memfd, kernel");
	munmap(p, 32 * MiB);
}

#define HP_SYSFS "/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages"

static long hugepages_get(int node)
{
	char path[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), HP_SYSFS, node);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static bool hugepages_set(int node, long n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), HP_SYSFS, node);
	f = fopen(path, "we");
	if (!f)
		return false;
	fprintf(f, "%ld\n", n);
	return !fclose(f) && hugepages_get(node) == n;
}

/* hugetlbfs pages (MAP_HUGETLB): both strategies around the nodes, with
 * 2 MB pages reserved on every node for the test and given back after. */
static void test_hugetlb(void)
{
	size_t len = 16 * MiB;
	long saved[16];
	bool ok = true;
	uint8_t *p;

	for (int i = 0; i < nnodes; i++) {
		saved[i] = hugepages_get(nodes[i]);
		ok &= saved[i] >= 0 && hugepages_set(nodes[i], saved[i] + 2 * len / UNIT);
	}
	p = ok ? mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0) : MAP_FAILED;
	if (p == MAP_FAILED) {
		printf("(skipped: cannot reserve 2 MB huge pages on every node) ");
	} else {
		fill(p, len, 7);
		tour(p, len, MEMMIG_STRATEGY_COPY, 1, "hugetlb, copy (mbind)");
		tour(p, len, MEMMIG_STRATEGY_KERNEL, 2, "hugetlb, kernel");
		munmap(p, len);
	}
	for (int i = 0; i < nnodes; i++)
		if (saved[i] >= 0)
			hugepages_set(nodes[i], saved[i]);
}

/* p's pages, once touched, interleaved over every node but avoid. */
static int interleave_away(void *p, size_t len, int avoid)
{
	unsigned long mask[16] = { 0 };

	for (int i = 0; i < nnodes; i++)
		if (nodes[i] != avoid)
			mask[nodes[i] / 64] |= 1UL << (nodes[i] % 64);
	return mbind(p, len, MPOL_INTERLEAVE, mask, 1024, 0);
}

/* Like map_anon, with the pages spread over every node but avoid. */
static uint8_t *map_anon_away(size_t len, int avoid, uint64_t seed)
{
	uint8_t *p = mmap(NULL, len + UNIT, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	p = (uint8_t *)(((uintptr_t)p + UNIT - 1) & ~(uintptr_t)(UNIT - 1));
	if (interleave_away(p, len, avoid))
		return NULL;
	madvise(p, len, MADV_HUGEPAGE);
	fill(p, len, seed);
	return p;
}

/* The same as a shared memfd of 4 KiB pages (moved with MPOL_MF_MOVE_ALL:
 * the guest runs as root). */
static uint8_t *map_memfd_away(size_t len, int avoid, uint64_t seed)
{
	uint8_t *p = memfd_map(len);

	if (!p || interleave_away(p, len, avoid))
		return NULL;
	fill(p, len, seed);
	return p;
}

/* The node with the least free memory that is not node 0, and its free. */
static int smallest_node(long long *free_b)
{
	int best = -1;

	for (int i = 0; i < nnodes; i++) {
		struct memmig_topo *t;
		struct memmig_node_info n = { .sz = sizeof(n) };

		if (!nodes[i] || memmig_topo_new(ctx, &t))
			continue;
		memmig_topo_find_node(t, nodes[i], &n);
		memmig_topo_unref(t);
		if (best < 0 || (long long)n.mem_free < *free_b) {
			best = nodes[i];
			*free_b = (long long)n.mem_free;
		}
	}
	return best;
}

/*
 * A target that runs out of memory: the job stops with -ENOMEM, the
 * report says exactly which ranges moved, and nothing is lost.  Nothing
 * was on the target before, so what moved is what numa_maps finds there,
 * to the page: Linux 6.12 moves part of a move_pages(2) call and then
 * fails it with -ENOMEM, its status array unwritten.
 */
static void enomem_case(int strategy, bool memfd, const char *what)
{
	long long free_b = 0;
	int target = smallest_node(&free_b);
	size_t len = (((size_t)free_b + 96 * MiB) + UNIT - 1) & ~(UNIT - 1);
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = target, .strategy = strategy,
		.workers = 1,
	};
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r;
	uint64_t sum, in_ranges = 0, after = 0, on_target;
	uint8_t *p;
	int rc;

	if (target < 0 || len > 900 * MiB) {
		printf("(skipped: node %d has %lld bytes free, too many to fill here) ",
		       target, free_b);
		return;
	}
	p = memfd ? map_memfd_away(len, target, 5) : map_anon_away(len, target, 5);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	sum = checksum(p, len);
	r = region_of(p, len);
	rc = memmig_migrate(r, &o, &rep);
	if (rc != -ENOMEM)
		CUNIT_FAILF("%s: %zu MiB to node %d with %lld MiB free: %d, not -ENOMEM",
			    what, len >> 20, target, free_b >> 20, rc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
	memmig_report_get_summary(rep, &s);
	for (int i = 0; i < memmig_report_moved_count(rep); i++) {
		uint64_t a, l;

		memmig_report_get_moved(rep, i, &a, &l);
		in_ranges += l;
	}
	memmig_report_node_pages(rep, target, NULL, &after);
	on_target = numa_maps_pages(p, len, target);
	CU_ASSERT(s.bytes_moved > 0);
	CU_ASSERT(s.bytes_moved < len);
	CU_ASSERT_EQUAL(in_ranges, s.bytes_moved);
	/* What the report says moved is where the kernel says it is. */
	CU_ASSERT_EQUAL(after, on_target);
	if (s.bytes_moved != on_target * 4096)
		CUNIT_FAILF("%s: bytes_moved %" PRIu64 " KiB, but %" PRIu64
			    " KiB reached node %d (numa_maps); %" PRIu64
			    " pages counted ENOMEM", what, s.bytes_moved >> 10,
			    on_target * 4, target, memmig_report_errno_pages(rep, ENOMEM));
	CU_ASSERT_EQUAL(checksum(p, len), sum);
	printf("(%s: %" PRIu64 " of %zu MiB moved before node %d ran out, "
	       "%" PRIu64 " KiB there by numa_maps) ", what, s.bytes_moved >> 20,
	       len >> 20, target, on_target * 4);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	munmap(p, len);
}

static void test_enomem(void)
{
	enomem_case(MEMMIG_STRATEGY_COPY, false, "copy");
	enomem_case(MEMMIG_STRATEGY_KERNEL, false, "kernel");
	enomem_case(MEMMIG_STRATEGY_COPY, true, "memfd, copy (mbind)");
	enomem_case(MEMMIG_STRATEGY_KERNEL, true, "memfd, kernel");
}

/*
 * A page the kernel skips as busy (it could not take it off its LRU list:
 * injected, MEMMIG_FAULT_MOVE_PAGES_BUSY) is asked again and arrives.  One
 * busy in every call stays where it was, failed with EBUSY, its bytes
 * intact, and every other page arrives.
 */
static void test_busy(void)
{
	const size_t len = 8 * MiB, pages = len / 4096;
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = nodes[0], .strategy = MEMMIG_STRATEGY_KERNEL,
		.workers = 1,
	};
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	uint8_t *p = map_anon(len, false, 9);
	struct memmig_region *r = p ? region_of(p, len) : NULL;
	uint64_t sum;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	sum = checksum(p, len);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, NULL), 0);	/* all home first */
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_MOVE_PAGES_BUSY, 1, EBUSY, 0), 0);
	move_and_check(r, p, len, nodes[1], MEMMIG_STRATEGY_KERNEL, 1, sum, "busy once");
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_MOVE_PAGES_BUSY, 1, EBUSY, 1), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	memmig_ctx_set_fault(ctx, MEMMIG_FAULT_MOVE_PAGES_BUSY, 0, EBUSY, 0);
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	printf("\n    busy in every call: %" PRIu64 " of %zu pages failed\n", s.pages_failed, pages);
	CU_ASSERT(s.pages_failed > 0 && s.pages_failed < pages);
	CU_ASSERT_EQUAL(memmig_report_failed_errno_pages(rep, EBUSY), s.pages_failed);
	CU_ASSERT_EQUAL(numa_maps_pages(p, len, nodes[0]), pages - s.pages_failed);
	CU_ASSERT_EQUAL(numa_maps_pages(p, len, nodes[1]), s.pages_failed);
	CU_ASSERT_EQUAL(checksum(p, len), sum);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	munmap(p, len);
}

/* Cancelled mid-way: the moved part is on the target, the rest at home. */
static void test_cancel(void)
{
	size_t len = 256 * MiB;
	uint8_t *p = map_anon(len, true, 6);
	struct memmig_region *r;
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = nodes[nnodes - 1],
		.strategy = MEMMIG_STRATEGY_KERNEL, .workers = 1,
	};
	struct memmig_progress pr = { .sz = sizeof(pr) };
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_job *job;
	uint64_t sum;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	sum = checksum(p, len);
	r = region_of(p, len);
	CU_ASSERT_EQUAL_FATAL(memmig_job_start(r, &o, &job), 0);
	do {
		memmig_job_get_progress(job, &pr);
	} while (!pr.bytes_done && pr.state == MEMMIG_JOB_RUNNING);
	memmig_job_cancel(job);
	rc = memmig_job_wait(job, &rep);
	CU_ASSERT(rc == -ECANCELED || rc == 0);
	memmig_report_get_summary(rep, &s);
	CU_ASSERT_EQUAL(s.bytes_moved / 4096, numa_maps_pages(p, len, o.target_node) -
						      0 /* nothing was there before */);
	CU_ASSERT_EQUAL(checksum(p, len), sum);
	printf("(%s after %" PRIu64 " of %zu MiB) ", rc ? "cancelled" : "finished",
	       s.bytes_moved >> 20, len >> 20);
	memmig_report_unref(rep);
	memmig_job_unref(job);
	memmig_region_unref(r);
	munmap(p, len);
}

static int suite_init(void)
{
	struct memmig_topo *t;

	if (memmig_ctx_new(&ctx) || memmig_topo_new(ctx, &t))
		return 1;
	for (int i = 0; i < memmig_topo_node_count(t) && nnodes < 16; i++) {
		struct memmig_node_info n = { .sz = sizeof(n) };

		memmig_topo_get_node(t, (unsigned int)i, &n);
		if (n.flags & MEMMIG_NODE_F_CXL)
			cxl_node = n.id;
		else
			nodes[nnodes++] = n.id;
	}
	memmig_topo_unref(t);
	return 0;
}

static int suite_cleanup(void)
{
	memmig_ctx_unref(ctx);
	return 0;
}

/*
 * The node of CXL memory, where there is one (the tier makes one from
 * QEMU's CXL Type-3 device): a 2 MiB region there and back with each
 * strategy, as 4 KiB pages and as a THP.  Small, and not in the tours
 * above: QEMU 7.2 emulates every access to CXL memory (about 13 MB/s, a
 * page migration there about 1 MB/s).
 */
static void test_cxl(void)
{
	const int strategies[] = { MEMMIG_STRATEGY_KERNEL, MEMMIG_STRATEGY_COPY };
	const char *const names[] = { "kernel", "copy" };
	char what[64];

	if (cxl_node < 0) {
		printf("(no node of CXL memory here) ");
		return;
	}
	for (int i = 0; i < 4; i++) {
		bool thp = i / 2;
		uint8_t *p = map_anon(2 * MiB, thp, 40 + i);
		struct memmig_region *r = p ? region_of(p, 2 * MiB) : NULL;
		uint64_t sum = p ? checksum(p, 2 * MiB) : 0;

		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		snprintf(what, sizeof(what), "%s %s, CXL", thp ? "THP" : "4K", names[i % 2]);
		move_and_check(r, p, 2 * MiB, cxl_node, strategies[i % 2], 1, sum, what);
		move_and_check(r, p, 2 * MiB, nodes[0], strategies[i % 2], 1, sum, what);
		memmig_region_unref(r);
		munmap(p, 2 * MiB);
	}
	printf("(node %d) ", cxl_node);
}

static CU_TestInfo tests[] = {
	{ "anonymous THP, copy strategy, around the nodes", test_anon_thp_copy },
	{ "anonymous THP, kernel strategy, around the nodes", test_anon_thp_kernel },
	{ "anonymous 4 KiB pages, both strategies", test_anon_4k },
	{ "memfd, both strategies", test_memfd },
	{ "hugetlb, both strategies", test_hugetlb },
	{ "cancel mid-way", test_cancel },
	{ "target out of memory: -ENOMEM, partial, intact", test_enomem },
	{ "a page the kernel skips as busy: asked again", test_busy },
	{ "a node of CXL memory, both strategies", test_cxl },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "multi-node migration", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pTests = tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	struct memmig_topo *t;
	struct memmig_ctx *c = NULL;
	int n = 0;

	if (!memmig_ctx_new(&c) && !memmig_topo_new(c, &t)) {
		n = memmig_topo_node_count(t);
		memmig_topo_unref(t);
	}
	memmig_ctx_unref(c);
	if (n < 2) {
		char why[160];

		snprintf(why, sizeof(why), "needs two NUMA nodes with memory, this "
			 "machine has %d; the multi-node tier (make check-vm) runs it", n);
		return cunit_skip(why);
	}
	return cunit_main(suites);
}
