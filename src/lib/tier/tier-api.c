/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig_tier_*: the tiering engine (tier.h) as a library object: sized
 * options into a policy, a pin on the process when the caller has none, a
 * reference count, and the engine's figures into sized structs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/memmig-private.h"
#include "lib/tier/tier-damon.h"
#include "lib/tier/tier.h"

/* One set of numbers: the engine's are the public ones. */
_Static_assert(TIER_UNIT == MEMMIG_TIER_UNIT && TIER_MAX_NODES == MEMMIG_TIER_MAX_NODES &&
	       TIER_INTERVAL_MIN_MS == MEMMIG_TIER_INTERVAL_MIN_MS &&
	       TIER_INTERVAL_MAX_MS == MEMMIG_TIER_INTERVAL_MAX_MS &&
	       TIER_HIST_BITS == MEMMIG_TIER_COLD_MAX && TIER_HISTORY == MEMMIG_TIER_HISTORY &&
	       TIER_PAUSE_DEFAULT_MS == MEMMIG_TIER_PAUSE_DEFAULT_MS &&
	       (int)TIER_SRC_SOFTDIRTY == (int)MEMMIG_TIER_SRC_SOFTDIRTY &&
	       (int)TIER_SRC_DAMON == (int)MEMMIG_TIER_SRC_DAMON &&
	       (int)TIER_SRC_DIRTYLOG == (int)MEMMIG_TIER_SRC_DIRTYLOG, "tier.h and memmig.h differ");

struct memmig_tier {
	int refcount;
	bool stopped;
	struct memmig_ctx *ctx;
	struct tier *engine;
	struct tier_policy p;		/* the options' */
	struct memmig_vm *vm;		/* what it tiers, for set_opts() to */
	uint32_t vm_slot;		/* compare (the engine holds the ref) */
};

/* A sentence for the caller: in opts->why where it gave one, and in the
 * context's log. */
static int refuse(struct memmig_ctx *ctx, const struct memmig_tier_opts *o, int rc,
		  const char *msg)
{
	if (o->why && o->why_len)
		snprintf(o->why, o->why_len, "%s", msg);
	if (ctx)
		err(ctx, "tiering: %s", msg);
	return rc;
}

/* opts (read as far as its sz) as the engine's policy; 0 or -EINVAL. */
static int policy_from(struct memmig_ctx *ctx, const struct memmig_tier_opts *opts,
		       struct memmig_tier_opts *o, struct tier_policy *p)
{
	char msg[160];

	*o = (struct memmig_tier_opts){ .sz = sizeof(*o) };
	if (!opts || memmig_struct_in(o, sizeof(*o), opts) < 0)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	if (o->nfast > TIER_MAX_NODES || o->nslow > TIER_MAX_NODES ||
	    (o->nfast && !o->fast_nodes) || (o->nslow && !o->slow_nodes))
		return refuse(ctx, o, -EINVAL, "at most 64 fast and 64 slow nodes, and where they are");
	if (o->flags & ~(MEMMIG_MIGRATE_FORCE | MEMMIG_MIGRATE_OWN_PAGES))
		return refuse(ctx, o, -EINVAL, "flags: only MEMMIG_MIGRATE_FORCE and "
			      "MEMMIG_MIGRATE_OWN_PAGES");
	memcpy(p->fast, o->fast_nodes, o->nfast * sizeof(int));
	p->nfast = o->nfast;
	memcpy(p->slow, o->slow_nodes, o->nslow * sizeof(int));
	p->nslow = o->nslow;
	p->slow_share = o->slow_share;
	p->fast_free = o->fast_free;
	p->rate = o->rate;
	p->min_stay = o->min_stay;
	/* 0: the default (what an older, smaller struct leaves out). */
	p->interval_ms = o->interval_ms ? o->interval_ms : MEMMIG_TIER_INTERVAL_DEFAULT_MS;
	p->cold_intervals = o->cold_intervals ? o->cold_intervals : MEMMIG_TIER_COLD_DEFAULT;
	p->pause_ms = o->pause_ms ? o->pause_ms : MEMMIG_TIER_PAUSE_DEFAULT_MS;
	if (tier_policy_check(p, msg, sizeof(msg)))
		return refuse(ctx, o, -EINVAL, msg);
	return 0;
}

int memmig_tier_check_opts(struct memmig_ctx *ctx, const struct memmig_tier_opts *opts)
{
	struct memmig_tier_opts o;
	struct tier_policy p;

	return policy_from(ctx, opts, &o, &p);
}

int memmig_tier_new(struct memmig_ctx *ctx, const struct memmig_tier_opts *opts,
		    struct memmig_tier **out)
{
	struct memmig_tier_opts o;
	struct memmig_tier *t;
	struct tier_proc pr;
	char why[256] = "", path[32];
	int rc, pin = -1;

