/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's observability through a real daemon: the status op and its
 * limits; events of real moves of memhog and of domains, in order, to a
 * subscriber, none of root's jobs to another user's; the counters after
 * those moves and after refusals of each reason (bad input, permission,
 * limits, not found), in the metrics op's text (checked strictly, and by
 * promtool where installed), its JSON, and the --metrics-file; at most
 * EVENTS_MAX_SUBSCRIBERS subscribers; a subscriber that does not read is
 * dropped while the others go on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"
#include "prom-check.h"

#define NOBODY		65534
#define WAIT_MS		60000
#define MAX_SUBSCRIBERS	16	/* EVENTS_MAX_SUBSCRIBERS */

static struct tc_daemon d;
static char metrics_path[128];

static void check_status(struct tc_conn *c)
{
	struct json_object *r = tc_call(c, "{\"op\":\"status\",\"tag\":5}");
	struct json_object *limits = tc_get(r, "limits");

	CHECK(!strcmp(tc_error(r), "OK") && tc_int(r, "tag") == 5, "status: %s", tc_error(r));
	CHECK(tc_str(r, "version") && tc_str(r, "version")[0], "status has the version");
	CHECK(tc_int(r, "pid") == d.pid, "status pid %lld", (long long)tc_int(r, "pid"));
	CHECK(json_object_get_double(tc_get(r, "uptime_s")) >= 0, "uptime");
	CHECK(!strcmp(tc_str(r, "libvirt_state"), "off"), "libvirt off: %s",
	      tc_str(r, "libvirt_state"));
	CHECK(!strcmp(tc_str(r, "socket"), d.sock), "socket");
	CHECK(!strcmp(tc_str(r, "metrics_file"), metrics_path), "metrics_file");
	CHECK(tc_int(limits, "max_jobs") == 8 && tc_int(limits, "max_jobs_per_node") == 2 &&
	      tc_int(limits, "max_clients") == 256 && tc_int(limits, "max_subscribers") ==
	      MAX_SUBSCRIBERS && tc_int(limits, "idle_timeout_s") == 300,
	      "limits: %s", json_object_to_json_string(limits));
	/* Root's share of the subscribers, one user's, and a backlog that
	 * holds the longest event twice over. */
	CHECK(tc_int(limits, "root_subscribers") == 4 &&
	      tc_int(limits, "max_subscribers_per_user") == 4 &&
	      tc_int(limits, "bytes_event_max") > 0 &&
	      tc_int(limits, "bytes_subscriber_backlog") >= 2 * tc_int(limits, "bytes_event_max") &&
	      tc_int(limits, "max_failed_ranges") == 64,
	      "subscriber and report limits: %s", json_object_to_json_string(limits));
	json_object_put(r);
}

/* The next event of type on sub (others skipped), or NULL. */
static struct json_object *next_event(struct tc_conn *sub, const char *type)
{
	for (;;) {
		struct json_object *ev = tc_read(sub, WAIT_MS);

		if (!ev || !strcmp(tc_str(ev, "event"), type))
			return ev;
		json_object_put(ev);
	}
}

/* Job id's events: queued, running, then done, in that order. */
static void check_job_events(struct tc_conn *sub, int64_t id)
{
	static const char *const states[] = { "queued", "running", "done" };

	for (int i = 0; i < 3; i++) {
		struct json_object *ev = next_event(sub, "job");
		struct json_object *job = tc_get(ev, "job");

		CHECK(job && tc_int(job, "id") == id && !strcmp(tc_str(job, "state"), states[i]),
		      "job %lld event %d: %s", (long long)id, i,
		      ev ? json_object_to_json_string(ev) : "none");
		CHECK(tc_int(ev, "time") > 1000000000, "event time");
		json_object_put(ev);
	}
}

/* A move of memhog through memmigd; the bytes its report says moved. */
static int64_t move(struct tc_conn *c, struct tc_conn *sub, struct tc_hog *h)
{
	struct json_object *r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", h->pid);
	int64_t id = tc_int(tc_get(r, "job"), "id"), moved;
	struct json_object *job;

	CHECK(!strcmp(tc_error(r), "OK"), "move: %s %s", tc_error(r), tc_str(r, "message"));
	json_object_put(r);
	job = tc_wait_job(c, id, WAIT_MS);
	CHECK(job && !strcmp(tc_str(job, "state"), "done"), "job %lld done", (long long)id);
	moved = tc_int(tc_get(job, "report"), "bytes_moved");
	CHECK(moved >= 0, "the report has bytes_moved");
	json_object_put(job);
	check_job_events(sub, id);
	CHECK(tc_hog_verify(h), "memhog's data after the move");
	return moved;
}

