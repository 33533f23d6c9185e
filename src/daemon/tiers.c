/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmigd's tiered processes and their thread (see tiers.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/events.h"
#include "daemon/memmigd.h"
#include "daemon/tiers.h"
#include "daemon/tier-json.h"

struct tiered {
	struct tiered_view v;		/* what the JSON shows, under the lock */
	struct auth_pin *pin;		/* the owner and the process */
	struct memmig_tier *engine;	/* the thread's while busy */
	struct tiers_policy next_policy;
	bool policy_changed, busy;
	struct timespec due;		/* CLOCK_MONOTONIC */
};

struct tiers {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool stop, started;
	struct memmig_ctx *ctx;
	struct events *events;
	/* Oldest first: the running and the ended ones kept (reap()). */
	struct tiered *t[TIERS_MAX + TIERS_KEEP_ENDED + TIERS_KEEP_ENDED_ALL];
	unsigned int n;
	uint64_t next_id;
};

static const char *const state_names[] = { "running", "stopping", "ended" };

static void add_ms(struct timespec *t, unsigned int ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (long)(ms % 1000) * 1000000;
	if (t->tv_nsec >= 1000000000) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000;
	}
}

static bool before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Posts the tiering's object to its owner's and root's subscribers: at
 * its start, a policy change, an interval that moved memory, its end
 * (lock held). */
static void post(struct tiers *ts, struct tiered *r)
{
	if (ts->events)
		events_post(ts->events, r->v.uid, "tier", "tier", tier_json(&r->v, false));
}

/* Ended records of uid newer than t[i] (lock held). */
static unsigned int ended_after(const struct tiers *ts, unsigned int i, uid_t uid)
{
	unsigned int k = 0;

	while (++i < ts->n)
		k += ts->t[i]->v.state == TIERED_ENDED && ts->t[i]->v.uid == uid;
	return k;
}

/*
 * Drops the oldest ended records (lock held): a uid's beyond
 * TIERS_KEEP_ENDED, and those of all uids but root beyond
 * TIERS_KEEP_ENDED_ALL -- one user's burst of set and clear never pushes
 * out another's, nor any number of users root's.
 */
static void reap(struct tiers *ts)
{
	unsigned int users = 0;

	for (unsigned int i = ts->n; i-- > 0;) {
		const struct tiered *r = ts->t[i];

		if (r->v.state != TIERED_ENDED)
			continue;
		if (ended_after(ts, i, r->v.uid) < TIERS_KEEP_ENDED &&
		    (r->v.uid == 0 || users++ < TIERS_KEEP_ENDED_ALL))
			continue;
		auth_pin_free(ts->t[i]->pin);
		free(ts->t[i]);
		memmove(&ts->t[i], &ts->t[i + 1], (ts->n - i - 1) * sizeof(ts->t[0]));
		ts->n--;
	}
}

/* Ends r (lock held): its engine is freed by the caller, unlocked. */
static struct memmig_tier *end(struct tiers *ts, struct tiered *r, int result)
{
	struct memmig_tier *e = r->engine;

	r->engine = NULL;
	/* Ended: another move of the process may start at once. */
	memmig_tier_stop(e);
	r->v.state = TIERED_ENDED;
	r->v.result = result;
	/* Nothing is done to the process any more (the engine, not busy,
	 * holds a duplicate until the caller frees it). */
	auth_pin_release(r->pin);
	post(ts, r);
	return e;
}

/* The next due running tiering, or NULL; ends those asked to stop. */
static struct tiered *next_due(struct tiers *ts, struct memmig_tier **to_free)
{
	struct tiered *best = NULL;

	for (unsigned int i = 0; i < ts->n; i++) {
		struct tiered *r = ts->t[i];

		if (r->busy || r->v.state == TIERED_ENDED)
			continue;
		if (r->v.state == TIERED_STOPPING) {
			*to_free = end(ts, r, 0);
			return NULL;
		}
		if (!best || before(&r->due, &best->due))
			best = r;
	}
	return best;
}

/* The engine's figures and history into the view (lock held). */
static void get_figures(struct tiered *r)
{
	r->v.st.sz = sizeof(r->v.st);
	memmig_tier_get_stats(r->engine, &r->v.st);
	for (r->v.nhist = 0; r->v.nhist < MEMMIG_TIER_HISTORY; r->v.nhist++) {
		r->v.hist[r->v.nhist].sz = sizeof(r->v.hist[0]);
		if (memmig_tier_get_sample(r->engine, r->v.nhist, &r->v.hist[r->v.nhist]))
			break;
	}
}

