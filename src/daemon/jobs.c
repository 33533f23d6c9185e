/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The job table.  A job is a libmemmig move, checked and planned before it
 * is accepted (ops.c, plans.c), then started with memmig_move_start(): it
 * runs on the move's threads, which wake the loop when it ends.  At most
 * max_jobs_per_node jobs run per target node, and one per process (two
 * moves of one process to two nodes at once split its pages); the others
 * wait in FIFO order ("queued", waits_for naming the job of the same
 * process ahead) and the loop, ending a job, starts the next that can
 * run.  Jobs belong to the daemon, not to the connection that asked:
 * a client that goes away leaves its jobs running, and anyone with its uid
 * (or root) can follow or cancel them.
 *
 * Locking: one mutex over the table, for the loop and the libvirt thread
 * (the moves' threads never take it); domains_job_done() is called
 * without it (on the loop thread, in jobs_reap()) because the libvirt
 * thread calls into jobs with the domains' lock held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/memmigd.h"
#include "daemon/jobs-private.h"
#include "daemon/state.h"
#include "proto/job-json.h"
#include "proto/report-json.h"
#include "util/size.h"

static void wake(struct jobs *j)
{
	uint64_t one = 1;

	/* The counter only saturates after 2^64 - 2 wakes the loop missed. */
	if (write(j->wake_fd, &one, sizeof(one)) < 0)
		util_log(LOG_WARNING, "waking the loop: %s", strerror(errno));
}

/* Lock held: subscribers hear of the job's new state, and a restart
 * would find it (state.c). */
static void job_event(struct jobs *j, struct job *job)
{
	struct state_job sj = {
		.id = job->id, .pid = job->pid, .to_node = job->to_node, .uid = job->uid,
		.running = job->state == JOB_RUNNING, .created = job->created,
		.started = job->started,
	};

	if (job->state >= JOB_DONE)
		state_job_end(j->state, job->id);
	else
		state_job_set(j->state, &sj);
	events_post(j->events, job->uid, "job", "job", job_to_json(job));
}

/* Lock held: the job ended with result (its report rep, NULL when it
 * never ran); the caller drops its move. */
static void job_end(struct jobs *j, struct job *job, int result, const char *why,
		    uint64_t moved, const struct memmig_report *rep)
{
	if (job->mv)
		memmig_move_get_progress(job->mv, &job->last);
	job->result = result;
	job->ended = time(NULL);
	job->state = result == 0 ? JOB_DONE : result == -ECANCELED ? JOB_CANCELLED : JOB_FAILED;
	if (why)
		snprintf(job->message, sizeof(job->message), "%s", why);
	else
		proto_job_message(job->message, sizeof(job->message), result, moved,
				  job->last.bytes_total, job->to_node, job->last.elapsed_s);
	j->active--;
	job->notify = job->domain[0] != 0;
	/* The process's handle is not needed once the job ended (its move
	 * ended, or never started). */
	auth_pin_release(job->pin);
	if (j->metrics)
		metrics_job_ended(j->metrics, job_state_name(job->state), job->to_node, rep);
	job_event(j, job);
}

/* Lock held: a queued job takes a slot of its node, and its move starts. */
static void job_start(struct jobs *j, struct job *job)
{
	char why[sizeof(job->pin->why)] = "";
	int rc;

	job->state = JOB_RUNNING;
	job->started = time(NULL);
	j->running_on[job->to_node]++;
	/*
	 * A queued job may have waited: its process must still be the one
	 * that was checked, not a new one with its pid, and still the
	 * client's to move -- it may have exec'd a setuid program since, or
	 * made itself not dumpable.  The move asks again as it goes.
	 */
	rc = auth_pin_check(job->pin);
	if (!rc)
		rc = memmig_move_start(job->mv);
	if (!rc) {
		util_log(LOG_INFO, "job %llu: moving pid %d to node %d",
		     (unsigned long long)job->id, job->pid, job->to_node);
		job_event(j, job);
		return;
	}
	if (rc == -EPERM && auth_pin_denied(job->pin, why, sizeof(why)))
		snprintf(why + strlen(why), sizeof(why) - strlen(why), ": not started");
	util_log(LOG_ERR, "job %llu: not started: %s", (unsigned long long)job->id,
	     why[0] ? why : strerror(-rc));
	j->running_on[job->to_node]--;
	job_end(j, job, rc, rc == -ESRCH ? NULL : rc == -EPERM ? why :
		"memmigd could not start a thread for it", 0, NULL);
	memmig_move_unref(job->mv);
	job->mv = NULL;
	wake(j);
}

static bool finished(const struct job *job)
{
	return job->state >= JOB_DONE;
}

/*
 * Lock held: the unfinished job before job that moves the same process,
 * or NULL.  Two moves of one process at once would split its pages
 * between their nodes while both said done; so a process's jobs run one
 * after the other, in the order they came.  A pid names the same process
 * as long as the earlier job's handle on it is alive.
 */
static struct job *moving_before(struct jobs *j, const struct job *job)
{
	for (struct job *o = j->head; o && o != job; o = o->next)
		if (!finished(o) && o->pid == job->pid && auth_pin_alive(o->pin))
			return o;
	return NULL;
}

/* Lock held: the queued jobs, oldest first, that have a free slot on
 * their node and whose process no earlier job is moving. */
static void promote(struct jobs *j)
{
	for (struct job *job = j->head; job && !j->stopping; job = job->next) {
		struct job *ahead;

		if (job->state != JOB_QUEUED)
			continue;
		ahead = moving_before(j, job);
		job->waits_for = ahead ? ahead->id : 0;
		if (!ahead && j->running_on[job->to_node] < j->per_node)
			job_start(j, job);
	}
}

static bool move_ended(struct memmig_move *mv)
{
	struct memmig_move_progress p = { .sz = sizeof(p) };

	memmig_move_get_progress(mv, &p);
	return p.state == MEMMIG_MOVE_DONE;
}

/* Lock held: a running job whose move ended (its wait returns at once). */
static void job_finish(struct jobs *j, struct job *job)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	int rc = memmig_move_wait(job->mv, &rep);
	char why[sizeof(job->pin->why)] = "";
	char moved[32];

	if (rep) {
		memmig_report_get_summary(rep, &s);
		job->report = report_json(rep);
		job->bytes_moved = s.bytes_moved;
	}
	/* Stopped by the client's rule as it ran: said in its words. */
	if (rc == -EPERM && auth_pin_denied(job->pin, why, sizeof(why)))
		snprintf(why + strlen(why), sizeof(why) - strlen(why), ": stopped after %s moved",
			 util_size_human(s.bytes_moved, moved, sizeof(moved)));
	job_end(j, job, rc, why[0] ? why : NULL, s.bytes_moved, rep);
	memmig_report_unref(rep);
	memmig_move_unref(job->mv);
	job->mv = NULL;
	j->running_on[job->to_node]--;
	util_log(LOG_INFO, "job %llu: %s", (unsigned long long)job->id, job->message);
}

