/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A whole-process move: the process's mappings, or the ranges asked for,
 * each one a job (memmig_job_create() + memmig_job_run()) on the move's
 * thread, all of them on the move's worker pool and topology snapshot.
 * Cancel stops the region being moved after its units in flight; the
 * regions' reports add up to one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/migrate/migrate-private.h"
#include "lib/mm/frames.h"
#include "lib/mm/nodemem.h"
#include "lib/mm/proc.h"
#include "lib/migrate/pool.h"
#include "lib/migrate/walk.h"
#include "lib/topology/topology-private.h"

struct memmig_move {
	int refcount;
	struct memmig_ctx *ctx;
	struct memmig_move_opts o;	/* o.ranges: ours; o.from_nodes: NULL */
	struct memmig_topo *topo;
	/* Which node a frame is on, or NULL (no CAP_SYS_ADMIN): the jobs'
	 * placement from the pagemap, not the kernel's query. */
	struct memmig_frames *frames;
	/* The pagemap and kpageflags, opened once by the plan for every
	 * job (probe_open): THP detection and placement by frame. */
	struct memmig_thp_probe probe;
	bool probe_open;
	/* o.from_nodes as bits, or NULL: pages on any node move. */
	uint64_t *from_mask;
	/* o.procfd and o.check (MEMMIG_PIN_NONE without them): what the
	 * regions and their jobs reach the process through. */
	struct memmig_pin pin;

	/* Set by the plan, read-only after. */
	struct memmig_region **list;
	unsigned int n;
	uint64_t bytes_total;

	pthread_mutex_t lock;		/* guards what follows */
	pthread_cond_t cond;		/* state changed, or a thread joined */
	int state;
	int result;
	bool cancel, plan_started, run_started;
	bool plan_th_live, run_th_live, reaping;
	pthread_t plan_th, run_th;
	struct memmig_job *job;		/* the region being moved */
	uint64_t done_before;		/* bytes of the regions already done */
	unsigned int regions_done;
	double t0, elapsed_s;
	double plan_s;			/* do_plan() took */
	struct memmig_report *report;
};

