/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who may move whom, through memmigd as root: a client running as nobody
 * cannot move root's memhog (EPERM, and root's memhog's data and job list
 * unchanged), cannot see or cancel root's job, cannot register domains,
 * cannot move its own process once it is not dumpable -- but can move a
 * memhog that runs as nobody, and see and cancel that job.  And a client
 * that connects as nobody, then execs a setuid program before memmigd
 * accepts it, is still nobody without capabilities.  And memmigd does
 * not make its socket in a directory another user may write (issue 34:
 * they could swap the socket for a link to any file before memmigd set
 * its group and mode on the path), but does in a sticky one.
 * Needs root (to be root, and to become nobody); skips otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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

/*
 * A child of nobody's: not dumpable, or, with keep_caps, dumpable and
 * holding root's capabilities (permitted, not effective): only a client
 * with those may move it.
 */
static int become_nobody(void *keep_caps)
{
	bool keep = keep_caps != NULL;

	return (keep && prctl(PR_SET_KEEPCAPS, 1)) || tc_drop_to(NOBODY, NOBODY) ||
	       prctl(PR_SET_DUMPABLE, keep ? 1 : 0) ? -1 : 0;
}

static pid_t nobody_child(bool keep_caps)
{
	return tc_child_ready(become_nobody, keep_caps ? &keep_caps : NULL);
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

static bool stopped(pid_t pid)
{
	char path[64], buf[512], *p;
	bool t = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		t = p[2] == 'T';
	if (f)
		fclose(f);
	return t;
}

/*
 * The client connects as nobody, then execs a setuid-root program (a
 * setuid copy of bash, run with -p) before memmigd accepts it -- memmigd
 * is stopped meanwhile, as a flood of requests would delay it.  What it
 * may do is what was true at connect: nobody, without capabilities.  A
 * process of nobody's that holds capabilities stays out of its reach
 * (memmigd read the client's capabilities at accept, and let it).
 */
static void exec_after_connect(void)
{
	char bash[160], cmd[512], line[1024] = "";
	struct json_object *r;
	pid_t target, child;
	int out[2];
	FILE *f;

	target = nobody_child(true);
	snprintf(bash, sizeof(bash), "%s/bash-suid", d.dir);
	if (target < 0 || tc_copy_setuid("/bin/bash", bash) || pipe(out)) {
		CHECK(0, "a capable process of nobody's, a setuid bash");
		return;
	}
	kill(d.pid, SIGSTOP);
	for (int i = 0; i < 500 && !stopped(d.pid); i++)
		usleep(10000);
	child = fork();
	if (child == 0) {
		struct tc_conn *c;

		dup2(out[1], 1);
		if (tc_drop_to(NOBODY, NOBODY) || !(c = tc_connect(d.sock)) || dup2(c->fd, 3) != 3)
			_exit(1);
		snprintf(cmd, sizeof(cmd), "printf '%%s\\n' '{\"op\":\"move\",\"pid\":%d,"
			 "\"to_node\":0}' >&3; IFS= read -r l <&3; printf '%%s\\n' \"$l\"", target);
		execl(bash, "bash", "-p", "-c", cmd, (char *)NULL);
		_exit(2);
	}
	close(out[1]);
	/* memmigd goes on once the client runs setuid: real uid nobody's
	 * (after the drop), effective root's (after the exec). */
	for (int i = 0; i < 500 && (tc_proc_uid(child, 1) != NOBODY || tc_proc_uid(child, 2)); i++)
		usleep(10000);
	CHECK(tc_proc_uid(child, 2) == 0 && tc_proc_uid(child, 1) == NOBODY,
	      "the client runs setuid root before it is accepted");
	kill(d.pid, SIGCONT);
	f = fdopen(out[0], "r");
	if (f && !fgets(line, sizeof(line), f))
		line[0] = '\0';
	if (f)
		fclose(f);
	waitpid(child, NULL, 0);
	r = json_tokener_parse(line);
	printf("setuid after connect: %s", line);
	CHECK(!strcmp(tc_error(r), "EPERM"), "a client setuid after connect moves a capable "
	      "process of nobody's: %s", tc_error(r));
	json_object_put(r);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	unlink(bash);
}

/*
 * memmigd on dir/memmigd.sock, --group nogroup, its stderr in log: its
 * exit status when it exits within 10 s; -2 when it listens instead (the
 * socket's stat in *st; then stopped).
 */
static int start_in(const char *dir, char *log, size_t len, struct stat *st)
{
	const char *bin = getenv("MEMMIGD") ? getenv("MEMMIGD") : "src/daemon/memmigd";
	char sock[128];
	int p[2], status, rc = -1;
	size_t got = 0;
	bool eof = false;
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/memmigd.sock", dir);
	log[0] = '\0';
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		execl(bin, bin, "--foreground", "--no-libvirt", "--config", "/dev/null",
		      "--socket", sock, "--group", "nogroup", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	for (int i = 0; i < 200; i++) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };

		if (waitpid(pid, &status, WNOHANG) == pid) {
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			pid = -1;
			break;
		}
		if (!lstat(sock, st) && S_ISSOCK(st->st_mode)) {
			rc = -2;
			break;
		}
		if (!eof && poll(&pf, 1, 50) == 1 && got + 1 < len) {
			ssize_t n = read(p[0], log + got, len - got - 1);

			got += n > 0 ? (size_t)n : 0;
			log[got] = '\0';
			eof = n == 0;	/* it is exiting */
		} else {
			usleep(50 * 1000);
		}
	}
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	for (ssize_t n = 1; n > 0 && got + 1 < len; got += (size_t)n) {
		n = read(p[0], log + got, len - got - 1);
		if (n <= 0)
			break;
	}
	log[got < len ? got : len - 1] = '\0';
	close(p[0]);
	unlink(sock);
	snprintf(sock, sizeof(sock), "%s/memmigd.state", dir);	/* its state file */
	unlink(sock);
	return rc;
}