int jobs_new(struct memmig_ctx *ctx, struct domains *dom, unsigned int per_node,
	     unsigned int max, int wake_fd, struct jobs **out)
{
	struct jobs *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	j->ctx = ctx;
	j->dom = dom;
	j->per_node = per_node;
	j->max = max;
	j->wake_fd = wake_fd;
	j->next_id = 1;
	*out = j;
	return 0;
}

/* Lock held: 0 or -EBUSY, with why. */
static int admit(struct jobs *j, uid_t uid, char *msg, size_t len)
{
	unsigned int root_share = j->max / 8 ? j->max / 8 : 1;
	unsigned int user_share = j->max / 4 ? j->max / 4 : 1;
	unsigned int mine = 0;

	if (j->active >= j->max) {
		snprintf(msg, len, "too many jobs: %u queued or running", j->max);
		return -EBUSY;
	}
	if (uid == 0)
		return 0;
	if (j->max > 1 && j->active >= j->max - root_share) {
		snprintf(msg, len, "too many jobs: the last %u places are root's", root_share);
		return -EBUSY;
	}
	for (struct job *job = j->head; job; job = job->next)
		mine += job->uid == uid && !finished(job);
	if (mine >= user_share) {
		snprintf(msg, len, "too many jobs of uid %u: %u queued or running, at most %u",
			 uid, mine, user_share);
		return -EBUSY;
	}
	return 0;
}

