/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel strategy: move_pages(2), which works on any process the
 * caller may ptrace-read.  One entry per 2 MB unit that is a THP (the
 * kernel moves the whole folio), one per 4 KiB page otherwise.
 */
#include <errno.h>
#include <numaif.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/migrate/migrate-private.h"
#include "lib/mm/nodemem.h"
#include "lib/mm/pageflags.h"
#include "lib/migrate/placement.h"

struct batch {
	void **pages;
	int *nodes, *status;
	size_t n;
};

/* One entry for the unit: a THP as it was found, unless a walk ran since
 * (it may have split it). */
static bool unit_whole(const struct memmig_job *job, const struct memmig_unit *u)
{
	return u->thp && !job->premoved;
}

/*
 * Appends the unit's entries; returns the first entry's index.  A page the
 * move's from_nodes leave alone is asked to stay where it is, which the
 * kernel does without moving it: entries and pages stay one to one.
 */
static size_t batch_add(struct batch *b, const struct memmig_job *job,
			const struct memmig_unit *u)
{
	size_t first = b->n, page = memmig_job_page(job, u->addr);
	size_t n = unit_whole(job, u) ? 1 : u->len / MEMMIG_PAGE_SIZE;

	for (size_t i = 0; i < n; i++) {
		b->pages[b->n] = (void *)(uintptr_t)(u->addr + i * MEMMIG_PAGE_SIZE);
		b->nodes[b->n++] = memmig_job_page_wanted(job, page + i) ? job->target :
				   job->before[page + i];
	}
	return first;
}

/*
 * A THP the target had no room for may have been split and moved in part
 * (Linux 6.12): its entry says where the head page is, not the rest.
 * After a call that did not move everything its pages are asked one by
 * one; those elsewhere failed with the entry's error, or as pages left
 * behind do.  False when the query fails (the entry then stands).
 */
static bool thp_pages(struct memmig_job *job, const struct memmig_unit *u, int head,
		      int *st)
{
	int why = head < 0 ? head : 0;

	if (memmig_job_placement_query(job, u->addr, u->len, st) < 0)
		return false;
	for (size_t i = 0; i < u->len / MEMMIG_PAGE_SIZE; i++)
		if (st[i] >= 0 && st[i] != job->target) {
			if (!why)
				why = memmig_job_target_full(job) ? -ENOMEM : -EBUSY;
			st[i] = why;
		}
	return true;
}

/* Copies a unit's results into the job's per-page status; whole says
 * the call moved all it was asked to. */
static void unit_status(struct memmig_job *job, struct memmig_unit *u,
			const int *st, bool whole)
{
	size_t page = memmig_job_page(job, u->addr);
	int pages[MEMMIG_UNIT_PAGES];
	bool one = unit_whole(job, u), ok = true;

	if (one && !whole && thp_pages(job, u, st[0], pages)) {
		st = pages;
		one = false;
	}
	for (size_t i = 0; i < u->len / MEMMIG_PAGE_SIZE; i++) {
		int s = one ? st[0] : st[i];

		if (!memmig_job_page_wanted(job, page + i))
			s = MEMMIG_STATUS_SKIPPED;
		job->status[page + i] = s;
		if (s == -ENOMEM)
			memmig_job_fail(job, -ENOMEM); /* the target is full */
		ok &= s == job->target || s == MEMMIG_STATUS_SKIPPED ||
		      memmig_status_nothing(s);
	}
	memmig_job_unit_done(job, u, ok ? MEMMIG_UNIT_DONE : MEMMIG_UNIT_FAILED);
}

/* Where the job found entry i's page: a node, or -errno. */
static int found_at(const struct memmig_job *job, const struct batch *b, size_t i)
{
	return job->before[memmig_job_page(job, (uintptr_t)b->pages[i])];
}

/* MEMMIG_FAULT_MOVE_PAGES_BUSY's entry: the first for the target whose
 * page was found on a node; b->n for none. */
static size_t busy_entry(const struct memmig_job *job, const struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->nodes[i] == job->target && found_at(job, b, i) >= 0)
			return i;
	return b->n;
}

