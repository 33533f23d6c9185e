// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TEMP: a throwaway pidmove.h implementation so that memmigd builds and
 * its tests run on the daemon branch.  The lead's src/shared/pidmove.c on
 * main replaces it at merge; do not extend this one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pidmove.h"

struct pidmove {
	struct memmig_ctx *ctx;
	struct pidmove_req req;
	struct memmig_region **list;
	unsigned int n;
	pthread_mutex_t lock;
	struct memmig_job *job;		/* the running region's */
	bool cancelled, finished;
	int result;
	unsigned int done_regions;
	uint64_t total, done, moved, failed, on_target;
	double start, seconds;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int pidmove_new(struct memmig_ctx *ctx, const struct pidmove_req *req,
		struct pidmove **out)
{
	struct memmig_node_info ni = { .sz = sizeof(ni) };
	struct memmig_topo *topo;
	struct pidmove *m;
	int rc;

	if (req->strategy == MEMMIG_STRATEGY_COPY)
		return -EINVAL;
	rc = memmig_topo_new(ctx, &topo);
	if (rc)
		return rc;
	rc = memmig_topo_find_node(topo, req->to_node, &ni);
	memmig_topo_unref(topo);
	if (rc)
		return -ENOENT;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->req = *req;
	if (req->nranges) {
		m->list = calloc(req->nranges, sizeof(*m->list));
		rc = m->list ? 0 : -ENOMEM;
		for (unsigned int i = 0; !rc && i < req->nranges; i++) {
			struct memmig_region_desc d = { .sz = sizeof(d), .pid = req->pid,
				.addr = req->ranges[i].addr, .len = req->ranges[i].len };

			rc = memmig_region_new(ctx, &d, &m->list[i]);
			if (!rc)
				m->n++;
		}
	} else {
		rc = memmig_region_list_pid(ctx, req->pid, &m->list, &m->n);
	}
	if (rc) {
		memmig_region_list_free(m->list, m->n);
		free(m);
		return rc;
	}
	for (unsigned int i = 0; i < m->n; i++) {
		struct memmig_region_desc d = { .sz = sizeof(d) };

		memmig_region_get_desc(m->list[i], &d);
		m->total += d.len;
	}
	m->ctx = memmig_ctx_ref(ctx);
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
}

int pidmove_run(struct pidmove *m)
{
	int result = 0;

	m->start = now();
	for (unsigned int i = 0; i < m->n && !result; i++) {
		struct memmig_migrate_opts o = { .sz = sizeof(o), .target_node = m->req.to_node,
			.strategy = m->req.strategy, .workers = m->req.threads };
		struct memmig_report_summary s = { .sz = sizeof(s) };
		struct memmig_region_desc d = { .sz = sizeof(d) };
		struct memmig_report *rep = NULL;
		struct memmig_job *job;
		int rc;

		memmig_region_get_desc(m->list[i], &d);
		pthread_mutex_lock(&m->lock);
		rc = m->cancelled ? -ECANCELED : memmig_job_start(m->list[i], &o, &job);
		if (!rc)
			m->job = job;
		pthread_mutex_unlock(&m->lock);
		if (!rc) {
			rc = memmig_job_wait(job, &rep);
			pthread_mutex_lock(&m->lock);
			m->job = NULL;
			pthread_mutex_unlock(&m->lock);
			memmig_job_unref(job);
		}
		if (rep) {
			memmig_report_get_summary(rep, &s);
			m->moved += s.bytes_moved;
			m->failed += s.pages_failed;
			m->on_target += s.pages_verified_on_target;
			memmig_report_unref(rep);
		}
		pthread_mutex_lock(&m->lock);
		m->done += d.len;
		m->done_regions++;
		pthread_mutex_unlock(&m->lock);
		if (rc < 0 && rc != -EFAULT)
			result = rc;
	}
	pthread_mutex_lock(&m->lock);
	m->seconds = now() - m->start;
	m->result = result;
	m->finished = true;
	pthread_mutex_unlock(&m->lock);
	return result;
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
	if (m->job)
		memmig_job_get_progress(m->job, &p);
	*out = (struct pidmove_progress){
		.bytes_done = m->done + p.bytes_done, .bytes_total = m->total,
		.rate = p.rate, .elapsed_s = m->start ? (m->finished ? m->seconds : now() - m->start) : 0,
		.regions_done = m->done_regions, .regions = m->n,
		.finished = m->finished, .result = m->result,
	};
	pthread_mutex_unlock(&m->lock);
}

struct json_object *pidmove_report_json(struct pidmove *m)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "pid", json_object_new_int(m->req.pid));
	json_object_object_add(o, "target_node", json_object_new_int(m->req.to_node));
	json_object_object_add(o, "strategy", json_object_new_string(proto_strategy_name(m->req.strategy)));
	json_object_object_add(o, "result", json_object_new_int(m->result));
	json_object_object_add(o, "regions", json_object_new_int((int)m->n));
	json_object_object_add(o, "bytes_total", json_object_new_int64((int64_t)m->total));
	json_object_object_add(o, "bytes_moved", json_object_new_int64((int64_t)m->moved));
	json_object_object_add(o, "pages_failed", json_object_new_int64((int64_t)m->failed));
	json_object_object_add(o, "pages_on_target", json_object_new_int64((int64_t)m->on_target));
	json_object_object_add(o, "seconds", json_object_new_double(m->seconds));
	return o;
}

void pidmove_free(struct pidmove *m)
{
	if (!m)
		return;
	memmig_region_list_free(m->list, m->n);
	memmig_ctx_unref(m->ctx);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
