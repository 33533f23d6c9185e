/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Moves through memmigd of memhog, a process that does not link
 * libmemmig, checked by memhog's own checksum after each: a whole
 * process, one range, a queued job cancelled, a running one cancelled, a
 * client that disconnects mid-job (the job goes on), a target killed in
 * the middle of its job (the job ends ESRCH, not some other error), and
 * SIGTERM during a job (memmigd exits 0, removes its socket, memhog's data
 * intact, a subscriber told how each job ended and that memmigd stops).
 *
 * This machine may have one node: moving to node 0 then moves nothing,
 * but the path -- plan, placement query, move_pages, report -- is the
 * same; the multi-node tier moves pages for real.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

#define WAIT_MS 120000

static bool job_ok(struct json_object *job)
{
	return job && !strcmp(tc_str(job, "state"), "done") && !strcmp(tc_str(job, "result"), "OK");
}

static void move_whole(struct tc_conn *c, struct tc_hog *h)
{
	struct json_object *r, *job, *rep;

	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"tag\":3}", h->pid);
	CHECK(!strcmp(tc_error(r), "OK"), "move: %s %s", tc_error(r), tc_str(r, "message"));
	job = tc_get(r, "job");
	CHECK(tc_int(r, "tag") == 3, "tag");
	CHECK(tc_int(job, "pid") == h->pid, "job pid");
	CHECK(!strcmp(tc_str(job, "strategy"), "kernel"), "auto is kernel: %s", tc_str(job, "strategy"));
	CHECK(tc_int(job, "uid") == (int64_t)getuid(), "job uid");
	CHECK(tc_get(job, "domain") == NULL, "no domain");
	CHECK(tc_int(job, "bytes_total") >= (int64_t)(h->anon_len + h->memfd_len),
	      "bytes_total %lld covers memhog's memory", (long long)tc_int(job, "bytes_total"));
	job = tc_wait_job(c, tc_int(job, "id"), WAIT_MS);
	CHECK(job_ok(job), "whole move: %s %s %s", tc_str(job, "state"), tc_str(job, "result"),
	      tc_str(job, "message"));
	rep = tc_get(job, "report");
	CHECK(rep && tc_int(rep, "pid") == h->pid && !strcmp(tc_str(rep, "result"), "OK") &&
	      tc_int(rep, "to_node") == 0 && tc_int(rep, "threads") > 0 &&
	      tc_int(rep, "pages_failed") == 0, "report: %s",
	      rep ? json_object_to_json_string(rep) : "none");
	CHECK(tc_int(job, "bytes_done") == tc_int(job, "bytes_total"), "all bytes done");
	/* docs/json.md: the job's bytes_moved is the report's once it ended. */
	CHECK(tc_int(job, "bytes_moved") == tc_int(rep, "bytes_moved"), "bytes_moved %lld",
	      (long long)tc_int(job, "bytes_moved"));
	CHECK(tc_hog_verify(h), "memhog's data after the whole move");
	json_object_put(job);
	json_object_put(r);
}

static void move_range(struct tc_conn *c, struct tc_hog *h)
{
	struct json_object *r, *job;

	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"strategy\":\"kernel\","
		    "\"threads\":2,\"ranges\":[{\"addr\":\"0x%llx\",\"len\":%llu},"
		    "{\"addr\":%llu,\"len\":\"0x%llx\"}]}", h->pid,
		    (unsigned long long)h->anon, (unsigned long long)h->anon_len,
		    (unsigned long long)h->memfd, (unsigned long long)h->memfd_len);
	CHECK(!strcmp(tc_error(r), "OK"), "range move: %s %s", tc_error(r), tc_str(r, "message"));
	job = tc_get(r, "job");
	CHECK(tc_int(job, "bytes_total") == (int64_t)(h->anon_len + h->memfd_len),
	      "bytes_total %lld is the two ranges", (long long)tc_int(job, "bytes_total"));
	CHECK(tc_int(job, "threads") == 2, "threads 2");
	job = tc_wait_job(c, tc_int(job, "id"), WAIT_MS);
	CHECK(job_ok(job), "range move: %s %s", tc_str(job, "state"), tc_str(job, "message"));
	CHECK(tc_hog_verify(h), "memhog's data after the range move");
	json_object_put(job);
	json_object_put(r);
}