/* from_nodes as bits; -EINVAL for an id out of range. */
static int from_mask_new(const struct memmig_move_opts *o, uint64_t **out)
{
	uint64_t *m;

	*out = NULL;
	if (!o->from_nodes)
		return 0;
	m = calloc(MEMMIG_MOVE_MAX_NODES / 64, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (unsigned int i = 0; i < o->nfrom_nodes; i++) {
		int node = o->from_nodes[i];

		if (node < 0 || node >= MEMMIG_MOVE_MAX_NODES) {
			free(m);
			return -EINVAL;
		}
		m[node / 64] |= 1ULL << (node % 64);
	}
	*out = m;
	return 0;
}

static bool process_exists(int pid, int procfd)
{
	char path[32];

	if (procfd >= 0)
		return memmig_proc_pinned(procfd);
	snprintf(path, sizeof(path), "/proc/%d", pid);
	return access(path, F_OK) == 0;
}

int memmig_move_new(struct memmig_ctx *ctx, const struct memmig_move_opts *opts,
		    struct memmig_move **out)
{
	struct memmig_move_opts o = { .sz = sizeof(o) };
	struct memmig_move *mv;
	int rc;

	if (!ctx || !out || memmig_struct_in(&o, sizeof(o), opts) < 0 || o.pid <= 0 ||
	    o.nranges > MEMMIG_MOVE_MAX_RANGES || (o.nranges && !o.ranges) ||
	    o.strategy < MEMMIG_STRATEGY_AUTO || o.strategy > MEMMIG_STRATEGY_COPY ||
	    (o.flags & ~(MEMMIG_MIGRATE_FORCE | MEMMIG_MIGRATE_OWN_PAGES |
			 MEMMIG_MIGRATE_LOCKED)) ||
	    (o.from_nodes && (!o.nfrom_nodes || o.nfrom_nodes > MEMMIG_MOVE_MAX_NODES)) ||
	    (!o.from_nodes && o.nfrom_nodes))
		return -EINVAL;
	/* Page by page, where each one is: move_pages(2)'s way, as
	 * migratepages(8) does it; the copy strategy moves whole units. */
	if (o.from_nodes) {
		if (o.strategy == MEMMIG_STRATEGY_COPY)
			return -EINVAL;
		o.strategy = MEMMIG_STRATEGY_KERNEL;
	}
	/* The rule for each region, applied once to the whole: anonymous
	 * memory of the process itself is what the copy strategy can take. */
	rc = memmig_strategy_check(ctx, o.strategy, o.pid == getpid(), MEMMIG_BACKING_ANON,
				   false, o.pid, NULL);
	if (rc < 0)
		return rc;
	if (!process_exists(o.pid, o.procfd > 0 ? o.procfd : -1))
		return -ESRCH;
	rc = memmig_node_check(ctx, o.target_node);
	if (rc < 0)
		return rc;
	mv = calloc(1, sizeof(*mv));
	if (!mv)
		return -ENOMEM;
	mv->refcount = 1;
	mv->ctx = memmig_ctx_ref(ctx);
	mv->o = o;
	mv->o.ranges = NULL;
	mv->o.from_nodes = NULL;
	/* A pin on this very process says nothing a move of it needs. */
	mv->pin = MEMMIG_PIN_NONE;
	if (o.procfd > 0 && o.pid != getpid())
		mv->pin.procfd = o.procfd;
	mv->pin.check = o.check;
	mv->pin.opaque = o.check_opaque;
	pthread_mutex_init(&mv->lock, NULL);
	pthread_cond_init(&mv->cond, NULL);
	rc = from_mask_new(&o, &mv->from_mask);
	if (rc < 0) {
		memmig_move_unref(mv);
		return rc;
	}
	if (o.nranges) {
		struct memmig_range *r = malloc(o.nranges * sizeof(*r));

		if (!r) {
			memmig_move_unref(mv);
			return -ENOMEM;
		}
		memcpy(r, o.ranges, o.nranges * sizeof(*r));
		mv->o.ranges = r;
	}
	*out = mv;
	return 0;
}

struct memmig_move *memmig_move_ref(struct memmig_move *mv)
{
	if (mv)
		__atomic_add_fetch(&mv->refcount, 1, __ATOMIC_RELAXED);
	return mv;
}

/* Lock held: a new state, told to waiters and (unlocked) to notify. */
static void set_state(struct memmig_move *mv, int state)
{
	mv->state = state;
	pthread_cond_broadcast(&mv->cond);
}

static void notify(struct memmig_move *mv)
{
	if (mv->o.notify)
		mv->o.notify(mv, mv->o.opaque);
}

static int list_ranges(struct memmig_move *mv)
{
	mv->list = calloc(mv->o.nranges, sizeof(*mv->list));
	if (!mv->list)
		return -ENOMEM;
	return memmig_region_new_ranges(mv->ctx, mv->o.pid, mv->pin.procfd, mv->o.ranges,
					mv->o.nranges, mv->list, &mv->n);
}

static bool move_cancelled(void *arg)
{
	struct memmig_move *mv = arg;
	bool c;

	pthread_mutex_lock(&mv->lock);
	c = mv->cancel;
	pthread_mutex_unlock(&mv->lock);
	return c;
}

/* Lists and checks the regions; the state is PLANNING, owned by the
 * caller.  Ends in PLANNED, or DONE with the error. */
static int do_plan(struct memmig_move *mv)
{
	double t = memmig_now();
	/* Once, not a system call a region (a process has a hundred). */
	bool self = mv->o.pid == getpid();
	int rc = mv->o.nranges ? list_ranges(mv) :
		memmig_region_list_at(mv->ctx, mv->o.pid, mv->pin.procfd, &mv->list, &mv->n);

	for (unsigned int i = 0; !rc && i < mv->n; i++) {
		struct memmig_region_desc d = { .sz = sizeof(d) };

		memmig_region_get_desc(mv->list[i], &d);
		rc = memmig_strategy_check(mv->ctx, mv->o.strategy, self, d.backing, false,
					   mv->o.pid, NULL);
		mv->bytes_total += d.len;
	}
	if (!rc) {
		unsigned int workers = mv->o.workers ? mv->o.workers : memmig_usable_cpus();

		rc = memmig_topo_new_nodes(mv->ctx, &mv->topo);
		if (!rc && memmig_frames_new(&mv->frames) < 0)
			dbg(mv->ctx, "move: no frame numbers in the pagemap: placement by query\n");
		/* As a job of the process would open it (pid 0: this one). */
		if (!rc)
			mv->probe_open = memmig_thp_probe_open(mv->ctx, self ? 0 : mv->o.pid,
							       self ? -1 : mv->pin.procfd,
							       &mv->probe) == 0;
		if (!rc)
			mv->report = memmig_report_new_empty(mv->o.pid, mv->o.target_node,
							     mv->o.strategy);
		if (!rc && !mv->report)
			rc = -ENOMEM;
		mv->o.workers = workers;
	}
	/* The process ended while we read it: whichever read noticed it
	 * (smaps cut short: -EIO or -EINVAL, move_pages: -EINVAL) says so. */
	rc = memmig_proc_err_at(mv->o.pid, mv->pin.procfd, rc);
	mv->plan_s = memmig_now() - t;
	memmig_fault_hold(mv->ctx, mv->ctx->plan_hold, move_cancelled, mv);
	pthread_mutex_lock(&mv->lock);
	if (rc) {
		mv->result = rc;
		set_state(mv, MEMMIG_MOVE_DONE);
	} else {
		set_state(mv, MEMMIG_MOVE_PLANNED);
	}
	pthread_mutex_unlock(&mv->lock);
	return rc;
}

/* Lock held: takes the plan for the caller, once. */
static int claim_plan(struct memmig_move *mv)
{
	if (mv->plan_started || mv->run_started)
		return -EBUSY;
	mv->plan_started = true;
	set_state(mv, MEMMIG_MOVE_PLANNING);
	return 0;
}

int memmig_move_plan(struct memmig_move *mv)
{
	int rc;

	if (!mv)
		return -EINVAL;
	pthread_mutex_lock(&mv->lock);
	rc = claim_plan(mv);
	pthread_mutex_unlock(&mv->lock);
	return rc ? rc : do_plan(mv);
}

static void *plan_thread(void *arg)
{
	struct memmig_move *mv = arg;

	do_plan(mv);
	notify(mv);
	return NULL;
}

int memmig_move_plan_start(struct memmig_move *mv)
{
	int rc;

	if (!mv)
		return -EINVAL;
	pthread_mutex_lock(&mv->lock);
	rc = claim_plan(mv);
	if (!rc) {
		rc = -pthread_create(&mv->plan_th, NULL, plan_thread, mv);
		mv->plan_th_live = !rc;
		if (rc)
			mv->plan_started = false;
	}
	pthread_mutex_unlock(&mv->lock);
	return rc;
}

static int job_for(struct memmig_move *mv, struct memmig_region *r, struct memmig_pool *pool,
		   struct memmig_job **job)
{
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = mv->o.target_node,
		.strategy = mv->o.strategy, .workers = mv->o.workers,
		.flags = mv->o.flags & ~MEMMIG_MIGRATE_LOCKED,
	};
	struct memmig_job_env env = { .topo = mv->topo, .pool = pool,
				      .from_mask = mv->from_mask, .frames = mv->frames,
				      .check = mv->pin.check, .check_opaque = mv->pin.opaque,
				      .probe = mv->probe_open ? &mv->probe : NULL,
				      .target_checked = true };

	return memmig_job_create(r, &o, &env, job);
}

