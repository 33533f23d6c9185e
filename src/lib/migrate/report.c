/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reports: built once from the job's per-page arrays, so every figure
 * (moved ranges, failures by errno, node counts) comes from the same data.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/migrate/migrate-private.h"
#include "lib/mm/smaps.h"

struct range {
	uint64_t addr, len;
	int err;
};

struct errno_count {
	int err;
	uint64_t pages;
	uint64_t failed;	/* of them, in pages_failed */
};

struct memmig_report {
	int refcount;
	struct memmig_report_summary sum;
	int max_node;
	uint64_t *before, *after;	/* pages per node, 0..max_node */
	struct range *moved;
	size_t nmoved;
	/* The first MEMMIG_REPORT_MAX_FAILED_RANGES failed ranges; those past
	 * them only counted (sum.failed_ranges_omitted, _pages_omitted), the
	 * last of them kept to join the next failed page. */
	struct range *failed;
	size_t nfailed;
	struct range failed_last_omitted;	/* while any was omitted */
	struct errno_count *errs;
	size_t nerrs;
};

/* Appends len bytes at addr to a coalesced range list. */
static int range_add(struct range **list, size_t *n, uint64_t addr, uint64_t len, int err)
{
	struct range *r = *n ? &(*list)[*n - 1] : NULL;

	if (r && r->addr + r->len == addr && r->err == err) {
		r->len += len;
		return 0;
	}
	/* Grow by doubling: the count is a power of two or zero here. */
	if (!(*n & (*n - 1))) {
		struct range *nl = realloc(*list, (*n ? *n * 2 : 1) * sizeof(**list));

		if (!nl)
			return -ENOMEM;
		*list = nl;
	}
	(*list)[(*n)++] = (struct range){ addr, len, err };
	return 0;
}

/*
 * Adds a failed range (in the order the pages were looked at, ascending
 * within a region): it joins the last one when it continues it with the
 * same errno, kept or omitted; else it is kept while there is room and
 * none was omitted, counted otherwise.  The list is bounded, and the
 * counts are what an unbounded list of coalesced ranges would have had.
 */
static int failed_add(struct memmig_report *rep, const struct range *add)
{
	struct memmig_report_summary *s = &rep->sum;
	struct range *last = s->failed_ranges_omitted ? &rep->failed_last_omitted :
			     rep->nfailed ? &rep->failed[rep->nfailed - 1] : NULL;

	if (last && last->addr + last->len == add->addr && last->err == add->err) {
		last->len += add->len;
		if (s->failed_ranges_omitted)
			s->failed_pages_omitted += add->len / MEMMIG_PAGE_SIZE;
		return 0;
	}
	if (rep->nfailed == MEMMIG_REPORT_MAX_FAILED_RANGES) {
		s->failed_ranges_omitted++;
		s->failed_pages_omitted += add->len / MEMMIG_PAGE_SIZE;
		rep->failed_last_omitted = *add;
		return 0;
	}
	if (!rep->failed) {
		rep->failed = malloc(MEMMIG_REPORT_MAX_FAILED_RANGES * sizeof(*rep->failed));
		if (!rep->failed)
			return -ENOMEM;
	}
	rep->failed[rep->nfailed++] = *add;
	return 0;
}

static int errno_add(struct memmig_report *rep, int err, uint64_t pages, uint64_t failed)
{
	struct errno_count *e;

	for (size_t i = 0; i < rep->nerrs; i++)
		if (rep->errs[i].err == err) {
			rep->errs[i].pages += pages;
			rep->errs[i].failed += failed;
			return 0;
		}
	e = realloc(rep->errs, (rep->nerrs + 1) * sizeof(*e));
	if (!e)
		return -ENOMEM;
	rep->errs = e;
	rep->errs[rep->nerrs++] = (struct errno_count){ err, pages, failed };
	return 0;
}

/*
 * A page moved when the strategy put it on the target: the kernel
 * strategy only counts pages that were elsewhere before, the copy strategy
 * every page it copied and swapped (new frames, even on the same node).
 */
static bool page_moved(const struct memmig_job *job, size_t i)
{
	int backing = job->region->desc.backing;

	if (job->status[i] != memmig_job_target_status(job))
		return false;
	/* A copy to a target path or from DAX is a move whatever the node
	 * (DAX pages have none). */
	if (job->to_file || backing == MEMMIG_BACKING_DAX)
		return true;
	if (job->strategy == MEMMIG_STRATEGY_COPY && backing == MEMMIG_BACKING_ANON)
		return (job->flags & MEMMIG_MIGRATE_FORCE) || job->before[i] != job->target;
	/* A page absent at the start and on the target at the end was
	 * faulted in meanwhile, wherever the process's policy put it: on a
	 * one-node host "moved" would be plainly false, so it is not counted
	 * (it shows in pages_on_target). */
	return job->before[i] >= 0 && job->before[i] != job->target;
}

