/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Topology snapshot: NUMA nodes with memory (libnuma and sysfs), their CPUs,
 * distances and kernel memory tiers, and the DAX devices (topology-dax.c).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <numa.h>

#include "lib/topology/sysfs-list.h"
#include "lib/topology/topology-private.h"

#define NODE_SYSFS "/sys/devices/system/node"
#define MEMORY_TIER_SYSFS "/sys/devices/virtual/memory_tiering"
#define CPU_ONLINE "/sys/devices/system/cpu/online"

/* Bounds for what sysfs may claim: the kernel's own MAX_NUMNODES (1 << 10)
 * and far beyond any NR_CPUS; larger ids are corrupt input. */
#define TOPO_MAX_NODES 1024u
#define TOPO_MAX_CPUS 65536u

/* Distances the kernel uses when the firmware gives none. */
#define DIST_LOCAL 10
#define DIST_REMOTE 20


struct topo_node {
	struct memmig_node_info info;
	int *cpus;		/* info.ncpus CPU numbers, ascending */
};

struct memmig_topo {
	int refcount;
	struct memmig_ctx *ctx;
	unsigned int nnodes;
	struct topo_node *nodes;	/* ascending id */
	int *dist;			/* nnodes x nnodes, by index */
	unsigned int ndax;
	struct memmig_dax_info *dax;
};

/* ---- nodes ---- */

static int topo_alloc_nodes(struct memmig_topo *topo, unsigned int n)
{
	topo->nodes = calloc(n, sizeof(*topo->nodes));
	topo->dist = calloc((size_t)n * n, sizeof(*topo->dist));
	if (!topo->nodes || !topo->dist)
		return -ENOMEM;
	topo->nnodes = n;
	for (unsigned int i = 0; i < n; i++) {
		struct memmig_node_info *info = &topo->nodes[i].info;

		info->sz = sizeof(*info);
		info->tier = -1;
		info->nearest_cpu_node = -1;
	}
	return 0;
}

static int node_read_cpus(struct memmig_ctx *ctx, struct topo_node *node,
			  const char *path)
{
	unsigned long *bits;
	int rc;

	rc = memmig_sysfs_read_list(ctx, path, TOPO_MAX_CPUS, &bits);
	if (rc < 0)
		return rc;
	rc = memmig_bitmap_to_array(bits, TOPO_MAX_CPUS, &node->cpus,
			     &node->info.ncpus);
	free(bits);
	return rc;
}

static int node_init_numa(struct memmig_ctx *ctx, struct topo_node *node,
			  int id)
{
	char path[64];
	long long total, free_bytes = 0;
	int rc;

	node->info.id = id;
	snprintf(path, sizeof(path), NODE_SYSFS "/node%d/cpulist", id);
	rc = node_read_cpus(ctx, node, path);
	if (rc == -ENOENT) {
		warn(ctx, "%s missing: node %d taken as CPU-less\n", path, id);
	} else if (rc < 0) {
		err(ctx, "node %d: cannot read its CPUs (%d)\n", id, rc);
		return rc;
	}
	total = numa_node_size64(id, &free_bytes);
	if (total < 0) {
		/* Listed in has_memory but meminfo unreadable: say so, go on. */
		warn(ctx, "node %d: no memory size from libnuma\n", id);
		total = free_bytes = 0;
	}
	node->info.mem_total = (uint64_t)total;
	node->info.mem_free = free_bytes > 0 ? (uint64_t)free_bytes : 0;
	return 0;
}

/* The ids of the nodes with memory, as the kernel's N_MEMORY state. */
static int numa_memory_nodes(struct memmig_ctx *ctx, unsigned long **out)
{
	unsigned long *bits;
	int rc, max;

	rc = memmig_sysfs_read_list(ctx, NODE_SYSFS "/has_memory", TOPO_MAX_NODES, out);
	if (rc != -ENOENT)
		return rc;
	/* Kernels before 2.6.35 lack has_memory: ask libnuma node by node. */
	bits = calloc(BITMAP_LONGS(TOPO_MAX_NODES), sizeof(*bits));
	if (!bits)
		return -ENOMEM;
	max = numa_max_node();
	for (int id = 0; id <= max && id < (int)TOPO_MAX_NODES; id++)
		if (numa_node_size64(id, NULL) > 0)
			memmig_bit_set(bits, (unsigned int)id);
	*out = bits;
	return 0;
}