/*
 * MPOL_MF_MOVE_ALL also moves pages other processes map (shared memory)
 * but needs CAP_SYS_NICE; without it, or when the job is to move only the
 * process's own pages (for an unprivileged client), MPOL_MF_MOVE.
 */
static long batch_move_pages(struct memmig_job *job, struct batch *b)
{
	static int flags = MPOL_MF_MOVE_ALL;
	int f = job->flags & MEMMIG_MIGRATE_OWN_PAGES ? MPOL_MF_MOVE :
		__atomic_load_n(&flags, __ATOMIC_RELAXED);
	long rc = memmig_fault_hit(job->ctx, MEMMIG_FAULT_MOVE_PAGES), late;
	int busy = rc ? 0 : memmig_fault_hit(job->ctx, MEMMIG_FAULT_MOVE_PAGES_BUSY);
	size_t skip = busy ? busy_entry(job, b) : b->n;
	int keep = 0;

	if (rc)
		return rc;
	/* Injected: asked to stay where it was found, then said busy. */
	if (skip < b->n) {
		keep = b->nodes[skip];
		b->nodes[skip] = found_at(job, b, skip);
	}
	rc = memmig_job_move_pages(job, b->n, b->pages, b->nodes, b->status, f);
	/* The kernel's EPERM (no CAP_SYS_NICE for MOVE_ALL), not the pin's. */
	if (rc == -EPERM && f == MPOL_MF_MOVE_ALL && !__atomic_load_n(&job->pin_denied, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&flags, MPOL_MF_MOVE, __ATOMIC_RELAXED);
		rc = memmig_job_move_pages(job, b->n, b->pages, b->nodes,
					   b->status, MPOL_MF_MOVE);
	}
	if (skip < b->n) {
		b->nodes[skip] = keep;
		if (rc >= 0)
			b->status[skip] = busy;
	}
	/* As Linux 6.12 does on a full node: part moved, the call failed,
	 * the status array left as it was (here: garbage, not a node). */
	late = memmig_fault_hit(job->ctx, MEMMIG_FAULT_MOVE_PAGES_AFTER);
	if (late) {
		memset(b->status, 0x5a, b->n * sizeof(*b->status));
		rc = late;
	}
	return rc;
}

static int batch_alloc(struct batch *b, size_t units)
{
	size_t max = units * MEMMIG_UNIT_PAGES;

	*b = (struct batch){
		.pages = malloc(max * sizeof(void *)),
		.nodes = malloc(max * sizeof(int)),
		.status = malloc(max * sizeof(int)),
	};
	return b->pages && b->nodes && b->status ? 0 : -ENOMEM;
}

static void batch_free(struct batch *b)
{
	free(b->pages);
	free(b->nodes);
	free(b->status);
}

/* Where each page is now, into b->status; a query that fails fails them
 * all with its error. */
static void batch_query(struct memmig_job *job, struct batch *b)
{
	long rc = memmig_job_move_pages(job, b->n, b->pages, NULL, b->status, 0);

	for (size_t i = 0; rc < 0 && i < b->n; i++)
		b->status[i] = (int)rc;
}

/*
 * move_pages() stops at the first unit it could not migrate and returns how
 * many pages it did not move, leaving the status array unwritten: where
 * each page is comes from a query instead, each time.  A page it could not
 * take off its LRU list (another thread had it: reclaim, compaction,
 * khugepaged, a racing fault) it skips with -EBUSY in its status, and the
 * call still returns 0.  Pages left behind either way are often busy only
 * for a moment: they are asked again, alone, after a yield, then (a few of
 * them, on a target with room) after 1 ms and 10 ms.  Those still
 * elsewhere then failed for lack of memory when the target is full --
 * down to what the kernel keeps free there, plus a unit (a THP that could
 * not be had: Linux 6.12 answers so where 6.1 fails the call with ENOMEM)
 * -- else because they were busy, unless a call said another reason
 * (EACCES: another process maps the page).
 */
#define RETRY_WAIT_MAX 16

/* An entry for the target (not one left alone) that is elsewhere. */
static bool left_behind(const struct memmig_job *job, const struct batch *b, size_t i)
{
	return b->nodes[i] == job->target && b->status[i] >= 0 &&
	       b->status[i] != job->target;
}

