/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The topology snapshot agrees with the kernel on the machine the test runs
 * on: nodes with memory, CPU lists, sizes, distances, tiers, the nearest CPU
 * node rule, DAX devices; and the API contract (argument checks, sized
 * structs, partial CPU lists, reference counting).  The expected values are
 * read from sysfs here with a parser of its own, not the library's.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memmig.h"
#include "cunit-main.h"

#define NODE_SYSFS "/sys/devices/system/node"
#define TIER_SYSFS "/sys/devices/virtual/memory_tiering"
#define DAX_SYSFS "/sys/bus/dax/devices"
#define MAX_IDS 4096

static struct memmig_ctx *ctx;
static struct memmig_topo *topo;
static bool have_numa_sysfs;	/* a kernel with NUMA: NODE_SYSFS exists */

/* ---- the test's own view of sysfs ---- */

static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (int)n;
}

/* "0-3,8\n" -> ids[] = 0 1 2 3 8; returns the count, or -1. */
static int parse_ids(const char *s, int *ids, int max)
{
	int n = 0;

	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b;

		if (end == s)
			return -1;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			s = end;
		}
		for (long i = a; i <= b; i++) {
			if (n == max)
				return -1;
			ids[n++] = (int)i;
		}
		if (*s == ',')
			s++;
	}
	return n;
}

static int read_ids(const char *path, int *ids, int max)
{
	char buf[16384];

	if (read_text(path, buf, sizeof(buf)) < 0)
		return -1;
	return parse_ids(buf, ids, max);
}

