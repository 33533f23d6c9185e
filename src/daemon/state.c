/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's state file (state.h).  Lines, each "key value...":
 *   next_job ID
 *   job ID pid PID node N uid UID running|queued [created T [started T]]
 *   lost ID pid PID node N uid UID running|queued [created T [started T]]
 * (this memmigd's jobs; an earlier one's; T: Unix seconds, absent from
 * the files of memmigds before them)
 *   kdamond INDEX pid KPID
 *   rebalance UUID pid PID node N before NODESET widened NODESET
 * A memmigd that finds "job" lines was killed with those jobs in hand:
 * they become "lost".  Written under the lock from any thread (the loop,
 * the libvirt watcher, the tiering thread): a few hundred bytes, on a
 * job's start and end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/state.h"
#include "util/log.h"

struct state {
	pthread_mutex_t lock;
	char path[PATH_MAX];
	uint64_t next_id, first_id;
	struct state_job *live;		/* this memmigd's queued and running */
	unsigned int nlive, cap;
	struct state_job lost[STATE_LOST_MAX];	/* newest last */
	unsigned int nlost;
	int kd_index, kd_pid;		/* ours now; -1: none */
	int left_index, left_pid;	/* a killed memmigd's; -1: none */
	struct {
		struct state_rebalance r;
		bool left;		/* a killed memmigd's */
	} rb[STATE_REBALANCE_MAX];
	unsigned int nrb;
	bool warned;
	unsigned int held;		/* state_hold()s not yet released */
	bool dirty;			/* changed while held */
};

void state_path_for(const char *socket, char *buf, size_t len)
{
	size_t n = strlen(socket);

	if (n > 5 && !strcmp(socket + n - 5, ".sock"))
		snprintf(buf, len, "%.*s.state", (int)(n - 5), socket);
	else
		snprintf(buf, len, "%s.state", socket);
}

/* Lost jobs are kept newest last, the oldest dropped past the limit. */
static void add_lost(struct state *st, const struct state_job *j)
{
	if (st->nlost == STATE_LOST_MAX) {
		memmove(st->lost, st->lost + 1, (STATE_LOST_MAX - 1) * sizeof(*st->lost));
		st->nlost--;
	}
	st->lost[st->nlost++] = *j;
}

static bool parse_job(const char *rest, struct state_job *j)
{
	char what[16];
	long long created = 0, started = 0;

	*j = (struct state_job){ 0 };
	if (sscanf(rest, "%" SCNu64 " pid %d node %d uid %u %15s created %lld started %lld",
		   &j->id, &j->pid, &j->to_node, &j->uid, what, &created, &started) < 5)
		return false;
	j->created = created > 0 ? created : 0;
	j->started = started > 0 ? started : 0;
	j->running = !strcmp(what, "running");
	return j->id > 0;
}

static bool parse_rebalance(const char *rest, struct state_rebalance *r)
{
	*r = (struct state_rebalance){ 0 };
	return sscanf(rest, "%36s pid %d node %d before %255s widened %255s", r->uuid, &r->pid,
		      &r->to_node, r->before, r->widened) == 5 && r->pid > 0 && r->to_node >= 0;
}

static void parse_line(struct state *st, const char *line)
{
	struct state_rebalance r;
	struct state_job j;
	uint64_t id;
	int a, b;

	if (sscanf(line, "next_job %" SCNu64, &id) == 1) {
		if (id > st->next_id)
			st->next_id = id;
	} else if ((!strncmp(line, "job ", 4) && parse_job(line + 4, &j)) ||
		   (!strncmp(line, "lost ", 5) && parse_job(line + 5, &j))) {
		add_lost(st, &j);
		if (j.id >= st->next_id)
			st->next_id = j.id + 1;
	} else if (sscanf(line, "kdamond %d pid %d", &a, &b) == 2 && a >= 0 && b > 0) {
		st->left_index = a;
		st->left_pid = b;
	} else if (!strncmp(line, "rebalance ", 10) && parse_rebalance(line + 10, &r) &&
		   st->nrb < STATE_REBALANCE_MAX) {
		st->rb[st->nrb].r = r;
		st->rb[st->nrb++].left = true;
	}
}

