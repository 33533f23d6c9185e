/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd applies move_pages(2)'s rule for as long as it acts for a
 * client, not only when the request comes (issue 34).  A job's process
 * is checked again when the job starts and before each call that moves
 * its pages, through the fd memmigd pinned it by:
 *  - queued: nobody's job of its own shell waits behind root's job (one
 *    job per node; root's held running by MEMMIG_MOVE_HOLD); the shell
 *    then execs a setuid-root copy of bash (the same pid, now root's and
 *    not dumpable); when its turn comes, nobody's job fails with EPERM
 *    and never runs;
 *  - running: nobody's job of its own shell, held as it starts; the shell
 *    execs the setuid bash, or a process of nobody's makes itself not
 *    dumpable (PR_SET_DUMPABLE 0); let go, the job fails with EPERM
 *    before it moved anything;
 *  - pid reuse: in a pid namespace of its own (ns_last_pid picks the
 *    next pid), root's job of a memhog is held as it starts, the memhog is
 *    killed and its pid given to a new memhog; let go, the job fails with
 *    ESRCH and the new process is not touched.
 * On one node nothing would move anyway (every move is to node 0); the
 * jobs' end says whether they ran.  Needs root; skips otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

#define NOBODY	65534
#define WAIT_MS	60000

static struct tc_daemon d;
static char dir[64], hold[96], bash[96];

/* Whether pid's /proc files are root's: not dumpable (task_dump_owner). */
static bool undumpable(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	return !stat(path, &st) && st.st_uid == 0;
}

static void hold_on(void)
{
	CHECK(tc_touch(hold) == 0, "hold file %s", hold);
}

static void hold_off(void)
{
	unlink(hold);
}

/*
 * A process of nobody's that waits for a byte on its pipe, then becomes
 * what the test needs of it: execs the setuid bash (-p: it keeps its
 * effective uid root; the same pid), or makes itself not dumpable.
 */
struct target {
	pid_t pid;
	int go;			/* write end: one byte starts it */
};

static struct target target_start(bool exec_setuid)
{
	struct target t = { .pid = -1, .go = -1 };
	int p[2], ready[2];
	char b;

	if (pipe(p) || pipe(ready))
		return t;
	t.pid = fork();
	if (t.pid == 0) {
		close(p[1]);
		close(ready[0]);
		/* Dropping to nobody made it not dumpable: it is again. */
		if (tc_drop_to(NOBODY, NOBODY) || prctl(PR_SET_DUMPABLE, 1) ||
		    write(ready[1], "r", 1) != 1)
			_exit(1);
		close(ready[1]);
		if (read(p[0], &b, 1) != 1)
			_exit(0);
		if (exec_setuid) {
			/* stdin: the pipe, which the test holds open until it
			 * kills the shell. */
			dup2(p[0], 0);
			execl(bash, "bash", "-p", "-c", "read -r _", (char *)NULL);
			_exit(2);
		}
		if (prctl(PR_SET_DUMPABLE, 0))
			_exit(3);
		pause();
		_exit(0);
	}
	close(p[0]);
	close(ready[1]);
	if (t.pid > 0 && read(ready[0], &b, 1) != 1) {
		waitpid(t.pid, NULL, 0);
		t.pid = -1;
	}
	close(ready[0]);
	t.go = p[1];
	return t;
}

/* Lets the target change; true once it runs as root (or is not dumpable). */
static bool target_change(struct target *t, bool exec_setuid)
{
	if (write(t->go, "g", 1) != 1)
		return false;
	for (int i = 0; i < 500; i++) {
		if (exec_setuid ? tc_proc_uid(t->pid, 2) == 0 && tc_proc_uid(t->pid, 1) == NOBODY :
				  undumpable(t->pid))
			return undumpable(t->pid);
		usleep(10000);
	}
	return false;
}

static void target_stop(struct target *t)
{
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
	}
	if (t->go >= 0)
		close(t->go);
}

/* One request as nobody, from a child that connects as nobody: the reply. */
static struct json_object *nobody_call(const char *req)
{
	char line[64 * 1024] = "";
	int out[2];
	pid_t child;
	FILE *f;

	if (pipe(out))
		return NULL;
	child = fork();
	if (child == 0) {
		struct json_object *r;
		struct tc_conn *c;

		close(out[0]);
		if (tc_drop_to(NOBODY, NOBODY) || !(c = tc_connect(d.sock)))
			_exit(1);
		r = tc_call(c, "%s", req);
		dprintf(out[1], "%s\n", r ? json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN) :
			"null");
		_exit(0);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	if (f && !fgets(line, sizeof(line), f))
		line[0] = '\0';
	if (f)
		fclose(f);
	waitpid(child, NULL, 0);
	return json_tokener_parse(line);
}

