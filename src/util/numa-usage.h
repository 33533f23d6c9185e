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

struct util_numa_usage {
	uint64_t bytes[UTIL_USAGE_NODES];
};

/* 0, -ESRCH (no such process) or -errno. */
int util_numa_usage_read(int pid, struct util_numa_usage *u);
/* Bytes that arrived on a node between the two readings (the sum of the
 * nodes' increases): what moved, plus what the process newly touched. */
uint64_t util_numa_usage_moved(const struct util_numa_usage *before,
			       const struct util_numa_usage *after);
/* Bytes on node. */
uint64_t util_numa_usage_on(const struct util_numa_usage *u, int node);

#endif