/* Only a file this memmigd's user wrote, which no one else could have
 * edited, is believed: it names processes and a kdamond to stop. */
static void load(struct state *st)
{
	int fd = open(st->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char line[1024];
	struct stat s;
	FILE *f;

	if (fd < 0) {
		if (errno != ENOENT)
			util_log(LOG_WARNING, "%s: %s: starting afresh", st->path, strerror(errno));
		return;
	}
	if (fstat(fd, &s) || !S_ISREG(s.st_mode) || s.st_uid != geteuid() ||
	    (s.st_mode & 022)) {
		util_log(LOG_WARNING, "%s: not a file of memmigd's own (a plain file of uid %u, "
			 "writable by it alone): ignored", st->path, (unsigned int)geteuid());
		close(fd);
		return;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return;
	}
	while (fgets(line, sizeof(line), f))
		parse_line(st, line);
	fclose(f);
}

static void put_job(FILE *f, const char *key, const struct state_job *j)
{
	fprintf(f, "%s %" PRIu64 " pid %d node %d uid %u %s created %lld started %lld\n", key,
		j->id, j->pid, j->to_node, (unsigned int)j->uid, j->running ? "running" : "queued",
		(long long)j->created, (long long)j->started);
}

/* Lock held: the file anew, renamed over the old one.  A failure is said
 * once: memmigd goes on, what a restart would find is older. */
static void save(struct state *st)
{
	char tmp[PATH_MAX + 8];
	FILE *f = NULL;
	int fd, rc = 0;

	if (st->held) {
		st->dirty = true;
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", st->path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
	} else {
		fprintf(f, "# memmigd's state, for the next memmigd (memmigd(8))\n");
		fprintf(f, "next_job %" PRIu64 "\n", st->next_id);
		for (unsigned int i = 0; i < st->nlost; i++)
			put_job(f, "lost", &st->lost[i]);
		for (unsigned int i = 0; i < st->nlive; i++)
			put_job(f, "job", &st->live[i]);
		if (st->kd_index >= 0)
			fprintf(f, "kdamond %d pid %d\n", st->kd_index, st->kd_pid);
		for (unsigned int i = 0; i < st->nrb; i++)
			fprintf(f, "rebalance %s pid %d node %d before %s widened %s\n",
				st->rb[i].r.uuid, st->rb[i].r.pid, st->rb[i].r.to_node,
				st->rb[i].r.before, st->rb[i].r.widened);
		rc = fclose(f) ? -errno : 0;
		if (!rc && rename(tmp, st->path))
			rc = -errno;
		if (rc)
			unlink(tmp);
	}
	if (rc && !st->warned)
		util_log(LOG_WARNING, "%s: %s: a restart will not find this memmigd's jobs",
			 st->path, strerror(-rc));
	st->warned |= rc != 0;
}

int state_open(const char *path, struct state **out)
{
	struct state *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	pthread_mutex_init(&st->lock, NULL);
	snprintf(st->path, sizeof(st->path), "%s", path);
	st->next_id = 1;
	st->kd_index = st->left_index = -1;
	load(st);
	st->first_id = st->next_id;
	if (st->nlost)
		util_log(LOG_WARNING, "memmigd was stopped without ending its jobs: %u of them "
			 "(the newest: job %" PRIu64 ") lost, their pages where the kernel left them",
			 st->nlost, st->lost[st->nlost - 1].id);
	if (st->nrb)
		util_log(LOG_WARNING, "memmigd was stopped in the middle of %u domains' moves with "
			 "their nodesets widened: each is narrowed or restored once libvirtd answers",
			 st->nrb);
	/* The left kdamond stays in the file until it is dealt with. */
	st->kd_index = st->left_index;
	st->kd_pid = st->left_pid;
	pthread_mutex_lock(&st->lock);
	save(st);
	pthread_mutex_unlock(&st->lock);
	*out = st;
	return 0;
}

void state_hold(struct state *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	st->held++;
	pthread_mutex_unlock(&st->lock);
}

void state_release(struct state *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	if (st->held && !--st->held && st->dirty) {
		st->dirty = false;
		save(st);
	}
	pthread_mutex_unlock(&st->lock);
}

void state_free(struct state *st)
{
	if (!st)
		return;
	pthread_mutex_destroy(&st->lock);
	free(st->live);
	free(st);
}

uint64_t state_next_job_id(const struct state *st)
{
	return st ? st->first_id : 1;
}

bool state_job_before(const struct state *st, uint64_t id)
{
	return st && id < st->first_id;
}

void state_job_set(struct state *st, const struct state_job *job)
{
	unsigned int i;

	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	for (i = 0; i < st->nlive && st->live[i].id != job->id; i++)
		;
	if (i == st->nlive && st->nlive == st->cap) {
		unsigned int cap = st->cap ? 2 * st->cap : 16;
		struct state_job *p = realloc(st->live, cap * sizeof(*p));

		if (!p) {
			pthread_mutex_unlock(&st->lock);
			return;
		}
		st->live = p;
		st->cap = cap;
	}
	if (i == st->nlive)
		st->nlive++;
	st->live[i] = *job;
	if (job->id >= st->next_id)
		st->next_id = job->id + 1;
	save(st);
	pthread_mutex_unlock(&st->lock);
}

void state_job_end(struct state *st, uint64_t id)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	for (unsigned int i = 0; i < st->nlive; i++)
		if (st->live[i].id == id) {
			st->live[i] = st->live[--st->nlive];
			save(st);
			break;
		}
	pthread_mutex_unlock(&st->lock);
}