/* The job's state now, as root sees it. */
static char *job_state(struct tc_conn *c, int64_t id)
{
	struct json_object *r = tc_call(c, "{\"op\":\"job\",\"job\":%lld}", (long long)id);
	char *s = strdup(tc_str(tc_get(r, "job"), "state"));

	json_object_put(r);
	return s;
}

/* A job that must have failed with err and never moved a byte. */
static void check_refused(struct json_object *job, const char *err, const char *what)
{
	printf("%s: %s %s: %s\n", what, tc_str(job, "state"), tc_str(job, "result"),
	       tc_str(job, "message"));
	CHECK(job && !strcmp(tc_str(job, "state"), "failed") &&
	      !strcmp(tc_str(job, "result"), err), "%s: the job fails with %s: %s %s (%s)", what,
	      err, tc_str(job, "state"), tc_str(job, "result"), tc_str(job, "message"));
	CHECK(job && tc_int(job, "bytes_moved") == 0, "%s: nothing moved: %lld bytes", what,
	      (long long)tc_int(job, "bytes_moved"));
}

/*
 * Nobody's job of its own shell queued behind root's held job; the shell
 * execs setuid root; root's job let go: nobody's fails at its start.
 */
static void queued(struct tc_conn *c, struct tc_hog *root_hog)
{
	struct target t = target_start(true);
	struct json_object *r, *r2, *job;
	int64_t j1, j2;
	char *st;

	CHECK(t.pid > 0, "queued: a shell of nobody's");
	hold_on();
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", root_hog->pid);
	j1 = tc_int(tc_get(r, "job"), "id");
	CHECK(j1 > 0 && !strcmp(tc_str(tc_get(r, "job"), "state"), "running"),
	      "queued: root's job holds node 0's slot: %s %s", tc_error(r),
	      tc_str(tc_get(r, "job"), "state"));
	json_object_put(r);
	{
		char req[128];

		snprintf(req, sizeof(req), "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", t.pid);
		r2 = nobody_call(req);
	}
	j2 = tc_int(tc_get(r2, "job"), "id");
	CHECK(j2 > 0 && !strcmp(tc_str(tc_get(r2, "job"), "state"), "queued"),
	      "queued: nobody's job of its shell waits: %s %s %s", tc_error(r2),
	      tc_str(tc_get(r2, "job"), "state"), tc_str(r2, "message"));
	json_object_put(r2);
	CHECK(target_change(&t, true), "queued: the shell runs setuid root, not dumpable");
	st = job_state(c, j2);
	CHECK(!strcmp(st, "queued"), "queued: nobody's job still queued after the exec: %s", st);
	free(st);
	hold_off();
	job = tc_wait_job(c, j1, WAIT_MS);
	CHECK(job && !strcmp(tc_str(job, "state"), "done"), "queued: root's job: %s",
	      tc_str(job, "state"));
	json_object_put(job);
	job = tc_wait_job(c, j2, WAIT_MS);
	check_refused(job, "EPERM", "queued");
	CHECK(job && !tc_get(job, "report"), "queued: the job never ran (no report)");
	json_object_put(job);
	target_stop(&t);
}

/*
 * Nobody's job of its own process, held as it starts; the process execs
 * setuid root, or becomes not dumpable; let go, the job fails at once.
 */
static void running(struct tc_conn *c, bool exec_setuid)
{
	const char *what = exec_setuid ? "running, exec setuid" : "running, not dumpable";
	struct target t = target_start(exec_setuid);
	struct json_object *r, *job;
	char req[128];
	int64_t id;
	char *st;

	CHECK(t.pid > 0, "%s: a process of nobody's", what);
	hold_on();
	snprintf(req, sizeof(req), "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", t.pid);
	r = nobody_call(req);
	id = tc_int(tc_get(r, "job"), "id");
	CHECK(id > 0 && !strcmp(tc_str(tc_get(r, "job"), "state"), "running"),
	      "%s: nobody's job runs: %s %s %s", what, tc_error(r), tc_str(tc_get(r, "job"), "state"),
	      tc_str(r, "message"));
	json_object_put(r);
	CHECK(target_change(&t, exec_setuid), "%s: the process changed", what);
	st = job_state(c, id);
	CHECK(!strcmp(st, "running"), "%s: the job still held: %s", what, st);
	free(st);
	hold_off();
	job = tc_wait_job(c, id, WAIT_MS);
	check_refused(job, "EPERM", what);
	json_object_put(job);
	target_stop(&t);
}