/* Runs the job and drops it (with mv->job, when it was that).  Counted
 * done (len bytes) in the step that drops it, so that a progress read
 * between the two never sees bytes_done go back. */
static int job_finish(struct memmig_move *mv, struct memmig_job *job, uint64_t len)
{
	struct memmig_report *rep = NULL;
	int rc;

	memmig_job_run(job);
	rc = memmig_job_wait(job, &rep);
	pthread_mutex_lock(&mv->lock);
	mv->job = NULL;
	mv->done_before += len;
	mv->regions_done++;
	if (rep && memmig_report_add(mv->report, rep) < 0 && !rc)
		rc = -ENOMEM;
	pthread_mutex_unlock(&mv->lock);
	memmig_report_unref(rep);
	memmig_job_unref(job);
	return rc;
}

/* Lock held: a region that will not run is done. */
static void region_done(struct memmig_move *mv, uint64_t len)
{
	mv->done_before += len;
	mv->regions_done++;
}

/*
 * One region's job on the move's pool, reachable by memmig_move_cancel().
 * After a cancel it still runs, cancelled: it moves nothing and only asks
 * where its pages are, so that the report says where every region's are
 * (-ECANCELED, as the job ends).
 */
static int move_region(struct memmig_move *mv, struct memmig_region *r,
		       uint64_t len, struct memmig_pool *pool, struct memmig_job *job)
{
	/* The process still the one pinned, the caller's rule still met:
	 * a region whose pages come from the pagemap's frames makes no
	 * system call that would ask. */
	int rc = memmig_pin_call_before(&mv->pin);

	pthread_mutex_lock(&mv->lock);
	if (!rc && !job)
		rc = job_for(mv, r, pool, &job);
	if (rc < 0) {
		region_done(mv, len);
		memmig_job_unref(job);
	} else {
		if (mv->cancel)
			memmig_job_cancel(job);
		mv->job = job;
	}
	pthread_mutex_unlock(&mv->lock);
	return rc < 0 ? rc : job_finish(mv, job, len);
}

