/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One process's memory moved region by region: each region is one
 * libmemmig job, so cancel stops after the units in flight and what moved
 * stays consistent.  The regions' reports add up to one report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pidmove.h"

#define MAX_NODE (PROTO_MAX_NODE + 1)
#define MAX_ERRS 64

/* What the regions' reports add up to. */
struct move_total {
	uint64_t bytes_moved, pages_failed, pages_on_target;
	unsigned int workers;
	int strategy;
	uint64_t before[MAX_NODE], after[MAX_NODE];
	int max_node;
	int errs[MAX_ERRS];
	uint64_t err_pages[MAX_ERRS];
	unsigned int nerrs;
	struct json_object *failed;	/* failed ranges */
};

struct pidmove {
	struct pidmove_req req;
	struct memmig_region **list;
	unsigned int n;
	uint64_t bytes_total;

	pthread_mutex_t lock;	/* guards what follows */
	struct memmig_job *job;	/* the region being moved */
	bool cancelled, started, finished;
	int result;
	uint64_t done_before;	/* bytes of the regions already done */
	unsigned int regions_done;
	struct timespec t0;
	double elapsed_s;	/* once finished */
	struct move_total t;
};

static double since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* -ENOENT before anything is listed when the node does not exist. */
static int check_node(struct memmig_ctx *ctx, int node)
{
	struct memmig_node_info info = { .sz = sizeof(info) };
	struct memmig_topo *topo;
	int rc = memmig_topo_new(ctx, &topo);

	if (rc < 0)
		return rc;
	rc = memmig_topo_find_node(topo, node, &info);
	memmig_topo_unref(topo);
	return rc;
}

static int list_ranges(struct memmig_ctx *ctx, struct pidmove *m)
{
	m->list = calloc(m->req.nranges, sizeof(*m->list));
	if (!m->list)
		return -ENOMEM;
	for (unsigned int i = 0; i < m->req.nranges; i++) {
		struct memmig_region_desc d = {
			.sz = sizeof(d), .pid = m->req.pid,
			.addr = m->req.ranges[i].addr, .len = m->req.ranges[i].len,
		};
		int rc = memmig_region_new(ctx, &d, &m->list[i]);

		if (rc < 0)
			return rc;
		m->n++;
	}
	return 0;
}

int pidmove_new(struct memmig_ctx *ctx, const struct pidmove_req *req,
		struct pidmove **out)
{
	struct pidmove *m;
	int rc;

	if (req->pid <= 0 || req->nranges > PROTO_MAX_RANGES ||
	    (req->nranges && !req->ranges) || req->to_node < 0 ||
	    req->to_node > PROTO_MAX_NODE)
		return -EINVAL;
	/* The copy strategy swaps mappings: only in the process itself. */
	if (req->strategy == MEMMIG_STRATEGY_COPY && req->pid != getpid())
		return -EINVAL;
	rc = check_node(ctx, req->to_node);
	if (rc < 0)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->req = *req;
	m->req.ranges = NULL;
	m->t.max_node = -1;
	m->t.strategy = req->strategy;
	pthread_mutex_init(&m->lock, NULL);
	if (req->nranges) {
		struct proto_range *r = calloc(req->nranges, sizeof(*r));

		rc = r ? 0 : -ENOMEM;
		if (r) {
			memcpy(r, req->ranges, req->nranges * sizeof(*r));
			m->req.ranges = r;
			rc = list_ranges(ctx, m);
		}
	} else {
		rc = memmig_region_list_pid(ctx, req->pid, &m->list, &m->n);
	}
	if (rc < 0) {
		pidmove_free(m);
		return rc;
	}
	for (unsigned int i = 0; i < m->n; i++) {
		struct memmig_region_desc d = { .sz = sizeof(d) };

		memmig_region_get_desc(m->list[i], &d);
		m->bytes_total += d.len;
	}
	m->t.failed = json_object_new_array();
	*out = m;
	return 0;
}

static void total_add_errno(struct move_total *t, int err, uint64_t pages)
{
	for (unsigned int i = 0; i < t->nerrs; i++)
		if (t->errs[i] == err) {
			t->err_pages[i] += pages;
			return;
		}
	if (t->nerrs < MAX_ERRS) {
		t->errs[t->nerrs] = err;
		t->err_pages[t->nerrs++] = pages;
	}
}

