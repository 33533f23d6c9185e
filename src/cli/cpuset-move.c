/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli move --pid P --update-cpuset: the rebalance of
 * docs/libvirt.md for a process that is not a libvirt domain, on its
 * cgroup's cpuset.mems.  move_pages(2) cannot put a page on a node outside
 * the process's cpuset (EACCES), and narrowing cpuset.mems makes the kernel
 * migrate the memory itself (cgroup v2 always; v1 with
 * cpuset.memory_migrate), slowly.  So: widen cpuset.mems to take the
 * target, move, narrow it to the target (nothing left for the kernel);
 * a failed move restores it.  The steps, with the bytes that changed node
 * in each, go into the report as "rebalance", as for a domain.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "proto/job-json.h"
#include "util/cpuset.h"
#include "util/numa-usage.h"

struct cli_cpuset_move {
	int pid, node;
	struct util_cpuset cs;
	char widened[UTIL_NODELIST_MAX];	/* "": it had the node */
	unsigned long long widen_kernel;
	struct util_numa_mark target_mark;
	struct util_numa_usage u;
};

/* Why the cgroup's cpuset cannot be found or written, in words. */
static const char *cpuset_why(int err)
{
	switch (err) {
	case -ENOENT:
		return "no cgroup cpuset found for it";
	case -ENAMETOOLONG:
		return "its cgroup's path (/proc/PID/cgroup) is longer than the kernel's PATH_MAX "
		       "(ENAMETOOLONG): refusing to guess which cgroup it is in";
	case -EINVAL:
		return "its cgroup's path (/proc/PID/cgroup) is not a plain path below the "
		       "cgroup mount (\"..\": another cgroup namespace?): refusing to guess";
	case -ESTALE:
		return "it is no longer in that cgroup (cgroup.procs): not writing a cgroup "
		       "that is not the process's own";
	default:
		return strerror(-err);
	}
}

/* Sets cpuset.mems; the bytes that changed node meanwhile in *moved. */
static int set_measured(struct cli_cpuset_move *m, const char *mems,
			unsigned long long *moved)
{
	struct util_numa_usage *before = malloc(sizeof(*before));
	int ret;

	if (!before)
		return -ENOMEM;
	util_numa_usage_read(m->pid, before);
	ret = util_cpuset_set_mems(&m->cs, mems);
	if (!ret && !util_numa_usage_read(m->pid, &m->u))
		*moved = util_numa_usage_moved(before, &m->u);
	free(before);
	return ret;
}

int cli_cpuset_widen(int pid, int node, struct cli_cpuset_move **out)
{
	struct cli_cpuset_move *m = calloc(1, sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	m->pid = pid;
	m->node = node;
	ret = util_cpuset_get(pid, &m->cs);
	if (!ret && !m->cs.dir[0])
		ret = -ENOENT;
	if (ret) {
		cli_error("move: --update-cpuset: pid %d: %s\n", pid, cpuset_why(ret));
		free(m);
		return ret;
	}
	if (m->cs.root) {
		cli_error("move: --update-cpuset: pid %d is in the root cgroup (%s), whose "
			  "cpuset.mems cannot change: put it in a cgroup of its own, or move "
			  "without --update-cpuset\n", pid, m->cs.dir);
		free(m);
		return -EPERM;
	}
	/* "" on v2: the parent's nodes; the cgroup then gets its own. */
	if (!m->cs.mems[0])
		snprintf(m->cs.mems, sizeof(m->cs.mems), "%s", m->cs.allowed);
	if (!util_nodelist_has(m->cs.mems, node)) {
		ret = util_nodelist_add(m->cs.mems, node, m->widened, sizeof(m->widened));
		if (!ret)
			ret = set_measured(m, m->widened, &m->widen_kernel);
		if (ret) {
			cli_error("move: --update-cpuset: cannot widen %s/cpuset.mems from '%s' "
				  "to take node %d: %s\n", m->cs.dir, m->cs.mems, node,
				  cpuset_why(ret));
			free(m);
			return ret;
		}
	} else {
		util_numa_usage_read(pid, &m->u);
	}
	util_numa_usage_mark(&m->u, node, &m->target_mark);
	*out = m;
	return 0;
}

int cli_cpuset_finish(struct cli_cpuset_move *m, struct json_object *rep)
{
	unsigned long long memmig = (unsigned long long)cli_json_int(rep, "bytes_moved", 0);
	unsigned long long narrow = 0, move_kernel = 0;
	bool ok = rep && !strcmp(cli_json_str(rep, "result", ""), "OK");
	struct json_object *rb = json_object_new_object();
	char target[16], msg[UTIL_CGROUP_DIR_MAX + UTIL_NODELIST_MAX + 256];
	const char *want;
	int ret = 0;

	snprintf(target, sizeof(target), "%d", m->node);
	want = ok ? target : m->cs.mems;
	if (ok || m->widened[0])
		ret = set_measured(m, want, &narrow);
	if (!ret && ok)
		move_kernel = util_numa_usage_kernel_share(&m->u, m->node, &m->target_mark,
							   memmig, narrow);
	if (ret)
		snprintf(msg, sizeof(msg), "cannot %s %s/cpuset.mems to '%s': %s",
			 ok ? "narrow" : "restore", m->cs.dir, want, cpuset_why(ret));
	else
		snprintf(msg, sizeof(msg), ok ? "%s/cpuset.mems narrowed to '%s'" :
			 "the move failed: %s/cpuset.mems restored to '%s'", m->cs.dir, want);
	json_object_object_add(rb, "state", json_object_new_string(
			       ret ? "failed" : ok ? "done" : "rolled-back"));
	json_object_object_add(rb, "cgroup", json_object_new_string(m->cs.dir));
	json_object_object_add(rb, "to_node", json_object_new_int(m->node));
	json_object_object_add(rb, "nodeset_before", json_object_new_string(m->cs.mems));
	json_object_object_add(rb, "nodeset_widened", m->widened[0] ?
			       json_object_new_string(m->widened) : NULL);
	json_object_object_add(rb, "nodeset_after", ret ? NULL : json_object_new_string(want));
	json_object_object_add(rb, "widen", proto_rebalance_step_json(m->widen_kernel, 0));
	json_object_object_add(rb, "move", proto_rebalance_step_json(move_kernel, memmig));
	json_object_object_add(rb, "narrow", proto_rebalance_step_json(narrow, 0));
	json_object_object_add(rb, "message", json_object_new_string(msg));
	if (rep)
		json_object_object_add(rep, "rebalance", rb);
	else
		json_object_put(rb);
	if (ret && !rep)	/* else the report says it */
		cli_error("move: %s\n", msg);
	free(m);
	return ret;
}