/* The second job is state (not queued, or not cancelled at once): only
 * because the first, j1, had ended by then. */
static void first_ended(struct tc_conn *c, struct json_object *j1, const char *state)
{
	struct json_object *now = tc_call(c, "{\"op\":\"job\",\"job\":%lld}",
					  (long long)tc_int(j1, "id"));

	CHECK(!strcmp(tc_str(tc_get(now, "job"), "state"), "done"),
	      "second job %s while the first is %s", state, tc_str(tc_get(now, "job"), "state"));
	json_object_put(now);
}

/* With one job per node, a second one queues; cancelled, it ends at once. */
static void cancel_jobs(struct tc_conn *c, struct tc_hog *h)
{
	struct json_object *r1, *r2, *r, *j1, *j2;
	char buf[256];
	int n;

	n = snprintf(buf, sizeof(buf),
		     "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":1}\n"
		     "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":1}\n", h->pid, h->pid);
	CHECK(!tc_write(c, buf, (size_t)n), "two moves");
	r1 = tc_read(c, WAIT_MS);
	r2 = tc_read(c, WAIT_MS);
	j1 = tc_get(r1, "job");
	j2 = tc_get(r2, "job");
	CHECK(j1 && j2, "two jobs: %s %s", tc_error(r1), tc_error(r2));
	/* The second runs at once only when the first had ended by then:
	 * on one node there is nothing to move, and a whole-process move
	 * that finds so may end before the daemon parsed the next line. */
	if (strcmp(tc_str(j2, "state"), "queued"))
		first_ended(c, j1, tc_str(j2, "state"));
	r = tc_call(c, "{\"op\":\"cancel\",\"job\":%lld}", (long long)tc_int(j2, "id"));
	CHECK(!strcmp(tc_error(r), "OK"), "cancel queued: %s", tc_error(r));
	if (!strcmp(tc_str(j2, "state"), "queued")) {
		struct json_object *job = tc_get(r, "job");

		/* Still queued, it is cancelled at once; it may have started
		 * since, but only because the first one had ended. */
		if (strcmp(tc_str(job, "state"), "cancelled"))
			first_ended(c, j1, tc_str(job, "state"));
		else
			CHECK(!strcmp(tc_str(job, "result"), "ECANCELED"),
			      "queued job cancelled at once: %s", tc_str(job, "result"));
	}
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"cancel\",\"job\":%lld}", (long long)tc_int(j1, "id"));
	CHECK(!strcmp(tc_error(r), "OK"), "cancel running: %s", tc_error(r));
	json_object_put(r);
	r = tc_wait_job(c, tc_int(j1, "id"), WAIT_MS);
	/* Either it stopped after its units, or it had finished first. */
	CHECK(!strcmp(tc_str(r, "state"), "cancelled") ? !strcmp(tc_str(r, "result"), "ECANCELED") :
	      job_ok(r), "cancelled running job: %s %s", tc_str(r, "state"), tc_str(r, "result"));
	printf("running job after cancel: %s (%lld of %lld bytes)\n", tc_str(r, "state"),
	       (long long)tc_int(r, "bytes_done"), (long long)tc_int(r, "bytes_total"));
	json_object_put(r);
	/* Cancelling a finished job is not an error. */
	r = tc_call(c, "{\"op\":\"cancel\",\"job\":%lld}", (long long)tc_int(j1, "id"));
	CHECK(!strcmp(tc_error(r), "OK"), "cancel finished: %s", tc_error(r));
	json_object_put(r);
	CHECK(tc_hog_verify(h), "memhog's data after the cancels");
	json_object_put(r1);
	json_object_put(r2);
}