static uint64_t region_len(const struct memmig_region *r)
{
	struct memmig_region_desc d = { .sz = sizeof(d) };

	memmig_region_get_desc(r, &d);
	return d.len;
}

/*
 * The whole process in one walk (walk.c): every region's job asks where
 * its pages are, migrate_pages(2) moves them a source node at a time, and
 * the jobs then settle what it moved and finish what it left.  A cancel
 * waits for the node being walked; the jobs then only settle (the pages
 * the walk moved are the report's).  A walk the kernel refuses falls back
 * to the regions' own moves, with what they asked.
 */
static int walk_regions(struct memmig_move *mv, struct memmig_pool *pool)
{
	struct memmig_job **jobs = calloc(mv->n ? mv->n : 1, sizeof(*jobs));
	double walk_s = 0;
	bool walked = false, cancelled = false;
	int rc = jobs ? memmig_pin_call_before(&mv->pin) : -ENOMEM;

	for (unsigned int i = 0; !rc && i < mv->n; i++) {
		rc = job_for(mv, mv->list[i], pool, &jobs[i]);
		if (!rc)
			rc = memmig_job_query_before(jobs[i]);
		/* A mapping that went away meanwhile is not an error of ours. */
		if (rc == -EFAULT) {
			memmig_job_unref(jobs[i]);
			jobs[i] = NULL;
			rc = 0;
		}
	}
	/* Cancelled before the walk: the regions' jobs run cancelled. */
	if (!rc && !move_cancelled(mv)) {
		int wrc = memmig_walk_run(jobs, mv->n, mv->o.pid, &mv->pin, mv->o.target_node,
					  move_cancelled, mv, &walk_s);

		cancelled = wrc == -ECANCELED;
		/*
		 * A walk that ran out of room on the target moved part of the
		 * process (Linux 6.1 answers a full node with ENOMEM): its
		 * jobs ask where the pages are now, as after a walk.  Taken
		 * for a refused walk, a job that failed ENOMEM ended the move
		 * before the other regions said what the walk had moved into
		 * them (a report of 13.8 MB moved where 30.1 MB had arrived).
		 */
		walked = !wrc || cancelled || wrc == -ENOMEM;
		/* The pin said no (not the kernel: a walk it refuses falls
		 * back to the regions' own moves): nothing more is done. */
		if (wrc && !cancelled)
			rc = memmig_pin_call_before(&mv->pin);
		if (wrc && !walked && !rc)
			dbg(mv->ctx, "move: migrate_pages(2) of pid %d: %s; region by region\n",
			    mv->o.pid, strerror(-wrc));
	}
	for (unsigned int i = 0; i < mv->n; i++) {
		uint64_t len = region_len(mv->list[i]);
		int jrc;

		/* An error ends the move (a cancel does not: what is left
		 * still says where it is). */
		if (!jobs || !jobs[i] || (rc && rc != -ECANCELED && !walked)) {
			pthread_mutex_lock(&mv->lock);
			region_done(mv, len);
			pthread_mutex_unlock(&mv->lock);
			memmig_job_unref(jobs ? jobs[i] : NULL);
			continue;
		}
		jobs[i]->premoved = walked;
		if (cancelled)
			memmig_job_cancel(jobs[i]);
		jrc = walked ? job_finish(mv, jobs[i], len) : move_region(mv, NULL, len, pool, jobs[i]);
		if (jrc != -EFAULT && !rc)
			rc = jrc;
	}
	free(jobs);
	if (walked)
		memmig_report_add_copy_s(mv->report, walk_s);
	return rc;
}

