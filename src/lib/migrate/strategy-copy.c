/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The copy strategy, for memory in this process.  Anonymous memory: each
 * unit is copied by the dispatched copy engine into memory bound to the
 * target node (a reserve chunk, else the job's area, which a helper may
 * prepare ahead), then at the end of its round mremap(MREMAP_FIXED) swaps
 * it over the source in one step, so that the range is always whole.
 * Shared backings (memfd, shmem, hugetlbfs, files) belong to their file,
 * not to the mapping: they move with mbind(MPOL_MF_MOVE).
 *
 * The source must not be written while the job runs: a write between a
 * unit's copy and its round's swap would be lost.  Live guests go through
 * dirty tracking instead (the KVM path).
 *
 * The swap replaces the mapping too: swap.c gives the copy the source
 * mapping's attributes first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <numaif.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "lib/migrate/migrate-private.h"
#include "lib/mm/nodemem.h"
#include "lib/migrate/placement.h"
#include "lib/migrate/prep.h"
#include "lib/mm/smaps.h"
#include "lib/mm/swap.h"

/* Free memory left on the target below which a unit is refused: the
 * kernel's OOM killer must never be what stops a migration. */
#define NODE_MARGIN (64ULL << 20)
/*
 * Reading a node's free memory costs ~20 us, a tenth of a 2 MB copy: it is
 * read again when what this worker took since could have eaten the slack,
 * and every RECHECK_BYTES anyway, for what other processes take.
 */
#define NODE_SLACK (256ULL << 20)
#define RECHECK_BYTES (128ULL << 20)
/* Units copied in a round wait for its one swap: a round's destinations,
 * 1 GiB, are what the job holds besides the source. */
#define ROUND_UNITS 512

/*
 * Where the unit's copy is: a reserve chunk, else its slice of the area,
 * a mapping that mirrors the job's range (2 MB aligned), populated unit by
 * unit.  Set by the worker, swapped in by copy_finish.
 */
struct copy_dest {
	uint8_t *addr;		/* NULL: not copied */
	bool reserved;
	bool consumed;		/* its area slice was swapped away */
};

/* What the workers share, read once per job: smaps walks the page tables
 * (milliseconds for a large process). */
struct copy_job {
	struct memmig_swap_src src;
	struct memmig_mc_opts mc;	/* the guarded copy of each unit */
	struct copy_dest *dest;		/* per unit */
	uint8_t *area;
	uint64_t from, to;		/* the addresses the area mirrors */
	bool noreserve;		/* the area has MAP_NORESERVE: as the first
				 * unit's source; pieces that differ are
				 * mapped again (memmig_swap_account) */
};

/* A worker's own: the target's free memory, and reserve chunks taken. */
struct copy_worker {
	long long free_seen;	/* the target's free bytes when last read */
	uint64_t taken;		/* bytes populated since */
	uint8_t *run;		/* reserve chunks [run, run + nrun units) */
	size_t nrun;
	struct memmig_prep *prep;	/* the helper preparing ahead, or NULL */
};

/* Is there room on the target for len more bytes, and the margin? */
static bool node_room(struct memmig_job *job, struct copy_worker *cw, uint64_t len)
{
	long long left = cw->free_seen - (long long)cw->taken;

	if (cw->taken >= RECHECK_BYTES || left < (long long)(len + NODE_MARGIN + NODE_SLACK)) {
		cw->free_seen = memmig_node_free(job->target);
		cw->taken = 0;
		left = cw->free_seen;
	}
	if (left < (long long)(len + NODE_MARGIN))
		return false;
	cw->taken += len;
	return true;
}

static void copy_teardown(struct memmig_job *job);

/*
 * The source's THP advice on the area, once: per unit, each madvise would
 * split the area and take the mmap lock for writing, which stalls the
 * other workers' page faults.  Holes (unmapped since the region was
 * registered) are their units' to report.
 */
static int area_advise(struct memmig_job *job, struct copy_job *cj)
{
	uint64_t end = job->addr + job->len;
	int rc = 0;

	for (size_t i = 0; !rc && i < cj->src.nvmas; i++) {
		const struct memmig_vma *v = &cj->src.vmas[i];
		uint64_t a = v->start > job->addr ? v->start : job->addr;
		uint64_t b = v->end < end ? v->end : end;

		if (a < b)
			rc = memmig_swap_advise(&cj->src, a, b - a, cj->area + (a - cj->from));
	}
	return rc;
}

