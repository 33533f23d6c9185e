/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a process's resident memory is, per node, as /proc/PID/numa_maps
 * says: taken before and after a step, it tells how many bytes changed
 * node during it, whoever moved them (memmig, or the kernel on a cpuset
 * change).
 */
#ifndef MEMMIG_UTIL_NUMA_USAGE_H
#define MEMMIG_UTIL_NUMA_USAGE_H

#include <stdint.h>

#define UTIL_USAGE_NODES	1024	/* PROTO_MAX_NODE + 1 */
#define UTIL_NUMA_MAP_NODES	64	/* N<node>= fields kept of one line */

/* One line of /proc/PID/numa_maps: a mapping and its resident pages per
 * node, in units of page_size. */
struct util_numa_map {
	uint64_t start;
	const char *kind;	/* "anon", "file", "heap", "stack", "huge"
				 * (hugetlbfs) */
	const char *path;	/* file=PATH (unescaped), or "" */
	uint64_t page_size;	/* bytes: kernelpagesize_kB (4 KiB for THP
				 * too: the file does not tell them apart) */
	unsigned int n;
	int node[UTIL_NUMA_MAP_NODES];
	uint64_t pages[UTIL_NUMA_MAP_NODES];
};

/* Calls fn for each mapping of pid's numa_maps, in address order, until
 * it returns non-zero (returned).  0, -ESRCH (no such process), -errno. */
int util_numa_maps_each(int pid, int (*fn)(const struct util_numa_map *m, void *opaque),
			void *opaque);

struct util_numa_usage {
	uint64_t bytes[UTIL_USAGE_NODES];
};

/* 0, -ESRCH (no such process) or -errno. */
int util_numa_usage_read(int pid, struct util_numa_usage *u);
/* Bytes that changed node between the two readings: the smaller of what
 * the nodes gained and what they lost, so that memory the process newly
 * touched (a gain alone) or freed (a loss alone) does not count. */
uint64_t util_numa_usage_moved(const struct util_numa_usage *before,
			       const struct util_numa_usage *after);
/* Bytes on node. */
uint64_t util_numa_usage_on(const struct util_numa_usage *u, int node);

/* A reading's bytes on a move's target node and on the others. */
struct util_numa_mark {
	uint64_t on, off;
};
void util_numa_usage_mark(const struct util_numa_usage *u, int node,
			  struct util_numa_mark *m);
/* Bytes that reached node from the other nodes since the mark: the smaller
 * of the target's gain and the others' loss (not new or freed memory). */
uint64_t util_numa_usage_arrived(const struct util_numa_usage *u, int node,
				 const struct util_numa_mark *m);
/* Of what arrived on node since the mark, what neither memmig moved nor
 * the narrow after it: the kernel's share during the move. */
uint64_t util_numa_usage_kernel_share(const struct util_numa_usage *u, int node,
				      const struct util_numa_mark *m, uint64_t memmig,
				      uint64_t narrow);

#endif
