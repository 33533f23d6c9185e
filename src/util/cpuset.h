/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A process's cgroup cpuset: the memory nodes the kernel lets it use
 * (move_pages(2) fails with EACCES for a node outside them), the cgroup
 * that sets them, and changing that cgroup's cpuset.mems.  Node lists are
 * the kernel's ("0-2,4"), kept as strings; util_nodelist_*() read them.
 */
#ifndef MEMMIG_UTIL_CPUSET_H
#define MEMMIG_UTIL_CPUSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UTIL_NODELIST_MAX	256	/* a node list's text, with its NUL */
#define UTIL_CGROUP_PATH_MAX	512

struct util_cpuset {
	char dir[UTIL_CGROUP_PATH_MAX];	/* the cgroup's directory; "" none */
	bool v2;			/* cgroup v2 (else v1's cpuset hierarchy) */
	bool root;			/* the root cgroup: its cpuset.mems is fixed */
	char mems[UTIL_NODELIST_MAX];	/* its cpuset.mems ("" on v2: inherited) */
	char allowed[UTIL_NODELIST_MAX]; /* Mems_allowed_list: what the kernel enforces */
};

#define UTIL_NODES_MAX		1024	/* node ids are below this */

/* A node list's nodes as bits. */
struct util_nodemap {
	uint64_t w[UTIL_NODES_MAX / 64];
};

/* "0-2,4" (ranges and single nodes, comma-separated, "" none; a line as
 * read, up to its newline) into m; 0, or -EINVAL for anything else or a
 * node from UTIL_NODES_MAX. */
int util_nodemap_parse(const char *s, struct util_nodemap *m);
bool util_nodemap_has(const struct util_nodemap *m, int n);

/* Whether node is in list ("0-2,4"); false for a list that does not parse. */
bool util_nodelist_has(const char *list, int node);
/* out = a with node added, as the kernel prints lists; 0, -EINVAL, -ENOSPC. */
int util_nodelist_add(const char *a, int node, char *out, size_t len);

/* The process's cpuset; 0, -ESRCH or -errno.  dir is "" where no cpuset
 * controller shows (the nodes allowed are still read). */
int util_cpuset_get(int pid, struct util_cpuset *cs);
/* Writes the cgroup's cpuset.mems; 0 or -errno (no cgroup: -ENOENT). */
int util_cpuset_set_mems(const struct util_cpuset *cs, const char *mems);
/*
 * 0 when node is among the nodes pid may use; else -EACCES with a message
 * naming the cgroup, its cpuset.mems and the node.
 */
int util_cpuset_check(int pid, int node, char *msg, size_t len);

#endif