static int copy_setup(struct memmig_job *job)
{
	struct copy_job *cj;
	struct memmig_swap_src *src;
	int rc;

	/* The whole range is the working set, and the destination is fresh
	 * pages, cold: they decide NT or not. */
	job->prim = memmig_copy_query(job->ctx, job->len, MEMMIG_COPY_COLD);
	if (job->prim < 0)
		return job->prim;
	if (job->region->desc.backing != MEMMIG_BACKING_ANON)
		return 0;
	cj = calloc(1, sizeof(*cj));
	if (!cj)
		return -ENOMEM;
	job->priv = cj;
	src = &cj->src;
	/* Units keep the whole range's choice of NT or not. */
	cj->mc = (struct memmig_mc_opts){
		.sz = sizeof(cj->mc), .src_fd = -1,
		.flags = MEMMIG_COPY_NODRAIN | (memmig_prim_is_nt(job->prim) ?
			 MEMMIG_COPY_NONTEMPORAL : MEMMIG_COPY_TEMPORAL),
	};
	rc = memmig_swap_src_read(src);
	/* The copy reads the source: memory this process may not read
	 * (PROT_NONE guards, a later mprotect) would kill it. */
	if (!rc)
		rc = memmig_swap_src_readable(job->ctx, src, job->addr, job->len);
	/* The swap puts the copy's mapping in the source's place: it must be
	 * able to carry every attribute the source has. */
	if (!rc)
		rc = memmig_swap_src_keepable(job->ctx, src, job->addr, job->len);
	if (!rc) {
		cj->dest = calloc(job->nunits, sizeof(*cj->dest));
		rc = cj->dest ? 0 : -ENOMEM;
	}
	if (!rc) {
		cj->from = job->addr & ~(uint64_t)(MEMMIG_UNIT_SIZE - 1);
		cj->to = (job->addr + job->len + MEMMIG_UNIT_SIZE - 1) &
			 ~(uint64_t)(MEMMIG_UNIT_SIZE - 1);
		cj->noreserve = memmig_swap_noreserve(src, job->addr);
		cj->area = memmig_map_on_node(cj->to - cj->from, job->target, false,
					      cj->noreserve, &rc);
	}
	if (!rc)
		rc = area_advise(job, cj);
	if (rc)
		copy_teardown(job);
	return rc;
}

/* Unmaps what is left of the area: never the slices that moved away (the
 * address space there may be someone else's since). */
static void area_release(struct memmig_job *job, struct copy_job *cj)
{
	uint64_t at = cj->from, end;

	for (size_t i = 0; i <= job->nunits; i++) {
		end = i < job->nunits ? job->units[i].addr : cj->to;
		if (i < job->nunits && !cj->dest[i].consumed)
			continue;	/* the run goes on */
		if (end > at)
			munmap(cj->area + (at - cj->from), end - at);
		if (i < job->nunits)
			at = end + job->units[i].len;
	}
}

static void copy_teardown(struct memmig_job *job)
{
	struct copy_job *cj = job->priv;

	if (cj) {
		if (cj->area)
			area_release(job, cj);
		memmig_swap_src_free(&cj->src);
		free(cj->dest);
	}
	free(cj);
	job->priv = NULL;
}

/* The unit's slice of the area, claimed: an injected failure, and the
 * target's room for it.  0 or -errno. */
static int area_claim(struct memmig_job *job, struct copy_worker *cw,
		      const struct memmig_unit *u)
{
	int rc = memmig_fault_hit(job->ctx, MEMMIG_FAULT_DEST_ALLOC);

	if (rc)
		return rc;
	return node_room(job, cw, u->len) ? 0 : -ENOMEM;
}

/* The claimed slice, given the source's commit charge and populated. */
static int area_fill(struct memmig_job *job, const struct memmig_unit *u)
{
	struct copy_job *cj = job->priv;
	uint8_t *dst = cj->area + (u->addr - cj->from);
	int rc = memmig_swap_account(&cj->src, dst, u->addr, u->len, cj->noreserve, job->target);

	return rc ? rc : memmig_populate(dst, u->len);
}