/* numa_distance() gives 0 when the firmware has no table. */
static int numa_dist(struct memmig_ctx *ctx, int from, int to)
{
	int d = numa_distance(from, to);

	if (d > 0)
		return d;
	dbg(ctx, "no distance %d -> %d: using the kernel default\n", from, to);
	return from == to ? DIST_LOCAL : DIST_REMOTE;
}

static int topo_scan_numa(struct memmig_topo *topo)
{
	struct memmig_ctx *ctx = topo->ctx;
	unsigned long *bits;
	unsigned int n = 0, k = 0;
	int rc;

	rc = numa_memory_nodes(ctx, &bits);
	if (rc < 0)
		return rc;
	for (unsigned int id = 0; id < TOPO_MAX_NODES; id++)
		n += memmig_bit_test(bits, id);
	if (!n) {
		err(ctx, "the kernel lists no node with memory\n");
		rc = -ENODEV;
		goto out;
	}
	rc = topo_alloc_nodes(topo, n);
	if (rc < 0)
		goto out;
	for (unsigned int id = 0; id < TOPO_MAX_NODES && !rc; id++)
		if (memmig_bit_test(bits, id))
			rc = node_init_numa(ctx, &topo->nodes[k++], (int)id);
	if (rc < 0)
		goto out;
	for (unsigned int i = 0; i < n; i++)
		for (unsigned int j = 0; j < n; j++)
			topo->dist[i * n + j] = numa_dist(ctx, topo->nodes[i].info.id,
							  topo->nodes[j].info.id);
out:
	free(bits);
	return rc;
}

/* A kernel without NUMA: one node 0 with all the memory and CPUs. */
static int topo_scan_flat(struct memmig_topo *topo)
{
	struct memmig_ctx *ctx = topo->ctx;
	struct topo_node *node;
	long pages, avail, psize = sysconf(_SC_PAGESIZE);
	int rc;

	dbg(ctx, "no NUMA in this kernel: one node 0\n");
	rc = topo_alloc_nodes(topo, 1);
	if (rc < 0)
		return rc;
	node = &topo->nodes[0];
	rc = node_read_cpus(ctx, node, CPU_ONLINE);
	if (rc < 0) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		dbg(ctx, CPU_ONLINE " unreadable (%d): CPUs 0..%ld\n", rc,
		    ncpu - 1);
		if (ncpu < 1 || ncpu > (long)TOPO_MAX_CPUS)
			ncpu = 1;
		node->cpus = malloc((size_t)ncpu * sizeof(*node->cpus));
		if (!node->cpus)
			return -ENOMEM;
		for (long i = 0; i < ncpu; i++)
			node->cpus[i] = (int)i;
		node->info.ncpus = (unsigned int)ncpu;
	}
	pages = sysconf(_SC_PHYS_PAGES);
	avail = sysconf(_SC_AVPHYS_PAGES);	/* MemFree of /proc/meminfo */
	if (psize > 0 && pages > 0)
		node->info.mem_total = (uint64_t)pages * (uint64_t)psize;
	if (psize > 0 && avail > 0)
		node->info.mem_free = (uint64_t)avail * (uint64_t)psize;
	topo->dist[0] = DIST_LOCAL;
	return 0;
}

/* ---- tiers and derived fields ---- */