/* Whether the call skipped an entry for the target as busy. */
static bool any_busy(const struct memmig_job *job, const struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->nodes[i] == job->target && b->status[i] == -EBUSY)
			return true;
	return false;
}

static void retry_left(struct memmig_job *job, struct batch *b)
{
	static const unsigned int wait_us[] = { 0, 1000, 10000 };
	struct batch r = {
		.pages = malloc(b->n * sizeof(void *)),
		.nodes = malloc(b->n * sizeof(int)),
		.status = malloc(b->n * sizeof(int)),
	};
	size_t *idx = malloc(b->n * sizeof(size_t));
	int *said = calloc(b->n, sizeof(int));	/* a call's reason, not busy */
	int why;

	for (unsigned int k = 0;; k++) {
		long rc;

		batch_query(job, b);
		r.n = 0;
		for (size_t i = 0; i < b->n; i++)
			if (left_behind(job, b, i)) {
				if (idx && r.pages && r.nodes) {
					idx[r.n] = i;
					r.pages[r.n] = b->pages[i];
					r.nodes[r.n] = job->target;
				}
				r.n++;
			}
		/* Waiting is for a few busy pages; many left, or a full
		 * node, is a lack of memory that no moment cures. */
		if (!r.n || k == 3 || !idx || !r.pages || !r.nodes || !r.status || !said ||
		    (k && (r.n > RETRY_WAIT_MAX || memmig_job_target_full(job))))
			break;
		if (wait_us[k])
			usleep(wait_us[k]);
		else
			sched_yield();
		rc = batch_move_pages(job, &r);
		for (size_t i = 0; rc == 0 && i < r.n; i++)
			if (r.status[i] < 0 && r.status[i] != -EBUSY)
				said[idx[i]] = r.status[i];
		if (rc == 0 && !any_busy(job, &r)) {
			for (size_t i = 0; i < r.n; i++)
				b->status[idx[i]] = r.status[i];
			r.n = 0;
			break;
		}
	}
	why = r.n && memmig_job_target_full(job) ? -ENOMEM : -EBUSY;
	for (size_t i = 0; r.n && i < b->n; i++)
		if (left_behind(job, b, i))
			b->status[i] = said && said[i] ? said[i] : why;
	free(idx);
	free(said);
	batch_free(&r);
}

/*
 * A failed call may still have moved part of the batch (Linux 6.12 does
 * so on a full node, then returns -ENOMEM with the status array
 * unwritten): where the pages are is asked, and only those meant for the
 * target that are not there failed with the call's error.  When the
 * query fails too (the process is gone), every page keeps the error.
 * Returns whether the statuses came from the kernel.
 */
static bool failed_call_status(struct memmig_job *job, struct batch *b, int err)
{
	long rc = memmig_job_move_pages(job, b->n, b->pages, NULL, b->status, 0);

	for (size_t i = 0; i < b->n; i++)
		if (rc < 0 || left_behind(job, b, i))
			b->status[i] = err;
	return rc >= 0;
}

static int move_batch(struct memmig_job *job, struct batch *b,
		       struct memmig_unit *units, size_t nunits, const size_t *at)
{
	long rc = b->n ? batch_move_pages(job, b) : 0;
	bool asked = true, retried = rc > 0 || (rc == 0 && any_busy(job, b));

	if (rc < 0)
		asked = failed_call_status(job, b, (int)rc);
	else if (retried)
		retry_left(job, b);
	if (asked)
		memmig_pageflags_refine(job->pid, job->pin.procfd, b->pages, b->n, b->status);
	for (size_t i = 0; i < nunits; i++)
		unit_status(job, &units[i], b->status + at[i], !retried && rc == 0);
	b->n = 0;
	return rc < 0 && rc != -ENOMEM ? (int)rc : 0; /* ENOMEM: from status */
}

int memmig_kernel_move_unit(struct memmig_job *job, struct memmig_unit *u)
{
	struct batch b;
	size_t at = 0;
	int rc = batch_alloc(&b, 1);

	if (!rc) {
		batch_add(&b, job, u);
		rc = move_batch(job, &b, u, 1, &at);
	}
	batch_free(&b);
	return rc;
}

