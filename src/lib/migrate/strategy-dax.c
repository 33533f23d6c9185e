/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DAX copies, in this process.  DAX pages are device memory without LRU
 * pages: move_pages(2) and mbind(2) cannot move them, so each unit is
 * copied and the copy swapped over the source with mremap(2), as the copy
 * strategy does for anonymous memory:
 *  - DAX to a node: into anonymous memory bound to the node;
 *  - anonymous or DAX memory to a target path: into the unit's slice of
 *    the target mapping, with pmem stores, made durable before its swap.
 * The source is read with the machine-check-safe copy: DAX media can go
 * bad.  A page that stays unreadable is reported (its errno in the page
 * status) and never handed over as zeros: its destination is marked
 * poisoned (UFFDIO_POISON) or, where it cannot be, the source page stays
 * mapped where it was and the rest of the unit is swapped around it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/desc/desc-private.h"
#include "lib/migrate/migrate-private.h"
#include "lib/mm/nodemem.h"
#include "lib/mm/smaps.h"
#include "lib/mm/swap.h"

/* Free memory a node target keeps, as the copy strategy. */
#define NODE_MARGIN (64ULL << 20)

struct dax_job {
	struct memmig_swap_src src;
	unsigned int copy_flags;
};

/* One unit on its way. */
struct dax_unit {
	struct memmig_job *job;
	struct memmig_unit *u;
	uint8_t *dst;
	bool bad[MEMMIG_UNIT_PAGES];	/* the source page stayed unreadable */
	bool marked[MEMMIG_UNIT_PAGES];	/* and its destination is poisoned */
	bool known[MEMMIG_UNIT_PAGES];	/* the table had it poisoned: not read */
	unsigned int nbad, nknown;
	uint64_t run_off;		/* of the copy in progress, in the unit */
	struct memmig_desc_table *table; /* the source region's, or NULL */
	uint64_t idx;			/* the unit's first page in it */
};

/* A worker's fd of the source file, for the kernel's MC-safe re-read. */
struct dax_src_file {
	const struct memmig_vma *vma;
	int fd;
};

static int dax_setup(struct memmig_job *job)
{
	struct dax_job *dj = calloc(1, sizeof(*dj));
	int rc, prim;

	if (!dj)
		return -ENOMEM;
	job->priv = dj;
	rc = memmig_swap_src_read(&dj->src);
	if (!rc)
		rc = memmig_swap_src_readable(job->ctx, &dj->src, job->addr, job->len);
	if (rc)
		return rc;
	if (job->to_file) {
		dj->copy_flags = memmig_dax_target_copy_flags(&job->file);
		return 0;
	}
	/* MPOL_BIND past the node's end wakes the OOM killer. */
	if (memmig_node_free(job->target) < (long long)(job->len + NODE_MARGIN)) {
		err(job->ctx, "dax: node %d has not %#llx bytes free\n", job->target,
		    (unsigned long long)job->len);
		return -ENOMEM;
	}
	/* The whole range is the working set, and the destination is fresh
	 * pages, cold: they decide NT or not. */
	prim = memmig_copy_query(job->ctx, job->len, MEMMIG_COPY_COLD);
	if (prim < 0)
		return prim;
	dj->copy_flags = memmig_prim_is_nt(prim) ? MEMMIG_COPY_NONTEMPORAL : 0;
	return 0;
}

/* The slices of the target that no worker got to go; the rest moved or
 * was unmapped by its worker. */
static void dax_teardown(struct memmig_job *job)
{
	struct dax_job *dj = job->priv;

	for (size_t i = 0; job->to_file && job->file.base && i < job->nunits; i++) {
		const struct memmig_unit *u = &job->units[i];

		if (u->state == MEMMIG_UNIT_PENDING)
			munmap(job->file.base + (u->addr - job->addr), u->len);
	}
	job->file.base = NULL;
	if (dj)
		memmig_swap_src_free(&dj->src);
	free(dj);
	job->priv = NULL;
}

static int src_file_fd(struct dax_src_file *f, const struct memmig_vma *v)
{
	if (v != f->vma) {
		if (f->fd >= 0)
			close(f->fd);
		f->vma = v;
		f->fd = v ? memmig_dax_vma_open(v) : -1;
	}
	return f->fd;
}

static void on_bad(void *opaque, uint64_t offset, uint64_t len, int err)
{
	struct dax_unit *du = opaque;
	size_t k = (du->run_off + offset) / MEMMIG_PAGE_SIZE;

	(void)len;	/* within one page */
	if (!du->bad[k])
		du->nbad++;
	du->bad[k] = true;
	du->job->status[memmig_job_page(du->job, du->u->addr) + k] = err;
}

