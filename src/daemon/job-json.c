/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A job as docs/json.md shows it: the daemon's side of proto_job_json(). */
#include "daemon/jobs-private.h"
#include "proto/job-json.h"

const char *job_state_name(enum job_state s)
{
	static const char *const names[] = {
		[JOB_QUEUED] = "queued", [JOB_RUNNING] = "running", [JOB_DONE] = "done",
		[JOB_FAILED] = "failed", [JOB_CANCELLED] = "cancelled",
	};

	return names[s];
}

struct json_object *job_to_json(struct job *job)
{
	struct proto_job j = {
		.id = job->id, .via = "memmigd", .state = job_state_name(job->state),
		.pid = job->pid, .domain = job->domain, .to_node = job->to_node,
		.strategy = job->strategy, .threads = job->threads, .uid = job->uid,
		.p = job->last, .running = job->state == JOB_RUNNING,
		.ended = job->state >= JOB_DONE, .bytes_moved = job->bytes_moved,
		.result = job->result, .message = job->message, .report = job->report,
		.waits_for = job->state == JOB_QUEUED ? job->waits_for : 0,
		.created_at = job->created, .started_at = job->started, .ended_at = job->ended,
	};

	/* Running: live figures; queued: those of the plan; ended: the last. */
	if (job->mv && j.running)
		memmig_move_get_progress(job->mv, &j.p);
	return proto_job_json(&j);
}
