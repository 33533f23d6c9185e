/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Anonymous memory bound to one node: destinations and reserves. */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/core/memmig-private.h"
#include "lib/mm/nodemem.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int memmig_bind(void *addr, size_t len, int node, unsigned int flags)
{
	unsigned long mask[MEMMIG_MAX_NODES / (8 * sizeof(unsigned long))] = { 0 };

	if (node < 0 || node >= MEMMIG_MAX_NODES - 1)
		return -EINVAL;
	mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
	if (mbind(addr, len, MPOL_BIND, mask, MEMMIG_MAX_NODES, flags))
		return -errno;
	return 0;
}

void *memmig_map_aligned(size_t len, bool thp, bool noreserve, int *err)
{
	size_t span = len + MEMMIG_UNIT_SIZE;
	uint8_t *p, *aligned;

	p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		 (noreserve ? MAP_NORESERVE : 0), -1, 0);
	if (p == MAP_FAILED) {
		*err = -errno;
		return NULL;
	}
	/* Trim to a 2 MB boundary so that units map as huge pages. */
	aligned = (uint8_t *)(((uintptr_t)p + MEMMIG_UNIT_SIZE - 1) & ~(MEMMIG_UNIT_SIZE - 1));
	if (aligned > p)
		munmap(p, aligned - p);
	if (p + span > aligned + len)
		munmap(aligned + len, p + span - (aligned + len));
	if (thp)
		madvise(aligned, len, MADV_HUGEPAGE);
	return aligned;
}

void *memmig_map_on_node(size_t len, int node, bool thp, bool noreserve, int *err)
{
	uint8_t *aligned = memmig_map_aligned(len, thp, noreserve, err);
	int rc;

	if (!aligned)
		return NULL;
	rc = memmig_bind(aligned, len, node, 0);
	if (rc < 0) {
		munmap(aligned, len);
		*err = rc;
		return NULL;
	}
	return aligned;
}

void *memmig_window_congruent(size_t len, uint64_t src, size_t align, int *err)
{
	size_t span = len + align;
	uint8_t *p, *at;

	p = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		*err = -errno;
		return NULL;
	}
	at = p + ((src - (uintptr_t)p) & (align - 1));
	if (at > p)
		munmap(p, at - p);
	if (p + span > at + len)
		munmap(at + len, p + span - (at + len));
	return at;
}

int memmig_populate(void *addr, size_t len)
{
	if (madvise(addr, len, MADV_POPULATE_WRITE) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	/* Kernels before 5.14: touch each page. */
	for (size_t off = 0; off < len; off += MEMMIG_PAGE_SIZE)
		((volatile uint8_t *)addr)[off] = 0;
	return 0;
}

long long memmig_node_free(int node)
{
	long long free_b = 0;

	if (node < 0 || numa_available() < 0 || node > numa_max_node())
		return -ENOENT;
	if (numa_node_size64(node, &free_b) <= 0)
		return -ENOENT;
	return free_b;
}

int memmig_node_check(struct memmig_ctx *ctx, int node)
{
	if (memmig_node_free(node) >= 0)
		return 0;
	err(ctx, "node %d does not exist or has no memory\n", node);
	return -ENOENT;
}

long long memmig_node_reserve(int node)
{
	FILE *f = fopen("/proc/zoneinfo", "re");
	long long pages = 0;
	bool found = false;
	int cur = -1;
	char line[256];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		int n;

		if (sscanf(line, "Node %d, zone", &n) == 1) {
			cur = n;
			found |= n == node;
		} else if (cur == node && !strchr(line, ':') &&
			   sscanf(line, " high %llu", &v) == 1) {
			pages += (long long)v;	/* a zone's high watermark */
		}
	}
	fclose(f);
	return found ? pages * sysconf(_SC_PAGESIZE) : -ENOENT;
}
