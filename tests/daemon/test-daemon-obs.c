/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's observability through a real daemon: the status op and its
 * limits; events of real moves of memhog and of domains, in order, to a
 * subscriber, none of root's jobs to another user's; the counters after
 * those moves and after refusals of each reason (bad input, permission,
 * limits, not found), in the metrics op's text (checked strictly, and by
 * promtool where installed), its JSON, and the --metrics-file; at most
 * EVENTS_MAX_SUBSCRIBERS subscribers; a subscriber that does not read is
 * dropped while the others go on.  And a --metrics-file in a directory
 * another user may write, who plants a FIFO, links and files of their own
 * at the names a writer might use (issue 34): memmigd goes on answering,
 * stops on SIGTERM, and its metrics file is its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/* Runs fn(arg) as nobody in a child: its exit status (0: done). */
static int run_as_nobody(int (*fn)(void *arg), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(tc_drop_to(NOBODY, NOBODY) ? 126 : fn(arg));
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ?
	       WEXITSTATUS(status) : -1;
}

struct plant {
	const char *dir, *canary;
};

/* The names a metrics writer might take beside DIR/memmigd.prom: the
 * old PATH.tmp as a FIFO, links to root's canary at others (the target
 * itself too), a file of nobody's. */
static const char *const plant_links[] = {
	".memmigd.prom.tmp", "memmigd.prom.new", "memmigd.prom~", ".memmigd.prom", "memmigd.prom",
};