/* A new connection to d, subscribed to its events. */
static struct tc_conn *subscribed(struct tc_daemon *d)
{
	struct tc_conn *sub = tc_connect(d->sock);
	struct json_object *r = tc_call(sub, "{\"op\":\"subscribe\"}");

	CHECK(!strcmp(tc_error(r), "OK"), "subscribe: %s", tc_error(r));
	json_object_put(r);
	return sub;
}

/*
 * Two moves of one process at once split its pages between their nodes
 * while both said done (issue 37): with room for both on the node, the
 * second still waits for the first, says which it waits for, and runs
 * once it ended; a move of another process meanwhile does not wait.
 */
static void one_move_per_process(struct tc_hog *h)
{
	static const char *const opts[] = { "--max-jobs-per-node", "4", NULL };
	struct json_object *r1, *r2, *r3, *j1, *j2, *j3, *end;
	struct tc_daemon d;
	struct tc_conn *c, *sub;
	struct tc_hog other;
	bool first_ended = false;
	char buf[384];
	int n;

	if (tc_hog_start(&other, 64, 1, (uid_t)-1, (gid_t)-1) || tc_daemon_start(&d, opts)) {
		CHECK(0, "a daemon with 4 jobs a node, and a second memhog");
		return;
	}
	c = tc_connect(d.sock);
	sub = subscribed(&d);
	n = snprintf(buf, sizeof(buf),
		     "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":1}\n"
		     "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":1}\n"
		     "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":1}\n",
		     h->pid, h->pid, other.pid);
	CHECK(!tc_write(c, buf, (size_t)n), "three moves");
	r1 = tc_read(c, WAIT_MS);
	r2 = tc_read(c, WAIT_MS);
	r3 = tc_read(c, WAIT_MS);
	j1 = tc_get(r1, "job");
	j2 = tc_get(r2, "job");
	j3 = tc_get(r3, "job");
	CHECK(j1 && j2 && j3, "three jobs: %s %s %s", tc_error(r1), tc_error(r2), tc_error(r3));
	printf("same process: job %lld %s, job %lld %s (waits for %lld); another: %s\n",
	       (long long)tc_int(j1, "id"), tc_str(j1, "state"), (long long)tc_int(j2, "id"),
	       tc_str(j2, "state"), (long long)tc_int(j2, "waits_for"), tc_str(j3, "state"));
	/* Queued, it says behind which job; the first may have ended before
	 * the second came (under valgrind the plan is slow): then it runs. */
	if (!strcmp(tc_str(j2, "state"), "queued"))
		CHECK(tc_int(j2, "waits_for") == tc_int(j1, "id"),
		      "the second move of pid %d waits for the first: waits_for %lld", h->pid,
		      (long long)tc_int(j2, "waits_for"));
	CHECK(tc_get(j1, "waits_for") == NULL && tc_get(j3, "waits_for") == NULL,
	      "the first, and another process's move, wait for nothing");
	/* The subscriber sees each change in the order memmigd made it: the
	 * second move of the process runs only after the first ended. */
	for (int ended = 0; ended < 3; ) {
		struct json_object *ev = tc_read(sub, WAIT_MS), *job = tc_get(ev, "job");
		const char *state = tc_str(job, "state");
		int64_t id = tc_int(job, "id");

		if (!ev) {
			CHECK(0, "the jobs' events: %d of 3 ended", ended);
			break;
		}
		if (id == tc_int(j1, "id") && strcmp(state, "queued") && strcmp(state, "running"))
			first_ended = true;
		if (id == tc_int(j2, "id") && !strcmp(state, "running"))
			CHECK(first_ended, "job %lld of pid %d runs while job %lld moves it",
			      (long long)id, h->pid, (long long)tc_int(j1, "id"));
		ended += job && strcmp(state, "queued") && strcmp(state, "running");
		json_object_put(ev);
	}
	for (int i = 0; i < 3; i++) {
		int64_t id = tc_int(i == 0 ? j1 : i == 1 ? j2 : j3, "id");

		end = tc_wait_job(c, id, WAIT_MS);
		CHECK(job_ok(end) && tc_get(end, "waits_for") == NULL, "job %lld: %s %s",
		      (long long)id, tc_str(end, "state"), tc_str(end, "message"));
		json_object_put(end);
	}
	tc_close(sub);
	json_object_put(r1);
	json_object_put(r2);
	json_object_put(r3);
	tc_close(c);
	CHECK(tc_daemon_stop(&d) == 0, "memmigd exit status");
	CHECK(tc_hog_verify(h) && tc_hog_verify(&other), "memhogs' data after one move a process");
	CHECK(tc_hog_stop(&other), "the second memhog exits clean");
}

