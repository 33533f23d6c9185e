/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tiering engine of one process: each interval, the sources' marks,
 * the units' samples, a plan, and the plan's moves in batches through
 * libmemmig's kernel strategy (see tier.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memmig.h"
#include "lib/core/memmig-private.h"
#include "lib/mm/nodemem.h"
#include "lib/tier/tier-damon.h"
#include "lib/tier/tier-plan.h"
#include "lib/tier/tier-react.h"
#include "lib/tier/tier-softdirty.h"
#include "lib/tier/tier-units.h"
#include "lib/tier/tier-vm.h"

/*
 * A batch is one libmemmig move (one move_pages(2) pass and its checks),
 * whose fixed cost (its topology snapshot and placement queries: ~0.3 s
 * in the TCG tier) is most of a small batch's time: an interval's
 * promotions, and then its demotions, go in one batch each, up to this
 * many units (512 MiB); the rate, not the batch, bounds an interval.
 */
#define TIER_BATCH_MAX		256

struct tier {
	struct memmig_ctx *ctx;
	struct tier_proc pr;		/* pr.procfd: our duplicate */
	int move_lock;			/* memmig_move_lock()'s, or -1 */
	unsigned int flags;
	struct tier_policy p;
	struct tier_unit *units;
	size_t nunits;
	struct tier_softdirty *sd;
	struct tier_damon *damon;
	struct tier_vm *vm;		/* a VMM's own guest, or NULL */
	uint32_t damon_since;		/* the interval it was opened in */
	struct timespec start;
	struct tier_stats st;
	struct tier_sample hist[TIER_HISTORY];
	uint32_t nhist;
	struct tier_react react;	/* tier_stats.react_s's watch */
};

