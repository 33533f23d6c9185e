/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The job object of docs/json.md, every key present, null when unknown. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proto/job-json.h"
#include "util/size.h"
#include "proto/proto.h"

static struct json_object *str_or_null(const char *s)
{
	return s && s[0] ? json_object_new_string(s) : NULL;
}

/* A time in whole seconds: the 6 digits of the floats would cut it. */
static struct json_object *time_or_null(int64_t t)
{
	return t > 0 ? json_object_new_int64(t) : NULL;
}

/* One rate for the table, the bar and the JSON (docs/json.md): what the
 * move got through lately while it runs, what it moved once it ended. */
static double job_rate(const struct proto_job *j)
{
	if (j->ended)
		return j->p.elapsed_s > 0 ? (double)j->bytes_moved / j->p.elapsed_s : 0;
	return j->running ? j->p.rate : 0;
}

struct json_object *proto_job_json(const struct proto_job *j)
{
	struct json_object *o = json_object_new_object();
	const struct memmig_move_progress *p = &j->p;
	double rate = job_rate(j);
	char name[16];

	json_object_object_add(o, "id", j->id ? json_object_new_uint64(j->id) : NULL);
	json_object_object_add(o, "via", json_object_new_string(j->via));
	json_object_object_add(o, "state", json_object_new_string(j->state));
	json_object_object_add(o, "pid", json_object_new_int(j->pid));
	json_object_object_add(o, "domain", str_or_null(j->domain));
	json_object_object_add(o, "to_node", json_object_new_int(j->to_node));
	json_object_object_add(o, "strategy",
			       json_object_new_string(proto_strategy_name(j->strategy)));
	json_object_object_add(o, "threads", j->threads ?
			       json_object_new_int((int)j->threads) : NULL);
	json_object_object_add(o, "uid", json_object_new_int64(j->uid));
	json_object_object_add(o, "bytes_total", json_object_new_uint64(p->bytes_total));
	json_object_object_add(o, "bytes_done", json_object_new_uint64(p->bytes_done));
	json_object_object_add(o, "bytes_moved", j->ended ?
			       json_object_new_uint64(j->bytes_moved) : NULL);
	json_object_object_add(o, "rate", json_object_new_int64((int64_t)(rate + 0.5)));
	json_object_object_add(o, "elapsed_s", json_object_new_double(p->elapsed_s));
	json_object_object_add(o, "eta_s", j->running && rate > 0 &&
			       p->bytes_total >= p->bytes_done ?
			       json_object_new_double((double)(p->bytes_total - p->bytes_done) / rate) :
			       NULL);
	json_object_object_add(o, "regions", json_object_new_int((int)p->regions));
	json_object_object_add(o, "result", j->ended ?
			       json_object_new_string(proto_errno_name(j->result, name, sizeof(name))) :
			       NULL);
	json_object_object_add(o, "message", j->ended ? str_or_null(j->message) : NULL);
	json_object_object_add(o, "report", json_object_get(j->report));
	json_object_object_add(o, "waits_for", j->waits_for ?
			       json_object_new_uint64(j->waits_for) : NULL);
	json_object_object_add(o, "created_at_s", time_or_null(j->created_at));
	json_object_object_add(o, "started_at_s", time_or_null(j->started_at));
	json_object_object_add(o, "ended_at_s", time_or_null(j->ended_at));
	return o;
}

const char *proto_job_end_state(int result)
{
	return !result ? "done" : result == -ECANCELED ? "cancelled" : "failed";
}

void proto_job_message(char *buf, size_t len, int result, uint64_t moved,
		       uint64_t total, int to_node, double elapsed_s)
{
	char m[32], t[32];

	if (result == -ECANCELED)
		snprintf(buf, len, "cancelled: what moved stays moved, the rest is where it was");
	else if (result == -EBUSY)
		snprintf(buf, len, "another move of this process runs (a memmigd job, memmig-cli -l "
			 "or another program with libmemmig): nothing moved; move it again once "
			 "that one ends");
	else if (result)
		snprintf(buf, len, "%s", strerror(-result));
	else
		snprintf(buf, len, "moved %s of %s to node %d in %.3f s%s",
			 util_size_human(moved, m, sizeof(m)), util_size_human(total, t, sizeof(t)),
			 to_node, elapsed_s, moved < total ?
			 ": the rest was on the node already, or not present" : "");
}

struct json_object *proto_rebalance_step_json(uint64_t kernel, uint64_t memmig)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "kernel_bytes", json_object_new_uint64(kernel));
	json_object_object_add(o, "memmig_bytes", json_object_new_uint64(memmig));
	return o;
}