/* Room for node in both per-node counts, zeroed: max_node grows to it. */
static int nodes_grow(struct memmig_report *rep, int node)
{
	uint64_t *b, *a;

	if (node <= rep->max_node)
		return 0;
	b = realloc(rep->before, (node + 1) * sizeof(*b));
	if (b)
		rep->before = b;
	a = realloc(rep->after, (node + 1) * sizeof(*a));
	if (a)
		rep->after = a;
	if (!a || !b)
		return -ENOMEM;
	for (int i = rep->max_node + 1; i <= node; i++)
		b[i] = a[i] = 0;
	rep->max_node = node;
	return 0;
}

/* n pages that were on node before and are on node after (< 0: none). */
static int nodes_count(struct memmig_report *rep, int before, int after, uint64_t n)
{
	int rc = nodes_grow(rep, before > after ? before : after);

	if (rc)
		return rc;
	if (before >= 0)
		rep->before[before] += n;
	if (after >= 0)
		rep->after[after] += n;
	return 0;
}

static void report_free(struct memmig_report *rep)
{
	free(rep->before);
	free(rep->after);
	free(rep->moved);
	free(rep->failed);
	free(rep->errs);
	free(rep);
}

/*
 * -EFAULT from the kernel is a zero page (nothing to move) or no mapping
 * at all: a page unmapped since the region was registered, which did not
 * move.  The mappings (their ranges: /proc/PID/maps, not smaps, which
 * walks every page table) are read once, at the first -EFAULT, and walked
 * in address order.
 */
struct holes {
	int pid, procfd;
	bool read;
	struct memmig_vma *v;
	size_t n, i;
	uint64_t pages;
};

static bool page_unmapped(struct holes *h, uint64_t addr)
{
	if (!h->read) {
		h->read = true;
		if (memmig_maps_read_at(h->pid, h->procfd, &h->v, &h->n) < 0)
			h->v = NULL;	/* cannot tell: a zero page, as before */
	}
	if (!h->v)
		return false;
	while (h->i < h->n && h->v[h->i].end <= addr)
		h->i++;
	return h->i == h->n || h->v[h->i].start > addr;
}

/* Pages [i, i + n) that failed with st, one hole or none (hole: gone
 * from the address space, which is the job's failure too). */
static int report_failed(struct memmig_report *rep, const struct memmig_job *job,
			 size_t i, uint64_t n, int st, bool hole)
{
	/* Not present is nothing to move, not a failure. */
	bool failed = hole || job->ops->status_not_queried || !memmig_status_nothing(st);
	int rc = errno_add(rep, -st, n, failed ? n : 0);

	if (!rc && failed) {
		rep->sum.pages_failed += n;
		rc = failed_add(rep, &(struct range){ job->addr + i * MEMMIG_PAGE_SIZE,
						      n * MEMMIG_PAGE_SIZE, -st });
	}
	return rc;
}

/* How many pages from i on say the same in before, after and status: the
 * report takes them at once (a THP unit's 512 always do). */
static size_t run_len(const struct memmig_job *job, size_t i, size_t npages)
{
	size_t k = i + 1;

	while (k < npages && job->status[k] == job->status[i] &&
	       job->before[k] == job->before[i] && job->after[k] == job->after[i])
		k++;
	return k - i;
}

static int report_pages(struct memmig_report *rep, const struct memmig_job *job,
			size_t npages, struct holes *h)
{
	struct memmig_report_summary *s = &rep->sum;
	int rc = nodes_grow(rep, job->target);

	for (size_t i = 0, n; !rc && i < npages; i += n) {
		uint64_t addr = job->addr + i * MEMMIG_PAGE_SIZE;
		int st = job->status[i];

		n = run_len(job, i, npages);
		rc = nodes_count(rep, job->before[i], job->after[i], n);
		if (rc)
			break;
		if (page_moved(job, i)) {
			s->bytes_moved += n * MEMMIG_PAGE_SIZE;
			rc = range_add(&rep->moved, &rep->nmoved, addr, n * MEMMIG_PAGE_SIZE, 0);
		} else if (st == MEMMIG_STATUS_SKIPPED) {
			s->pages_skipped += n;
		} else if (st == -EFAULT) {
			/* A zero page, or a page unmapped meanwhile: each asked. */
			for (size_t k = 0; !rc && k < n; k++) {
				bool hole = page_unmapped(h, addr + k * MEMMIG_PAGE_SIZE);

				h->pages += hole;
				rc = report_failed(rep, job, i + k, 1, st, hole);
			}
		} else if (st < 0 && st != MEMMIG_STATUS_UNTOUCHED) {
			rc = report_failed(rep, job, i, n, st, false);
		}
		if (job->after[i] == memmig_job_target_status(job))
			s->pages_verified_on_target += n;
	}
	return rc;
}