static int run_regions(struct memmig_move *mv)
{
	struct memmig_pool *pool = NULL;
	struct memmig_walk_req req = {
		.pid = mv->o.pid, .ranges = mv->o.nranges > 0, .target = mv->o.target_node,
		.flags = mv->o.flags & ~MEMMIG_MIGRATE_LOCKED,
		.strategy = mv->o.strategy == MEMMIG_STRATEGY_AUTO && mv->o.pid != getpid() ?
			MEMMIG_STRATEGY_KERNEL : mv->o.strategy,
	};
	int rc = mv->o.workers > 1 ? memmig_pool_new(mv->o.workers - 1, &pool) : 0;

	if (!rc && memmig_walk_wanted(&req)) {
		rc = walk_regions(mv, pool);
	} else {
		/* After a cancel, the regions left still say where they are. */
		for (unsigned int i = 0; i < mv->n && (!rc || rc == -ECANCELED); i++) {
			int jrc = move_region(mv, mv->list[i], region_len(mv->list[i]), pool,
					      NULL);

			/* A mapping that went away meanwhile is not an error of ours. */
			if (!rc && jrc != -EFAULT)
				rc = jrc;
		}
	}
	memmig_pool_free(pool);
	/* What the move did was done to the pinned process, by the caller's
	 * rule, only if both still hold at the end. */
	if (!rc)
		rc = memmig_pin_call_before(&mv->pin);
	/* The process died under the move: whichever step noticed it first
	 * (its maps, pagemap, move_pages) answered in its own words (EINVAL,
	 * EFAULT, ...); what happened is that it is gone. */
	return memmig_proc_err_at(mv->o.pid, mv->pin.procfd, rc);
}

static void *run_thread(void *arg)
{
	struct memmig_move *mv = arg;
	int rc = 0, lock;
	bool plan;

	pthread_mutex_lock(&mv->lock);
	/* A plan on its own thread ends first. */
	while (mv->state == MEMMIG_MOVE_PLANNING)
		pthread_cond_wait(&mv->cond, &mv->lock);
	plan = mv->state == MEMMIG_MOVE_NEW;
	if (plan)
		set_state(mv, MEMMIG_MOVE_PLANNING);
	pthread_mutex_unlock(&mv->lock);
	if (plan)
		rc = do_plan(mv);
	pthread_mutex_lock(&mv->lock);
	if (!rc && mv->state == MEMMIG_MOVE_PLANNED) {
		mv->t0 = memmig_now();
		set_state(mv, MEMMIG_MOVE_RUNNING);
		pthread_mutex_unlock(&mv->lock);
		/* Another move of the process runs: this one moves nothing.
		 * The caller may hold the lock itself (a tiering); without a
		 * lock to be had (no attach access), the move runs. */
		lock = -1;
		if (!(mv->o.flags & MEMMIG_MIGRATE_LOCKED)) {
			lock = memmig_proc_move_lock(mv->o.pid, mv->pin.procfd);
			if (lock < 0 && lock != -EBUSY)
				dbg(mv->ctx, "move of pid %d: no move lock (%s): not serialized "
				    "with other moves\n", mv->o.pid, strerror(-lock));
		}
		memmig_fault_hold(mv->ctx, mv->ctx->move_hold, move_cancelled, mv);
		rc = lock == -EBUSY ? -EBUSY : run_regions(mv);
		if (lock >= 0)
			close(lock);
		pthread_mutex_lock(&mv->lock);
		mv->elapsed_s = memmig_now() - mv->t0;
		mv->result = rc;
		memmig_report_set_end(mv->report, rc, mv->bytes_total, mv->elapsed_s,
				      mv->plan_s);
		set_state(mv, MEMMIG_MOVE_DONE);
	}
	pthread_mutex_unlock(&mv->lock);
	notify(mv);
	return NULL;
}

int memmig_move_lock(int pid, int procfd)
{
	if (pid <= 0 && procfd < 0)
		return -EINVAL;
	return memmig_proc_move_lock(pid, procfd);
}

int memmig_move_start(struct memmig_move *mv)
{
	int rc;

	if (!mv)
		return -EINVAL;
	pthread_mutex_lock(&mv->lock);
	if (mv->run_started || mv->state == MEMMIG_MOVE_DONE) {
		rc = -EBUSY;
	} else {
		rc = -pthread_create(&mv->run_th, NULL, run_thread, mv);
		mv->run_started = mv->run_th_live = !rc;
	}
	pthread_mutex_unlock(&mv->lock);
	return rc;
}