static void check_domain_events(struct tc_conn *c, struct tc_conn *sub)
{
	static const char *const states[] = { "registered", "unregistered" };
	struct json_object *r;

	r = tc_call(c, "{\"op\":\"register\",\"name\":\"obs-vm\",\"pid\":%d}", getpid());
	CHECK(!strcmp(tc_error(r), "OK"), "register: %s", tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"unregister\",\"name\":\"obs-vm\"}");
	json_object_put(r);
	for (int i = 0; i < 2; i++) {
		struct json_object *ev = next_event(sub, "domain");
		struct json_object *dom = tc_get(ev, "domain");

		CHECK(dom && !strcmp(tc_str(dom, "name"), "obs-vm") &&
		      !strcmp(tc_str(dom, "state"), states[i]), "domain event %d: %s", i,
		      ev ? json_object_to_json_string(ev) : "none");
		json_object_put(ev);
	}
}

/* Root's: two bad inputs and a job that is not there. */
static void refuse_as_root(struct tc_conn *c)
{
	struct json_object *r;

	r = tc_call(c, "{\"op\":\"bogus\"}");
	CHECK(!strcmp(tc_error(r), "EOPNOTSUPP"), "bogus op: %s", tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"move\",\"pid\":\"x\",\"to_node\":0}");
	CHECK(!strcmp(tc_error(r), "EINVAL"), "pid a string: %s", tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"job\",\"job\":999}");
	CHECK(!strcmp(tc_error(r), "ESRCH"), "no job 999: %s", tc_error(r));
	json_object_put(r);
}

/*
 * As nobody, in a child: two refusals for permission (a root-only op,
 * root's process), one for limits (the 65th connection of one uid), and
 * a subscriber that hears nothing of the job root runs meanwhile, but the
 * domain root registers after it.  ready: written once subscribed; go:
 * read before the first event.  The exit status is the failed checks.
 */