static void total_add_failed(struct move_total *t, const struct memmig_report *rep)
{
	for (int i = 0; i < memmig_report_failed_count(rep); i++) {
		struct json_object *o = json_object_new_object();
		uint64_t addr, len;
		char hex[32];
		int err;

		memmig_report_get_failed(rep, (unsigned int)i, &addr, &len, &err);
		snprintf(hex, sizeof(hex), "%#llx", (unsigned long long)addr);
		json_object_object_add(o, "addr", json_object_new_string(hex));
		json_object_object_add(o, "len", json_object_new_int64((int64_t)len));
		json_object_object_add(o, "errno", json_object_new_string(strerrorname_np(err)));
		json_object_array_add(t->failed, o);
	}
}

static void total_add(struct move_total *t, const struct memmig_report *rep)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	int max = memmig_report_max_node(rep);

	memmig_report_get_summary(rep, &s);
	t->bytes_moved += s.bytes_moved;
	t->pages_failed += s.pages_failed;
	t->pages_on_target += s.pages_verified_on_target;
	t->strategy = s.strategy;
	t->workers = s.workers > t->workers ? s.workers : t->workers;
	for (int n = 0; n <= max && n < MAX_NODE; n++) {
		uint64_t b, a;

		memmig_report_node_pages(rep, n, &b, &a);
		t->before[n] += b;
		t->after[n] += a;
		if ((b || a) && n > t->max_node)
			t->max_node = n;
	}
	for (int i = 0; i < memmig_report_errno_count(rep); i++) {
		uint64_t pages;
		int err;

		memmig_report_get_errno(rep, (unsigned int)i, &err, &pages);
		total_add_errno(t, err, pages);
	}
	total_add_failed(t, rep);
}

/* One region's job, registered so that pidmove_cancel() can reach it. */
static int move_region(struct pidmove *m, struct memmig_region *r)
{
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = m->req.to_node,
		.strategy = m->req.strategy, .workers = m->req.threads,
		.flags = m->req.own_pages ? MEMMIG_MIGRATE_OWN_PAGES : 0,
	};
	struct memmig_report *rep = NULL;
	struct memmig_job *job;
	int rc;

	pthread_mutex_lock(&m->lock);
	rc = m->cancelled ? -ECANCELED : memmig_job_start(r, &o, &job);
	if (!rc)
		m->job = job;
	pthread_mutex_unlock(&m->lock);
	if (rc < 0)
		return rc;
	rc = memmig_job_wait(job, &rep);
	pthread_mutex_lock(&m->lock);
	m->job = NULL;
	if (rep)
		total_add(&m->t, rep);
	pthread_mutex_unlock(&m->lock);
	memmig_report_unref(rep);
	memmig_job_unref(job);
	return rc;
}

#define PF_EXITING_FLAG 0x4u	/* the kernel's PF_EXITING */

/* The process ended, or is ending (its memory may be gone already, which
 * move_pages answers with EINVAL): /proc/PID/stat's state and flags. */
static bool process_gone(int pid)
{
	char path[64], buf[1024], state = 0, *p;
	unsigned int flags = 0;
	FILE *f;
	bool read;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT || errno == ESRCH;
	read = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	/* comm may hold anything: the fields follow the last ')'. */
	p = read ? strrchr(buf, ')') : NULL;
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2)
		return !read;
	return state == 'Z' || state == 'X' || (flags & PF_EXITING_FLAG);
}

int pidmove_run(struct pidmove *m)
{
	int rc = 0;

	pthread_mutex_lock(&m->lock);
	clock_gettime(CLOCK_MONOTONIC, &m->t0);
	m->started = true;
	pthread_mutex_unlock(&m->lock);
	for (unsigned int i = 0; i < m->n && !rc; i++) {
		struct memmig_region_desc d = { .sz = sizeof(d) };

		memmig_region_get_desc(m->list[i], &d);
		rc = move_region(m, m->list[i]);
		/* A mapping that went away meanwhile is not an error of ours. */
		if (rc == -EFAULT)
			rc = 0;
		pthread_mutex_lock(&m->lock);
		m->done_before += d.len;
		m->regions_done++;
		pthread_mutex_unlock(&m->lock);
	}
	/* The process died under the move: whichever step noticed it first
	 * (its maps, pagemap, move_pages) answered in its own words (EINVAL,
	 * EFAULT, ...); what happened is that it is gone. */
	if (rc < 0 && rc != -ECANCELED && process_gone(m->req.pid))
		rc = -ESRCH;
	pthread_mutex_lock(&m->lock);
	m->elapsed_s = since(&m->t0);
	m->result = rc;
	m->finished = true;
	pthread_mutex_unlock(&m->lock);
	return rc;
}