/* The unit's destination: its target slice, or node memory. */
static uint8_t *unit_dest(struct memmig_job *job, const struct memmig_unit *u,
			  int *err)
{
	struct dax_job *dj = job->priv;
	uint8_t *dst;

	*err = memmig_fault_hit(job->ctx, MEMMIG_FAULT_DEST_ALLOC);
	if (*err)
		return NULL;
	if (job->to_file)
		return job->file.base + (u->addr - job->addr);
	dst = memmig_map_on_node(u->len, job->target, false, true, err);
	if (!dst)
		return NULL;
	*err = memmig_swap_advise(&dj->src, u->addr, u->len, dst);
	if (!*err)
		*err = memmig_populate(dst, u->len);
	if (*err) {
		munmap(dst, u->len);
		return NULL;
	}
	return dst;
}

/*
 * Swaps [off, off + len) of the unit in; what did not move is unmapped
 * and its pages get the errno.
 */
static int swap_piece(struct dax_unit *du, uint64_t off, uint64_t len)
{
	struct memmig_job *job = du->job;
	struct dax_job *dj = job->priv;
	uint64_t src = du->u->addr + off, moved = 0;
	size_t p = memmig_job_page(job, src);
	int rc = memmig_swap_attrs(&dj->src, du->dst + off, src, len);

	if (!rc)
		rc = memmig_swap_move(&dj->src, (uintptr_t)(du->dst + off), src, src,
				      len, &moved);
	for (uint64_t k = 0; k < len / MEMMIG_PAGE_SIZE; k++)
		if (!du->bad[off / MEMMIG_PAGE_SIZE + k])
			job->status[p + k] = k * MEMMIG_PAGE_SIZE < moved ?
						     memmig_job_target_status(job) : rc;
	if (rc)
		munmap(du->dst + off + moved, len - moved);
	return rc;
}

/*
 * Swaps the unit in whole when every bad page's destination is marked,
 * else in runs around the bad pages, whose sources stay mapped.
 */
static int unit_swap(struct dax_unit *du)
{
	uint64_t len = du->u->len, at = 0;
	int rc = 0, err;

	/* NT stores must be visible before the pages change hands. */
	memmig_copy_drain();
	while (at < len) {
		uint64_t end = at;

		while (end < len && (!du->bad[end / MEMMIG_PAGE_SIZE] || du->marked[end / MEMMIG_PAGE_SIZE]))
			end += MEMMIG_PAGE_SIZE;
		if (end > at) {
			err = swap_piece(du, at, end - at);
			rc = rc ? rc : err;
		}
		at = end;
		while (at < len && du->bad[at / MEMMIG_PAGE_SIZE] && !du->marked[at / MEMMIG_PAGE_SIZE]) {
			munmap(du->dst + at, MEMMIG_PAGE_SIZE);
			at += MEMMIG_PAGE_SIZE;
		}
	}
	return rc;
}

/* Poison markers on the destinations of the bad pages, where possible. */
static void mark_bad(struct dax_unit *du)
{
	for (size_t k = 0; du->nbad && k < du->u->len / MEMMIG_PAGE_SIZE; k++)
		if (du->bad[k])
			du->marked[k] = !memmig_poison_mark(du->job->ctx,
							    du->dst + k * MEMMIG_PAGE_SIZE, MEMMIG_PAGE_SIZE);
}

/*
 * The source region's descriptor table, when the unit reads its device
 * memory: pages it has poisoned are not read again (each read would be
 * another machine check); the others go in flight.
 */
static void table_start(struct dax_unit *du, const struct memmig_vma *v)
{
	struct memmig_job *job = du->job;
	size_t p = memmig_job_page(job, du->u->addr);

	if (!v || v->backing != MEMMIG_BACKING_DAX || !job->region->table)
		return;
	du->table = job->region->table;
	du->idx = (du->u->addr - job->region->desc.addr) / MEMMIG_PAGE_SIZE;
	for (size_t k = 0; k < du->u->len / MEMMIG_PAGE_SIZE; k++) {
		if (memmig_desc_get_state(du->table, du->idx + k) != MEMMIG_DESC_POISONED)
			continue;
		du->known[k] = du->bad[k] = true;
		du->nknown++;
		du->nbad++;
		job->status[p + k] = -EHWPOISON;
	}
	memmig_desc_mark(du->table, du->idx, du->u->len / MEMMIG_PAGE_SIZE, MEMMIG_DESC_IN_FLIGHT);
}

/* After the unit: media errors poisoned for good, the rest clean again
 * (moved, or left where it was). */
static void table_end(struct dax_unit *du)
{
	size_t p = memmig_job_page(du->job, du->u->addr);

	if (!du->table)
		return;
	for (size_t k = 0; k < du->u->len / MEMMIG_PAGE_SIZE; k++) {
		int e = du->job->status[p + k];

		memmig_desc_set_state(du->table, du->idx + k,
				      du->bad[k] && (e == -EHWPOISON || e == -EIO) ?
				      MEMMIG_DESC_POISONED : MEMMIG_DESC_CLEAN, NULL);
	}
}

