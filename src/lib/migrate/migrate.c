/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Migration jobs: plan 2 MB-aligned units, query placement, run the
 * strategy on worker threads pinned near the target, verify, report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lib/migrate/migrate-private.h"
#include "lib/mm/nodemem.h"
#include "lib/migrate/placement.h"
#include "lib/migrate/pool.h"
#include "lib/topology/topology-private.h"

void memmig_job_fail(struct memmig_job *job, int err)
{
	int none = 0;

	__atomic_compare_exchange_n(&job->error, &none, err, false,
				    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

bool memmig_job_stopping(struct memmig_job *job)
{
	return __atomic_load_n(&job->cancel, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&job->error, __ATOMIC_ACQUIRE);
}

void memmig_job_unit_copied(struct memmig_job *job, struct memmig_unit *u)
{
	u->counted = true;
	__atomic_add_fetch(&job->bytes_done, u->len, __ATOMIC_RELAXED);
}

void memmig_job_unit_done(struct memmig_job *job, struct memmig_unit *u,
			  unsigned char state)
{
	u->state = state;
	if (!u->counted)
		__atomic_add_fetch(&job->bytes_done, u->len, __ATOMIC_RELAXED);
}

void memmig_job_set_status(struct memmig_job *job, const struct memmig_unit *u,
			   int s)
{
	size_t p = memmig_job_page(job, u->addr);

	for (size_t i = 0; i < u->len / MEMMIG_PAGE_SIZE; i++)
		job->status[p + i] = s;
}

void memmig_job_unit_fail(struct memmig_job *job, struct memmig_unit *u, int err)
{
	memmig_job_set_status(job, u, err);
	memmig_job_unit_done(job, u, MEMMIG_UNIT_FAILED);
	memmig_job_fail(job, err);
}

bool memmig_job_unit_on_target(const struct memmig_job *job,
			       const struct memmig_unit *u)
{
	size_t first = memmig_job_page(job, u->addr);

	for (size_t i = 0; i < u->len / MEMMIG_PAGE_SIZE; i++)
		if (job->before[first + i] != job->target)
			return false;
	return true;
}

bool memmig_job_target_full(const struct memmig_job *job)
{
	long long free_b = memmig_node_free(job->target);
	long long keep = memmig_node_reserve(job->target);

	return free_b >= 0 && free_b < (keep > 0 ? keep : 0) + 2 * (long long)MEMMIG_UNIT_SIZE;
}

/* Units: split at every 2 MB boundary of the address space. */
static int plan_units(struct memmig_job *job)
{
	uint64_t end = job->addr + job->len, at = job->addr;
	size_t n = 0;

	job->units = calloc(job->len / MEMMIG_UNIT_SIZE + 2, sizeof(*job->units));
	if (!job->units)
		return -ENOMEM;
	while (at < end) {
		uint64_t next = (at & ~(uint64_t)(MEMMIG_UNIT_SIZE - 1)) + MEMMIG_UNIT_SIZE;

		if (next > end)
			next = end;
		job->units[n++] = (struct memmig_unit){ .addr = at, .len = next - at };
		at = next;
	}
	job->nunits = n;
	return 0;
}

/*
 * Runs the calling thread on the CPUs of pin_node that it may use.  The
 * threads are libmemmig's own (a job's, a move's and its pool's): one that
 * runs the jobs of a move is pinned at its first job, not at every one.
 */
static void pin_to_node(struct memmig_job *job)
{
	static __thread int pinned = -1;
	int cpus[CPU_SETSIZE], n;
	cpu_set_t allowed, set;

	if (job->pin_node < 0 || !job->topo || job->pin_node == pinned)
		return;
	pinned = job->pin_node;
	n = memmig_topo_node_cpus(job->topo, job->pin_node, cpus, CPU_SETSIZE);
	if (n <= 0 || sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	CPU_ZERO(&set);
	for (int i = 0; i < n && i < CPU_SETSIZE; i++)
		if (CPU_ISSET(cpus[i], &allowed))
			CPU_SET(cpus[i], &set);
	if (CPU_COUNT(&set))
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The THP probe for a query: the move's, else one of the job's own
 * (own), closed by probe_put(). */
static const struct memmig_thp_probe *probe_get(struct memmig_job *job,
						struct memmig_thp_probe *own)
{
	if (job->probe)
		return job->probe;
	memmig_thp_probe_open(job->ctx, job->pid, job->pin.procfd, own);
	return own;
}

static void probe_put(struct memmig_job *job, struct memmig_thp_probe *own)
{
	if (!job->probe)
		memmig_thp_probe_close(own);
}

/* Units [u, u + n) whose placement must be asked again after a walk:
 * those that went to move_pages(2) as well, in runs of neighbours. */
static int query_requeried(struct memmig_job *job, const struct memmig_thp_probe *probe,
			   struct memmig_unit *u, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && !rc; ) {
		size_t k = i;

		while (k < n && u[k].requery)
			k++;
		if (k > i)
			rc = memmig_placement_query_units(job, probe, u + i, k - i, job->after,
							  false);
		i = k + (k == i);
	}
	return rc;
}

/*
 * Each worker queries the placement of its own share, before and after, so
 * that the queries run in parallel too; THP units take one entry each.
 * After a walk the kernel's move is done: where the pages are now is asked
 * (a THP the walk could not move whole was split: the probe finds it so),
 * and again at the end only where move_pages(2) had to finish the work.
 */
static void worker_run(void *arg)
{
	struct memmig_worker *w = arg;
	struct memmig_job *job = w->job;
	struct memmig_unit *u = &job->units[w->first];
	struct memmig_thp_probe own;
	const struct memmig_thp_probe *probe;
	size_t n = w->last - w->first;
	double t;
	int rc = 0;

	if (!n)
		return;
	pin_to_node(job);
	probe = probe_get(job, &own);
	t = memmig_now();
	if (!job->before_known)
		rc = memmig_placement_query_units(job, probe, u, n, job->before, true);
	if (!rc && job->premoved)
		rc = memmig_placement_query_units(job, probe, u, n, job->after, false);
	w->query_s += memmig_now() - t;
	probe_put(job, &own);
	if (!rc)
		rc = job->ops->run(w);
	if (rc < 0)
		memmig_job_fail(job, rc);
}

/* Whatever happened, say where the pages are now.  The units keep the
 * THPs as they were found. */
static void worker_after(void *arg)
{
	struct memmig_worker *w = arg;
	struct memmig_job *job = w->job;
	struct memmig_unit *u = &job->units[w->first];
	struct memmig_thp_probe own;
	const struct memmig_thp_probe *probe;
	double t = memmig_now();

	if (w->first >= w->last)
		return;
	pin_to_node(job);
	probe = probe_get(job, &own);
	if (job->premoved)
		query_requeried(job, probe, u, w->last - w->first);
	else
		memmig_placement_query_units(job, probe, u, w->last - w->first, job->after,
					     false);
	w->query_s += memmig_now() - t;
	if (job->ops->verify)
		job->ops->verify(w);
	probe_put(job, &own);
}

int memmig_job_query_before(struct memmig_job *job)
{
	struct memmig_thp_probe own;
	const struct memmig_thp_probe *probe = probe_get(job, &own);
	double t = memmig_now();
	int rc;

	rc = memmig_placement_query_units(job, probe, job->units, job->nunits, job->before,
					  true);
	probe_put(job, &own);
	job->before_known = rc == 0;
	job->query_s += memmig_now() - t;
	return rc;
}

/* Disjoint, contiguous shares of units [first, last): each worker walks
 * its own range. */
static void share_out(struct memmig_job *job, struct memmig_worker *w,
		      size_t first, size_t last)
{
	for (unsigned int i = 0; i < job->nworkers; i++) {
		w[i].first = first + (last - first) * i / job->nworkers;
		w[i].last = first + (last - first) * (i + 1) / job->nworkers;
	}
}

static void run_workers(struct memmig_job *job)
{
	struct memmig_worker *w = calloc(job->nworkers, sizeof(*w));
	size_t round = job->ops->finish ? job->ops->round_units : job->nunits;
	double t;

	if (!w) {
		memmig_job_fail(job, -ENOMEM);
		return;
	}
	for (unsigned int i = 0; i < job->nworkers; i++)
		w[i] = (struct memmig_worker){ .job = job, .idx = i };
	/* Every round, even after a stop: its placement before is reported. */
	for (size_t first = 0; first < job->nunits; first += round) {
		size_t last = job->nunits - first < round ? job->nunits : first + round;

		share_out(job, w, first, last);
		memmig_pool_run(job->pool, worker_run, w, sizeof(*w), job->nworkers);
		/* What was copied is finished even when stopping: consistent. */
		t = memmig_now();
		if (job->ops->finish)
			job->ops->finish(job, first, last);
		job->copy_s += memmig_now() - t;
	}
	share_out(job, w, 0, job->nunits);
	memmig_pool_run(job->pool, worker_after, w, sizeof(*w), job->nworkers);
	for (unsigned int i = 0; i < job->nworkers; i++) {
		job->prepare_s += w[i].prepare_s / job->nworkers;
		job->copy_s += w[i].copy_s / job->nworkers;
		job->query_s += w[i].query_s / job->nworkers;
	}
	free(w);
}

void memmig_job_run(struct memmig_job *job)
{
	int rc;

	rc = job->ops->setup ? job->ops->setup(job) : 0;
	if (rc < 0)
		memmig_job_fail(job, rc);
	else
		run_workers(job);
	if (job->ops->teardown)
		job->ops->teardown(job);
	job->total_s = memmig_now() - job->t_start;
	rc = __atomic_load_n(&job->error, __ATOMIC_ACQUIRE);
	for (size_t i = 0; i < job->nunits; i++) {
		if (job->units[i].state != MEMMIG_UNIT_PENDING)
			continue;
		job->units[i].state = MEMMIG_UNIT_SKIPPED;
		/* A cancel that came after the last unit cancelled nothing. */
		if (!rc && __atomic_load_n(&job->cancel, __ATOMIC_ACQUIRE))
			rc = -ECANCELED;
	}
	job->result = rc;
	if (memmig_report_build(job) < 0 && !job->result)
		job->result = -ENOMEM;

	pthread_mutex_lock(&job->lock);
	job->done = true;
	pthread_cond_broadcast(&job->cond);
	pthread_mutex_unlock(&job->lock);
}

static void *job_main(void *arg)
{
	memmig_job_run(arg);
	return NULL;
}

/* The target: a node with memory, or a target_path for this process's
 * anonymous or DAX memory. */
static int check_target(struct memmig_job *job, const struct memmig_migrate_opts *o,
			const struct memmig_job_env *env)
{
	struct memmig_region *r = job->region;

	if (o->target_path) {
		if (o->target_node != -1 || !r->self || o->strategy == MEMMIG_STRATEGY_KERNEL ||
		    (r->desc.backing != MEMMIG_BACKING_ANON &&
		     r->desc.backing != MEMMIG_BACKING_DAX)) {
			err(r->ctx, "migrate: a target path takes target node -1 and this "
				    "process's anonymous or DAX memory (copy strategy)\n");
			return -EINVAL;
		}
		return 0;
	}
	return env && env->target_checked ? 0 : memmig_node_check(r->ctx, o->target_node);
}

int memmig_strategy_check(struct memmig_ctx *ctx, int strategy, bool self, int backing,
			  bool to_path, int pid, int *resolved)
{
	bool dax = backing == MEMMIG_BACKING_DAX;

	/* AUTO: copy for this process's anonymous and DAX memory and for a
	 * target path, the kernel otherwise. */
	if (strategy == MEMMIG_STRATEGY_AUTO)
		strategy = self && (backing == MEMMIG_BACKING_ANON || dax || to_path) ?
			MEMMIG_STRATEGY_COPY : MEMMIG_STRATEGY_KERNEL;
	if (strategy == MEMMIG_STRATEGY_COPY && !self) {
		err(ctx, "migrate: the copy strategy works in this process only; "
			 "pid %d needs the kernel strategy\n", pid);
		return -EINVAL;
	}
	/* move_pages and mbind cannot move DAX pages (no LRU pages). */
	if (dax && strategy != MEMMIG_STRATEGY_COPY) {
		err(ctx, "migrate: DAX memory has no pages the kernel can move; "
			 "the process that maps it copies it (libmemmig in it)\n");
		return -EINVAL;
	}
	if (resolved)
		*resolved = strategy;
	return 0;
}

/* DAX sources and target paths go through the DAX copy. */
static int choose_strategy(struct memmig_job *job, const struct memmig_migrate_opts *o)
{
	struct memmig_region *r = job->region;
	int rc = memmig_strategy_check(r->ctx, o->strategy, r->self, r->desc.backing,
				       o->target_path != NULL, r->desc.pid, &job->strategy);

	if (rc < 0)
		return rc;
	if (job->strategy == MEMMIG_STRATEGY_KERNEL)
		job->ops = &memmig_strategy_kernel;
	else
		job->ops = r->desc.backing == MEMMIG_BACKING_DAX || o->target_path ?
			&memmig_strategy_dax : &memmig_strategy_copy;
	return 0;
}

/* The CPUs nearest the target node run the workers: the move's snapshot,
 * or one of the job's own. */
static int find_pin_node(struct memmig_job *job, const struct memmig_job_env *env)
{
	struct memmig_node_info node = { .sz = sizeof(node), .nearest_cpu_node = -1 };
	int rc;

	job->pin_node = -1;
	if (job->to_file || job->target < 0)
		return 0;
	if (env && env->topo) {
		job->topo = memmig_topo_ref(env->topo);
	} else {
		rc = memmig_topo_new_nodes(job->ctx, &job->topo);
		if (rc < 0)
			return rc;
	}
	if (memmig_topo_find_node(job->topo, job->target, &node) == 0)
		job->pin_node = node.nearest_cpu_node;
	return 0;
}

/* Checks the options against the region; resolves defaults. */
static int job_configure(struct memmig_job *job, const struct memmig_migrate_opts *o,
			 const struct memmig_job_env *env)
{
	struct memmig_region *r = job->region;
	struct memmig_ctx *ctx = r->ctx;
	uint64_t len = o->len ? o->len : r->desc.len - o->offset;
	int rc;

	/* Another process through the move's pin, and its caller's check. */
	job->pin = MEMMIG_PIN_NONE;
	if (!r->self)
		job->pin.procfd = r->procfd;
	if (env && env->check) {
		job->pin.check = env->check;
		job->pin.opaque = env->check_opaque;
	}
	if ((o->offset | len) % MEMMIG_PAGE_SIZE || o->offset > r->desc.len ||
	    len > r->desc.len - o->offset || !len ||
	    (o->flags & ~(MEMMIG_MIGRATE_FORCE | MEMMIG_MIGRATE_OWN_PAGES)) ||
	    o->strategy < MEMMIG_STRATEGY_AUTO ||
	    o->strategy > MEMMIG_STRATEGY_COPY) {
		err(ctx, "migrate: range %#llx+%#llx is not a page-aligned part of "
			 "the region, or bad strategy or flags\n",
		    (unsigned long long)o->offset, (unsigned long long)len);
		return -EINVAL;
	}
	rc = check_target(job, o, env);
	if (!rc)
		rc = choose_strategy(job, o);
	if (rc)
		return rc;
	job->pid = r->self ? 0 : r->desc.pid;
	job->addr = r->desc.addr + o->offset;
	job->len = len;
	job->target = o->target_node;
	job->flags = o->flags;
	job->nworkers = o->workers ? o->workers : memmig_usable_cpus();
	/* Last: the only step that creates something. */
	if (o->target_path) {
		rc = memmig_dax_target_open(ctx, o->target_path, o->target_offset,
					    job->addr, job->len, &job->file);
		job->to_file = !rc;
	}
	return rc ? rc : find_pin_node(job, env);
}

static void job_free(struct memmig_job *job)
{
	if (job->to_file)
		memmig_dax_target_close(&job->file);
	memmig_report_unref(job->report);
	memmig_region_unref(job->region);
	memmig_topo_unref(job->topo);
	if (job->own_pool)
		memmig_pool_free(job->pool);
	pthread_mutex_destroy(&job->lock);
	pthread_cond_destroy(&job->cond);
	free(job->units);
	if (job->pages_bytes)
		munmap(job->before, job->pages_bytes);
	else
		free(job->before);
	free(job);
}

/*
 * The per-page arrays, 12 bytes a page, in one mapping advised for THP
 * once they fill a huge page: a job's first touch of fresh memory costs
 * page faults (on some hosts the outer hypervisor's too), and 4 KiB ones
 * cost ~4x what 2 MB ones do for the same bytes (12 ms against 3 a GiB
 * moved, on Zen 5 under PVM).  Smaller ones come from malloc: a whole
 * process is dozens of small jobs, and a mapping each (its munmap's TLB
 * shootdown) cost more than they saved.
 */
static int pages_alloc(struct memmig_job *job, size_t npages)
{
	size_t bytes = 3 * npages * sizeof(int);
	int rc = 0;

	if (bytes < MEMMIG_UNIT_SIZE) {
		job->before = malloc(bytes);
		if (!job->before)
			return -ENOMEM;
	} else {
		bytes = (bytes + MEMMIG_PAGE_SIZE - 1) & ~(size_t)(MEMMIG_PAGE_SIZE - 1);
		job->before = memmig_map_aligned(bytes, true, false, &rc);
		if (!job->before)
			return rc;
		job->pages_bytes = bytes;
	}
	job->after = job->before + npages;
	job->status = job->after + npages;
	return 0;
}

int memmig_job_create(struct memmig_region *r, const struct memmig_migrate_opts *opts,
		      const struct memmig_job_env *env, struct memmig_job **out)
{
	struct memmig_migrate_opts o = { .sz = sizeof(o) };
	struct memmig_job *job;
	size_t npages;
	int rc;

	if (!r || !out || memmig_struct_in(&o, sizeof(o), opts) < 0)
		return -EINVAL;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->refcount = 1;
	job->joined = true;	/* no job thread */
	job->ctx = r->ctx;
	job->region = memmig_region_ref(r);
	pthread_mutex_init(&job->lock, NULL);
	pthread_cond_init(&job->cond, NULL);
	rc = job_configure(job, &o, env);
	if (!rc)
		rc = plan_units(job);
	if (!rc) {
		npages = job->len / MEMMIG_PAGE_SIZE;
		rc = pages_alloc(job, npages);
		/* Pages no worker got to are neither anywhere nor failed. */
		for (size_t i = 0; !rc && i < npages; i++)
			job->before[i] = job->after[i] = job->status[i] =
				MEMMIG_STATUS_UNTOUCHED;
	}
	if (job->nworkers > job->nunits)
		job->nworkers = job->nunits ? (unsigned int)job->nunits : 1;
	/* The kernel's workers each take a call's worth of units or more: one
	 * for less costs its hand-off and saves nothing (a whole process is
	 * dozens of small mappings). */
	if (job->strategy == MEMMIG_STRATEGY_KERNEL &&
	    job->nworkers > (job->nunits + MEMMIG_CALL_UNITS - 1) / MEMMIG_CALL_UNITS)
		job->nworkers = (unsigned int)((job->nunits + MEMMIG_CALL_UNITS - 1) /
					       MEMMIG_CALL_UNITS);
	if (env) {
		job->from_mask = env->from_mask;
		job->frames = env->frames;
		job->probe = env->probe;
	}
	/* A job of its own: threads of its own, besides the job thread. */
	if (!rc && env && env->pool) {
		job->pool = env->pool;
	} else if (!rc && job->nworkers > 1) {
		rc = memmig_pool_new(job->nworkers - 1, &job->pool);
		job->own_pool = !rc;
	}
	job->t_start = job->rate_t = memmig_now();
	if (rc < 0) {
		job_free(job);
		return rc;
	}
	dbg(job->ctx, "job: %s %#llx+%#llx to %s %d, %zu units, %u workers\n",
	    job->ops->name, (unsigned long long)job->addr,
	    (unsigned long long)job->len, job->to_file ? "the target path, node" : "node",
	    job->target, job->nunits, job->nworkers);
	*out = job;
	return 0;
}

int memmig_job_start(struct memmig_region *r, const struct memmig_migrate_opts *opts,
		     struct memmig_job **out)
{
	struct memmig_job *job;
	int rc = memmig_job_create(r, opts, NULL, &job);

	if (rc < 0)
		return rc;
	/* The caller's reference, and the job thread's until joined. */
	job->refcount = 2;
	job->joined = false;
	if (pthread_create(&job->thread, NULL, job_main, job)) {
		job_free(job);
		return -EAGAIN;
	}
	*out = job;
	return 0;
}

int memmig_job_get_progress(struct memmig_job *job, struct memmig_progress *out)
{
	struct memmig_progress p = { .sz = sizeof(p) };
	double now = memmig_now();

	if (!job)
		return -EINVAL;
	pthread_mutex_lock(&job->lock);
	p.bytes_done = __atomic_load_n(&job->bytes_done, __ATOMIC_RELAXED);
	p.bytes_total = job->len;
	p.state = job->done ? MEMMIG_JOB_DONE : MEMMIG_JOB_RUNNING;
	p.result = job->done ? job->result : 0;
	p.elapsed_s = now - job->t_start;
	/* The rate over the interval since the last sample of 100 ms or more. */
	if (now - job->rate_t >= 0.1) {
		job->rate = (p.bytes_done - job->rate_bytes) / (now - job->rate_t);
		job->rate_t = now;
		job->rate_bytes = p.bytes_done;
	}
	p.rate = job->rate;
	pthread_mutex_unlock(&job->lock);
	return memmig_struct_out(out, &p, sizeof(p));
}

int memmig_job_cancel(struct memmig_job *job)
{
	if (!job)
		return -EINVAL;
	__atomic_store_n(&job->cancel, true, __ATOMIC_RELEASE);
	return 0;
}

int memmig_job_wait(struct memmig_job *job, struct memmig_report **report)
{
	bool reap = false;
	int rc;

	if (!job)
		return -EINVAL;
	pthread_mutex_lock(&job->lock);
	while (!job->done)
		pthread_cond_wait(&job->cond, &job->lock);
	if (!job->joined) {
		__atomic_store_n(&job->joined, true, __ATOMIC_RELEASE);
		reap = true;
	}
	pthread_mutex_unlock(&job->lock);
	if (reap)
		pthread_join(job->thread, NULL);
	if (report)
		*report = memmig_report_ref(job->report);
	rc = job->result;
	if (reap)
		memmig_job_unref(job);	/* the job thread's reference */
	return rc;
}

void memmig_job_unref(struct memmig_job *job)
{
	int left;

	if (!job)
		return;
	left = __atomic_sub_fetch(&job->refcount, 1, __ATOMIC_ACQ_REL);
	if (left == 1 && !__atomic_load_n(&job->joined, __ATOMIC_ACQUIRE)) {
		/* The caller let go of a running job: stop it and reap it. */
		memmig_job_cancel(job);
		memmig_job_wait(job, NULL);
		return;
	}
	if (left == 0)
		job_free(job);
}

int memmig_migrate(struct memmig_region *r, const struct memmig_migrate_opts *opts,
		   struct memmig_report **report)
{
	struct memmig_job *job;
	int rc = memmig_job_start(r, opts, &job);

	if (rc < 0)
		return rc;
	rc = memmig_job_wait(job, report);
	memmig_job_unref(job);
	return rc;
}