/* The job belongs to the daemon: it goes on without its client. */
static void disconnect(struct tc_daemon *d, struct tc_hog *h)
{
	struct tc_conn *c = tc_connect(d->sock), *c2;
	struct json_object *r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", h->pid);
	int64_t id = tc_int(tc_get(r, "job"), "id");

	CHECK(id > 0, "move then disconnect: %s", tc_error(r));
	tc_close(c);
	json_object_put(r);
	c2 = tc_connect(d->sock);
	r = tc_wait_job(c2, id, WAIT_MS);
	CHECK(job_ok(r), "job of a gone client: %s %s", tc_str(r, "state"), tc_str(r, "message"));
	json_object_put(r);
	/* And a client gone before it even read the reply. */
	c = tc_connect(d->sock);
	snprintf(c->buf, sizeof(c->buf), "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}\n", h->pid);
	tc_write(c, c->buf, strlen(c->buf));
	tc_close(c);
	r = tc_call(c2, "{\"op\":\"jobs\"}");
	CHECK(json_object_array_length(tc_get(r, "jobs")) >= 5, "jobs listed: %zu",
	      json_object_array_length(tc_get(r, "jobs")));
	json_object_put(r);
	tc_close(c2);
	CHECK(tc_hog_verify(h), "memhog's data after disconnects");
}

/*
 * The target dies while its job runs (SIGKILL once the job is running):
 * whichever step notices first (smaps, pagemap, move_pages), the job
 * says the process is gone -- ESRCH -- not EINVAL or another error.
 */
static void killed_target(struct tc_conn *c)
{
	for (int i = 0; i < 4; i++) {
		struct json_object *r, *job = NULL;
		struct tc_hog h;
		int64_t id;

		if (tc_hog_start(&h, 512, 64, (uid_t)-1, (gid_t)-1)) {
			CHECK(0, "a memhog to kill");
			return;
		}
		r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":1}", h.pid);
		id = tc_int(tc_get(r, "job"), "id");
		json_object_put(r);
		/* Killed a little later each time: in planning, mid-move. */
		for (int k = 0; k < 200 * i + 1; k++) {
			json_object_put(job);
			job = tc_call(c, "{\"op\":\"job\",\"job\":%lld}", (long long)id);
			if (strcmp(tc_str(tc_get(job, "job"), "state"), "queued"))
				break;
		}
		json_object_put(job);
		usleep(i * 20000);
		kill(h.pid, SIGKILL);
		waitpid(h.pid, NULL, 0);
		fclose(h.out);
		job = tc_wait_job(c, id, WAIT_MS);
		printf("  killed after %d ms: %s %s (%s)\n", i * 20, tc_str(job, "state"),
		       tc_str(job, "result"), tc_str(job, "message"));
		CHECK(!strcmp(tc_str(job, "result"), "ESRCH") || !strcmp(tc_str(job, "result"), "OK"),
		      "target killed: %s %s", tc_str(job, "result"), tc_str(job, "message"));
		json_object_put(job);
	}
}

/* A final state: a job event after it would be news. */
static bool final_state(const char *state)
{
	return !strcmp(state, "done") || !strcmp(state, "cancelled") ||
	       !strcmp(state, "failed");
}