/* After a walk: a page it should have moved and did not (one absent
 * from the start is the kernel's answer already). */
static bool page_left(const struct memmig_job *job, size_t p)
{
	return job->before[p] >= 0 && job->after[p] != job->target &&
	       memmig_job_page_wanted(job, p);
}

/* Whether the unit needs move_pages(2): some page not on the target
 * before the job; after a walk, some page it left. */
static bool unit_needs_call(const struct memmig_job *job, const struct memmig_unit *u)
{
	size_t p = memmig_job_page(job, u->addr);

	if (!job->premoved)
		return !memmig_job_unit_on_target(job, u);
	for (size_t k = 0; k < u->len / MEMMIG_PAGE_SIZE; k++)
		if (page_left(job, p + k))
			return true;
	return false;
}

/*
 * The status of a unit that needs no call.  After a walk and a stop, of a
 * unit that needed one: the pages the walk left keep no status, and the
 * unit stays pending (skipped), but the pages it moved are the job's.
 */
static void unit_settle(struct memmig_job *job, struct memmig_unit *u, bool stopped)
{
	size_t p = memmig_job_page(job, u->addr), n = u->len / MEMMIG_PAGE_SIZE;
	void *pages[MEMMIG_UNIT_PAGES] = { 0 };
	bool ok = true;

	for (size_t k = 0; k < n; k++) {
		int before = job->before[p + k];

		pages[k] = (void *)(uintptr_t)(u->addr + k * MEMMIG_PAGE_SIZE);
		if (stopped && page_left(job, p + k))
			continue;
		job->status[p + k] = !memmig_job_page_wanted(job, p + k) ? MEMMIG_STATUS_SKIPPED :
				     job->premoved && before < 0 ? before : job->target;
	}
	/* After a walk: what hides behind "absent" (poison), as after a
	 * call of our own. */
	if (job->premoved) {
		memmig_pageflags_refine(job->pid, job->pin.procfd, pages, n, job->status + p);
		for (size_t k = 0; k < n; k++) {
			int st = job->status[p + k];

			ok &= st >= 0 || st == MEMMIG_STATUS_SKIPPED || st == MEMMIG_STATUS_UNTOUCHED ||
			      memmig_status_nothing(st);
		}
	}
	if (!stopped)
		memmig_job_unit_done(job, u, ok ? MEMMIG_UNIT_DONE : MEMMIG_UNIT_FAILED);
}

static int kernel_run(struct memmig_worker *w)
{
	struct memmig_job *job = w->job;
	size_t at[MEMMIG_CALL_UNITS], first = 0;
	struct batch b;
	double t = memmig_now();
	int rc = batch_alloc(&b, MEMMIG_CALL_UNITS);

	for (size_t i = w->first; !rc && i < w->last; ) {
		size_t nu = 0;

		first = i;
		for (; i < w->last && nu < MEMMIG_CALL_UNITS; i++) {
			struct memmig_unit *u = &job->units[i];
			bool call = unit_needs_call(job, u);

			/* Nothing to do where the kernel would find it all
			 * there.  A batch is of neighbours: after a walk it
			 * ends at a unit with nothing to do. */
			if (!call && (!nu || job->premoved)) {
				if (nu)
					break;
				unit_settle(job, u, false);
				first = i + 1;
				continue;
			}
			/* A walk's units are settled to the end: the pages it
			 * moved are the job's. */
			if (memmig_job_stopping(job)) {
				if (!job->premoved) {
					i = w->last;
					break;
				}
				if (nu)
					break;
				unit_settle(job, u, true);
				first = i + 1;
				continue;
			}
			u->requery = job->premoved;
			at[nu++] = batch_add(&b, job, u);
		}
		rc = move_batch(job, &b, &job->units[first], nu, at);
	}
	w->copy_s = memmig_now() - t;
	batch_free(&b);
	return rc;
}

const struct memmig_strategy_ops memmig_strategy_kernel = {
	.name = "kernel",
	.run = kernel_run,
};
