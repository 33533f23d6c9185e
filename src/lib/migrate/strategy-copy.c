/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The copy strategy, for memory in this process.  Anonymous memory: each
 * unit is copied by the dispatched copy engine into memory bound to the
 * target node, then mremap(MREMAP_FIXED) swaps it over the source in one
 * step, so that the range is always whole.  Shared backings (memfd, shmem,
 * hugetlbfs, files) belong to their file, not to the mapping: they move
 * with mbind(MPOL_MF_MOVE).
 *
 * The source must not be written while its unit is copied: a write between
 * the copy and the swap would be lost.  Live guests go through dirty
 * tracking instead (the KVM path).
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

struct copy_area {
	uint8_t *base;		/* mirrors the worker's range, 2 MB aligned */
	uint64_t from, to;	/* the addresses it mirrors */
	bool *consumed;		/* per unit: its slice was swapped away */
	const struct memmig_swap_src *src;	/* the job's */
	bool noreserve;		/* mapped with MAP_NORESERVE: as the first
				 * unit's source; pieces that differ are
				 * mapped again (memmig_swap_account) */
	long long free_seen;	/* the target's free bytes when last read */
	uint64_t taken;		/* bytes populated since */
};

/* Is there room on the target for len more bytes, and the margin? */
static bool node_room(struct memmig_job *job, struct copy_area *a, uint64_t len)
{
	long long left = a->free_seen - (long long)a->taken;

	if (a->taken >= RECHECK_BYTES || left < (long long)(len + NODE_MARGIN + NODE_SLACK)) {
		a->free_seen = memmig_node_free(job->target);
		a->taken = 0;
		left = a->free_seen;
	}
	if (left < (long long)(len + NODE_MARGIN))
		return false;
	a->taken += len;
	return true;
}

/* What the workers share, read once per job: smaps walks the page tables
 * (milliseconds for a large process). */
struct copy_job {
	struct memmig_swap_src src;
	struct memmig_mc_opts mc;	/* the guarded copy of each unit */
};

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
	return rc;
}

static void copy_teardown(struct memmig_job *job)
{
	struct copy_job *cj = job->priv;

	if (cj)
		memmig_swap_src_free(&cj->src);
	free(cj);
	job->priv = NULL;
}

/* A destination for the unit: the node's reserve, else the area. */
static uint8_t *unit_dest(struct memmig_job *job, struct copy_area *a,
			  const struct memmig_unit *u, bool *reserved, int *err)
{
	uint8_t *dst;

	*reserved = false;
	/* The reserve is charged memory: not for a MAP_NORESERVE source. */
	if (u->len == MEMMIG_UNIT_SIZE && memmig_swap_takes_thp(a->src, u->addr, u->len) &&
	    !memmig_swap_noreserve(a->src, u->addr)) {
		dst = memmig_reserve_take(job->ctx, job->target);
		if (dst) {
			*reserved = true;
			return dst;
		}
	}
	*err = memmig_fault_hit(job->ctx, MEMMIG_FAULT_DEST_ALLOC);
	if (*err)
		return NULL;
	if (!node_room(job, a, u->len)) {
		*err = -ENOMEM;
		return NULL;
	}
	dst = a->base + (u->addr - a->from);
	*err = memmig_swap_account(a->src, dst, u->addr, u->len, a->noreserve, job->target);
	if (!*err)
		*err = memmig_swap_advise(a->src, u->addr, u->len, dst);
	if (!*err)
		*err = memmig_populate(dst, u->len);
	return *err ? NULL : dst;
}

/*
 * Copied units waiting for their swap.  Contiguous units (source and
 * destination both) swap in one mremap: one page-table move and TLB flush
 * for up to SWAP_UNITS units instead of one each.
 */
#define SWAP_UNITS 32

struct swap_batch {
	uint64_t src;
	uint8_t *dst;
	uint64_t len;
	size_t first;		/* unit index */
	size_t n;
	bool reserved;		/* the destination came from the reserve */
	const struct memmig_vma *vma; /* the one source mapping, or NULL */
};

/* Batches stay inside one source mapping: one mremap each. */
static bool batch_extends(const struct copy_area *a, const struct swap_batch *b,
			  const struct memmig_unit *u, const uint8_t *dst, bool reserved)
{
	return b->n && b->n < SWAP_UNITS && b->reserved == reserved &&
	       b->src + b->len == u->addr && b->dst + b->len == dst &&
	       b->vma && memmig_swap_vma(a->src, u->addr, u->len) == b->vma;
}

/* Swaps the batch in; on failure its units fail with the source intact. */
static int batch_swap(struct memmig_worker *w, struct copy_area *a,
		      struct swap_batch *b)
{
	struct memmig_job *job = w->job;
	int rc = 0;

	if (!b->n)
		return 0;
	/* NT stores must be visible before the pages change hands. */
	memmig_copy_drain();
	rc = memmig_swap_in(a->src, b->dst, b->src, b->len);
	if (rc) {
		if (b->reserved)
			munmap(b->dst, b->len);
	}
	for (size_t i = b->first; i < b->first + b->n; i++) {
		struct memmig_unit *u = &job->units[i];

		if (rc) {
			memmig_job_unit_fail(job, u, rc);
			continue;
		}
		if (!b->reserved)
			a->consumed[i - w->first] = true;
		memmig_job_set_status(job, u, job->target);
		memmig_job_unit_done(job, u, MEMMIG_UNIT_DONE);
	}
	b->n = b->len = 0;
	return rc;
}