static int as_nobody(pid_t root_hog, int ready, int go)
{
	struct tc_conn *c = tc_connect(d.sock), *sub = tc_connect(d.sock), *more[64];
	struct json_object *r, *ev;
	char b = 0;
	int n = 0;

	if (!c || !sub)
		return 1;
	r = tc_call(sub, "{\"op\":\"subscribe\"}");
	CHECK(!strcmp(tc_error(r), "OK"), "nobody subscribes: %s", tc_error(r));
	json_object_put(r);
	if (write(ready, &b, 1) != 1)
		return 1;
	r = tc_call(c, "{\"op\":\"register\",\"name\":\"x\",\"pid\":1}");
	CHECK(!strcmp(tc_error(r), "EPERM"), "nobody registers: %s", tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", root_hog);
	CHECK(!strcmp(tc_error(r), "EPERM"), "nobody moves root's memhog: %s", tc_error(r));
	json_object_put(r);
	/* Two connections open: 62 more, then the 65th is one too many. */
	while (n < 62 && (more[n] = tc_connect(d.sock)))
		n++;
	CHECK(n == 62, "62 more connections: %d", n);
	more[n] = tc_connect(d.sock);
	r = more[n] ? tc_read(more[n], WAIT_MS) : NULL;
	CHECK(!strcmp(tc_error(r), "EBUSY"), "the 65th connection of nobody: %s", tc_error(r));
	json_object_put(r);
	for (n++; n--;)
		tc_close(more[n]);
	if (read(go, &b, 1) != 1)
		return 1;
	ev = tc_read(sub, WAIT_MS);
	CHECK(!strcmp(tc_str(ev, "event"), "domain"), "nobody's first event is the domain, "
	      "none of root's job: %s", ev ? json_object_to_json_string(ev) : "none");
	json_object_put(ev);
	tc_close(sub);
	tc_close(c);
	return (int)tc_fails;
}

/* The refusals of nobody, and root's third move while nobody listens. */
static int64_t refuse_as_nobody(struct tc_conn *c, struct tc_conn *sub, struct tc_hog *h)
{
	int ready[2], go[2], status;
	int64_t moved = 0;
	pid_t child;
	char b = 0;

	if (pipe(ready) || pipe(go))
		return 0;
	fflush(stdout);
	child = fork();
	if (child == 0) {
		if (tc_drop_to(NOBODY, NOBODY)) {
			printf("FAIL: could not become nobody\n");
			_exit(1);
		}
		tc_fails = 0;
		_exit(as_nobody(h->pid, ready[1], go[0]));
	}
	if (read(ready[0], &b, 1) == 1) {
		moved = move(c, sub, h);
		json_object_put(tc_call(c, "{\"op\":\"register\",\"name\":\"nobody-sees\","
					"\"pid\":%d}", getpid()));
	}
	if (write(go[1], &b, 1) != 1)
		kill(child, SIGKILL);
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "nobody's checks: %d failed",
	      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	for (int i = 0; i < 2; i++) {
		close(ready[i]);
		close(go[i]);
	}
	return moved;
}

/* The 17th subscriber is refused (limits); the others are closed again. */
static void too_many_subscribers(void)
{
	struct tc_conn *subs[MAX_SUBSCRIBERS];
	struct json_object *r;
	int n = 0;

	/* One subscriber is open already. */
	for (; n < MAX_SUBSCRIBERS; n++) {
		subs[n] = tc_connect(d.sock);
		r = subs[n] ? tc_call(subs[n], "{\"op\":\"subscribe\"}") : NULL;
		if (strcmp(tc_error(r), "OK")) {
			json_object_put(r);
			break;
		}
		json_object_put(r);
	}
	CHECK(n == MAX_SUBSCRIBERS - 1, "%d more subscribers, the last refused", n);
	r = tc_call(subs[n], "{\"op\":\"status\"}");
	CHECK(tc_int(r, "subscribers") == MAX_SUBSCRIBERS, "status: %lld subscribers",
	      (long long)tc_int(r, "subscribers"));
	json_object_put(r);
	for (int i = 0; i <= n && i < MAX_SUBSCRIBERS; i++)
		tc_close(subs[i]);
}

static char *metrics_text(struct tc_conn *c, struct json_object **json)
{
	struct json_object *r = tc_call(c, "{\"op\":\"metrics\"}");
	char *text = strdup(tc_str(r, "text") ? tc_str(r, "text") : "");

	CHECK(!strcmp(tc_error(r), "OK"), "metrics: %s", tc_error(r));
	*json = json_object_get(tc_get(r, "metrics"));
	json_object_put(r);
	return text;
}

static void check_format(const char *what, const char *text)
{
	char why[256] = "", cmd[256];
	FILE *p;

	CHECK(prom_check(text, why, sizeof(why)), "%s: not the text format: %s", what, why);
	if (system("command -v promtool >/dev/null 2>&1")) {
		printf("promtool is not installed (apt-get install prometheus): the strict check only\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "promtool check metrics");
	p = popen(cmd, "w");
	if (p) {
		fputs(text, p);
		CHECK(pclose(p) == 0, "%s: promtool check metrics failed", what);
	}
}

static double json_value(struct json_object *m, const char *family, int idx)
{
	struct json_object *s = json_object_array_get_idx(tc_get(tc_get(m, family), "samples"),
							  (size_t)idx);

	return s ? json_object_get_double(tc_get(s, "value")) : NAN;
}

#define VALUE(text, sample) prom_value(text, sample)

static void check_counters(const char *what, const char *t, int64_t moved)
{
	CHECK(VALUE(t, "memmigd_jobs_created_total") == 3, "%s: 3 jobs created: %g", what,
	      VALUE(t, "memmigd_jobs_created_total"));
	CHECK(VALUE(t, "memmigd_jobs_ended_total{state=\"done\"}") == 3, "%s: 3 done", what);
	CHECK(VALUE(t, "memmigd_moved_bytes_total") == (double)moved,
	      "%s: moved bytes %g are the reports' %lld", what,
	      VALUE(t, "memmigd_moved_bytes_total"), (long long)moved);
	CHECK(VALUE(t, "memmigd_job_duration_seconds_count") == 3, "%s: 3 durations", what);
	/* Limits: the 65th connection of nobody and the 17th subscriber. */
	static const struct { const char *reason; double n; } refused[] = {
		{ "bad_input", 2 }, { "permission", 2 }, { "not_found", 1 }, { "limits", 2 },
		{ "other", 0 },
	};
	char sample[96];

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		snprintf(sample, sizeof(sample), "memmigd_refused_requests_total{reason=\"%s\"}",
			 refused[i].reason);
		CHECK(VALUE(t, sample) == refused[i].n, "%s: %g refused for %s: %g", what,
		      refused[i].n, refused[i].reason, VALUE(t, sample));
	}
	CHECK(VALUE(t, "memmigd_requests_total{op=\"invalid\"}") == 2, "%s: 2 invalid requests",
	      what);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		return NULL;
	n = getdelim(&buf, &cap, '\0', f);
	fclose(f);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The file is rewritten at most once a second: 3 s to catch up. */
static void check_file(int64_t moved)
{
	char *t = NULL;

	for (int i = 0; i < 30; i++) {
		free(t);
		t = read_file(metrics_path);
		if (t && VALUE(t, "memmigd_refused_requests_total{reason=\"limits\"}") == 2)
			break;
		usleep(100000);
	}
	CHECK(t != NULL, "%s exists", metrics_path);
	if (!t)
		return;
	check_format("the metrics file", t);
	check_counters("the metrics file", t, moved);
	free(t);
}

/* Reads what c has until EOF: whether it came within timeout_ms. */
static bool drained_to_eof(struct tc_conn *c, int timeout_ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	char buf[65536];

	while (poll(&p, 1, timeout_ms) == 1) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);

		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
		if (n < 0)
			return false;
	}
	return false;
}

/*
 * A subscriber that never reads, and FLOOD domain events of ~350 bytes
 * (840 KiB: more than its socket buffer, 128 KiB, and EVENTS_MAX_BACKLOG,
 * 256 KiB): it is closed and counted, and a subscriber that reads has them
 * all.
 */
#define FLOOD 2400

static void slow_subscriber(struct tc_conn *c)
{
	struct tc_conn *slow = tc_connect(d.sock), *good = tc_connect(d.sock);
	struct json_object *r, *m;
	char name[201];
	int i, got = 0;
	char *t;

	memset(name, 'f', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	json_object_put(tc_call(slow, "{\"op\":\"subscribe\"}"));
	json_object_put(tc_call(good, "{\"op\":\"subscribe\"}"));
	for (i = 0; i < FLOOD; i++) {
		if (i % 2)
			r = tc_call(c, "{\"op\":\"unregister\",\"name\":\"%s\"}", name);
		else
			r = tc_call(c, "{\"op\":\"register\",\"name\":\"%s\",\"pid\":%d}",
				    name, getpid());
		json_object_put(r);
		/* good reads every 100 events, 35 KiB: always in time. */
		while (i % 100 == 99 && (r = tc_read(good, 1))) {
			got++;
			json_object_put(r);
		}
	}
	while (got < FLOOD && (r = tc_read(good, 5000))) {
		got++;
		json_object_put(r);
	}
	CHECK(got == FLOOD, "the subscriber that reads got %d of %d events", got, FLOOD);
	CHECK(drained_to_eof(slow, 5000), "the subscriber that does not read was closed");
	t = metrics_text(c, &m);
	CHECK(VALUE(t, "memmigd_subscribers_dropped_total") == 1, "1 subscriber dropped: %g",
	      VALUE(t, "memmigd_subscribers_dropped_total"));
	CHECK(VALUE(t, "memmigd_subscribers") == 1, "1 subscriber left: %g",
	      VALUE(t, "memmigd_subscribers"));
	json_object_put(m);
	free(t);
	tc_close(slow);
	tc_close(good);
}

int main(void)
{
	char dir[] = "/tmp/memmigd-obs.XXXXXX";
	struct tc_conn *c, *sub;
	struct json_object *m, *r;
	struct tc_hog h;
	int64_t moved;
	char *t;

	if (geteuid() != 0) {
		printf("SKIP: needs root, to refuse a second user (nobody) for permission\n");
		return TC_SKIP;
	}
	if (!mkdtemp(dir))
		return 1;
	snprintf(metrics_path, sizeof(metrics_path), "%s/memmigd.prom", dir);
	if (tc_daemon_start(&d, (const char *const[]){ "--metrics-file", metrics_path,
		"--max-jobs", "8", "--group", "nogroup", NULL }))
		return 1;
	c = tc_connect(d.sock);
	sub = tc_connect(d.sock);
	if (!c || !sub || tc_hog_start(&h, 32, 8, (uid_t)-1, 0))
		return 1;
	check_status(c);
	r = tc_call(sub, "{\"op\":\"subscribe\",\"tag\":1}");
	CHECK(!strcmp(tc_error(r), "OK") && tc_int(r, "tag") == 1, "subscribe: %s", tc_error(r));
	json_object_put(r);

	moved = move(c, sub, &h);
	moved += move(c, sub, &h);
	check_domain_events(c, sub);
	refuse_as_root(c);
	moved += refuse_as_nobody(c, sub, &h);
	too_many_subscribers();

	t = metrics_text(c, &m);
	check_format("the metrics op", t);
	check_counters("the metrics op", t, moved);
	CHECK(json_value(m, "memmigd_jobs_created_total", 0) == 3, "JSON: 3 jobs created");
	CHECK(json_value(m, "memmigd_moved_bytes_total", 0) == (double)moved, "JSON: moved bytes");
	json_object_put(m);
	free(t);
	check_file(moved);
	tc_close(sub);
	slow_subscriber(c);

	tc_close(c);
	CHECK(tc_hog_stop(&h), "memhog's last check");
	CHECK(tc_daemon_stop(&d) == 0, "memmigd exits 0");
	unlink(metrics_path);
	rmdir(dir);
	return tc_summary();
}
