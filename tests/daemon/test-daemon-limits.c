/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's room is shared among its users, and none of them can take it
 * all (each case failed before the limits):
 *  - jobs: a burst of one user's jobs does not push another user's
 *    finished job out of the list (nobody's 70 jobs pruned root's);
 *  - queued or running jobs: a user other than root gets a quarter of
 *    --max-jobs, and root always the last eighth (nobody's pipelined
 *    requests filled the table and root got EBUSY);
 *  - connections: a uid other than root holds at most 64, and the last 16
 *    of 256 places are root's (four users' idle connections locked out
 *    everyone, root included);
 *  - subscribers: a uid other than root holds at most 4 of the 16, and the
 *    last 4 are root's (nobody took all 16 for good: another user's
 *    subscribe and root's got EBUSY);
 *  - idle clients are closed after --idle-timeout; active ones stay;
 *  - out of file descriptors (RLIMIT_NOFILE), memmigd still answers the
 *    clients it has at once (each request waited 100 ms: the loop thread
 *    slept after every failed accept);
 *  - the memory of 768 jobs' plans goes back to the system once they are
 *    done (memmigd's RSS stayed where the queue had taken it);
 *  - planning the move of a process with 60000 mappings does not hold the
 *    other clients up (it ran on the loop thread: every client waited).
 * Needs root (to be root, and to become other users); skips otherwise.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

#define NOBODY	65534
#define NOGROUP	65534

static bool reply_ok(struct json_object *r)
{
	return r && !strcmp(tc_error(r), "OK");
}

/* Root's finished job is still there after 70 of nobody's. */
static void retention(struct tc_daemon *d)
{
	struct tc_hog root_hog, hog;
	struct tc_conn *c = tc_connect(d->sock);
	struct json_object *r;
	int64_t root_job;
	pid_t child;
	int status;

	if (!c || tc_hog_start(&root_hog, 4, 1, (uid_t)-1, (gid_t)-1)) {
		CHECK(0, "retention: set-up");
		return;
	}
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", root_hog.pid);
	root_job = tc_int(tc_get(r, "job"), "id");
	json_object_put(r);
	json_object_put(tc_wait_job(c, root_job, 60000));
	if (tc_hog_start(&hog, 4, 1, NOBODY, NOGROUP)) {
		CHECK(0, "nobody's memhog");
		return;
	}
	child = fork();
	if (child == 0) {
		struct tc_conn *n;
		int ok = 0;

		if (tc_drop_to(NOBODY, NOGROUP) || !(n = tc_connect(d->sock)))
			_exit(255);
		for (int i = 0; i < 70; i++) {
			struct json_object *j = tc_call(n, "{\"op\":\"move\",\"pid\":%d,"
							"\"to_node\":0}", hog.pid);

			if (reply_ok(j)) {
				ok++;
				json_object_put(tc_wait_job(n, tc_int(tc_get(j, "job"), "id"), 60000));
			}
			json_object_put(j);
		}
		_exit(ok > 200 ? 200 : ok);
	}
	waitpid(child, &status, 0);
	printf("nobody's jobs: %d done\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 70, "nobody's 70 jobs ran");
	r = tc_call(c, "{\"op\":\"job\",\"job\":%lld}", (long long)root_job);
	CHECK(reply_ok(r), "root's job after nobody's 70: %s %s", tc_error(r),
	      tc_str(r, "message"));
	json_object_put(r);
	tc_close(c);
	CHECK(tc_hog_stop(&hog) && tc_hog_stop(&root_hog), "memhogs exit clean");
}

/* $MEMMIG_MOVE_HOLD's file: while it exists, memmigd's running moves wait.
 * In a directory of its own, as test-daemon-perm's: nothing planted in
 * /tmp can hold or release them. */
static char hold_dir[] = "/tmp/memmig-limits.XXXXXX", hold_file[64];

/* nobody pipelines 8 moves at once; it gets 2 (a quarter of 8), and root
 * still gets one in.  nobody's first job is held running meanwhile: on one
 * node a move has nothing to do and ended before the third request came
 * (nobody got 3 in). */
static void job_shares(struct tc_daemon *d)
{
	struct tc_hog root_hog, hog;
	struct tc_conn *c = tc_connect(d->sock);
	struct json_object *r;
	int out[2], accepted = -1;
	pid_t child;

	if (!c || pipe(out) || tc_hog_start(&root_hog, 4, 1, (uid_t)-1, (gid_t)-1) ||
	    tc_hog_start(&hog, 16, 1, NOBODY, NOGROUP) || tc_touch(hold_file)) {
		CHECK(0, "job shares: set-up");
		return;
	}
	child = fork();
	if (child == 0) {
		struct tc_conn *n;
		char buf[4096] = "";
		int ok = 0;

		close(out[0]);
		if (tc_drop_to(NOBODY, NOGROUP) || !(n = tc_connect(d->sock)))
			_exit(255);
		for (int i = 0; i < 8; i++)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
				 "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":1}\n", hog.pid);
		tc_write(n, buf, strlen(buf));
		for (int i = 0; i < 8; i++) {
			struct json_object *j = tc_read(n, 30000);

			if (reply_ok(j))
				ok++;
			else if (i == 7)
				printf("nobody's 8th: %s\n", tc_str(j, "message"));
			json_object_put(j);
		}
		/* Root asks while nobody's jobs still run. */
		if (write(out[1], &ok, sizeof(ok)) != sizeof(ok))
			_exit(254);
		pause();
		_exit(0);
	}
	close(out[1]);
	if (read(out[0], &accepted, sizeof(accepted)) != sizeof(accepted))
		accepted = -1;
	close(out[0]);
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", root_hog.pid);
	printf("nobody got %d of 8 jobs in; root then: %s %s\n", accepted, tc_error(r),
	       tc_str(r, "message"));
	unlink(hold_file);
	CHECK(accepted == 2, "nobody's share of 8: %d", accepted);
	CHECK(reply_ok(r), "root's job beside nobody's: %s", tc_error(r));
	json_object_put(tc_wait_job(c, tc_int(tc_get(r, "job"), "id"), 60000));
	json_object_put(r);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	tc_close(c);
	CHECK(tc_hog_stop(&hog) && tc_hog_stop(&root_hog), "memhogs exit clean");
}

/* A child as uid: opens up to n connections and sends op on each (the
 * version, a subscribe); writes how many were answered OK (not refused),
 * then holds them. */
static pid_t hold(struct tc_daemon *d, uid_t uid, int n, const char *op, int wfd)
{
	pid_t pid = fork();

	if (pid == 0) {
		int ok = 0;

		if (tc_drop_to(uid, NOGROUP))
			_exit(1);
		for (int i = 0; i < n; i++) {
			struct tc_conn *c = tc_connect(d->sock);
			struct json_object *r = c ? tc_call(c, "{\"op\":\"%s\"}", op) : NULL;

			ok += reply_ok(r);
			json_object_put(r);
		}
		if (write(wfd, &ok, sizeof(ok)) != sizeof(ok))
			_exit(1);
		pause();
		_exit(0);
	}
	return pid;
}

static void conn_shares(struct tc_daemon *d)
{
	pid_t kids[4];
	int p[2], total = 0, most = 0;
	struct tc_conn *c;
	struct json_object *r;

	if (pipe(p)) {
		CHECK(0, "pipe");
		return;
	}
	for (int i = 0; i < 4; i++)
		kids[i] = hold(d, 60001 + i, 65, "version", p[1]);
	for (int i = 0; i < 4; i++) {
		int ok = 0;

		if (read(p[0], &ok, sizeof(ok)) != sizeof(ok))
			ok = -1;
		total += ok;
		most = ok > most ? ok : most;
	}
	close(p[0]);
	close(p[1]);
	c = tc_connect(d->sock);
	r = c ? tc_call(c, "{\"op\":\"version\"}") : NULL;
	printf("four users held %d connections (at most %d each); root: %s\n", total, most,
	       r ? tc_error(r) : "no connection");
	CHECK(most <= 64, "one user's connections: %d", most);
	CHECK(total <= 240, "all users' connections: %d", total);
	CHECK(reply_ok(r), "root connects beside them: %s", r ? tc_error(r) : "refused");
	json_object_put(r);
	tc_close(c);
	for (int i = 0; i < 4; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
}

/* How many subscriptions a child of hold() got, or -1. */
static int subs_got(int rfd)
{
	int ok = -1;

	if (read(rfd, &ok, sizeof(ok)) != sizeof(ok))
		ok = -1;
	return ok;
}

/*
 * nobody subscribes as often as it can (17 tries: one more than the
 * places there are); another user then gets some, and root still gets
 * its own, as many as it keeps.
 */
static void sub_shares(struct tc_daemon *d)
{
	struct tc_conn *c[4] = { 0 };
	pid_t kids[2];
	int p[2], got[2], root_ok = 0;

	if (pipe(p)) {
		CHECK(0, "pipe");
		return;
	}
	kids[0] = hold(d, NOBODY, 17, "subscribe", p[1]);
	got[0] = subs_got(p[0]);
	kids[1] = hold(d, 60001, 17, "subscribe", p[1]);
	got[1] = subs_got(p[0]);
	close(p[0]);
	close(p[1]);
	for (int i = 0; i < 4; i++) {
		struct json_object *r;

		c[i] = tc_connect(d->sock);
		r = c[i] ? tc_call(c[i], "{\"op\":\"subscribe\"}") : NULL;
		if (!reply_ok(r))
			printf("root's subscription %d: %s %s\n", i + 1, tc_error(r),
			       tc_str(r, "message"));
		root_ok += reply_ok(r);
		json_object_put(r);
	}
	printf("subscriptions: nobody got %d of 17, uid 60001 then %d of 17, root then %d of 4\n",
	       got[0], got[1], root_ok);
	CHECK(got[0] >= 1 && got[0] <= 4, "nobody's subscriptions: %d", got[0]);
	CHECK(got[1] >= 1, "another user subscribes beside nobody: %d", got[1]);
	CHECK(root_ok == 4, "root subscribes beside them: %d of 4", root_ok);
	for (int i = 0; i < 4; i++)
		tc_close(c[i]);
	for (int i = 0; i < 2; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
}

/* --idle-timeout 2: a silent client is closed, a talking one stays. */
static void idle(void)
{
	static const char *const opts[] = { "--idle-timeout", "2", NULL };
	struct tc_daemon d;
	struct tc_conn *quiet, *busy;
	bool open = true;

	if (tc_daemon_start(&d, opts)) {
		CHECK(0, "memmigd --idle-timeout 2");
		return;
	}
	quiet = tc_connect(d.sock);
	busy = tc_connect(d.sock);
	for (int i = 0; i < 8 && open; i++) {
		struct json_object *r = tc_call(busy, "{\"op\":\"version\"}");

		open = reply_ok(r);
		json_object_put(r);
		usleep(500 * 1000);
	}
	CHECK(open, "a client that talks stays connected");
	CHECK(tc_closed(quiet, 3000), "a client silent for 4 s is closed");
	tc_close(quiet);
	tc_close(busy);
	CHECK(tc_daemon_stop(&d) == 0, "memmigd exit status");
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of ten version requests' round trips on c, in ms. */
static double median_call_ms(struct tc_conn *c)
{
	double ms[10];

	for (int i = 0; i < 10; i++) {
		double t = now_ms();
		struct json_object *r = tc_call(c, "{\"op\":\"version\"}");

		ms[i] = reply_ok(r) ? now_ms() - t : 1e9;
		json_object_put(r);
	}
	qsort(ms, 10, sizeof(ms[0]), cmp_double);
	return ms[5];
}

/* memmigd with 48 file descriptors, 60 more clients waiting to be
 * accepted: a client it has gets its answers at once.  Judged beside the
 * same requests before the others came, with half the 100 ms that the
 * bug slept a request away as the margin (on a busy host both are slow). */
static void fd_exhaustion(void)
{
	struct rlimit old, low;
	struct tc_conn *first, *more[60] = { 0 };
	double base, out;
	struct tc_daemon d;
	int rc;

	/* The soft limit only: the hard one may not come back up. */
	getrlimit(RLIMIT_NOFILE, &old);
	low = (struct rlimit){ .rlim_cur = 48, .rlim_max = old.rlim_max };
	setrlimit(RLIMIT_NOFILE, &low);
	rc = tc_daemon_start(&d, NULL);
	setrlimit(RLIMIT_NOFILE, &old);
	if (rc) {
		CHECK(0, "memmigd with 48 file descriptors");
		return;
	}
	first = tc_connect(d.sock);
	base = median_call_ms(first);
	for (int i = 0; i < 60; i++)
		more[i] = tc_connect(d.sock);
	usleep(200 * 1000);
	out = median_call_ms(first);
	printf("out of file descriptors: a request answered in %.1f ms, %.1f ms before "
	       "(medians of 10)\n", out, base);
	CHECK(out < base + 50, "answers while out of file descriptors: %.1f ms, %.1f before",
	      out, base);
	for (int i = 0; i < 60; i++)
		tc_close(more[i]);
	tc_close(first);
	CHECK(tc_daemon_stop(&d) == 0, "memmigd exit status");
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* Whether any job is still queued or running. */
static bool jobs_pending(struct tc_conn *c)
{
	struct json_object *r = tc_call(c, "{\"op\":\"jobs\"}"), *a = tc_get(r, "jobs");
	bool pending = !a;

	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		const char *st = tc_str(json_object_array_get_idx(a, i), "state");

		pending |= !strcmp(st, "queued") || !strcmp(st, "running");
	}
	json_object_put(r);
	return pending;
}

/* 768 jobs queued at once, then all done: memmigd's memory comes back. */
static void memory_back(void)
{
	static const char *const opts[] = { "--max-jobs", "1024", NULL };
	long before, peak, after;
	struct tc_daemon d;
	struct tc_conn *c;
	struct tc_hog hog;
	char buf[256 * 96];
	int ok = 0;

	if (tc_hog_start(&hog, 1, 1, (uid_t)-1, (gid_t)-1) || tc_daemon_start(&d, opts)) {
		CHECK(0, "memory: set-up");
		return;
	}
	c = tc_connect(d.sock);
	before = rss_kb(d.pid);
	/* Each queued job holds an fd on its process: 768 stay well inside
	 * the usual 1024. */
	for (int batch = 0; batch < 3; batch++) {
		buf[0] = '\0';
		for (int i = 0; i < 256; i++)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
				 "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}\n", hog.pid);
		tc_write(c, buf, strlen(buf));
		for (int i = 0; i < 256; i++) {
			struct json_object *r = tc_read(c, 30000);

			if (!reply_ok(r) && ok == batch * 256 + i)
				printf("refused: %s\n", r ? json_object_to_json_string(r) : "no reply");
			ok += reply_ok(r);
			json_object_put(r);
		}
	}
	peak = rss_kb(d.pid);
	for (int i = 0; i < 600 && jobs_pending(c); i++)
		usleep(200 * 1000);
	usleep(300 * 1000);
	after = rss_kb(d.pid);
	printf("memmigd's RSS: %ld kB, %ld with %d jobs queued, %ld once they are done\n",
	       before, peak, ok, after);
	CHECK(ok == 768, "768 jobs queued: %d", ok);
	/* Queued jobs weigh little since libmemmig plans them (3 MB for 768,
	 * 15 MB before): what stays is the finished jobs memmigd keeps (64,
	 * with their reports) and glibc's cache of thread stacks, 3 MB. */
	CHECK(after - before < (peak - before) / 2 || after - before < 4096,
	      "memory back after the jobs: %ld kB more than before, of %ld",
	      after - before, peak - before);
	tc_close(c);
	CHECK(tc_daemon_stop(&d) == 0, "memmigd exit status");
	CHECK(tc_hog_stop(&hog), "memhog exits clean");
}

/* 60000 mappings, alternately read-only and writable: they do not merge. */
static int map_many(void *unused)
{
	for (int i = 0; i < 60000; i++)
		if (mmap(NULL, 4096, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			return -1;
	return 0;
}

/* While one client's move of a big process is planned, another's version
 * requests are answered at once. */
static void planning_aside(void)
{
	struct tc_daemon d;
	struct tc_conn *a, *b;
	struct json_object *r;
	double t0, worst = 0, plan;
	char line[160];
	pid_t big = tc_child_ready(map_many, NULL);

	if (big < 0 || tc_daemon_start(&d, NULL)) {
		CHECK(0, "planning: set-up");
		return;
	}
	a = tc_connect(d.sock);
	b = tc_connect(d.sock);
	snprintf(line, sizeof(line), "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}\n", big);
	t0 = now_ms();
	tc_write(a, line, strlen(line));
	usleep(20 * 1000);
	for (int i = 0; i < 5; i++) {
		double t = now_ms();

		r = tc_call(b, "{\"op\":\"version\"}");
		if (now_ms() - t > worst)
			worst = now_ms() - t;
		CHECK(reply_ok(r), "version beside a big plan");
		json_object_put(r);
	}
	r = tc_read(a, 120000);
	plan = now_ms() - t0;
	printf("a move of 60000 mappings answered in %.0f ms; meanwhile another client's "
	       "requests took %.1f ms at worst\n", plan, worst);
	CHECK(reply_ok(r), "the big move: %s %s", tc_error(r), tc_str(r, "message"));
	CHECK(worst < 100 || worst < plan / 4, "another client waited %.1f ms for a %.0f ms plan",
	      worst, plan);
	json_object_put(r);
	/* SIGTERM while two such plans are under way: both end, memmigd
	 * stops (their ends come after it stopped reading its eventfd). */
	tc_write(a, line, strlen(line));
	tc_write(b, line, strlen(line));
	usleep(50 * 1000);
	t0 = now_ms();
	CHECK(tc_daemon_stop(&d) == 0, "memmigd exit status with plans under way");
	printf("stopped with two plans under way in %.0f ms\n", now_ms() - t0);
	tc_close(a);
	tc_close(b);
	kill(big, SIGKILL);
	waitpid(big, NULL, 0);
}

int main(void)
{
	static const char *const opts[] = { "--group", "nogroup", "--max-jobs", "8",
					    "--max-jobs-per-node", "1", NULL };
	struct tc_daemon d;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("SKIP: needs root, to be root and to become other users\n");
		return TC_SKIP;
	}
	if (!mkdtemp(hold_dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(hold_file, sizeof(hold_file), "%s/hold", hold_dir);
	setenv("MEMMIG_MOVE_HOLD", hold_file, 1);
	if (tc_daemon_start(&d, opts))
		return 1;
	unsetenv("MEMMIG_MOVE_HOLD");
	retention(&d);
	job_shares(&d);
	conn_shares(&d);
	sub_shares(&d);
	CHECK(tc_daemon_stop(&d) == 0, "memmigd exit status");
	rmdir(hold_dir);
	idle();
	fd_exhaustion();
	memory_back();
	planning_aside();
	return tc_summary();
}