static struct topo_node *topo_node_by_id(const struct memmig_topo *topo,
					 int id)
{
	unsigned int lo = 0, hi = topo->nnodes;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		int mid_id = topo->nodes[mid].info.id;

		if (mid_id == id)
			return &topo->nodes[mid];
		if (mid_id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* "memory_tier4" -> 4; anything else is not a tier directory. */
static int memory_tier_number(const char *name)
{
	const char *p = name + strlen("memory_tier");
	unsigned int v;

	if (strncmp(name, "memory_tier", strlen("memory_tier")) ||
	    memmig_parse_uint(&p, INT_MAX, &v) < 0 || *p)
		return -1;
	return (int)v;
}

static void topo_apply_memory_tier(struct memmig_topo *topo, int mtier)
{
	char path[PATH_MAX];
	unsigned long *bits;

	snprintf(path, sizeof(path), MEMORY_TIER_SYSFS "/memory_tier%d/nodelist", mtier);
	if (memmig_sysfs_read_list(topo->ctx, path, TOPO_MAX_NODES, &bits) < 0) {
		warn(topo->ctx, "%s unreadable: memory tier %d ignored\n", path, mtier);
		return;
	}
	for (unsigned int i = 0; i < topo->nnodes; i++) {
		struct memmig_node_info *info = &topo->nodes[i].info;

		/* A node is in one tier; should two claim it, the lower wins. */
		if (memmig_bit_test(bits, (unsigned int)info->id) &&
		    (info->tier < 0 || mtier < info->tier))
			info->tier = mtier;
	}
	free(bits);
}

/* Kernels before 6.1 have no memory tiers: every node keeps tier -1. */
static void topo_read_memory_tiers(struct memmig_topo *topo)
{
	DIR *dir = opendir(MEMORY_TIER_SYSFS);
	struct dirent *de;

	if (!dir) {
		dbg(topo->ctx, MEMORY_TIER_SYSFS ": %s\n", strerror(errno));
		return;
	}
	while ((de = readdir(dir))) {
		int mtier = memory_tier_number(de->d_name);

		if (mtier >= 0)
			topo_apply_memory_tier(topo, mtier);
	}
	closedir(dir);
}

/* Nodes whose memory is device DAX onlined as system RAM, and which of
 * them are CXL memory. */
static void topo_link_dax(struct memmig_topo *topo)
{
	for (unsigned int d = 0; d < topo->ndax; d++) {
		const struct memmig_dax_info *dax = &topo->dax[d];

		if (!dax->mode || dax->target_node < 0)
			continue;
		for (unsigned int i = 0; i < topo->nnodes; i++) {
			struct memmig_node_info *info = &topo->nodes[i].info;

			if (info->id != dax->target_node)
				continue;
			info->flags |= MEMMIG_NODE_F_DAX_KMEM;
			if (dax->flags & MEMMIG_DAX_F_CXL)
				info->flags |= MEMMIG_NODE_F_CXL;
			snprintf(info->dax_dev, sizeof(info->dax_dev), "%s", dax->dev);
		}
	}
}

/* Kind, and for CPU-less nodes the closest node with CPUs (lowest id on a
 * tie: nodes are sorted).  Only nodes in the snapshot count, so that the
 * answer can be looked up with the other calls. */
static void topo_link_nearest(struct memmig_topo *topo)
{
	unsigned int n = topo->nnodes;

	for (unsigned int i = 0; i < n; i++) {
		struct memmig_node_info *info = &topo->nodes[i].info;
		int best = -1, best_d = 0;

		info->kind = info->ncpus ? MEMMIG_NODE_DRAM : MEMMIG_NODE_CPULESS;
		if (info->ncpus) {
			info->nearest_cpu_node = info->id;
			continue;
		}
		for (unsigned int j = 0; j < n; j++) {
			int d = topo->dist[i * n + j];

			if (!topo->nodes[j].info.ncpus)
				continue;
			if (best < 0 || d < best_d) {
				best = topo->nodes[j].info.id;
				best_d = d;
			}
		}
		info->nearest_cpu_node = best;
	}
}

/* ---- the object ---- */

static void topo_free(struct memmig_topo *topo)
{
	for (unsigned int i = 0; topo->nodes && i < topo->nnodes; i++)
		free(topo->nodes[i].cpus);
	free(topo->nodes);
	free(topo->dist);
	free(topo->dax);
	memmig_ctx_unref(topo->ctx);
	free(topo);
}

/* devices: the memory tiers and the DAX devices too. */
static int topo_new(struct memmig_ctx *ctx, bool devices, struct memmig_topo **out)
{
	struct memmig_topo *topo;
	int rc;

	if (!ctx || !out)
		return -EINVAL;
	topo = calloc(1, sizeof(*topo));
	if (!topo)
		return -ENOMEM;
	topo->refcount = 1;
	topo->ctx = memmig_ctx_ref(ctx);
	/* numa_available() fails where get_mempolicy() does: no NUMA. */
	if (numa_available() < 0)
		rc = topo_scan_flat(topo);
	else
		rc = topo_scan_numa(topo);
	if (rc < 0)
		goto fail;
	if (devices)
		topo_read_memory_tiers(topo);
	topo_link_nearest(topo);
	if (devices) {
		rc = memmig_topo_dax_scan(ctx, &topo->dax, &topo->ndax);
		if (rc < 0)
			goto fail;
		topo_link_dax(topo);
	}
	for (unsigned int i = 0; i < topo->nnodes; i++) {
		const struct memmig_node_info *info = &topo->nodes[i].info;

		dbg(ctx, "node %d: %u cpus, %llu bytes, tier %d, nearest %d%s%s%s\n",
		    info->id, info->ncpus, (unsigned long long)info->mem_total,
		    info->tier, info->nearest_cpu_node,
		    info->flags & MEMMIG_NODE_F_CXL ? ", CXL memory" : "",
		    info->dax_dev[0] ? ", onlined from " : "", info->dax_dev);
	}
	*out = topo;
	return 0;
fail:
	topo_free(topo);
	return rc;
}

int memmig_topo_new(struct memmig_ctx *ctx, struct memmig_topo **out)
{
	return topo_new(ctx, true, out);
}

int memmig_topo_new_nodes(struct memmig_ctx *ctx, struct memmig_topo **out)
{
	return topo_new(ctx, false, out);
}

struct memmig_topo *memmig_topo_ref(struct memmig_topo *topo)
{
	if (topo)
		__atomic_add_fetch(&topo->refcount, 1, __ATOMIC_RELAXED);
	return topo;
}

void memmig_topo_unref(struct memmig_topo *topo)
{
	if (topo && __atomic_sub_fetch(&topo->refcount, 1, __ATOMIC_ACQ_REL) == 0)
		topo_free(topo);
}

int memmig_topo_node_count(const struct memmig_topo *topo)
{
	if (!topo)
		return -EINVAL;
	return (int)topo->nnodes;
}

int memmig_topo_get_node(const struct memmig_topo *topo, unsigned int idx,
			 struct memmig_node_info *out)
{
	if (!topo || idx >= topo->nnodes)
		return -EINVAL;
	return memmig_struct_out(out, &topo->nodes[idx].info,
				 sizeof(topo->nodes[idx].info));
}

int memmig_topo_find_node(const struct memmig_topo *topo, int node,
			  struct memmig_node_info *out)
{
	const struct topo_node *n;

	if (!topo || !out)
		return -EINVAL;
	n = topo_node_by_id(topo, node);
	if (!n)
		return -ENOENT;
	return memmig_struct_out(out, &n->info, sizeof(n->info));
}

int memmig_topo_distance(const struct memmig_topo *topo, int from, int to)
{
	const struct topo_node *a, *b;

	if (!topo)
		return -EINVAL;
	a = topo_node_by_id(topo, from);
	b = topo_node_by_id(topo, to);
	if (!a || !b)
		return -ENOENT;
	return topo->dist[(size_t)(a - topo->nodes) * topo->nnodes +
			  (size_t)(b - topo->nodes)];
}

int memmig_topo_node_cpus(const struct memmig_topo *topo, int node, int *cpus,
			  unsigned int max)
{
	const struct topo_node *n;

	/* cpus may be NULL with max 0: asks for the count only. */
	if (!topo || (!cpus && max))
		return -EINVAL;
	n = topo_node_by_id(topo, node);
	if (!n)
		return -ENOENT;
	if (max > n->info.ncpus)
		max = n->info.ncpus;
	if (max)
		memcpy(cpus, n->cpus, max * sizeof(*cpus));
	return (int)n->info.ncpus;
}

int memmig_topo_dax_count(const struct memmig_topo *topo)
{
	if (!topo)
		return -EINVAL;
	return (int)topo->ndax;
}

int memmig_topo_get_dax(const struct memmig_topo *topo, unsigned int idx,
			struct memmig_dax_info *out)
{
	if (!topo || idx >= topo->ndax)
		return -EINVAL;
	return memmig_struct_out(out, &topo->dax[idx], sizeof(topo->dax[idx]));
}