int memmig_report_build(struct memmig_job *job)
{
	struct memmig_report *rep = calloc(1, sizeof(*rep));
	struct holes holes = { .pid = job->pid, .procfd = job->pin.procfd };
	struct memmig_report_summary *s;
	size_t npages = job->len / MEMMIG_PAGE_SIZE;
	int rc;

	if (!rep)
		return -ENOMEM;
	rep->refcount = 1;
	s = &rep->sum;
	s->sz = sizeof(*s);
	s->result = job->result;
	s->strategy = job->strategy;
	s->target_node = job->target;
	s->workers = job->nworkers;
	s->bytes_total = job->len;
	s->units_total = job->nunits;
	for (size_t i = 0; i < job->nunits; i++)
		s->units_thp += job->units[i].thp;
	s->pid = job->region->desc.pid;
	s->regions = 1;
	s->prepare_s = job->prepare_s;
	s->copy_s = job->copy_s;
	s->query_s = job->query_s;
	s->total_s = job->total_s;
	rep->max_node = -1;
	rc = report_pages(rep, job, npages, &holes);
	free(holes.v);
	if (rc < 0) {
		report_free(rep);
		return rc;
	}
	/* Memory the job was given went away under it: it did not do it all. */
	if (holes.pages && !job->result)
		job->result = s->result = -EFAULT;
	s->gbps = s->total_s > 0 ? s->bytes_moved / s->total_s / 1e9 : 0;
	job->report = rep;
	return 0;
}

struct memmig_report *memmig_report_new_empty(int pid, int target_node, int strategy)
{
	struct memmig_report *rep = calloc(1, sizeof(*rep));

	if (!rep)
		return NULL;
	rep->refcount = 1;
	rep->max_node = -1;
	rep->sum = (struct memmig_report_summary){
		.sz = sizeof(rep->sum), .pid = pid, .target_node = target_node,
		.strategy = strategy,
	};
	return rep;
}

/* Appends ranges after the last, joining it with the first when they meet;
 * the list keeps range_add()'s power-of-two capacity. */
static int ranges_append(struct range **list, size_t *n, const struct range *add, size_t m)
{
	size_t cap = 1, i = 0;
	struct range *nl;

	if (!m)
		return 0;
	if (*n && (*list)[*n - 1].addr + (*list)[*n - 1].len == add[0].addr &&
	    (*list)[*n - 1].err == add[0].err) {
		(*list)[*n - 1].len += add[0].len;
		i = 1;
	}
	while (cap < *n + m - i)
		cap *= 2;
	nl = realloc(*list, cap * sizeof(**list));
	if (!nl)
		return -ENOMEM;
	*list = nl;
	memcpy(nl + *n, add + i, (m - i) * sizeof(*add));
	*n += m - i;
	return 0;
}

int memmig_report_add(struct memmig_report *to, const struct memmig_report *from)
{
	struct memmig_report_summary *s = &to->sum;
	const struct memmig_report_summary *f = &from->sum;
	int rc;

	rc = nodes_grow(to, from->max_node);
	if (rc)
		return rc;
	for (int i = 0; i <= from->max_node; i++) {
		to->before[i] += from->before[i];
		to->after[i] += from->after[i];
	}
	for (size_t i = 0; i < from->nerrs; i++) {
		rc = errno_add(to, from->errs[i].err, from->errs[i].pages, from->errs[i].failed);
		if (rc)
			return rc;
	}
	rc = ranges_append(&to->moved, &to->nmoved, from->moved, from->nmoved);
	for (size_t i = 0; !rc && i < from->nfailed; i++)
		rc = failed_add(to, &from->failed[i]);
	if (rc)
		return rc;
	/* from's omitted ranges follow its kept ones, which filled to's list
	 * (from kept the most there is): none of them joins one of to's. */
	if (f->failed_ranges_omitted) {
		s->failed_ranges_omitted += f->failed_ranges_omitted;
		s->failed_pages_omitted += f->failed_pages_omitted;
		to->failed_last_omitted = from->failed_last_omitted;
	}
	s->strategy = f->strategy;
	s->workers = f->workers > s->workers ? f->workers : s->workers;
	s->bytes_total += f->bytes_total;
	s->bytes_moved += f->bytes_moved;
	s->units_total += f->units_total;
	s->units_thp += f->units_thp;
	s->prepare_s += f->prepare_s;
	s->copy_s += f->copy_s;
	s->query_s += f->query_s;
	s->pages_failed += f->pages_failed;
	s->pages_skipped += f->pages_skipped;
	s->pages_verified_on_target += f->pages_verified_on_target;
	s->regions += f->regions;
	return 0;
}