static double secs(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

int tier_new(struct memmig_ctx *ctx, const struct tier_proc *pr, const struct tier_policy *p,
	     unsigned int flags, struct tier **out, char *why, size_t len)
{
	struct tier *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	t->ctx = memmig_ctx_ref(ctx);
	t->pr = *pr;
	t->move_lock = -1;
	t->pr.procfd = fcntl(pr->procfd, F_DUPFD_CLOEXEC, 3);
	t->flags = flags;
	t->p = *p;
	tier_react_init(&t->react);
	t->st.react_s = -1;
	clock_gettime(CLOCK_MONOTONIC, &t->start);
	if (t->pr.procfd < 0) {
		rc = -errno;
		snprintf(why, len, "pid %d: %s", pr->pid, strerror(-rc));
		tier_free(t);
		return rc;
	}
	/* The tiering moves the process's pages for as long as it runs: no
	 * other move (memmig-cli -l, a VMM's) meanwhile, and none now. */
	rc = memmig_move_lock(pr->pid, t->pr.procfd);
	if (rc == -EBUSY) {
		snprintf(why, len, "pid %d: another move of it runs (a memmigd job, memmig-cli -l "
			 "or another program with libmemmig): tier it once that one ends", pr->pid);
		tier_free(t);
		return rc;
	}
	t->move_lock = rc;
	/* A guest's writes are its vm's to tell: KVM's own writes fault
	 * through no page table soft-dirty sees on every host. */
	rc = pr->vm ? tier_vm_open(pr->vm, pr->vm_slot, &t->vm, why, len) :
		      tier_softdirty_open(&t->pr, &t->sd, why, len);
	if (rc) {
		tier_free(t);
		return rc;
	}
	t->st.sources = pr->vm ? TIER_SRC_DIRTYLOG : TIER_SRC_SOFTDIRTY;
	*out = t;
	return 0;
}

/* The node of a set with the most free memory: where a batch goes;
 * -ENOENT, with the node in *missing, when one has no memory (gone). */
static int roomiest(const int *set, unsigned int n, uint64_t *sum, int *missing)
{
	long long best = -1, f;
	int node = set[0];

	*sum = 0;
	for (unsigned int i = 0; i < n; i++) {
		f = memmig_node_free(set[i]);
		if (f < 0) {
			*missing = set[i];
			return -ENOENT;
		}
		*sum += (uint64_t)f;
		if (f > best) {
			best = f;
			node = set[i];
		}
	}
	return node;
}

/* rc ends the interval: the process is gone, or no longer the caller's
 * (move_units() asked the pin when a batch failed). */
static bool fatal(const struct tier *t, int rc)
{
	return rc == -ESRCH || (rc && t->pr.check && t->pr.check(t->pr.opaque));
}

/* Failed ranges a batch logs one by one; the rest are counted. */
#define LOG_FAILED_MAX 4

/* A batch's pages that stayed, range by range with the kernel's reason:
 * the count alone does not say whether a page was busy for an instant
 * or refused for good.  A few lines a batch: a process whose memory is
 * pinned fails every page, every interval. */
static void log_failed(const struct tier *t, const struct memmig_report *rep,
		       const struct memmig_report_summary *s, int node)
{
	int n = memmig_report_failed_count(rep);
	uint64_t more = s->failed_ranges_omitted +
			(n > LOG_FAILED_MAX ? (uint64_t)(n - LOG_FAILED_MAX) : 0);

	for (int i = 0; i < n && i < LOG_FAILED_MAX; i++) {
		uint64_t addr, len;
		int e;

		if (memmig_report_get_failed(rep, (unsigned int)i, &addr, &len, &e) == 0)
			info(t->ctx, "tier: pid %d: %llu pages at %#llx did not move to node %d: "
			     "%s\n", t->pr.pid, (unsigned long long)(len / MEMMIG_PAGE_SIZE),
			     (unsigned long long)addr, node, strerror(e < 0 ? -e : e));
	}
	if (more)
		info(t->ctx, "tier: pid %d: and %llu more ranges did not move to node %d\n",
		     t->pr.pid, (unsigned long long)more, node);
}

/* Moves units idx[0..n) to node in batches; adds to *bytes, *pause. */
static int move_units(struct tier *t, const size_t *idx, size_t n, int node,
		      uint64_t *bytes, double *pause)
{
	struct memmig_range *r = malloc(TIER_BATCH_MAX * sizeof(*r));
	int rc = 0, stop = 0;

	if (!r)
		return -ENOMEM;
	/* A guest's units move live, each run under its own pause. */
	if (t->vm) {
		free(r);
		return tier_vm_move(t->vm, t->units, idx, n, node, t->p.pause_ms, bytes, pause,
				    &t->st.over_budget);
	}
	for (size_t i = 0; i < n && !stop;) {
		struct memmig_report_summary s = { .sz = sizeof(s) };
		/* Through the pin, the caller's rule asked before each call. */
		struct memmig_move_opts o = {
			.sz = sizeof(o), .pid = t->pr.pid, .ranges = r, .target_node = node,
			.strategy = MEMMIG_STRATEGY_KERNEL, .workers = 1, .flags = t->flags |
			(t->move_lock >= 0 ? MEMMIG_MIGRATE_LOCKED : 0),
			.procfd = t->pr.procfd, .check = t->pr.check,
			.check_opaque = t->pr.opaque,
		};
		struct memmig_report *rep = NULL;
		struct memmig_move *mv = NULL;
		size_t k;
		int err;

		for (k = 0; k < TIER_BATCH_MAX && i + k < n; k++)
			r[k] = (struct memmig_range){ t->units[idx[i + k]].addr,
						      t->units[idx[i + k]].len };
		o.nranges = (unsigned int)k;
		err = memmig_move_new(t->ctx, &o, &mv);
		if (!err)
			err = memmig_move_start(mv);
		if (!err)
			err = memmig_move_wait(mv, &rep);
		if (rep && !memmig_report_get_summary(rep, &s)) {
			double per_unit = s.copy_s / (double)k;

			*bytes += s.bytes_moved;
			t->st.pages_failed += s.pages_failed;
			if (s.pages_failed)
				log_failed(t, rep, &s, node);
			/*
			 * No thread stops: a page is away only while the kernel
			 * copies its folio, within its unit's share of the
			 * batch's move_pages time: that share is the pause.
			 */
			if (per_unit > *pause)
				*pause = per_unit;
			/* Nothing smaller than a unit to move: said, not hidden. */
			if (per_unit * 1e3 > t->p.pause_ms)
				t->st.over_budget += k;
			if (s.copy_s > t->st.batch_max_s)
				t->st.batch_max_s = s.copy_s;
		}
		memmig_report_unref(rep);
		memmig_move_unref(mv);
		/* A unit unmapped meanwhile fails its batch (EFAULT): the next
		 * interval lists the mappings again. */
		if (err && !rc)
			rc = err;
		/* Gone, or no longer the caller's: no more batches. */
		if (err) {
			int why = tier_proc_check(&t->pr);

			if (why || err == -ESRCH)
				rc = stop = why ? why : err;
		}
		i += k;
	}
	free(r);
	return rc;
}

static void mark_moved(struct tier *t, const size_t *idx, size_t n, int dir, uint32_t now)
{
	for (size_t i = 0; i < n; i++) {
		struct tier_unit *u = &t->units[idx[i]];
		uint32_t since = now - u->moved_at;

		/* Back the other way soon after: the hysteresis was too short. */
		if (tier_unit_moved(u, dir, now, t->p.min_stay + t->p.cold_intervals)) {
			t->st.bounces++;
			/* Which evidence moved it back: what a bounce is
			 * told apart by. */
			info(t->ctx, "tier: pid %d: unit %#llx %s again, %u intervals after "
			     "its last move (sources %#x, touched %#x, DAMON %#x); cold after "
			     "%u intervals now\n", t->pr.pid, (unsigned long long)u->addr,
			     dir > 0 ? "promoted" : "demoted", since, u->src, u->hist,
			     u->damon_hist, t->p.cold_intervals << u->backoff);
		}
		dbg(t->ctx, "tier: pid %d: interval %u: unit %#llx %s (sources %#x, touched %#x, "
		    "DAMON %#x)\n", t->pr.pid, now, (unsigned long long)u->addr,
		    dir > 0 ? "promoted" : "demoted", u->src, u->hist, u->damon_hist);
		if (dir > 0) {
			t->st.promoted_softdirty += !!(u->src & TIER_SRC_SOFTDIRTY);
			t->st.promoted_damon += !!(u->src & TIER_SRC_DAMON);
			t->st.promoted_dirtylog += !!(u->src & TIER_SRC_DIRTYLOG);
		}
	}
}

/* The interval's picture, before its moves. */
static void take_stock(struct tier *t, double now_s, struct tier_sample *s)
{
	struct tier_stats *st = &t->st;

	st->units = (uint32_t)t->nunits;
	st->hot_units = 0;
	st->bytes_resident = st->bytes_fast = st->bytes_slow = 0;
	st->hot_bytes = st->hot_fast = 0;
	for (size_t i = 0; i < t->nunits; i++) {
		const struct tier_unit *u = &t->units[i];

		st->bytes_resident += tier_unit_resident(u);
		st->bytes_fast += tier_unit_on_fast(u);
		st->bytes_slow += tier_unit_on_slow(u);
		if (tier_unit_hot(u)) {
			st->hot_units++;
			st->hot_bytes += tier_unit_resident(u);
			st->hot_fast += tier_unit_on_fast(u);
		}
	}
	tier_react_note(&t->react, t->units, t->nunits, st->hot_bytes, st->hot_fast, now_s,
			&st->react_s);
	*s = (struct tier_sample){
		.interval = st->intervals, .bytes_fast = st->bytes_fast,
		.bytes_slow = st->bytes_slow, .hot_bytes = st->hot_bytes,
		.hot_fast = st->hot_fast,
	};
}

/*
 * DAMON's first aggregations see the process as a few big regions, and a
 * region with any access marks every unit in it: in the tier its first
 * interval marked all 64 units of a process that wrote 16.  Its marks are
 * used from its TIER_DAMON_WARMUP-th interval on (read, and dropped,
 * before), by when its regions have split around what is accessed.
 */
#define TIER_DAMON_WARMUP	3

/* The first interval whose marks every source read counts from. */
static uint32_t watched_from(const struct tier *t)
{
	return t->st.sources & TIER_SRC_DAMON ? t->damon_since + TIER_DAMON_WARMUP - 1 : 1;
}

static int damon_mark(struct tier *t, struct tier_unit *units, size_t n, uint32_t now)
{
	struct tier_unit *scratch;
	int rc;

	if (now >= watched_from(t))
		return tier_damon_mark(t->damon, units, n);
	scratch = malloc((n ? n : 1) * sizeof(*scratch));
	if (!scratch)
		return -ENOMEM;
	memcpy(scratch, units, n * sizeof(*scratch));
	rc = tier_damon_mark(t->damon, scratch, n);
	free(scratch);
	return rc < 0 ? rc : 0;
}

static int read_sources(struct tier *t, uint32_t now)
{
	struct tier_unit *units = NULL;
	size_t n = 0;
	int rc;

	for (size_t i = 0; i < t->nunits; i++) {
		t->units[i].hist = (uint8_t)(t->units[i].hist << 1);
		t->units[i].damon_hist = (uint8_t)(t->units[i].damon_hist << 1);
		t->units[i].src = 0;
	}
	/* Nothing is read of a process the caller may no longer move. */
	rc = tier_proc_check(&t->pr);
	if (!rc)
		rc = t->vm ? tier_vm_units(t->vm, t->units, t->nunits, &units, &n) :
			     tier_units_read(&t->pr, t->units, t->nunits, &units, &n);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (!units[i].cold_since && !units[i].moved_at && !units[i].hist)
			units[i].cold_since = now;	/* first seen */
	free(t->units);
	t->units = units;
	t->nunits = n;
	rc = t->vm ? tier_vm_mark(t->vm, units, n) : tier_softdirty_mark(t->sd, units, n);
	if (rc < 0)
		return rc;
	if (t->damon)
		rc = damon_mark(t, units, n, now);
	if (t->damon && rc < 0) {
		if (rc == -ESRCH)
			return rc;
		/* DAMON failing leaves the writes: say so, go on. */
		snprintf(t->st.damon_why, sizeof(t->st.damon_why),
			 "DAMON stopped: %s", strerror(-rc));
		tier_damon_close(t->damon);
		t->damon = NULL;
		t->st.sources &= ~(unsigned int)TIER_SRC_DAMON;
	}
	for (size_t i = 0; i < n; i++) {
		tier_unit_confirm(&units[i]);
		if (units[i].hist & 1)
			units[i].cold_since = now;
	}
	return tier_units_sample(&t->pr, units, n, &t->p);
}

int tier_step(struct tier *t)
{
	struct timespec c0, c1, now_ts;
	struct tier_plan plan = { 0 };
	struct tier_sample s;
	uint32_t now = ++t->st.intervals;
	uint64_t fast_free, slow_free, up = 0, down = 0;
	double pause = 0;
	int rc, rc2 = 0, fast, slow, missing = -1;

	/* The process's CPU time: the moves run on libmemmig's workers. */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	/* Reads too, where the kernel has DAMON; writes alone otherwise.
	 * Opened here, on the caller's tiering thread: DAMON's sysfs may
	 * take an aggregation to answer. */
	if (now == 1 && !tier_damon_open(t->pr.pid, t->p.interval_ms, &t->damon, t->st.damon_why,
					 sizeof(t->st.damon_why))) {
		t->st.sources |= TIER_SRC_DAMON;
		t->damon_since = now;
		/* DAMON took the pid by its number: this process's if it is
		 * still there now. */
		if (!tier_proc_alive(&t->pr)) {
			rc = -ESRCH;
			goto out;
		}
	}
	rc = read_sources(t, now);
	if (rc)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &now_ts);
	take_stock(t, secs(&t->start, &now_ts), &s);
	fast = roomiest(t->p.fast, t->p.nfast, &fast_free, &missing);
	slow = fast < 0 ? fast : roomiest(t->p.slow, t->p.nslow, &slow_free, &missing);
	if (fast < 0 || slow < 0) {
		/* A node taken away (offlined, or never there): nothing moves
		 * until it is back or the options change. */
		if (t->st.last_error != -ENOENT)
			err(t->ctx, "tiering pid %d: node %d has no memory (or is not there)",
			    t->pr.pid, missing);
		rc = -ENOENT;
		goto out;
	}
	rc = tier_plan_make(t->units, t->nunits,
			    &(struct tier_plan_in){ &t->p, now, fast_free, watched_from(t) },
			    &plan);
	if (rc)
		goto out;
	t->st.held += plan.held;
	t->st.deferred += plan.deferred;
	/*
	 * Promotions first: the hot set's place is what the guest feels.  A
	 * direction whose batch failed (a unit unmapped meanwhile: EFAULT)
	 * is not held by the hysteresis: the next interval looks again.
	 */
	rc = move_units(t, plan.promote, plan.npromote, fast, &up, &pause);
	if (!rc) {
		mark_moved(t, plan.promote, plan.npromote, 1, now);
		t->st.promotions += plan.npromote;
	}
	if (!fatal(t, rc))
		rc2 = move_units(t, plan.demote, plan.ndemote, slow, &down, &pause);
	if (!fatal(t, rc) && !rc2) {
		mark_moved(t, plan.demote, plan.ndemote, -1, now);
		t->st.demotions += plan.ndemote;
	}
	rc = rc ? rc : rc2;
	t->st.promoted_bytes += up;
	t->st.demoted_bytes += down;
	if (pause > t->st.pause_max_s)
		t->st.pause_max_s = pause;
	s.promoted = up;
	s.demoted = down;
	s.pause_s = pause;
	clock_gettime(CLOCK_MONOTONIC, &now_ts);
	s.t_s = secs(&t->start, &now_ts);
	t->hist[t->nhist++ % TIER_HISTORY] = s;
	tier_plan_free(&plan);
out:
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	t->st.cpu_s += secs(&c0, &c1);
	t->st.last_error = rc;
	return rc;
}