static int area_prepare(struct memmig_job *job, struct copy_worker *cw,
			const struct memmig_unit *u)
{
	int rc = area_claim(job, cw, u);

	return rc ? rc : area_fill(job, u);
}

/* What the prepare-ahead helper of a worker works with (prep.h). */
struct copy_helper {
	struct memmig_job *job;
	struct copy_worker cw;	/* the target's room as the claims see it */
};

static bool unit_skipped(const struct memmig_job *job, const struct memmig_unit *u)
{
	return !(job->flags & MEMMIG_MIGRATE_FORCE) && memmig_job_unit_on_target(job, u);
}

static int helper_claim(void *arg, size_t i)
{
	struct copy_helper *h = arg;
	const struct memmig_unit *u = &h->job->units[i];

	return unit_skipped(h->job, u) ? 0 : area_claim(h->job, &h->cw, u);
}

static int helper_fill(void *arg, size_t i)
{
	struct copy_helper *h = arg;
	const struct memmig_unit *u = &h->job->units[i];

	return unit_skipped(h->job, u) ? 0 : area_fill(h->job, u);
}

/*
 * A helper prepares the worker's area slices ahead when nothing else
 * would: the reserve is empty, and a CPU is there for each helper (so not
 * with one worker per CPU, whose own zeroing already runs in parallel).
 */
#define PREP_WINDOW 16	/* units ahead: 32 MiB */

static void helper_start(struct memmig_worker *w, struct copy_worker *cw,
			 struct copy_helper *h)
{
	struct memmig_job *job = w->job;

	*h = (struct copy_helper){ .job = job, .cw = { .taken = RECHECK_BYTES } };
	if (memmig_ctx_reserved(job->ctx, job->target) ||
	    2 * job->nworkers > memmig_usable_cpus())
		return;
	memmig_prep_start(w->first, w->last, PREP_WINDOW, helper_claim, helper_fill, h,
			  &cw->prep);
}

/* A destination for the unit: the helper's, the node's reserve, else the
 * area prepared now. */
static uint8_t *unit_dest(struct memmig_worker *w, struct copy_worker *cw,
			  const struct memmig_unit *u, bool *reserved, int *err)
{
	struct memmig_job *job = w->job;
	struct copy_job *cj = job->priv;
	uint8_t *dst = cj->area + (u->addr - cj->from);

	*reserved = false;
	if (cw->prep) {
		*err = memmig_prep_wait(cw->prep, (size_t)(u - job->units));
		return *err ? NULL : dst;
	}
	/* The reserve is charged memory: not for a MAP_NORESERVE source. */
	if (u->len == MEMMIG_UNIT_SIZE && memmig_swap_takes_thp(&cj->src, u->addr, u->len) &&
	    !memmig_swap_noreserve(&cj->src, u->addr)) {
		/* The rest of the share at once: contiguous, one swap. */
		if (!cw->nrun)
			cw->run = memmig_reserve_take(job->ctx, job->target,
						      w->last - (size_t)(u - job->units),
						      &cw->nrun);
		if (cw->nrun) {
			dst = cw->run;
			cw->run += MEMMIG_UNIT_SIZE;
			cw->nrun--;
			*reserved = true;
			return dst;
		}
	}
	*err = area_prepare(job, cw, u);
	return *err ? NULL : dst;
}

/* A destination that will not be swapped in: a reserve chunk goes. */
static void dest_drop(uint8_t *dst, bool reserved)
{
	if (reserved)
		munmap(dst, MEMMIG_UNIT_SIZE);
}

/*
 * Copies one unit into its destination, for copy_finish to swap in.  The
 * copy is guarded: a poisoned source page (SIGBUS) fails the unit with
 * -EHWPOISON, and the kernel then moves it around the page, which stays
 * where it is, poisoned.
 */