int memmig_move_get_progress(struct memmig_move *mv, struct memmig_move_progress *out)
{
	struct memmig_move_progress p = { .sz = sizeof(p) };
	struct memmig_progress jp = { .sz = sizeof(jp) };

	if (!mv)
		return -EINVAL;
	pthread_mutex_lock(&mv->lock);
	p.state = mv->state;
	p.result = mv->state == MEMMIG_MOVE_DONE ? mv->result : 0;
	p.bytes_done = mv->done_before;
	p.regions_done = mv->regions_done;
	/* The plan writes these unlocked; they are its once it ended. */
	if (mv->state > MEMMIG_MOVE_PLANNING) {
		p.bytes_total = mv->bytes_total;
		p.regions = mv->n;
	}
	if (mv->job && memmig_job_get_progress(mv->job, &jp) == 0) {
		p.bytes_done += jp.bytes_done;
		p.rate = jp.rate;
	}
	if (mv->state == MEMMIG_MOVE_DONE)
		p.elapsed_s = mv->elapsed_s;
	else if (mv->state == MEMMIG_MOVE_RUNNING)
		p.elapsed_s = memmig_now() - mv->t0;
	if (!p.rate && p.elapsed_s > 0)
		p.rate = (double)p.bytes_done / p.elapsed_s;
	pthread_mutex_unlock(&mv->lock);
	return memmig_struct_out(out, &p, sizeof(p));
}

int memmig_move_cancel(struct memmig_move *mv)
{
	if (!mv)
		return -EINVAL;
	pthread_mutex_lock(&mv->lock);
	mv->cancel = true;
	if (mv->job)
		memmig_job_cancel(mv->job);
	pthread_mutex_unlock(&mv->lock);
	return 0;
}

/* Lock held: joins the threads whose work ended; one caller at a time. */
static void reap(struct memmig_move *mv)
{
	bool plan, run;

	while (mv->reaping)
		pthread_cond_wait(&mv->cond, &mv->lock);
	plan = mv->plan_th_live && mv->state != MEMMIG_MOVE_PLANNING;
	run = mv->run_th_live && mv->state == MEMMIG_MOVE_DONE;
	if (!plan && !run)
		return;
	mv->reaping = true;
	pthread_mutex_unlock(&mv->lock);
	if (plan)
		pthread_join(mv->plan_th, NULL);
	if (run)
		pthread_join(mv->run_th, NULL);
	pthread_mutex_lock(&mv->lock);
	mv->plan_th_live &= !plan;
	mv->run_th_live &= !run;
	mv->reaping = false;
	pthread_cond_broadcast(&mv->cond);
}

int memmig_move_wait(struct memmig_move *mv, struct memmig_report **report)
{
	int rc;

	if (!mv)
		return -EINVAL;
	pthread_mutex_lock(&mv->lock);
	if (!mv->plan_started && !mv->run_started) {
		pthread_mutex_unlock(&mv->lock);
		return -EINVAL;
	}
	while (mv->run_started ? mv->state != MEMMIG_MOVE_DONE :
	       mv->state == MEMMIG_MOVE_PLANNING)
		pthread_cond_wait(&mv->cond, &mv->lock);
	reap(mv);
	rc = mv->result;
	if (report)
		*report = mv->state == MEMMIG_MOVE_DONE && mv->run_started ?
			memmig_report_ref(mv->report) : NULL;
	pthread_mutex_unlock(&mv->lock);
	return rc;
}

void memmig_move_unref(struct memmig_move *mv)
{
	if (!mv || __atomic_sub_fetch(&mv->refcount, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	/* Nobody can follow it any more: stop it and reap its threads. */
	memmig_move_cancel(mv);
	pthread_mutex_lock(&mv->lock);
	while ((mv->run_th_live && mv->state != MEMMIG_MOVE_DONE) ||
	       mv->state == MEMMIG_MOVE_PLANNING)
		pthread_cond_wait(&mv->cond, &mv->lock);
	reap(mv);
	pthread_mutex_unlock(&mv->lock);
	memmig_region_list_free(mv->list, mv->n);
	memmig_report_unref(mv->report);
	memmig_topo_unref(mv->topo);
	memmig_frames_free(mv->frames);
	if (mv->probe_open)
		memmig_thp_probe_close(&mv->probe);
	free((void *)mv->o.ranges);
	free(mv->from_mask);
	pthread_mutex_destroy(&mv->lock);
	pthread_cond_destroy(&mv->cond);
	memmig_ctx_unref(mv->ctx);
	free(mv);
}
