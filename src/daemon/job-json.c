/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A job as docs/protocol.md shows it ("A job"). */
#include "daemon/jobs-private.h"

const char *job_state_name(enum job_state s)
{
	static const char *const names[] = {
		[JOB_QUEUED] = "queued", [JOB_RUNNING] = "running", [JOB_DONE] = "done",
		[JOB_FAILED] = "failed", [JOB_CANCELLED] = "cancelled",
	};

	return names[s];
}

static struct json_object *str_or_null(const char *s)
{
	return s && s[0] ? json_object_new_string(s) : NULL;
}

struct json_object *job_to_json(struct job *job)
{
	struct json_object *o = json_object_new_object();
	struct memmig_move_progress p = job->last;
	bool ended = job->state >= JOB_DONE;
	char name[16];

	/* Running: live figures; queued: those of the plan; ended: the last. */
	if (job->mv && job->state == JOB_RUNNING)
		memmig_move_get_progress(job->mv, &p);
	json_object_object_add(o, "id", json_object_new_uint64(job->id));
	json_object_object_add(o, "state", json_object_new_string(job_state_name(job->state)));
	json_object_object_add(o, "pid", json_object_new_int(job->pid));
	json_object_object_add(o, "domain", str_or_null(job->domain));
	json_object_object_add(o, "to_node", json_object_new_int(job->to_node));
	json_object_object_add(o, "strategy",
			       json_object_new_string(proto_strategy_name(job->strategy)));
	json_object_object_add(o, "threads", job->threads ?
			       json_object_new_int((int)job->threads) : NULL);
	json_object_object_add(o, "uid", json_object_new_int64(job->uid));
	json_object_object_add(o, "bytes_total", json_object_new_uint64(p.bytes_total));
	json_object_object_add(o, "bytes_done", json_object_new_uint64(p.bytes_done));
	json_object_object_add(o, "rate", json_object_new_double(p.rate));
	json_object_object_add(o, "elapsed_s", json_object_new_double(p.elapsed_s));
	json_object_object_add(o, "eta_s", job->state == JOB_RUNNING && p.rate > 0 &&
			       p.bytes_total >= p.bytes_done ?
			       json_object_new_double((double)(p.bytes_total - p.bytes_done) / p.rate) :
			       NULL);
	json_object_object_add(o, "regions", json_object_new_int((int)p.regions));
	json_object_object_add(o, "result", ended ?
			       json_object_new_string(proto_errno_name(job->result, name, sizeof(name))) :
			       NULL);
	json_object_object_add(o, "message", ended ? str_or_null(job->message) : NULL);
	json_object_object_add(o, "report", json_object_get(job->report));
	return o;
}