static int copy_unit(struct memmig_worker *w, struct copy_worker *cw, size_t i)
{
	struct memmig_job *job = w->job;
	struct memmig_unit *u = &job->units[i];
	struct copy_job *cj = job->priv;
	double t = memmig_now();
	bool reserved;
	uint8_t *dst;
	ssize_t left;
	int rc = 0;

	dst = unit_dest(w, cw, u, &reserved, &rc);
	w->prepare_s += memmig_now() - t;
	/* A hole in the source (unmapped since the region was registered):
	 * the kernel moves the unit's other pages and names the missing. */
	if (!dst && rc == -EFAULT)
		return memmig_kernel_move_unit(job, u);
	if (!dst)
		return rc;
	t = memmig_now();
	left = memmig_copy_mc(job->ctx, dst, (void *)(uintptr_t)u->addr, u->len, &cj->mc);
	w->copy_s += memmig_now() - t;
	if (left) {
		/* An area slice stays unconsumed: released with the area. */
		dest_drop(dst, reserved);
		return left < 0 ? (int)left : -EHWPOISON;
	}
	cj->dest[i] = (struct copy_dest){ .addr = dst, .reserved = reserved };
	memmig_job_unit_copied(job, u);
	return 0;
}

static int copy_run_anon(struct memmig_worker *w)
{
	struct memmig_job *job = w->job;
	struct copy_worker cw = { .taken = RECHECK_BYTES }; /* read the free memory first */
	struct copy_helper helper;
	int rc = 0;
	/* The worker's guarded copies are one batch: the SIGBUS guard's two
	 * system calls (longer than a cold 4 KiB copy on some hosts) once per
	 * worker, not once per unit.  Without it, each call makes them. */
	bool batch = memmig_copy_mc_begin() == 0;

	/* A job run cancelled (a move's region after a cancel) only asks
	 * where its pages are: nothing to prepare ahead. */
	if (!memmig_job_stopping(job))
		helper_start(w, &cw, &helper);
	for (size_t i = w->first; !rc && i < w->last && !memmig_job_stopping(job); i++) {
		struct memmig_unit *u = &job->units[i];

		if (unit_skipped(job, u)) {
			memmig_job_set_status(job, u, job->target);
			memmig_job_unit_done(job, u, MEMMIG_UNIT_DONE);
			continue;
		}
		rc = copy_unit(w, &cw, i);
		/* The kernel moves what it can around poison, and says which
		 * pages it left: the copy engine would die reading them. */
		if (rc == -EHWPOISON)
			rc = memmig_kernel_move_unit(job, u);
		else if (rc < 0)
			memmig_job_unit_fail(job, u, rc); /* its destination never came */
	}
	/* NT stores must be visible before the pages change hands: this
	 * CPU's, so here, not in copy_finish. */
	memmig_copy_drain();
	memmig_prep_stop(cw.prep);
	memmig_reserve_put(job->ctx, job->target, cw.run, cw.nrun);
	if (batch)
		memmig_copy_mc_end();
	return rc;
}

/* Copied units waiting for their swap: contiguous ones (source and
 * destination both, one source mapping) swap in one mremap. */
struct swap_run {
	size_t first, n;
	uint64_t src, len;
	uint8_t *dst;
	bool reserved;
	const struct memmig_vma *vma;
};

static bool run_extends(const struct copy_job *cj, const struct swap_run *r,
			const struct memmig_unit *u, const struct copy_dest *d)
{
	return r->n && r->reserved == d->reserved && r->src + r->len == u->addr &&
	       r->dst + r->len == d->addr && r->vma &&
	       memmig_swap_vma(&cj->src, u->addr, u->len) == r->vma;
}

/* Swaps the run in; on failure its units fail with the source intact. */
static void run_swap(struct memmig_job *job, struct copy_job *cj, struct swap_run *r)
{
	int rc;

	if (!r->n)
		return;
	rc = memmig_swap_in(&cj->src, r->dst, r->src, r->len);
	for (size_t i = r->first; i < r->first + r->n; i++) {
		struct memmig_unit *u = &job->units[i];

		if (rc) {
			dest_drop(cj->dest[i].addr, cj->dest[i].reserved);
			memmig_job_unit_fail(job, u, rc);
			continue;
		}
		cj->dest[i].consumed = !cj->dest[i].reserved;
		memmig_job_set_status(job, u, job->target);
		memmig_job_unit_done(job, u, MEMMIG_UNIT_DONE);
	}
	r->n = 0;
}