void memmig_report_add_copy_s(struct memmig_report *rep, double s)
{
	rep->sum.copy_s += s;
}

void memmig_report_set_end(struct memmig_report *rep, int result, uint64_t bytes_total,
			   double total_s, double plan_s)
{
	rep->sum.plan_s = plan_s;
	rep->sum.result = result;
	rep->sum.bytes_total = bytes_total;
	rep->sum.total_s = total_s;
	rep->sum.gbps = total_s > 0 ? rep->sum.bytes_moved / total_s / 1e9 : 0;
}

int memmig_report_get_summary(const struct memmig_report *rep,
			      struct memmig_report_summary *out)
{
	if (!rep)
		return -EINVAL;
	return memmig_struct_out(out, &rep->sum, sizeof(rep->sum));
}

int memmig_report_node_pages(const struct memmig_report *rep, int node,
			     uint64_t *before, uint64_t *after)
{
	if (!rep || node < 0)
		return -EINVAL;
	if (before)
		*before = node <= rep->max_node ? rep->before[node] : 0;
	if (after)
		*after = node <= rep->max_node ? rep->after[node] : 0;
	return 0;
}

int memmig_report_max_node(const struct memmig_report *rep)
{
	return rep ? rep->max_node : -EINVAL;
}

int memmig_report_moved_count(const struct memmig_report *rep)
{
	return rep ? (int)rep->nmoved : -EINVAL;
}

int memmig_report_get_moved(const struct memmig_report *rep, unsigned int idx,
			    uint64_t *addr, uint64_t *len)
{
	if (!rep || idx >= rep->nmoved)
		return -EINVAL;
	if (addr)
		*addr = rep->moved[idx].addr;
	if (len)
		*len = rep->moved[idx].len;
	return 0;
}

uint64_t memmig_report_errno_pages(const struct memmig_report *rep, int err)
{
	for (size_t i = 0; rep && i < rep->nerrs; i++)
		if (rep->errs[i].err == err)
			return rep->errs[i].pages;
	return 0;
}

uint64_t memmig_report_failed_errno_pages(const struct memmig_report *rep, int err)
{
	for (size_t i = 0; rep && i < rep->nerrs; i++)
		if (rep->errs[i].err == err)
			return rep->errs[i].failed;
	return 0;
}

int memmig_report_errno_count(const struct memmig_report *rep)
{
	return rep ? (int)rep->nerrs : -EINVAL;
}

int memmig_report_get_errno(const struct memmig_report *rep, unsigned int idx,
			    int *err, uint64_t *pages)
{
	if (!rep || idx >= rep->nerrs)
		return -EINVAL;
	if (err)
		*err = rep->errs[idx].err;
	if (pages)
		*pages = rep->errs[idx].pages;
	return 0;
}

int memmig_report_failed_count(const struct memmig_report *rep)
{
	return rep ? (int)rep->nfailed : -EINVAL;
}

int memmig_report_get_failed(const struct memmig_report *rep, unsigned int idx,
			     uint64_t *addr, uint64_t *len, int *err)
{
	if (!rep || idx >= rep->nfailed)
		return -EINVAL;
	if (addr)
		*addr = rep->failed[idx].addr;
	if (len)
		*len = rep->failed[idx].len;
	if (err)
		*err = rep->failed[idx].err;
	return 0;
}

struct memmig_report *memmig_report_ref(struct memmig_report *rep)
{
	if (rep)
		__atomic_add_fetch(&rep->refcount, 1, __ATOMIC_RELAXED);
	return rep;
}

void memmig_report_unref(struct memmig_report *rep)
{
	if (rep && __atomic_sub_fetch(&rep->refcount, 1, __ATOMIC_ACQ_REL) == 0)
		report_free(rep);
}