/* The guarded copy of the unit, around the pages known to be poisoned. */
static ssize_t unit_copy(struct dax_unit *du, const struct memmig_mc_opts *mo)
{
	const uint8_t *src = (const uint8_t *)(uintptr_t)du->u->addr;
	size_t n = du->u->len / MEMMIG_PAGE_SIZE, k = 0, e;
	ssize_t left = (ssize_t)du->nknown * MEMMIG_PAGE_SIZE, r;

	while (k < n) {
		struct memmig_mc_opts o = *mo;

		while (k < n && du->known[k])
			k++;
		for (e = k; e < n && !du->known[e]; e++)
			;
		if (e == k)
			break;
		du->run_off = k * MEMMIG_PAGE_SIZE;
		o.src_offset += du->run_off;
		r = memmig_copy_mc(du->job->ctx, du->dst + du->run_off, src + du->run_off,
				   (e - k) * MEMMIG_PAGE_SIZE, &o);
		if (r < 0)
			return r;
		left += r;
		k = e;
	}
	return left;
}

static int dax_unit(struct memmig_worker *w, struct dax_src_file *f,
		    struct memmig_unit *u)
{
	struct memmig_job *job = w->job;
	struct dax_job *dj = job->priv;
	const struct memmig_vma *v = memmig_swap_vma(&dj->src, u->addr, u->len);
	struct dax_unit *du = calloc(1, sizeof(*du));
	struct memmig_mc_opts mo = {
		.sz = sizeof(mo), .flags = dj->copy_flags | MEMMIG_COPY_NODRAIN,
		.src_fd = -1, .bad = on_bad, .opaque = du,
	};
	double t = memmig_now();
	ssize_t left;
	int rc = 0;

	if (!du) {
		memmig_job_unit_fail(job, u, -ENOMEM);
		return -ENOMEM;
	}
	*du = (struct dax_unit){ .job = job, .u = u };
	du->dst = unit_dest(job, u, &rc);
	w->prepare_s += memmig_now() - t;
	t = memmig_now();
	if (v && v->backing == MEMMIG_BACKING_DAX && src_file_fd(f, v) >= 0) {
		mo.src_fd = f->fd;
		mo.src_offset = v->offset + (u->addr - v->start);
	}
	table_start(du, v);
	if (du->dst) {
		left = unit_copy(du, &mo);
		rc = left < 0 ? (int)left : 0;
	}
	if (!rc && job->to_file)
		rc = memmig_dax_target_persist(&job->file, du->dst, u->len);
	if (rc) {
		/* A target slice is this unit's whatever failed. */
		if (job->to_file)
			munmap(job->file.base + (u->addr - job->addr), u->len);
		else if (du->dst)
			munmap(du->dst, u->len);
		memmig_job_unit_fail(job, u, rc);
		table_end(du);
		free(du);
		return rc;
	}
	mark_bad(du);
	rc = unit_swap(du);
	if (rc)
		memmig_job_fail(job, rc);
	memmig_job_unit_done(job, u, rc || du->nbad ? MEMMIG_UNIT_FAILED : MEMMIG_UNIT_DONE);
	table_end(du);
	w->copy_s += memmig_now() - t;
	free(du);
	return rc;
}

static int dax_run(struct memmig_worker *w)
{
	struct dax_src_file f = { .fd = -1 };
	int rc = 0;
	/* One batch of guarded copies for the worker: the SIGBUS guard's
	 * system calls once, not once per run of pages. */
	bool batch = memmig_copy_mc_begin() == 0;

	for (size_t i = w->first; !rc && i < w->last && !memmig_job_stopping(w->job); i++)
		rc = dax_unit(w, &f, &w->job->units[i]);
	src_file_fd(&f, NULL);
	if (batch)
		memmig_copy_mc_end();
	return rc;
}

/* A target path: the placement query sees no node in DAX or a file's
 * pages; the mappings say whether each page maps its place in the target. */
static void dax_verify(struct memmig_worker *w)
{
	struct memmig_job *job = w->job;
	const struct memmig_dax_target *t = &job->file;
	uint64_t from, to;
	struct memmig_vma *v;
	size_t n, i = 0;

	if (!job->to_file || w->first >= w->last || memmig_vmas_read(0, &v, &n))
		return;
	from = job->units[w->first].addr;
	to = job->units[w->last - 1].addr + job->units[w->last - 1].len;
	for (uint64_t a = from; a < to; a += MEMMIG_PAGE_SIZE) {
		while (i < n && v[i].end <= a)
			i++;
		if (i < n && v[i].start <= a && v[i].inode == t->ino &&
		    v[i].dev_major == t->dev_major && v[i].dev_minor == t->dev_minor &&
		    v[i].offset + (a - v[i].start) == t->offset + (a - job->addr))
			job->after[memmig_job_page(job, a)] = MEMMIG_STATUS_FILE;
	}
	free(v);
}

const struct memmig_strategy_ops memmig_strategy_dax = {
	.name = "dax",
	.setup = dax_setup,
	.teardown = dax_teardown,
	.run = dax_run,
	.verify = dax_verify,
	.status_not_queried = true,
};