static void socket_dirs(void)
{
	static const struct {
		const char *what, *says;
		uid_t uid;
		gid_t gid;
		mode_t mode;
		bool ok;
	} dirs[] = {
		{ "root's, group nogroup, 0775 (nobody may write)", "writable by others",
		  0, NOBODY, 0775, false },
		{ "nobody's, 0755", "another user's", NOBODY, NOBODY, 0755, false },
		{ "root's, 0777 sticky", NULL, 0, 0, 01777, true },
		{ "root's, 0755", NULL, 0, 0, 0755, true },
	};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char dir[] = "/tmp/memmigd-sockdir.XXXXXX", log[4096];
		struct stat st;
		int rc;

		if (!mkdtemp(dir) || chown(dir, dirs[i].uid, dirs[i].gid) ||
		    chmod(dir, dirs[i].mode)) {
			CHECK(0, "socket directory %s: %s", dirs[i].what, strerror(errno));
			continue;
		}
		rc = start_in(dir, log, sizeof(log), &st);
		CHECK(rmdir(dir) == 0, "memmigd left nothing in %s: %s", dir, strerror(errno));
		if (dirs[i].ok) {
			CHECK(rc == -2, "memmigd listens in a directory %s: %d %s", dirs[i].what,
			      rc, log);
			CHECK(rc != -2 || (st.st_uid == 0 && st.st_gid == NOBODY &&
					   (st.st_mode & 07777) == 0660),
			      "its socket is root's, group nogroup, 0660: uid %u gid %u mode %o",
			      (unsigned int)st.st_uid, (unsigned int)st.st_gid,
			      (unsigned int)(st.st_mode & 07777));
		} else {
			printf("socket in a directory %s: exit %d: %s", dirs[i].what, rc, log);
			CHECK(rc > 0, "memmigd refuses a socket directory %s (exit %d)",
			      dirs[i].what, rc);
			CHECK(strstr(log, dirs[i].says) && strstr(log, dir),
			      "... saying the directory is %s", dirs[i].says);
		}
	}
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
	secret = nobody_child(false);
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
	exec_after_connect();
	socket_dirs();
	tc_close(c);
	kill(secret, SIGKILL);
	waitpid(secret, NULL, 0);
	rc = tc_daemon_stop(&d);
	CHECK(rc == 0, "memmigd exit status %d", rc);
	CHECK(tc_hog_stop(&root_hog) && tc_hog_stop(&own_hog), "memhogs exit clean");
	return tc_summary();
}