/*
 * Copies one unit into its destination and queues it for the swap.  The
 * copy is guarded: a poisoned source page (SIGBUS) fails the unit with
 * -EHWPOISON before it is queued, and the kernel then moves it around the
 * page, which stays where it is, poisoned.
 */
static int copy_unit(struct memmig_worker *w, struct copy_area *a,
		     struct swap_batch *b, size_t i)
{
	struct memmig_job *job = w->job;
	struct memmig_unit *u = &job->units[i];
	const struct copy_job *cj = job->priv;
	double t = memmig_now();
	bool reserved;
	uint8_t *dst;
	ssize_t left;
	int rc = 0;

	dst = unit_dest(job, a, u, &reserved, &rc);
	w->prepare_s += memmig_now() - t;
	/* A hole in the source (unmapped since the region was registered):
	 * the kernel moves the unit's other pages and names the missing. */
	if (!dst && rc == -EFAULT)
		return memmig_kernel_move_unit(job, u);
	if (!dst)
		return rc;
	t = memmig_now();
	left = memmig_copy_mc(job->ctx, dst, (void *)(uintptr_t)u->addr, u->len, &cj->mc);
	if (left) {
		/* A destination from the area stays unconsumed: released later. */
		if (reserved)
			munmap(dst, u->len);
		w->copy_s += memmig_now() - t;
		return left < 0 ? (int)left : -EHWPOISON;
	}
	if (!batch_extends(a, b, u, dst, reserved)) {
		rc = batch_swap(w, a, b);
		*b = (struct swap_batch){
			.src = u->addr, .dst = dst, .first = i, .reserved = reserved,
			.vma = memmig_swap_vma(a->src, u->addr, u->len),
		};
	}
	b->len += u->len;
	b->n++;
	memmig_job_unit_copied(job, u);
	w->copy_s += memmig_now() - t;
	return rc;
}

/* Unmaps what is left of the area: never the slices that moved away. */
static void area_release(struct memmig_worker *w, struct copy_area *a)
{
	const struct memmig_unit *u = &w->job->units[w->first];
	size_t n = w->last - w->first;

	if (u[0].addr > a->from)
		munmap(a->base, u[0].addr - a->from);
	for (size_t k = 0; k < n; k++)
		if (!a->consumed[k])
			munmap(a->base + (u[k].addr - a->from), u[k].len);
	if (a->to > u[n - 1].addr + u[n - 1].len)
		munmap(a->base + (u[n - 1].addr + u[n - 1].len - a->from),
		       a->to - (u[n - 1].addr + u[n - 1].len));
	free(a->consumed);
}

static int copy_run_anon(struct memmig_worker *w)
{
	struct memmig_job *job = w->job;
	struct memmig_unit *first = &job->units[w->first], *last = &job->units[w->last - 1];
	struct copy_area a = {
		.taken = RECHECK_BYTES, /* read the free memory first */
		.from = first->addr & ~(uint64_t)(MEMMIG_UNIT_SIZE - 1),
		.to = (last->addr + last->len + MEMMIG_UNIT_SIZE - 1) &
		      ~(uint64_t)(MEMMIG_UNIT_SIZE - 1),
	};
	struct swap_batch b = { 0 };
	double t;
	int rc = 0, err;
	/* The worker's guarded copies are one batch: the SIGBUS guard's two
	 * system calls (longer than a cold 4 KiB copy on some hosts) once per
	 * worker, not once per unit.  Without it, each call makes them. */
	bool batch = memmig_copy_mc_begin() == 0;

	a.consumed = calloc(w->last - w->first, sizeof(bool));
	a.src = &((struct copy_job *)job->priv)->src;
	a.noreserve = memmig_swap_noreserve(a.src, first->addr);
	a.base = a.consumed ? memmig_map_on_node(a.to - a.from, job->target, false,
						 a.noreserve, &rc) : NULL;
	if (!a.base) {
		free(a.consumed);
		if (batch)
			memmig_copy_mc_end();
		return rc ? rc : -ENOMEM;
	}
	for (size_t i = w->first; !rc && i < w->last && !memmig_job_stopping(job); i++) {
		struct memmig_unit *u = &job->units[i];

		if (!(job->flags & MEMMIG_MIGRATE_FORCE) &&
		    memmig_job_unit_on_target(job, u)) {
			memmig_job_set_status(job, u, job->target);
			memmig_job_unit_done(job, u, MEMMIG_UNIT_DONE);
			continue;
		}
		rc = copy_unit(w, &a, &b, i);
		/* The kernel moves what it can around poison, and says which
		 * pages it left: the copy engine would die reading them. */
		if (rc == -EHWPOISON)
			rc = memmig_kernel_move_unit(job, u);
		else if (rc < 0 && b.first + b.n <= i)
			memmig_job_unit_fail(job, u, rc); /* its destination never came */
	}
	/* What was copied is swapped in, even when stopping: consistent. */
	t = memmig_now();
	err = batch_swap(w, &a, &b);
	if (err < 0 && !rc)
		rc = err;
	w->copy_s += memmig_now() - t;
	area_release(w, &a);
	if (batch)
		memmig_copy_mc_end();
	return rc;
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
	w->copy_s = memmig_now() - t;
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
};