/*
 * SIGTERM while one job runs and two wait: memmigd exits 0 after the
 * running one's units, and a subscriber hears how each job ended, then
 * memmigd's own "stopping" event, then EOF -- the events are sent before
 * the connections close, not dropped with them.
 */
static void sigterm(struct tc_hog *h)
{
	static const char *const opts[] = { "--max-jobs-per-node", "1", NULL };
	const char *last[3] = { NULL, NULL, NULL };
	struct json_object *r, *o, *lines[64];
	struct tc_daemon d;
	struct tc_conn *c, *sub;
	int64_t ids[3] = { 0, 0, 0 };
	int rc, n = 0, stop_at = -1;
	bool running = false;

	if (tc_daemon_start(&d, opts)) {
		CHECK(0, "second daemon");
		return;
	}
	c = tc_connect(d.sock);
	sub = subscribed(&d);
	for (int i = 0; i < 3; i++) {
		r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":1}", h->pid);
		CHECK(!strcmp(tc_error(r), "OK"), "move before SIGTERM: %s", tc_error(r));
		ids[i] = tc_int(tc_get(r, "job"), "id");
		json_object_put(r);
	}
	/* SIGTERM once the first job runs (its events in lines[]). */
	while (!running && n < 64 && (lines[n] = tc_read(sub, 5000))) {
		o = tc_get(lines[n++], "job");
		running = o && tc_int(o, "id") == ids[0] && !strcmp(tc_str(o, "state"), "running");
	}
	CHECK(running, "job %lld running before SIGTERM", (long long)ids[0]);
	rc = tc_daemon_stop(&d);
	CHECK(rc == 0, "memmigd exit status %d after SIGTERM during jobs", rc);
	while (n < 64 && (lines[n] = tc_read(sub, 5000)))
		n++;
	for (int i = 0; i < n; i++) {
		const char *ev = tc_str(lines[i], "event");

		o = tc_get(lines[i], "job");
		for (int k = 0; o && k < 3; k++)
			if (tc_int(o, "id") == ids[k])
				last[k] = tc_str(o, "state");
		if (!strcmp(ev, "memmigd") && !strcmp(tc_str(tc_get(lines[i], "memmigd"), "state"),
						       "stopping"))
			stop_at = i;
	}
	for (int k = 0; k < 3; k++)
		CHECK(last[k] && final_state(last[k]),
		      "job %lld's last event before EOF: %s, not a final state",
		      (long long)ids[k], last[k] ? last[k] : "(none)");
	CHECK(stop_at >= 0 && stop_at == n - 1,
	      "memmigd's stopping event last before EOF: at %d of %d lines", stop_at, n);
	CHECK(tc_closed(sub, 5000), "subscriber closed by the stop");
	for (int i = 0; i < n; i++)
		json_object_put(lines[i]);
	tc_close(sub);
	CHECK(tc_closed(c, 5000), "client closed by the stop");
	tc_close(c);
	CHECK(tc_hog_verify(h), "memhog's data after SIGTERM");
}

int main(void)
{
	static const char *const opts[] = { "--max-jobs-per-node", "1", NULL };
	struct tc_daemon d;
	struct tc_hog h;
	struct tc_conn *c;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tc_hog_start(&h, 256, 64, (uid_t)-1, (gid_t)-1))
		return 1;
	if (tc_daemon_start(&d, opts)) {
		tc_hog_stop(&h);
		return 1;
	}
	CHECK(tc_hog_verify(&h), "memhog's data before");
	c = tc_connect(d.sock);
	move_whole(c, &h);
	move_range(c, &h);
	cancel_jobs(c, &h);
	killed_target(c);
	tc_close(c);
	disconnect(&d, &h);
	rc = tc_daemon_stop(&d);
	CHECK(rc == 0, "memmigd exit status %d", rc);
	one_move_per_process(&h);
	sigterm(&h);
	CHECK(tc_hog_stop(&h), "memhog exits clean");
	return tc_summary();
}