static int plant(void *arg)
{
	const struct plant *p = arg;
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/memmigd.prom.tmp", p->dir);
	if (mkfifo(path, 0666))
		return 1;
	for (size_t i = 0; i < sizeof(plant_links) / sizeof(plant_links[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", p->dir, plant_links[i]);
		if (symlink(p->canary, path))
			return 2;
	}
	snprintf(path, sizeof(path), "%s/memmigd.prom.part", p->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
	if (fd < 0 || write(fd, "nobody's\n", 9) != 9)
		return 3;
	close(fd);
	return 0;
}

/* The FIFO gives way to a plain file of nobody's at the old name. */
static int plant_file(void *arg)
{
	const struct plant *p = arg;
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/memmigd.prom.tmp", p->dir);
	if (unlink(path))
		return 1;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
	if (fd < 0 || write(fd, "nobody's\n", 9) != 9)
		return 2;
	close(fd);
	return 0;
}

/* Waits (5 s at most) for path to be a file other than inode not_ino;
 * its stat in *st; whether it came. */
static bool new_file(const char *path, ino_t not_ino, struct stat *st)
{
	for (int i = 0; i < 50; i++) {
		if (!lstat(path, st) && st->st_ino != not_ino && !S_ISLNK(st->st_mode))
			return true;
		usleep(100000);
	}
	return !lstat(path, st) && st->st_ino != not_ino;
}

static void check_owned(const char *what, const char *path, const struct stat *st)
{
	char *t = read_file(path);

	CHECK(S_ISREG(st->st_mode) && st->st_uid == 0 && (st->st_mode & 07777) == 0644,
	      "%s: %s is a file of root's, 0644 (mode %o, uid %u)", what, path,
	      (unsigned int)st->st_mode, (unsigned int)st->st_uid);
	CHECK(t && strstr(t, "memmigd_requests_total"), "%s: %s holds the metrics", what, path);
	free(t);
}

/* Whether a file of the plant's still is what nobody put there. */
static bool still_nobodys(const char *dir, const char *name)
{
	char path[256], *t;
	struct stat st;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	t = read_file(path);
	ok = !lstat(path, &st) && S_ISREG(st.st_mode) && st.st_uid == NOBODY && t &&
	     !strcmp(t, "nobody's\n");
	free(t);
	return ok;
}

/*
 * --metrics-file in a directory nobody may write (root's, group nogroup,
 * 0775, no sticky bit: a collector's group).  Before memmigd starts,
 * nobody makes the old temporary name, PATH.tmp, a FIFO -- which held
 * memmigd's loop in open(2) for good, no client answered and SIGTERM
 * went unread -- and links to a file of root's at other names.  memmigd
 * must answer, write its metrics file as root's own (never through a
 * link, never nobody's file renamed into place), leave the canary as it
 * was, and stop on SIGTERM (within the harness's bound, 30 s, or 120 s
 * under valgrind: the old memmigd never did).
 */
static void metrics_file_planted(void)
{
	char dir[] = "/tmp/memmigd-obs-m.XXXXXX", cdir[] = "/tmp/memmigd-obs-c.XXXXXX";
	char path[256], canary[256], *t;
	struct plant p = { dir, canary };
	struct tc_daemon d2;
	struct tc_conn *c;
	struct json_object *r;
	struct stat st;
	ino_t first;
	int fd, left = 0;
	DIR *dp;

	if (!mkdtemp(dir) || !mkdtemp(cdir) || chown(dir, 0, NOBODY) || chmod(dir, 0775)) {
		CHECK(0, "scratch directories: %s", strerror(errno));
		return;
	}
	snprintf(canary, sizeof(canary), "%s/canary", cdir);
	fd = open(canary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, "canary\n", 7) == 7, "canary");
	if (fd >= 0)
		close(fd);
	CHECK(run_as_nobody(plant, &p) == 0, "nobody plants a FIFO, links and a file in %s", dir);

	snprintf(path, sizeof(path), "%s/memmigd.prom", dir);
	if (tc_daemon_start(&d2, (const char *const[]){ "--metrics-file", path, NULL })) {
		CHECK(0, "memmigd starts with a FIFO at %s.tmp", path);
		return;
	}
	c = tc_connect(d2.sock);
	r = c ? tc_call(c, "{\"op\":\"status\"}") : NULL;
	CHECK(r && !strcmp(tc_error(r), "OK"), "memmigd answers with a FIFO at %s.tmp: %s", path,
	      r ? tc_error(r) : "no reply");
	json_object_put(r);
	CHECK(new_file(path, 0, &st), "the metrics file %s is written", path);
	check_owned("with the FIFO planted", path, &st);
	first = st.st_ino;

	/* A plain file of nobody's where the FIFO was; a counter changes. */
	CHECK(run_as_nobody(plant_file, &p) == 0, "nobody puts a file of its own at %s.tmp", path);
	r = c ? tc_call(c, "{\"op\":\"status\"}") : NULL;
	CHECK(r && !strcmp(tc_error(r), "OK"), "memmigd answers: %s", r ? tc_error(r) : "none");
	json_object_put(r);
	CHECK(new_file(path, first, &st), "the metrics file is written again");
	check_owned("with nobody's file planted", path, &st);
	CHECK(still_nobodys(dir, "memmigd.prom.tmp"), "nobody's file at the old name is untouched");
	CHECK(still_nobodys(dir, "memmigd.prom.part"), "nobody's other file is untouched");
	for (size_t i = 0; i < sizeof(plant_links) / sizeof(plant_links[0]) - 1; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, plant_links[i]);
		CHECK(!lstat(path, &st) && S_ISLNK(st.st_mode), "the link %s is still there", path);
	}
	t = read_file(canary);
	CHECK(t && !strcmp(t, "canary\n") && !stat(canary, &st) && st.st_uid == 0,
	      "root's canary is as it was: '%s'", t ? t : "(unreadable)");
	free(t);
	if (c)
		tc_close(c);
	CHECK(tc_daemon_stop(&d2) == 0, "memmigd stops on SIGTERM");

	/* What is left: the plant, the metrics file, no temporary file. */
	dp = opendir(dir);
	for (struct dirent *e; dp && (e = readdir(dp));) {
		bool planted = !strcmp(e->d_name, "memmigd.prom.tmp") ||
			       !strcmp(e->d_name, "memmigd.prom.part") ||
			       !strcmp(e->d_name, "memmigd.prom");

		for (size_t i = 0; i < sizeof(plant_links) / sizeof(plant_links[0]); i++)
			planted |= !strcmp(e->d_name, plant_links[i]);
		if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
			continue;
		if (!planted) {
			printf("  left in %s: %s\n", dir, e->d_name);
			left++;
		}
		unlinkat(dirfd(dp), e->d_name, 0);
	}
	if (dp)
		closedir(dp);
	CHECK(left == 0, "no temporary file left in %s (%d)", dir, left);
	rmdir(dir);
	unlink(canary);
	rmdir(cdir);
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
	metrics_file_planted();
	return tc_summary();
}