int jobs_admit(struct jobs *j, uid_t uid, char *msg, size_t len)
{
	int rc;

	pthread_mutex_lock(&j->lock);
	rc = admit(j, uid, msg, len);
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int jobs_submit(struct jobs *j, struct memmig_move *mv, const struct job_spec *spec,
		struct json_object **job_json)
{
	struct job *job = calloc(1, sizeof(*job));
	char why[128];
	int rc = 0;

	pthread_mutex_lock(&j->lock);
	if (!job)
		rc = -ENOMEM;
	else if (j->stopping)
		rc = -ESHUTDOWN;
	else
		rc = admit(j, spec->uid, why, sizeof(why));
	if (rc) {
		pthread_mutex_unlock(&j->lock);
		free(job);
		memmig_move_unref(mv);
		auth_pin_free(spec->pin);
		return rc;
	}
	*job = (struct job){
		.jobs = j, .id = j->next_id++, .state = JOB_QUEUED, .pid = spec->pid,
		.to_node = spec->to_node, .strategy = spec->strategy,
		.threads = spec->threads, .uid = spec->uid, .pin = spec->pin,
		.mv = mv, .last = { .sz = sizeof(job->last) }, .created = time(NULL),
	};
	if (spec->domain)
		snprintf(job->domain, sizeof(job->domain), "%s", spec->domain);
	memmig_move_get_progress(mv, &job->last);
	if (j->tail)
		j->tail->next = job;
	else
		j->head = job;
	j->tail = job;
	j->active++;
	if (j->metrics)
		metrics_job_created(j->metrics);
	state_hold(j->state);
	job_event(j, job);
	promote(j);
	state_release(j->state);
	util_log(LOG_INFO, "job %llu: pid %d%s%s to node %d for uid %u: %s",
	     (unsigned long long)job->id, job->pid, job->domain[0] ? " domain " : "",
	     job->domain, job->to_node, job->uid, job_state_name(job->state));
	if (job->waits_for)
		util_log(LOG_INFO, "job %llu: waits for job %llu, which moves pid %d",
			 (unsigned long long)job->id, (unsigned long long)job->waits_for,
			 job->pid);
	if (job_json)
		*job_json = job_to_json(job);
	pthread_mutex_unlock(&j->lock);
	return 0;
}

static struct job *find(struct jobs *j, uint64_t id)
{
	for (struct job *job = j->head; job; job = job->next)
		if (job->id == id)
			return job;
	return NULL;
}

static bool visible(const struct job *job, uid_t uid)
{
	return uid == 0 || job->uid == uid;
}

struct json_object *jobs_list_json(struct jobs *j, uid_t uid)
{
	struct json_object *a = json_object_new_array();

	pthread_mutex_lock(&j->lock);
	for (struct job *job = j->head; job; job = job->next)
		if (visible(job, uid))
			json_object_array_add(a, job_to_json(job));
	pthread_mutex_unlock(&j->lock);
	return a;
}

/* Lock held: the job if the client may see it. */
static int lookup(struct jobs *j, uint64_t id, uid_t uid, struct job **out)
{
	struct job *job = find(j, id);

	if (!job)
		return -ESRCH;
	if (!visible(job, uid))
		return -EPERM;
	*out = job;
	return 0;
}

int jobs_get_json(struct jobs *j, uint64_t id, uid_t uid, struct json_object **out)
{
	struct job *job;
	int rc;

	pthread_mutex_lock(&j->lock);
	rc = lookup(j, id, uid, &job);
	if (!rc)
		*out = job_to_json(job);
	pthread_mutex_unlock(&j->lock);
	return rc;
}

/* Lock held.  A queued job ends now; a running one after its units. */
static void cancel_locked(struct jobs *j, struct job *job, const char *why)
{
	if (job->state == JOB_QUEUED) {
		job_end(j, job, -ECANCELED, why, 0, NULL);
		memmig_move_unref(job->mv);
		job->mv = NULL;
		wake(j);
	} else if (job->state == JOB_RUNNING && !job->cancel_requested) {
		job->cancel_requested = true;
		memmig_move_cancel(job->mv);
	}
}

int jobs_cancel(struct jobs *j, uint64_t id, uid_t uid, struct json_object **out)
{
	struct job *job;
	int rc;

	pthread_mutex_lock(&j->lock);
	rc = lookup(j, id, uid, &job);
	if (!rc) {
		util_log(LOG_INFO, "job %llu: cancel (uid %u)", (unsigned long long)id, uid);
		cancel_locked(j, job, "cancelled before it started: nothing moved");
		*out = job_to_json(job);
	}
	pthread_mutex_unlock(&j->lock);
	return rc;
}

/* Lock held: whether nothing refers to the job any more. */
static bool droppable(const struct job *job)
{
	return finished(job) && !job->notify;
}

static void job_free(struct job *job)
{
	/* The move first: it may ask the pin until it is gone. */
	memmig_move_unref(job->mv);
	json_object_put(job->report);
	auth_pin_free(job->pin);
	free(job);
}

/* Lock held: finished jobs of uid (of every uid: (uid_t)-1). */
static unsigned int count_finished(struct jobs *j, uid_t uid)
{
	unsigned int n = 0;

	for (struct job *job = j->head; job; job = job->next)
		n += finished(job) && (uid == (uid_t)-1 || job->uid == uid);
	return n;
}

/* Lock held: drops job (after prev in the list). */
static void unlink_job(struct jobs *j, struct job *prev, struct job *job)
{
	if (prev)
		prev->next = job->next;
	else
		j->head = job->next;
	if (j->tail == job)
		j->tail = prev;
	job_free(job);
}

/*
 * Lock held: the oldest finished jobs of each uid beyond the newest
 * MEMMIGD_KEEP_FINISHED of that uid -- a burst of one user's jobs never
 * pushes out another's -- and of all beyond MEMMIGD_KEEP_FINISHED_ALL.
 */
static unsigned int prune(struct jobs *j)
{
	unsigned int all = count_finished(j, (uid_t)-1), dropped = 0;
	struct job *prev = NULL;

	/* No uid can be over its share: spare the walk that counts each
	 * job's uid (every job's end comes here). */
	if (all <= MEMMIGD_KEEP_FINISHED)
		return 0;
	for (struct job *job = j->head, *next; job; job = next) {
		next = job->next;
		if (droppable(job) && (all > MEMMIGD_KEEP_FINISHED_ALL ||
				       count_finished(j, job->uid) > MEMMIGD_KEEP_FINISHED)) {
			unlink_job(j, prev, job);
			all--;
			dropped++;
		} else {
			prev = job;
		}
	}
	return dropped;
}

/* The first domain job whose end libvirt has not heard of, copied out. */
static bool take_notify(struct jobs *j, struct job *copy)
{
	bool found = false;

	pthread_mutex_lock(&j->lock);
	for (struct job *job = j->head; job && !found; job = job->next)
		if (job->notify) {
			job->notify = false;
			*copy = *job;
			found = true;
		}
	pthread_mutex_unlock(&j->lock);
	return found;
}

void jobs_reap(struct jobs *j)
{
	unsigned int dropped;
	struct job done;
	bool idle;

	pthread_mutex_lock(&j->lock);
	state_hold(j->state);
	for (struct job *job = j->head; job; job = job->next)
		if (job->state == JOB_RUNNING && move_ended(job->mv))
			job_finish(j, job);
	/* Slots freed, and processes no longer moved (a cancelled queued
	 * job let the next of its process go too). */
	promote(j);
	state_release(j->state);
	pthread_mutex_unlock(&j->lock);
	/* libvirt hears what the report says moved. */
	while (take_notify(j, &done))
		domains_job_done(j->dom, done.domain, done.to_node, done.result,
				 (unsigned long long)done.bytes_moved);
	pthread_mutex_lock(&j->lock);
	dropped = prune(j);
	idle = j->active == 0;
	pthread_mutex_unlock(&j->lock);
	/* The plans of thousands of jobs came and went: hand the heap's free
	 * pages back (malloc keeps them otherwise), once the table is quiet
	 * or after a big drop, not after every job. */
	if (dropped && (idle || dropped >= MEMMIGD_KEEP_FINISHED))
		malloc_trim(0);
}

void jobs_shutdown(struct jobs *j)
{
	unsigned int running = 0;

	pthread_mutex_lock(&j->lock);
	j->stopping = true;
	for (struct job *job = j->head; job; job = job->next) {
		running += job->state == JOB_RUNNING;
		cancel_locked(j, job, "cancelled: memmigd stopped before it started");
	}
	pthread_mutex_unlock(&j->lock);
	if (running)
		util_log(LOG_INFO, "waiting for %u running job%s to stop after their units",
		     running, running == 1 ? "" : "s");
	/* Waited for unlocked: the libvirt thread may need the lock. */
	for (;;) {
		struct memmig_move *mv = NULL;

		pthread_mutex_lock(&j->lock);
		for (struct job *job = j->head; job && !mv; job = job->next)
			if (job->state == JOB_RUNNING && !move_ended(job->mv))
				mv = memmig_move_ref(job->mv);
		pthread_mutex_unlock(&j->lock);
		if (!mv)
			break;
		memmig_move_wait(mv, NULL);
		memmig_move_unref(mv);
	}
	jobs_reap(j);
}

void jobs_free(struct jobs *j)
{
	if (!j)
		return;
	while (j->head) {
		struct job *job = j->head;

		j->head = job->next;
		job_free(job);
	}
	pthread_mutex_destroy(&j->lock);
	free(j);
}

void jobs_observe(struct jobs *j, struct metrics *m, struct events *e)
{
	pthread_mutex_lock(&j->lock);
	j->metrics = m;
	j->events = e;
	pthread_mutex_unlock(&j->lock);
}

uint64_t jobs_moving(struct jobs *j, int pid)
{
	struct job probe = { .pid = pid };
	struct job *o;

	/* A domain's tiering may be asked for as the watcher starts, before
	 * the table exists (main.c): no job yet. */
	if (!j)
		return 0;
	pthread_mutex_lock(&j->lock);
	o = moving_before(j, &probe);
	pthread_mutex_unlock(&j->lock);
	return o ? o->id : 0;
}

void jobs_persist(struct jobs *j, struct state *st)
{
	pthread_mutex_lock(&j->lock);
	j->state = st;
	if (state_next_job_id(st) > j->next_id)
		j->next_id = state_next_job_id(st);
	pthread_mutex_unlock(&j->lock);
}

void jobs_count(struct jobs *j, unsigned int *queued, unsigned int *running)
{
	*queued = *running = 0;
	pthread_mutex_lock(&j->lock);
	for (struct job *job = j->head; job; job = job->next) {
		*queued += job->state == JOB_QUEUED;
		*running += job->state == JOB_RUNNING;
	}
	pthread_mutex_unlock(&j->lock);
}