void pidmove_cancel(struct pidmove *m)
{
	pthread_mutex_lock(&m->lock);
	m->cancelled = true;
	if (m->job)
		memmig_job_cancel(m->job);
	pthread_mutex_unlock(&m->lock);
}

void pidmove_get_progress(struct pidmove *m, struct pidmove_progress *out)
{
	struct memmig_progress p = { .sz = sizeof(p) };

	pthread_mutex_lock(&m->lock);
	*out = (struct pidmove_progress){
		.bytes_done = m->done_before, .bytes_total = m->bytes_total,
		.regions_done = m->regions_done, .regions = m->n,
		.finished = m->finished, .result = m->result,
	};
	if (m->job && memmig_job_get_progress(m->job, &p) == 0) {
		out->bytes_done += p.bytes_done;
		out->rate = p.rate;
	}
	if (m->finished)
		out->elapsed_s = m->elapsed_s;
	else if (m->started)
		out->elapsed_s = since(&m->t0);
	if (!out->rate && out->elapsed_s > 0)
		out->rate = (double)out->bytes_done / out->elapsed_s;
	pthread_mutex_unlock(&m->lock);
}

static struct json_object *json_u64(uint64_t v)
{
	return json_object_new_int64((int64_t)v);
}

static struct json_object *nodes_json_of(const struct move_total *t)
{
	struct json_object *nodes = json_object_new_array();

	for (int n = 0; n <= t->max_node; n++) {
		struct json_object *row;

		if (!t->before[n] && !t->after[n])
			continue;
		row = json_object_new_object();
		json_object_object_add(row, "node", json_object_new_int(n));
		json_object_object_add(row, "pages_before", json_u64(t->before[n]));
		json_object_object_add(row, "pages_after", json_u64(t->after[n]));
		json_object_array_add(nodes, row);
	}
	return nodes;
}

struct json_object *pidmove_report_json(struct pidmove *m)
{
	struct json_object *o = json_object_new_object();
	struct json_object *errs = json_object_new_object();
	const struct move_total *t = &m->t;

	pthread_mutex_lock(&m->lock);
	json_object_object_add(o, "pid", json_object_new_int(m->req.pid));
	json_object_object_add(o, "target_node", json_object_new_int(m->req.to_node));
	json_object_object_add(o, "strategy", json_object_new_string(
		proto_strategy_name(t->strategy)));
	json_object_object_add(o, "result", json_object_new_int(m->result));
	json_object_object_add(o, "regions", json_object_new_int((int)m->regions_done));
	json_object_object_add(o, "workers", json_object_new_int((int)t->workers));
	json_object_object_add(o, "bytes_total", json_u64(m->bytes_total));
	json_object_object_add(o, "bytes_moved", json_u64(t->bytes_moved));
	json_object_object_add(o, "pages_failed", json_u64(t->pages_failed));
	json_object_object_add(o, "pages_on_target", json_u64(t->pages_on_target));
	json_object_object_add(o, "seconds", json_object_new_double(m->elapsed_s));
	json_object_object_add(o, "nodes", nodes_json_of(t));
	for (unsigned int i = 0; i < t->nerrs; i++)
		json_object_object_add(errs, strerrorname_np(t->errs[i]),
				       json_u64(t->err_pages[i]));
	json_object_object_add(o, "errno_pages", errs);
	json_object_object_add(o, "failed_ranges", json_object_get(t->failed));
	pthread_mutex_unlock(&m->lock);
	return o;
}

void pidmove_free(struct pidmove *m)
{
	if (!m)
		return;
	memmig_region_list_free(m->list, m->n);
	json_object_put(m->t.failed);
	free((void *)m->req.ranges);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