/* MemTotal of nodeN/meminfo in bytes, or 0. */
static unsigned long long sysfs_mem_total(int node)
{
	char path[128], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), NODE_SYSFS "/node%d/meminfo", node);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "MemTotal:");

		if (p) {
			kb = strtoull(p + strlen("MemTotal:"), NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb * 1024;
}

static int suite_init(void)
{
	DIR *d;

	if (memmig_ctx_new(&ctx) < 0 || memmig_topo_new(ctx, &topo) < 0)
		return -1;
	d = opendir(NODE_SYSFS);
	have_numa_sysfs = d != NULL;
	if (d)
		closedir(d);
	return 0;
}

static int suite_cleanup(void)
{
	memmig_topo_unref(topo);
	memmig_ctx_unref(ctx);
	return 0;
}

static int get_node(unsigned int idx, struct memmig_node_info *n)
{
	memset(n, 0, sizeof(*n));
	n->sz = sizeof(*n);
	return memmig_topo_get_node(topo, idx, n);
}

/* ---- agreement with the kernel ---- */

static void test_node_ids(void)
{
	static int ids[MAX_IDS];
	struct memmig_node_info n;
	int count = memmig_topo_node_count(topo), want;

	CU_ASSERT_FATAL(count >= 1);
	if (!have_numa_sysfs) {
		CU_ASSERT_EQUAL(get_node(0, &n), 0);
		CU_ASSERT_EQUAL(n.id, 0);
		return;
	}
	want = read_ids(NODE_SYSFS "/has_memory", ids, MAX_IDS);
	CU_ASSERT_FATAL(want >= 1);
	CU_ASSERT_EQUAL(count, want);
	for (int i = 0; i < count && i < want; i++) {
		CU_ASSERT_EQUAL_FATAL(get_node((unsigned int)i, &n), 0);
		if (n.id != ids[i])
			CUNIT_FAILF("node index %d: id %d, has_memory says %d", i,
				    n.id, ids[i]);
		if (i && n.id <= ids[i - 1])
			CUNIT_FAILF("node ids not ascending at index %d", i);
	}
}

static void test_cpus(void)
{
	static int want[MAX_IDS], got[MAX_IDS];
	struct memmig_node_info n;
	char path[128];

	for (int i = 0; i < memmig_topo_node_count(topo); i++) {
		int nw, ng;

		CU_ASSERT_EQUAL_FATAL(get_node((unsigned int)i, &n), 0);
		ng = memmig_topo_node_cpus(topo, n.id, got, MAX_IDS);
		CU_ASSERT_EQUAL(ng, (int)n.ncpus);
		if (!have_numa_sysfs)
			continue;
		snprintf(path, sizeof(path), NODE_SYSFS "/node%d/cpulist", n.id);
		nw = read_ids(path, want, MAX_IDS);
		if (nw != ng) {
			CUNIT_FAILF("node %d: %d CPUs, sysfs cpulist has %d", n.id,
				    ng, nw);
			continue;
		}
		for (int c = 0; c < nw; c++)
			if (got[c] != want[c])
				CUNIT_FAILF("node %d: CPU %d is %d, sysfs says %d",
					    n.id, c, got[c], want[c]);
	}
}

static void test_memory(void)
{
	struct memmig_node_info n;

	for (int i = 0; i < memmig_topo_node_count(topo); i++) {
		unsigned long long want;
		double diff;

		CU_ASSERT_EQUAL_FATAL(get_node((unsigned int)i, &n), 0);
		CU_ASSERT(n.mem_total > 0);
		CU_ASSERT(n.mem_free <= n.mem_total);
		if (!have_numa_sysfs)
			continue;
		want = sysfs_mem_total(n.id);
		CU_ASSERT(want > 0);
		diff = (double)n.mem_total - (double)want;
		if (diff < 0)
			diff = -diff;
		if (diff > 0.01 * (double)want)
			CUNIT_FAILF("node %d: mem_total %llu, meminfo %llu", n.id,
				    (unsigned long long)n.mem_total, want);
	}
}

static void test_distances(void)
{
	static int online[MAX_IDS];
	struct memmig_node_info a, b = { .sz = sizeof(b) };
	int count = memmig_topo_node_count(topo), nonline;
	char path[128], buf[16384];

	if (!have_numa_sysfs) {
		CU_ASSERT_EQUAL(memmig_topo_distance(topo, 0, 0), 10);
		return;
	}
	/* nodeN/distance has one column per online node, in id order. */
	nonline = read_ids(NODE_SYSFS "/online", online, MAX_IDS);
	CU_ASSERT_FATAL(nonline >= 1);
	for (int i = 0; i < count; i++) {
		char *p = buf;

		CU_ASSERT_EQUAL_FATAL(get_node((unsigned int)i, &a), 0);
		snprintf(path, sizeof(path), NODE_SYSFS "/node%d/distance", a.id);
		CU_ASSERT_FATAL(read_text(path, buf, sizeof(buf)) > 0);
		for (int k = 0; k < nonline; k++) {
			char *end;
			long want = strtol(p, &end, 10);
			int got;

			CU_ASSERT_FATAL(end != p);
			p = end;
			if (memmig_topo_find_node(topo, online[k], &b) == -ENOENT)
				continue;	/* online but without memory */
			got = memmig_topo_distance(topo, a.id, online[k]);
			if (got != want)
				CUNIT_FAILF("distance %d -> %d: %d, sysfs says %ld",
					    a.id, online[k], got, want);
		}
	}
}

/* The tier each node should have: memory_tierN/nodelist, else -1. */
static int sysfs_tier_of(int node)
{
	static int ids[MAX_IDS];
	char path[PATH_MAX];
	struct dirent *de;
	int tier = -1;
	DIR *d = opendir(TIER_SYSFS);

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		int t, n;

		if (sscanf(de->d_name, "memory_tier%d", &t) != 1)
			continue;
		snprintf(path, sizeof(path), TIER_SYSFS "/%s/nodelist", de->d_name);
		n = read_ids(path, ids, MAX_IDS);
		for (int i = 0; i < n; i++)
			if (ids[i] == node && (tier < 0 || t < tier))
				tier = t;
	}
	closedir(d);
	return tier;
}

static void test_tiers(void)
{
	struct memmig_node_info n;

	for (int i = 0; i < memmig_topo_node_count(topo); i++) {
		int want;

		CU_ASSERT_EQUAL_FATAL(get_node((unsigned int)i, &n), 0);
		want = sysfs_tier_of(n.id);
		if (n.tier != want)
			CUNIT_FAILF("node %d: tier %d, memory_tiering says %d",
				    n.id, n.tier, want);
	}
}