static void run_one(struct tiers *ts, struct tiered *r)
{
	struct memmig_tier *to_free = NULL;
	struct timespec now;
	int rc, denied;

	r->busy = true;
	if (r->policy_changed) {
		struct memmig_tier_opts o = tiers_policy_opts(&r->next_policy);

		/* Checked by tier_set: the library agrees. */
		if (!memmig_tier_set_opts(r->engine, &o))
			r->v.policy = r->next_policy;
		r->policy_changed = false;
	}
	pthread_mutex_unlock(&ts->lock);
	/*
	 * Each interval, move_pages(2)'s rule again, on the process pinned at
	 * tier_set (a reused pid is not tiered: -ESRCH): it may have exec'd a
	 * setuid program since, or made itself not dumpable.  The engine asks
	 * it too, before its reads and before each batch of moves; and after
	 * the interval, once more: what the interval read of the process is
	 * shown to its owner only if the owner could read it from the
	 * interval's start to its end.  A refusal is for good.
	 */
	rc = auth_pin_check(r->pin);
	if (!rc)
		rc = memmig_tier_step(r->engine);
	denied = auth_pin_check(r->pin);
	pthread_mutex_lock(&ts->lock);
	r->busy = false;
	if (!denied) {
		get_figures(r);
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	add_ms(&r->due, r->v.policy.interval_ms);
	/* Behind (its moves took longer than the interval): the next one
	 * starts now, its sources covering at least an interval already. */
	if (before(&r->due, &now))
		r->due = now;
	if (denied || rc == -ESRCH || r->v.state == TIERED_STOPPING) {
		if (denied == -EPERM) {
			char why[sizeof(r->pin->why)];

			auth_pin_denied(r->pin, why, sizeof(why));
			util_log(LOG_NOTICE, "tiering %llu of pid %d (uid %u) ended: %s",
				 (unsigned long long)r->v.id, r->v.pid, r->v.uid, why);
		}
		to_free = end(ts, r, denied ? denied : rc == -ESRCH ? rc : 0);
	} else if (r->v.st.promotions + r->v.st.demotions != r->v.last_moves) {
		r->v.last_moves = r->v.st.promotions + r->v.st.demotions;
		post(ts, r);
	}
	if (to_free) {
		pthread_mutex_unlock(&ts->lock);
		memmig_tier_unref(to_free);
		pthread_mutex_lock(&ts->lock);
		reap(ts);
	}
}

static void *thread_main(void *arg)
{
	struct tiers *ts = arg;

	pthread_mutex_lock(&ts->lock);
	while (!ts->stop) {
		struct memmig_tier *to_free = NULL;
		struct tiered *r = next_due(ts, &to_free);
		struct timespec now;

		if (to_free) {
			pthread_mutex_unlock(&ts->lock);
			memmig_tier_unref(to_free);
			pthread_mutex_lock(&ts->lock);
			reap(ts);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!r)
			pthread_cond_wait(&ts->wake, &ts->lock);
		else if (before(&now, &r->due))
			pthread_cond_timedwait(&ts->wake, &ts->lock, &r->due);
		else
			run_one(ts, r);
	}
	pthread_mutex_unlock(&ts->lock);
	return NULL;
}

int tiers_new(struct memmig_ctx *ctx, struct events *ev, struct tiers **out)
{
	struct tiers *ts = calloc(1, sizeof(*ts));
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	if (!ts)
		return -ENOMEM;
	ts->ctx = ctx;
	ts->events = ev;
	ts->next_id = 1;
	pthread_mutex_init(&ts->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ts->wake, &ca);
	pthread_condattr_destroy(&ca);
	/* Signals are the loop's (signalfd): the thread blocks them all. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&ts->thread, NULL, thread_main, ts);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		free(ts);
		return rc;
	}
	ts->started = true;
	*out = ts;
	return 0;
}

void tiers_free(struct tiers *ts)
{
	if (!ts)
		return;
	pthread_mutex_lock(&ts->lock);
	ts->stop = true;
	pthread_cond_signal(&ts->wake);
	pthread_mutex_unlock(&ts->lock);
	if (ts->started)
		pthread_join(ts->thread, NULL);
	for (unsigned int i = 0; i < ts->n; i++) {
		memmig_tier_unref(ts->t[i]->engine);
		auth_pin_free(ts->t[i]->pin);
		free(ts->t[i]);
	}
	pthread_cond_destroy(&ts->wake);
	pthread_mutex_destroy(&ts->lock);
	free(ts);
}

static struct tiered *find(struct tiers *ts, uint64_t id, int pid)
{
	for (unsigned int i = 0; i < ts->n; i++) {
		struct tiered *r = ts->t[i];

		if (id ? r->v.id == id : r->v.state != TIERED_ENDED && r->v.pid == pid)
			return r;
	}
	return NULL;
}

/* find(), as uid sees the tierings: another user's is not there for a
 * uid other than root's. */
static struct tiered *find_for(struct tiers *ts, uint64_t id, int pid, uid_t uid)
{
	struct tiered *r = find(ts, id, pid);

	return r && (uid == 0 || r->v.uid == uid) ? r : NULL;
}

/* A running tiering of the same process gets the new policy (lock held). */
static int update(struct tiers *ts, struct tiered *r, const struct tiers_spec *spec,
		  struct json_object **out, char *msg, size_t len)
{
	if (r->v.uid != spec->uid && spec->uid != 0) {
		snprintf(msg, len, "pid %d is tiered by another user", spec->pid);
		return -EPERM;
	}
	/* Cleared, not ended yet: a new policy would end with it.  Its
	 * process gone (the pid another's now): it ends at its next interval. */
	if (r->v.state == TIERED_STOPPING || !auth_pin_alive(r->pin)) {
		snprintf(msg, len, "pid %d's tiering %llu is ending: set it again in an interval",
			 spec->pid, (unsigned long long)r->v.id);
		return -EBUSY;
	}
	r->next_policy = spec->policy;
	r->policy_changed = true;
	*out = tier_json(&r->v, false);
	/* The reply shows the policy that is coming. */
	json_object_object_add(*out, "policy", tier_policy_json(&spec->policy));
	post(ts, r);
	return 0;
}

/* Room for one more of uid's: TIERS_ROOT of TIERS_MAX are root's, so
 * that no set of other users keeps root (and libvirt's tier elements)
 * from tiering. */
static int admit(struct tiers *ts, uid_t uid, char *msg, size_t len)
{
	unsigned int running = 0, users = 0, mine = 0;

	for (unsigned int i = 0; i < ts->n; i++)
		if (ts->t[i]->v.state != TIERED_ENDED) {
			running++;
			users += ts->t[i]->v.uid != 0;
			mine += ts->t[i]->v.uid == uid;
		}
	if (running >= TIERS_MAX) {
		snprintf(msg, len, "memmigd tiers %u processes already, its most", running);
		return -EBUSY;
	}
	if (uid != 0 && mine >= TIERS_MAX_PER_USER) {
		snprintf(msg, len, "you tier %u processes already, the most for a user", mine);
		return -EBUSY;
	}
	if (uid != 0 && users >= TIERS_MAX - TIERS_ROOT) {
		snprintf(msg, len, "users other than root tier %u processes already, their "
			 "most (%u more are kept for root)", users, TIERS_ROOT);
		return -EBUSY;
	}
	reap(ts);
	if (ts->n >= sizeof(ts->t) / sizeof(ts->t[0])) {
		snprintf(msg, len, "too many tierings listed");
		return -EBUSY;
	}
	return 0;
}

int tiers_set(struct tiers *ts, const struct tiers_spec *spec, struct json_object **out,
	      char *msg, size_t len)
{
	struct memmig_tier_opts o = tiers_policy_opts(&spec->policy);
	struct memmig_tier *engine = NULL;
	struct tiered *r;
	int rc;

	pthread_mutex_lock(&ts->lock);
	r = find(ts, 0, spec->pid);
	rc = r ? update(ts, r, spec, out, msg, len) : admit(ts, spec->uid, msg, len);
	pthread_mutex_unlock(&ts->lock);
	if (r || rc) {
		auth_pin_free(spec->pin);
		return rc;
	}
	/* Soft-dirty is cleared here: the first interval counts from now.
	 * The engine reads the process through the pin, and asks the
	 * owner's rule through it before it reads or moves. */
	o.pid = spec->pid;
	o.procfd = spec->pin->procfd;
	o.check = auth_pin_check_fn;
	o.check_opaque = spec->pin;
	o.flags = spec->flags;
	o.why = msg;
	o.why_len = len;
	rc = memmig_tier_new(ts->ctx, &o, &engine);
	if (!rc && !(r = calloc(1, sizeof(*r))))
		rc = -ENOMEM;
	if (rc) {
		memmig_tier_unref(engine);
		auth_pin_free(spec->pin);
		return rc;
	}
	r->pin = spec->pin;
	r->engine = engine;
	r->v.pid = spec->pid;
	r->v.uid = spec->uid;
	snprintf(r->v.domain, sizeof(r->v.domain), "%s", spec->domain ? spec->domain : "");
	r->v.policy = spec->policy;
	get_figures(r);
	clock_gettime(CLOCK_MONOTONIC, &r->due);
	add_ms(&r->due, spec->policy.interval_ms);
	pthread_mutex_lock(&ts->lock);
	rc = admit(ts, spec->uid, msg, len);	/* again: the lock was let go */
	if (!rc && find(ts, 0, spec->pid)) {
		snprintf(msg, len, "pid %d: another request is setting its tiering", spec->pid);
		rc = -EBUSY;
	}
	if (!rc) {
		r->v.id = ts->next_id++;
		ts->t[ts->n++] = r;
		*out = tier_json(&r->v, false);
		post(ts, r);
		pthread_cond_signal(&ts->wake);
	}
	pthread_mutex_unlock(&ts->lock);
	if (rc) {
		memmig_tier_unref(engine);
		auth_pin_free(spec->pin);
		free(r);
	}
	return rc;
}

int tiers_clear(struct tiers *ts, uint64_t id, int pid, uid_t uid, struct json_object **out,
		char *msg, size_t len)
{
	struct tiered *r;
	int rc = 0;

	pthread_mutex_lock(&ts->lock);
	r = find_for(ts, id, pid, uid);
	if (!r || r->v.state == TIERED_ENDED) {
		if (id)
			snprintf(msg, len, "no tiering %llu running", (unsigned long long)id);
		else
			snprintf(msg, len, "pid %d is not tiered", pid);
		rc = -ENOENT;
	} else {
		/* The thread ends it (DAMON's sysfs may take a while). */
		r->v.state = TIERED_STOPPING;
		*out = tier_json(&r->v, false);
		pthread_cond_signal(&ts->wake);
	}
	pthread_mutex_unlock(&ts->lock);
	return rc;
}

struct json_object *tiers_list_json(struct tiers *ts, uid_t uid)
{
	struct json_object *a = json_object_new_array();

	pthread_mutex_lock(&ts->lock);
	for (unsigned int i = 0; i < ts->n; i++)
		if (uid == 0 || ts->t[i]->v.uid == uid)
			json_object_array_add(a, tier_json(&ts->t[i]->v, false));
	pthread_mutex_unlock(&ts->lock);
	return a;
}

int tiers_get_json(struct tiers *ts, uint64_t id, uid_t uid, struct json_object **out)
{
	struct tiered *r;
	int rc = 0;

	pthread_mutex_lock(&ts->lock);
	r = find_for(ts, id, 0, uid);
	if (!r)
		rc = -ENOENT;
	else
		*out = tier_json(&r->v, true);
	pthread_mutex_unlock(&ts->lock);
	return rc;
}

int tiers_metrics(struct tiers *ts, uid_t uid, struct tiers_metric **out, unsigned int *n)
{
	struct tiers_metric *m;
	unsigned int k = 0;

	pthread_mutex_lock(&ts->lock);
	m = calloc(ts->n ? ts->n : 1, sizeof(*m));
	for (unsigned int i = 0; m && i < ts->n; i++) {
		const struct tiered *r = ts->t[i];

		if (r->v.state == TIERED_ENDED || (uid != 0 && r->v.uid != uid))
			continue;
		m[k].id = r->v.id;
		m[k].pid = r->v.pid;
		snprintf(m[k].domain, sizeof(m[k].domain), "%s", r->v.domain);
		m[k++].st = r->v.st;
	}
	pthread_mutex_unlock(&ts->lock);
	if (!m)
		return -ENOMEM;
	*out = m;
	*n = k;
	return 0;
}

uint64_t tiers_of_pid(struct tiers *ts, int pid)
{
	struct tiered *r;
	uint64_t id = 0;

	pthread_mutex_lock(&ts->lock);
	r = find(ts, 0, pid);
	if (r && auth_pin_alive(r->pin))
		id = r->v.id;
	pthread_mutex_unlock(&ts->lock);
	return id;
}

unsigned int tiers_running(struct tiers *ts)
{
	unsigned int k = 0;

	pthread_mutex_lock(&ts->lock);
	for (unsigned int i = 0; i < ts->n; i++)
		k += ts->t[i]->v.state != TIERED_ENDED;
	pthread_mutex_unlock(&ts->lock);
	return k;
}

const char *tier_state_name(int state)
{
	return state >= 0 && state <= TIERED_ENDED ? state_names[state] : "?";
}
