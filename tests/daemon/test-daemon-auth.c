// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Who may move whom, through memmigd as root: a client running as nobody
 * cannot move root's memhog (EPERM, and root's memhog's data and job list
 * unchanged), cannot see or cancel root's job, cannot register domains,
 * cannot move its own process once it is not dumpable -- but can move a
 * memhog that runs as nobody, and see and cancel that job.
 * Needs root (to be root, and to become nobody); skips otherwise.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

#define NOBODY	65534

static struct tc_daemon d;

static int count_jobs(struct tc_conn *c, int64_t uid)
{
	struct json_object *r = tc_call(c, "{\"op\":\"jobs\"}");
	struct json_object *a = tc_get(r, "jobs");
	int n = 0;

	for (size_t i = 0; a && i < json_object_array_length(a); i++)
		n += uid < 0 || tc_int(json_object_array_get_idx(a, i), "uid") == uid;
	json_object_put(r);
	return n;
}

/* A child of nobody's that made itself not dumpable; pid, or -1. */
static pid_t undumpable(void)
{
	int p[2];
	pid_t pid;
	char b;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (tc_drop_to(NOBODY, NOBODY) || prctl(PR_SET_DUMPABLE, 0))
			_exit(1);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &b, 1) != 1)
		pid = -1;
	close(p[0]);
	return pid;
}

/* What nobody tries; runs in a child that became nobody.  Its exit
 * status is its number of failed checks. */
static int as_nobody(pid_t root_hog, int64_t root_job, pid_t own_hog, pid_t secret)
{
	struct tc_conn *c = tc_connect(d.sock);
	struct json_object *r, *job;

	CHECK(c, "nobody connects (group nogroup)");
	if (!c)
		return 1;
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", root_hog);
	CHECK(!strcmp(tc_error(r), "EPERM"), "nobody moves root's process: %s", tc_error(r));
	printf("message: %s\n", tc_str(r, "message"));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"move\",\"pid\":1,\"to_node\":0}");
	CHECK(!strcmp(tc_error(r), "EPERM"), "nobody moves pid 1: %s", tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", secret);
	CHECK(!strcmp(tc_error(r), "EPERM"), "nobody moves its undumpable process: %s %s",
	      tc_error(r), tc_str(r, "message"));
	json_object_put(r);
	CHECK(count_jobs(c, -1) == 0, "nobody sees no job of root's");
	r = tc_call(c, "{\"op\":\"job\",\"job\":%lld}", (long long)root_job);
	CHECK(!strcmp(tc_error(r), "EPERM"), "nobody reads root's job: %s", tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"cancel\",\"job\":%lld}", (long long)root_job);
	CHECK(!strcmp(tc_error(r), "EPERM"), "nobody cancels root's job: %s", tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"register\",\"name\":\"vm\",\"pid\":%d}", own_hog);
	CHECK(!strcmp(tc_error(r), "EPERM"), "nobody registers a domain: %s", tc_error(r));
	json_object_put(r);
	/* Its own process: yes. */
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", own_hog);
	CHECK(!strcmp(tc_error(r), "OK"), "nobody moves its own process: %s %s", tc_error(r),
	      tc_str(r, "message"));
	job = tc_wait_job(c, tc_int(tc_get(r, "job"), "id"), 60000);
	CHECK(job && !strcmp(tc_str(job, "state"), "done") && tc_int(job, "uid") == NOBODY,
	      "nobody's job: %s uid %lld", tc_str(job, "state"), (long long)tc_int(job, "uid"));
	json_object_put(job);
	json_object_put(r);
	CHECK(count_jobs(c, -1) == 1 && count_jobs(c, NOBODY) == 1, "nobody sees its one job");
	tc_close(c);
	return (int)tc_fails;
}

int main(void)
{
	static const char *const opts[] = { "--group", "nogroup", NULL };
	struct tc_hog root_hog, own_hog;
	struct json_object *r;
	struct tc_conn *c;
	int64_t root_job;
	pid_t child, secret;
	int status, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("SKIP: needs root, to be root and to become nobody\n");
		return TC_SKIP;
	}
	if (tc_hog_start(&root_hog, 16, 4, (uid_t)-1, (gid_t)-1))
		return 1;
	if (tc_hog_start(&own_hog, 16, 4, NOBODY, NOBODY) || tc_daemon_start(&d, opts)) {
		tc_hog_stop(&root_hog);
		return 1;
	}
	secret = undumpable();
	CHECK(secret > 0, "an undumpable process of nobody's");
	c = tc_connect(d.sock);
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", root_hog.pid);
	root_job = tc_int(tc_get(r, "job"), "id");
	CHECK(root_job > 0, "root's job: %s", tc_error(r));
	json_object_put(r);
	json_object_put(tc_wait_job(c, root_job, 60000));

	child = fork();
	if (child == 0) {
		if (tc_drop_to(NOBODY, NOBODY)) {
			printf("FAIL: could not become nobody\n");
			_exit(1);
		}
		_exit(as_nobody(root_hog.pid, root_job, own_hog.pid, secret));
	}
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "nobody's checks: %d failed",
	      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	/* Root's process untouched by nobody: one job, its own, and its data. */
	CHECK(count_jobs(c, 0) == 1, "root's jobs: %d", count_jobs(c, 0));
	CHECK(count_jobs(c, -1) == 2, "root sees both jobs: %d", count_jobs(c, -1));
	CHECK(tc_hog_verify(&root_hog), "root's memhog's data");
	CHECK(tc_hog_verify(&own_hog), "nobody's memhog's data");
	tc_close(c);
	kill(secret, SIGKILL);
	waitpid(secret, NULL, 0);
	rc = tc_daemon_stop(&d);
	CHECK(rc == 0, "memmigd exit status %d", rc);
	CHECK(tc_hog_stop(&root_hog) && tc_hog_stop(&own_hog), "memhogs exit clean");
	return tc_summary();
}