/* DRAM nodes are their own CPU node; a CPU-less node names the closest
 * node with CPUs, the lowest id among equals, or -1 when there is none. */
static void test_nearest(void)
{
	int count = memmig_topo_node_count(topo);
	struct memmig_node_info n, m;

	for (int i = 0; i < count; i++) {
		int best = -1, best_d = INT_MAX;

		CU_ASSERT_EQUAL_FATAL(get_node((unsigned int)i, &n), 0);
		if (n.ncpus) {
			CU_ASSERT_EQUAL(n.kind, MEMMIG_NODE_DRAM);
			CU_ASSERT_EQUAL(n.nearest_cpu_node, n.id);
			continue;
		}
		CU_ASSERT_EQUAL(n.kind, MEMMIG_NODE_CPULESS);
		for (int j = 0; j < count; j++) {
			int d;

			CU_ASSERT_EQUAL_FATAL(get_node((unsigned int)j, &m), 0);
			d = memmig_topo_distance(topo, n.id, m.id);
			if (m.ncpus && d < best_d) {
				best = m.id;
				best_d = d;
			}
		}
		if (n.nearest_cpu_node != best)
			CUNIT_FAILF("CPU-less node %d: nearest %d, expected %d",
				    n.id, n.nearest_cpu_node, best);
	}
}