bool state_job_lost(struct state *st, uint64_t id, struct state_job *out)
{
	bool found = false;

	if (!st)
		return false;
	pthread_mutex_lock(&st->lock);
	for (unsigned int i = 0; i < st->nlost && !found; i++)
		if (st->lost[i].id == id) {
			*out = st->lost[i];
			found = true;
		}
	pthread_mutex_unlock(&st->lock);
	return found;
}

void state_kdamond_set(struct state *st, int index, int kpid)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	if (st->kd_index != index || st->kd_pid != kpid) {
		st->kd_index = index;
		st->kd_pid = index >= 0 ? kpid : 0;
		save(st);
	}
	pthread_mutex_unlock(&st->lock);
}

bool state_kdamond_left(const struct state *st, int *index, int *kpid)
{
	if (!st || st->left_index < 0)
		return false;
	*index = st->left_index;
	*kpid = st->left_pid;
	return true;
}

/* Lock held: uuid's index, or nrb. */
static unsigned int rebalance_find(const struct state *st, const char *uuid)
{
	unsigned int i;

	for (i = 0; i < st->nrb && strcmp(st->rb[i].r.uuid, uuid); i++)
		;
	return i;
}

/* A word the file takes back whole: not empty, no blank. */
static bool one_word(const char *s)
{
	return *s && !s[strcspn(s, " \t\n")];
}

void state_rebalance_set(struct state *st, const struct state_rebalance *rb)
{
	unsigned int i;

	/* Else not written: a restart then finds the nodeset as it is. */
	if (!st || !one_word(rb->uuid) || !one_word(rb->before) || !one_word(rb->widened))
		return;
	pthread_mutex_lock(&st->lock);
	i = rebalance_find(st, rb->uuid);
	if (i < STATE_REBALANCE_MAX) {
		st->rb[i].r = *rb;
		st->rb[i].left = false;
		if (i == st->nrb)
			st->nrb++;
		save(st);
	}
	pthread_mutex_unlock(&st->lock);
}

void state_rebalance_end(struct state *st, const char *uuid)
{
	unsigned int i;

	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	i = rebalance_find(st, uuid);
	if (i < st->nrb) {
		st->rb[i] = st->rb[--st->nrb];
		save(st);
	}
	pthread_mutex_unlock(&st->lock);
}

unsigned int state_rebalances_left(struct state *st, struct state_rebalance *out,
				   unsigned int max)
{
	unsigned int n = 0;

	if (!st)
		return 0;
	pthread_mutex_lock(&st->lock);
	for (unsigned int i = 0; i < st->nrb && n < max; i++)
		if (st->rb[i].left)
			out[n++] = st->rb[i].r;
	pthread_mutex_unlock(&st->lock);
	return n;
}