/*
 * In a pid namespace of its own (this process is its init), with /proc
 * of its own: root's job of a memhog held as it starts, the memhog killed
 * and its pid given to another: let go, the job fails with ESRCH.  The
 * exit status is the number of failed checks.
 */
static int pid_reuse_in_ns(void)
{
	struct tc_hog a, b;
	struct json_object *r, *job;
	struct tc_conn *c;
	int64_t id;
	FILE *f;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) {
		printf("SKIP: pid reuse: no /proc of a pid namespace of its own: %s\n",
		       strerror(errno));
		return TC_SKIP;
	}
	tc_passes = tc_fails = 0;
	if (tc_hog_start(&a, 8, 1, (uid_t)-1, (gid_t)-1) || tc_daemon_start(&d, NULL)) {
		CHECK(0, "pid reuse: set-up");
		return (int)tc_fails;
	}
	c = tc_connect(d.sock);
	hold_on();
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", a.pid);
	id = tc_int(tc_get(r, "job"), "id");
	CHECK(id > 0 && !strcmp(tc_str(tc_get(r, "job"), "state"), "running"),
	      "pid reuse: root's job of pid %d runs: %s %s", a.pid, tc_error(r),
	      tc_str(tc_get(r, "job"), "state"));
	json_object_put(r);
	kill(a.pid, SIGKILL);
	waitpid(a.pid, NULL, 0);
	fclose(a.out);
	/* The next pid of this namespace is the memhog's that was. */
	f = fopen("/proc/sys/kernel/ns_last_pid", "we");
	CHECK(f && fprintf(f, "%d", a.pid - 1) > 0 && !fclose(f), "pid reuse: ns_last_pid");
	CHECK(!tc_hog_start(&b, 8, 1, (uid_t)-1, (gid_t)-1) && b.pid == a.pid,
	      "pid reuse: a new memhog has pid %d: %d", a.pid, b.pid);
	hold_off();
	job = tc_wait_job(c, id, WAIT_MS);
	check_refused(job, "ESRCH", "pid reuse");
	json_object_put(job);
	CHECK(tc_hog_verify(&b), "pid reuse: the new memhog's data");
	tc_close(c);
	CHECK(tc_daemon_stop(&d) == 0, "pid reuse: memmigd exits 0");
	CHECK(tc_hog_stop(&b), "pid reuse: the new memhog exits clean");
	return (int)tc_fails;
}

static void pid_reuse(void)
{
	pid_t child;
	int status;

	/* A child enters the namespaces, and its child is the new pid
	 * namespace's init: this process stays where it was. */
	child = fork();
	if (child == 0) {
		pid_t init;

		if (unshare(CLONE_NEWPID | CLONE_NEWNS)) {
			printf("SKIP: pid reuse: no pid namespace: %s\n", strerror(errno));
			_exit(TC_SKIP);
		}
		init = fork();
		if (init == 0)
			_exit(pid_reuse_in_ns());
		_exit(init > 0 && waitpid(init, &status, 0) == init && WIFEXITED(status) ?
		      WEXITSTATUS(status) : 1);
	}
	waitpid(child, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == TC_SKIP)
		return;
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "pid reuse: %d checks failed",
	      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(void)
{
	static const char *const opts[] = { "--group", "nogroup", "--max-jobs-per-node", "1",
					    NULL };
	struct tc_hog root_hog;
	struct tc_conn *c;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("SKIP: needs root, to be root and to become nobody\n");
		return TC_SKIP;
	}
	/* The hold file and the setuid bash live where memmigd's socket is
	 * not: in a directory of their own, that nobody can enter. */
	snprintf(dir, sizeof(dir), "/tmp/memmig-perm.XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(bash, sizeof(bash), "%s/bash-suid", dir);
	snprintf(hold, sizeof(hold), "%s/hold", dir);
	setenv("MEMMIG_MOVE_HOLD", hold, 1);
	if (tc_copy_setuid("/bin/bash", bash)) {
		printf("FAIL: a setuid copy of /bin/bash at %s\n", bash);
		return 1;
	}
	if (tc_hog_start(&root_hog, 16, 4, (uid_t)-1, (gid_t)-1))
		return 1;
	if (tc_daemon_start(&d, opts)) {
		tc_hog_stop(&root_hog);
		return 1;
	}
	c = tc_connect(d.sock);
	queued(c, &root_hog);
	running(c, true);
	running(c, false);
	tc_close(c);
	rc = tc_daemon_stop(&d);
	CHECK(rc == 0, "memmigd exit status %d", rc);
	CHECK(tc_hog_stop(&root_hog), "root's memhog exits clean");
	pid_reuse();
	hold_off();
	unlink(bash);
	rmdir(dir);
	return tc_summary();
}