/*
 * The round's swap, on one thread while the workers wait: mremaps of one
 * process from two threads at once cost ~5x what one thread's do (each
 * page-table move's TLB flush interrupts the other CPU, and they take turns
 * on the mmap lock): 16 ms against 3 a GiB on Zen 5.
 */
static void copy_finish(struct memmig_job *job, size_t first, size_t last)
{
	struct copy_job *cj = job->priv;
	struct swap_run r = { 0 };

	if (!cj)
		return;
	for (size_t i = first; i < last; i++) {
		const struct memmig_unit *u = &job->units[i];
		const struct copy_dest *d = &cj->dest[i];

		if (!d->addr)
			continue;
		if (!run_extends(cj, &r, u, d)) {
			run_swap(job, cj, &r);
			r = (struct swap_run){
				.first = i, .src = u->addr, .dst = d->addr,
				.reserved = d->reserved,
				.vma = memmig_swap_vma(&cj->src, u->addr, u->len),
			};
		}
		r.len += u->len;
		r.n++;
	}
	run_swap(job, cj, &r);
}

/* Shared backings: the kernel moves the file's pages this process maps. */
static int copy_run_shared(struct memmig_worker *w)
{
	struct memmig_job *job = w->job;
	double t = memmig_now();
	int rc = 0, err;

	for (size_t i = w->first; i < w->last && !memmig_job_stopping(job); i++) {
		struct memmig_unit *u = &job->units[i];
		void *addr = (void *)(uintptr_t)u->addr;
		size_t p = memmig_job_page(job, u->addr);
		bool ok = true, failed;

		rc = memmig_fault_hit(job->ctx, MEMMIG_FAULT_DEST_ALLOC);
		if (rc < 0) {
			memmig_job_unit_fail(job, u, rc);
			break;
		}
		if (!(job->flags & MEMMIG_MIGRATE_OWN_PAGES))
			rc = memmig_bind(addr, u->len, job->target,
					 MPOL_MF_MOVE_ALL | MPOL_MF_STRICT);
		else
			rc = -EPERM;	/* as without the privilege: MPOL_MF_MOVE */
		if (rc == -EPERM)
			rc = memmig_bind(addr, u->len, job->target,
					 MPOL_MF_MOVE | MPOL_MF_STRICT);
		/* -EIO: some pages stayed, for lack of memory when the target
		 * is full, else busy.  Another error may still have come after
		 * part of the unit moved (a full node): either way the unit's
		 * placement says which pages stayed. */
		failed = rc < 0 && rc != -EIO;
		err = failed ? rc : 0;
		rc = memmig_placement_query(0, u->addr, u->len, job->status + p);
		if (rc < 0 && failed) {
			memmig_job_unit_fail(job, u, rc = err);
			break;
		}
		for (size_t k = 0; !rc && k < u->len / MEMMIG_PAGE_SIZE; k++) {
			int *s = &job->status[p + k];

			if (*s >= 0 && *s != job->target) {
				if (!err)
					err = memmig_job_target_full(job) ? -ENOMEM : -EBUSY;
				*s = err;
			}
			ok &= *s == job->target || *s == -ENOENT;
		}
		memmig_job_unit_done(job, u, ok ? MEMMIG_UNIT_DONE : MEMMIG_UNIT_FAILED);
		rc = 0;
		if (failed) {
			memmig_job_fail(job, rc = err);
			break;
		}
		if (err == -ENOMEM)
			memmig_job_fail(job, err);	/* the target is full */
	}
	w->copy_s += memmig_now() - t;
	return rc;
}

static int copy_run(struct memmig_worker *w)
{
	if (w->first >= w->last)
		return 0;
	if (w->job->region->desc.backing == MEMMIG_BACKING_ANON)
		return copy_run_anon(w);
	return copy_run_shared(w);
}

const struct memmig_strategy_ops memmig_strategy_copy = {
	.name = "copy",
	.setup = copy_setup,
	.teardown = copy_teardown,
	.run = copy_run,
	.finish = copy_finish,
	.round_units = ROUND_UNITS,
};