	if (!ctx || !out)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	rc = policy_from(ctx, opts, &o, &t->p);
	if (!rc && o.vm && (o.pid || o.procfd > 0))
		rc = refuse(ctx, &o, -EINVAL, "vm: the guest of this process's VMM (pid 0, "
			    "procfd 0)");
	if (!rc && o.pid < 0)
		rc = refuse(ctx, &o, -EINVAL, "pid: a process (> 0), or 0 for this one");
	if (rc) {
		free(t);
		return rc;
	}
	pr = (struct tier_proc){ .pid = o.pid ? o.pid : getpid(), .procfd = o.procfd,
				 .check = o.check, .opaque = o.check_opaque,
				 .vm = o.vm, .vm_slot = o.vm_slot };
	/* No pin of the caller's: ours, for the engine to duplicate. */
	if (o.procfd <= 0) {
		snprintf(path, sizeof(path), "/proc/%d", pr.pid);
		pin = pr.procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pin < 0) {
			rc = errno == ENOENT ? -ESRCH : -errno;
			snprintf(why, sizeof(why), "pid %d: %s", pr.pid, strerror(-rc));
		}
	}
	if (!rc)
		rc = tier_new(ctx, &pr, &t->p, o.flags, &t->engine, why, sizeof(why));
	if (pin >= 0)
		close(pin);
	if (rc) {
		free(t);
		return refuse(ctx, &o, rc, why);
	}
	t->refcount = 1;
	t->ctx = memmig_ctx_ref(ctx);
	t->vm = o.vm;
	t->vm_slot = o.vm_slot;
	*out = t;
	return 0;
}

struct memmig_tier *memmig_tier_ref(struct memmig_tier *t)
{
	if (t)
		__atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
	return t;
}

void memmig_tier_unref(struct memmig_tier *t)
{
	if (!t || __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	tier_free(t->engine);
	memmig_ctx_unref(t->ctx);
	free(t);
}

int memmig_tier_step(struct memmig_tier *t)
{
	if (!t)
		return -EINVAL;
	if (__atomic_load_n(&t->stopped, __ATOMIC_ACQUIRE))
		return -ECANCELED;
	return tier_step(t->engine);
}

void memmig_tier_stop(struct memmig_tier *t)
{
	if (!t)
		return;
	__atomic_store_n(&t->stopped, true, __ATOMIC_RELEASE);
	tier_unlock(t->engine);
}

int memmig_tier_set_opts(struct memmig_tier *t, const struct memmig_tier_opts *opts)
{
	struct memmig_tier_opts o;
	struct tier_policy p;
	int rc;

	if (!t)
		return -EINVAL;
	rc = policy_from(t->ctx, opts, &o, &p);
	if (!rc && (o.vm != t->vm || (o.vm && o.vm_slot != t->vm_slot)))
		rc = refuse(t->ctx, &o, -EINVAL, "the same process or vm, not another");
	if (rc)
		return rc;
	t->p = p;
	tier_set_policy(t->engine, &p);
	return 0;
}

int memmig_tier_get_stats(const struct memmig_tier *t, struct memmig_tier_stats *out)
{
	struct memmig_tier_stats s = { .sz = sizeof(s) };
	struct tier_stats st;

	if (!t || !out)
		return -EINVAL;
	tier_get_stats(t->engine, &st);
	s.intervals = st.intervals;
	s.sources = st.sources;
	s.units = st.units;
	s.hot_units = st.hot_units;
	s.bytes_resident = st.bytes_resident;
	s.bytes_fast = st.bytes_fast;
	s.bytes_slow = st.bytes_slow;
	s.hot_bytes = st.hot_bytes;
	s.hot_fast = st.hot_fast;
	s.promotions = st.promotions;
	s.demotions = st.demotions;
	s.promoted_bytes = st.promoted_bytes;
	s.demoted_bytes = st.demoted_bytes;
	s.promoted_softdirty = st.promoted_softdirty;
	s.promoted_damon = st.promoted_damon;
	s.promoted_dirtylog = st.promoted_dirtylog;
	s.bounces = st.bounces;
	s.bounce_pct = st.bounce_pct;
	s.react_s = st.react_s;
	s.held = st.held;
	s.deferred = st.deferred;
	s.softdirty_resets = st.softdirty_resets;
	s.pages_failed = st.pages_failed;
	s.cpu_s = st.cpu_s;
	s.cpu_pct_per_gib = st.cpu_pct_per_gib;
	s.pause_max_s = st.pause_max_s;
	s.batch_max_s = st.batch_max_s;
	s.over_budget = st.over_budget;
	s.elapsed_s = st.elapsed_s;
	s.last_error = st.last_error;
	snprintf(s.why, sizeof(s.why), "%s", st.damon_why);
	return memmig_struct_out(out, &s, sizeof(s));
}

int memmig_tier_get_sample(const struct memmig_tier *t, unsigned int idx,
			   struct memmig_tier_sample *out)
{
	struct tier_sample h[TIER_HISTORY];
	unsigned int n;

	if (!t || !out)
		return -EINVAL;
	n = tier_get_history(t->engine, h, TIER_HISTORY);
	if (idx >= n)
		return -ENOENT;
	return memmig_struct_out(out, &(struct memmig_tier_sample){
		.sz = sizeof(*out), .interval = h[idx].interval, .t_s = h[idx].t_s,
		.bytes_fast = h[idx].bytes_fast, .bytes_slow = h[idx].bytes_slow,
		.hot_bytes = h[idx].hot_bytes, .hot_fast = h[idx].hot_fast,
		.promoted = h[idx].promoted, .demoted = h[idx].demoted,
		.pause_s = h[idx].pause_s }, sizeof(*out));
}

void memmig_tier_damon_set_owner(memmig_tier_damon_owner_fn fn, void *opaque)
{
	tier_damon_set_owner_fn(fn, opaque);
}

int memmig_tier_damon_reclaim(int index, int kpid, char *why, size_t len)
{
	return tier_damon_reclaim(index, kpid, why, len);
}
