/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A whole-process move in one walk of the kernel's a source node:
 * migrate_pages(2), as numactl's migratepages(8) does it.  move_pages(2) pays a fixed cost per
 * call (Linux drains every CPU's LRU caches and waits for an expedited RCU
 * grace period at each one), and a process has dozens of mappings; the
 * walk pays it once and finds the pages by the page tables, not address
 * by address.  The report stays exact: where each page was is asked
 * before (the placement query the jobs would make anyway), where it is
 * after, and move_pages(2) finishes what the walk left, with its errors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/migrate/migrate-private.h"
#include "lib/migrate/walk.h"

#define MASK_WORDS (MEMMIG_MOVE_MAX_NODES / 64)

bool memmig_walk_wanted(const struct memmig_walk_req *req)
{
	const char *env = getenv("MEMMIG_MOVE_WALK");

	/* migrate_pages(2) moves every page of the process that only the
	 * process maps, and, with CAP_SYS_NICE, shared ones too: it cannot
	 * keep to a client's own pages (MEMMIG_MIGRATE_OWN_PAGES). */
	return !(env && !strcmp(env, "0")) && req->pid > 0 && !req->ranges &&
	       req->strategy == MEMMIG_STRATEGY_KERNEL && req->target >= 0 &&
	       !(req->flags & MEMMIG_MIGRATE_OWN_PAGES);
}

/* The nodes that hold pages of the job the move wants elsewhere. */
static void add_sources(const struct memmig_job *job, uint64_t *mask)
{
	for (size_t i = 0; i < job->len / MEMMIG_PAGE_SIZE; i++) {
		int node = job->before[i];

		if (node >= 0 && node < MEMMIG_MOVE_MAX_NODES && node != job->target &&
		    memmig_job_page_wanted(job, i))
			mask[node / 64] |= 1ULL << (node % 64);
	}
}

int memmig_walk_run(struct memmig_job **jobs, unsigned int n, int pid,
		    const struct memmig_pin *pin, int target, bool (*stop)(void *), void *arg,
		    double *walk_s)
{
	unsigned long from[MASK_WORDS * (64 / (sizeof(long) * 8))], to[sizeof(from) / sizeof(long)];
	const unsigned int bits = sizeof(long) * 8;
	uint64_t mask[MASK_WORDS] = { 0 };
	double t = memmig_now();
	long rc = 0;

	*walk_s = 0;
	for (unsigned int i = 0; i < n; i++)
		if (jobs[i] && jobs[i]->before_known)
			add_sources(jobs[i], mask);
	memset(to, 0, sizeof(to));
	to[target / bits] = 1UL << (target % bits);
	/* One call a source node, and a stop between: a cancel waits for
	 * the node being walked, not for the whole process. */
	for (int node = 0; node < MEMMIG_MOVE_MAX_NODES && rc >= 0; node++) {
		if (!(mask[node / 64] >> (node % 64) & 1))
			continue;
		if (stop(arg))
			return -ECANCELED;
		memset(from, 0, sizeof(from));
		from[node / bits] = 1UL << (node % bits);
		rc = memmig_pin_call_before(pin);
		if (rc)
			return (int)rc;
		rc = syscall(SYS_migrate_pages, pid, (unsigned long)MEMMIG_MOVE_MAX_NODES + 1,
			     from, to);
		rc = memmig_pin_call_after(pin, rc < 0 ? -errno : rc);
		*walk_s = memmig_now() - t;
		for (unsigned int i = 0; i < n; i++)
			if (jobs[i]) {
				dbg(jobs[i]->ctx, "move: pid %d in one walk to node %d: "
				    "migrate_pages(2) from node %d answered %ld (%.3f s so far)\n",
				    pid, target, node, rc, *walk_s);
				break;
			}
	}
	return rc < 0 ? (int)rc : 0;
}
