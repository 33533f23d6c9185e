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
/* A cgroup's path as /proc/PID/cgroup has it, with its NUL: the kernel's
 * own bound (a longer one makes reading that file fail, ENAMETOOLONG). */
#define UTIL_CGROUP_PATH_MAX	4096
/* The cgroup's directory: the hierarchy's mount point, then that path. */
#define UTIL_CGROUP_DIR_MAX	(UTIL_CGROUP_PATH_MAX + 32)

struct util_cpuset {
	int pid;			/* whose (util_cpuset_get's pid) */
	char dir[UTIL_CGROUP_DIR_MAX];	/* the cgroup's directory; "" none */
	size_t mnt_len;			/* dir's first mnt_len bytes: the mount point */
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
/* 0 when node has memory (or the kernel's list of those cannot be read),
 * else -ENOENT with "node N does not exist (nodes with memory: LIST)" (or
 * "has no memory", a node without it) in msg: the one wording for a
 * missing node, memmig-cli's and memmigd's, a move's or a tiering's. */
int util_node_has_memory(int node, char *msg, size_t len);
/* Whether two lists name the same nodes ("0-1" and "0,1" do); false when
 * either does not parse. */
bool util_nodelist_same(const char *a, const char *b);
/* out = a with node added, as the kernel prints lists; 0, -EINVAL, -ENOSPC. */
int util_nodelist_add(const char *a, int node, char *out, size_t len);

/*
 * The cgroup path that holds the cpuset settings, from the whole text of
 * a /proc/PID/cgroup (len bytes; a line is what follows a newline, or the
 * start, up to the next newline): the v2 line's ("0::PATH") where v2 has
 * the cpuset controller (v2_cpuset), else the v1 line's whose controllers
 * include cpuset.  0 with the path in path (*v2 says which line); -ENOENT
 * none; -ENAMETOOLONG a path that does not fit len bytes (NUL included);
 * -EINVAL a path that is not absolute, has an empty, "." or ".." component
 * (a process in another cgroup namespace), or a text that is not the
 * kernel's (a line twice, no final newline).
 */
int util_cgroup_cpuset_path(const char *text, size_t len, bool v2_cpuset, char *path,
			    size_t path_len, bool *v2);
/* The process's cpuset; 0, -ESRCH or -errno (util_cgroup_cpuset_path()'s
 * among them).  dir is "" where no cpuset controller shows, or on error
 * (the nodes allowed are read first, whatever follows). */
int util_cpuset_get(int pid, struct util_cpuset *cs);
/* The same through procfd, pid's /proc/PID directory (-1: by path). */
int util_cpuset_get_at(int pid, int procfd, struct util_cpuset *cs);
/*
 * Writes the cgroup's cpuset.mems; 0 or -errno (no cgroup: -ENOENT).  The
 * directory is opened one component at a time below the hierarchy's
 * mount, following no link, and must still hold cs->pid (cgroup.procs):
 * -ESTALE where it does not (the process moved, or dir is not its own).
 */
int util_cpuset_set_mems(const struct util_cpuset *cs, const char *mems);
/*
 * 0 when node is among the nodes pid may use; else -EACCES with a message
 * naming the cgroup, its cpuset.mems and the node.
 */
int util_cpuset_check(int pid, int node, char *msg, size_t len);
int util_cpuset_check_at(int pid, int procfd, int node, char *msg, size_t len);

#endif
