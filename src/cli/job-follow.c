/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Following a memmigd job to its end (move --wait): the job's last event
 * says at once when it ended, where polling saw it up to a poll interval
 * late; the job op feeds the progress bar, and polling stands in for the
 * events when memmigd has no room for one more subscriber.
 */
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"

static bool ended(struct json_object *j)
{
	const char *state = cli_json_str(j, "state", "done");

	return strcmp(state, "queued") && strcmp(state, "running");
}

/* The job op (or cancel, once asked): the job as memmigd has it now. */
static int ask(struct cli_conn *c, const char *op, int64_t id, struct json_object **job)
{
	struct json_object *req = cli_request(op), *reply, *j = NULL;
	int rc;

	json_object_object_add(req, "job", json_object_new_int64(id));
	rc = cli_call(c, "move", req, &reply);
	if (rc < 0) {
		if (reply)
			cli_print_reply_error("move", reply);
		json_object_put(reply);
		return rc;
	}
	json_object_object_get_ex(reply, "job", &j);
	*job = json_object_get(j);
	json_object_put(reply);
	/* The bar, ended jobs too: as in-process, a job that ended before
	 * the first look still shows where it got. */
	cli_progress((uint64_t)cli_json_int(*job, "bytes_done", 0),
		     (uint64_t)cli_json_int(*job, "bytes_total", 0),
		     cli_json_double(*job, "rate", 0));
	return 0;
}

/* Reads the events that came: 1 with *job when one says the job ended,
 * 0 when none did, -errno when the connection failed (said). */
static int read_events(struct cli_conn *ev, int64_t id, int wait_ms, struct json_object **job)
{
	int rc = cli_conn_wait(ev, wait_ms);

	while (rc > 0) {
		struct json_object *e, *j = NULL;

		rc = cli_read_line(ev, "move", &e);
		if (rc < 0)
			return rc;
		if (!strcmp(cli_json_str(e, "event", ""), "job") &&
		    json_object_object_get_ex(e, "job", &j) && cli_json_int(j, "id", -1) == id &&
		    ended(j)) {
			*job = json_object_get(j);
			json_object_put(e);
			return 1;
		}
		json_object_put(e);
		rc = cli_conn_wait(ev, 0);
	}
	return rc;
}

int cli_job_follow(struct cli_conn *c, struct cli_conn *ev, int64_t id,
		   volatile sig_atomic_t *stop, struct json_object **job)
{
	bool bar = cli_progress_wanted(), cancel_sent = false;
	unsigned int wait_us = 10 * 1000;
	int rc;

	*job = NULL;
	for (;;) {
		struct json_object *j = NULL;

		/* Polled: for the bar, for a cancel, or for want of events. */
		if (!ev || bar || (*stop && !cancel_sent)) {
			rc = ask(c, *stop && !cancel_sent ? "cancel" : "job", id, &j);
			if (rc < 0)
				return rc;
			cancel_sent |= *stop != 0;
			if (ended(j)) {
				*job = j;
				return 0;
			}
			json_object_put(j);
		}
		if (ev) {
			rc = read_events(ev, id, bar ? 200 : 1000, job);
			if (rc > 0)
				return 0;
			/* Events lost: polling finds the end just the same. */
			if (rc < 0)
				ev = NULL;
			continue;
		}
		/* Short jobs end soon after they start: poll often at first. */
		if (!(*stop && !cancel_sent))
			usleep(wait_us);
		if (wait_us < 200 * 1000)
			wait_us *= 2;
	}
}