static int sysfs_dax_count(void)
{
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(DAX_SYSFS);

	if (!d)
		return 0;	/* no dax bus: no devices */
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void test_dax(void)
{
	int n = memmig_topo_dax_count(topo);
	struct memmig_dax_info d;

	CU_ASSERT_EQUAL(n, sysfs_dax_count());
	for (int i = 0; i < n; i++) {
		memset(&d, 0, sizeof(d));
		d.sz = sizeof(d);
		CU_ASSERT_EQUAL(memmig_topo_get_dax(topo, (unsigned int)i, &d), 0);
		CU_ASSERT_NSTRING_EQUAL(d.dev, "dax", 3);
		CU_ASSERT(d.mode == 0 || d.mode == 1);
		CU_ASSERT(d.target_node >= -1);
		/* daxctl names devices dax<region>.<instance>. */
		if (d.region_id != atoi(d.dev + 3))
			CUNIT_FAILF("%s: region %d", d.dev, d.region_id);
	}
	d.sz = sizeof(d);
	CU_ASSERT_EQUAL(memmig_topo_get_dax(topo, (unsigned int)n, &d), -EINVAL);
}

/*
 * Whether a DAX device is CXL memory, found another way than the library:
 * a directory on its sysfs path is a device that /sys/bus/cxl lists.
 */
static bool sysfs_dax_cxl(const char *dev)
{
	char path[PATH_MAX], *real, *tok, *save = NULL;
	bool cxl = false;

	snprintf(path, sizeof(path), DAX_SYSFS "/%s", dev);
	real = realpath(path, NULL);
	for (tok = real ? strtok_r(real, "/", &save) : NULL; tok && !cxl;
	     tok = strtok_r(NULL, "/", &save)) {
		snprintf(path, sizeof(path), "/sys/bus/cxl/devices/%s", tok);
		cxl = access(path, F_OK) == 0;
	}
	free(real);
	return cxl;
}

/*
 * CXL memory: each DAX device is CXL exactly when sysfs puts it under a
 * CXL device, and a node is device DAX's (and CXL's) exactly when a device
 * in system-ram mode targets it.  In the multi-node tier, which makes a
 * node of CXL memory and keeps a CXL device DAX (MEMMIG_CXL_NODE and
 * MEMMIG_CXL_DAX), those must be found.
 */
static void test_cxl(void)
{
	const char *want_node = getenv("MEMMIG_CXL_NODE"), *want_dax = getenv("MEMMIG_CXL_DAX");
	const char *want_dev = want_dax && strrchr(want_dax, '/') ?
			       strrchr(want_dax, '/') + 1 : want_dax;
	int ndax = memmig_topo_dax_count(topo), nnodes = memmig_topo_node_count(topo);
	bool found_node = false, found_dax = false;

	for (int i = 0; i < nnodes; i++) {
		struct memmig_node_info n = { .sz = sizeof(n) };
		unsigned int flags = 0;
		char dev[32] = "";

		CU_ASSERT_EQUAL_FATAL(memmig_topo_get_node(topo, (unsigned int)i, &n), 0);
		for (int j = 0; j < ndax; j++) {
			struct memmig_dax_info d = { .sz = sizeof(d) };

			memmig_topo_get_dax(topo, (unsigned int)j, &d);
			if (d.mode != 1 || d.target_node != n.id)
				continue;
			flags |= MEMMIG_NODE_F_DAX_KMEM |
				 (sysfs_dax_cxl(d.dev) ? MEMMIG_NODE_F_CXL : 0);
			snprintf(dev, sizeof(dev), "%s", d.dev);
		}
		if (n.flags != flags || strcmp(n.dax_dev, dev))
			CUNIT_FAILF("node %d: flags %#x dax '%s', want %#x '%s'", n.id,
				    n.flags, n.dax_dev, flags, dev);
		if (n.flags & MEMMIG_NODE_F_CXL)
			printf("\n    node %d: CXL memory, from %s, tier %d ", n.id, n.dax_dev,
			       n.tier);
		found_node |= want_node && atoi(want_node) == n.id &&
			      (n.flags & MEMMIG_NODE_F_CXL);
	}
	for (int j = 0; j < ndax; j++) {
		struct memmig_dax_info d = { .sz = sizeof(d) };
		bool cxl;

		memmig_topo_get_dax(topo, (unsigned int)j, &d);
		cxl = sysfs_dax_cxl(d.dev);
		if (!!(d.flags & MEMMIG_DAX_F_CXL) != cxl)
			CUNIT_FAILF("%s: flags %#x, sysfs says %sCXL", d.dev, d.flags,
				    cxl ? "" : "not ");
		found_dax |= want_dev && !strcmp(want_dev, d.dev) && cxl;
	}
	if (want_node)
		CU_ASSERT(found_node);
	if (want_dev)
		CU_ASSERT(found_dax);
}

/* ---- API contract ---- */

static void test_errors(void)
{
	struct memmig_node_info n = { .sz = sizeof(n) };
	struct memmig_topo *t = (struct memmig_topo *)1;
	int count = memmig_topo_node_count(topo), cpus[4];

	CU_ASSERT_EQUAL(memmig_topo_new(NULL, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_new(ctx, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_node_count(NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_dax_count(NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_get_node(NULL, 0, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_get_node(topo, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_get_node(topo, (unsigned int)count, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_get_node(topo, UINT_MAX, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_find_node(NULL, 0, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_find_node(topo, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_find_node(topo, 9999, &n), -ENOENT);
	CU_ASSERT_EQUAL(memmig_topo_find_node(topo, -1, &n), -ENOENT);
	CU_ASSERT_EQUAL(memmig_topo_distance(NULL, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_distance(topo, 9999, 0), -ENOENT);
	CU_ASSERT_EQUAL(memmig_topo_distance(topo, 0, 9999), -ENOENT);
	CU_ASSERT_EQUAL(memmig_topo_node_cpus(NULL, 0, cpus, 4), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_node_cpus(topo, 0, NULL, 4), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_node_cpus(topo, 9999, cpus, 4), -ENOENT);
	CU_ASSERT_EQUAL(memmig_topo_get_dax(NULL, 0, NULL), -EINVAL);
	CU_ASSERT_PTR_NULL(memmig_topo_ref(NULL));
	memmig_topo_unref(NULL);
}

/* A caller built against a smaller struct gets only what it knows. */
static void test_sized(void)
{
	struct memmig_node_info n, full;
	size_t part = offsetof(struct memmig_node_info, ncpus);

	CU_ASSERT_EQUAL_FATAL(get_node(0, &full), 0);
	memset(&n, 0xa5, sizeof(n));
	n.sz = part;
	CU_ASSERT_EQUAL(memmig_topo_get_node(topo, 0, &n), 0);
	CU_ASSERT_EQUAL(n.sz, part);
	CU_ASSERT_EQUAL(n.id, full.id);
	CU_ASSERT_EQUAL(n.kind, full.kind);
	CU_ASSERT_EQUAL(n.ncpus, 0xa5a5a5a5u);
	CU_ASSERT_EQUAL(n.nearest_cpu_node, (int)0xa5a5a5a5);
	/* Too small to hold any field. */
	n.sz = sizeof(size_t);
	CU_ASSERT_EQUAL(memmig_topo_get_node(topo, 0, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_topo_find_node(topo, full.id, &n), -EINVAL);
	n.sz = 0;
	CU_ASSERT_EQUAL(memmig_topo_find_node(topo, full.id, &n), -EINVAL);
	/* find_node and get_node agree. */
	n.sz = sizeof(n);
	CU_ASSERT_EQUAL(memmig_topo_find_node(topo, full.id, &n), 0);
	CU_ASSERT_EQUAL(memcmp(&n, &full, sizeof(n)), 0);
}

/* max below the count: the full count comes back, only max are written. */
static void test_cpus_partial(void)
{
	struct memmig_node_info n;
	int cpus[MAX_IDS];

	for (int i = 0; i < memmig_topo_node_count(topo); i++) {
		unsigned int max;
		int rc;

		CU_ASSERT_EQUAL_FATAL(get_node((unsigned int)i, &n), 0);
		if (!n.ncpus)
			continue;
		max = n.ncpus - 1;
		for (int c = 0; c < MAX_IDS; c++)
			cpus[c] = -7;
		rc = memmig_topo_node_cpus(topo, n.id, cpus, max);
		CU_ASSERT_EQUAL(rc, (int)n.ncpus);
		for (unsigned int c = 0; c < max; c++)
			CU_ASSERT(cpus[c] >= 0);
		CU_ASSERT_EQUAL(cpus[max], -7);
		CU_ASSERT_EQUAL(memmig_topo_node_cpus(topo, n.id, NULL, 0),
				(int)n.ncpus);
	}
}

/* The snapshot holds the context: it outlives the caller's reference. */
static void test_refcount(void)
{
	struct memmig_node_info n = { .sz = sizeof(n) };
	struct memmig_ctx *c;
	struct memmig_topo *t;

	CU_ASSERT_EQUAL_FATAL(memmig_ctx_new(&c), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_topo_new(c, &t), 0);
	memmig_ctx_unref(c);
	CU_ASSERT_PTR_EQUAL(memmig_topo_ref(t), t);
	memmig_topo_unref(t);
	CU_ASSERT_EQUAL(memmig_topo_node_count(t), memmig_topo_node_count(topo));
	CU_ASSERT_EQUAL(memmig_topo_get_node(t, 0, &n), 0);
	memmig_topo_unref(t);
}

static CU_TestInfo kernel_tests[] = {
	{ "node ids equal has_memory", test_node_ids },
	{ "CPU lists equal sysfs cpulist", test_cpus },
	{ "mem_total within 1% of node meminfo", test_memory },
	{ "distances equal sysfs", test_distances },
	{ "tiers equal memory_tiering nodelists", test_tiers },
	{ "kind and nearest CPU node", test_nearest },
	{ "DAX devices equal /sys/bus/dax", test_dax },
	{ "CXL memory: DAX devices and the nodes they became", test_cxl },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo api_tests[] = {
	{ "bad arguments: -EINVAL, unknown nodes: -ENOENT", test_errors },
	{ "sized out-structs", test_sized },
	{ "node_cpus with a short array", test_cpus_partial },
	{ "ref, unref, holds the context", test_refcount },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "topology vs the kernel", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pTests = kernel_tests },
	{ .pName = "topology API", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pTests = api_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