void tier_get_stats(const struct tier *t, struct tier_stats *out)
{
	struct timespec now;

	uint64_t moves = t->st.promotions + t->st.demotions;

	*out = t->st;
	out->softdirty_resets = t->sd ? tier_softdirty_vma_resets(t->sd) : 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	out->elapsed_s = secs(&t->start, &now);
	out->bounce_pct = moves ? 100.0 * (double)out->bounces / (double)moves : 0;
	/* % of one CPU, per GiB the tiering looks after. */
	out->cpu_pct_per_gib = out->elapsed_s > 0 && out->bytes_resident ?
		100.0 * out->cpu_s / out->elapsed_s /
		((double)out->bytes_resident / (double)(1ULL << 30)) : 0;
}

unsigned int tier_get_history(const struct tier *t, struct tier_sample *out, unsigned int max)
{
	uint32_t n = t->nhist < TIER_HISTORY ? t->nhist : TIER_HISTORY;

	if (n > max)
		n = max;
	for (uint32_t i = 0; i < n; i++)
		out[i] = t->hist[(t->nhist - n + i) % TIER_HISTORY];
	return n;
}

void tier_set_policy(struct tier *t, const struct tier_policy *p)
{
	t->p = *p;
}

void tier_unlock(struct tier *t)
{
	if (t && t->move_lock >= 0) {
		close(t->move_lock);
		t->move_lock = -1;
	}
}

void tier_free(struct tier *t)
{
	if (!t)
		return;
	tier_unlock(t);
	tier_softdirty_close(t->sd);
	tier_vm_close(t->vm);
	tier_damon_close(t->damon);
	free(t->units);
	tier_react_free(&t->react);
	memmig_ctx_unref(t->ctx);
	if (t->pr.procfd >= 0)
		close(t->pr.procfd);
	free(t);
}
