/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd under systemd's protocols, without systemd (it is not PID 1 on
 * the machines this runs on): this program plays systemd's part.
 *
 * 1. Socket activation and an abstract NOTIFY_SOCKET ("@..."), stderr a
 *    file whose dev:ino is JOURNAL_STREAM: memmigd serves on fd 3 (status
 *    says so), sends READY=1, STATUS= as a job runs and ends, and on
 *    SIGTERM STOPPING=1, leaves the socket file (systemd's) in place, and
 *    logs "<6>message" lines.
 * 2. A NOTIFY_SOCKET path, LISTEN_PID another process's, JOURNAL_STREAM
 *    another file's: memmigd binds its own --socket, READY=1 still comes,
 *    logs are "memmigd: info: ..." lines.
 * 3. LISTEN_FDS=1 with fd 3 a regular file: memmigd refuses to start.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

static char dir[] = "/tmp/memmigd-systemd.XXXXXX";
static const char *memmigd;

/* A datagram socket at path ('@': abstract), like systemd's. */
static int notify_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un,
			   sun_path) + len + (path[0] == '/'))))
		return -1;
	return fd;
}

static int listen_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16))
		return -1;
	return fd;
}

/* The next datagram that holds what, within 10 s. */
static bool notified(int fd, const char *what, char *msg, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (poll(&p, 1, 10000) == 1) {
		ssize_t n = recv(fd, msg, len - 1, 0);

		if (n < 0)
			return false;
		msg[n] = '\0';
		if (strstr(msg, what))
			return true;
	}
	return false;
}

struct run {
	const char *notify, *journal_of;	/* JOURNAL_STREAM: that file's dev:ino */
	int fd3;				/* -1: none */
	const char *listen_pid;			/* NULL: the child's own */
	char sock[128], err[128];
};

static pid_t spawn(struct run *r)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char v[64];
		struct stat st;
		int err = open(r->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (err < 0 || dup2(err, 2) != 2)
			_exit(127);
		if (!stat(r->journal_of, &st)) {
			snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
				 (unsigned long long)st.st_ino);
			setenv("JOURNAL_STREAM", v, 1);
		}
		setenv("NOTIFY_SOCKET", r->notify, 1);
		if (r->fd3 >= 0) {
			if (dup2(r->fd3, 3) != 3)
				_exit(127);
			snprintf(v, sizeof(v), "%d", getpid());
			setenv("LISTEN_PID", r->listen_pid ? r->listen_pid : v, 1);
			setenv("LISTEN_FDS", "1", 1);
		}
		execl(memmigd, memmigd, "--foreground", "--no-libvirt", "--config", "/dev/null",
		      "--socket", r->sock, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int stop(pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static char *first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (f && !fgets(buf, (int)len, f))
		buf[0] = '\0';
	if (f)
		fclose(f);
	return buf;
}

/* A real move of memhog: systemd hears of it running, then of none. */
static void job_status(struct tc_conn *c, int nfd)
{
	struct json_object *r, *job;
	struct tc_hog h;
	char msg[512] = "";

	if (!c || tc_hog_start(&h, 8, 8, (uid_t)-1, 0)) {
		CHECK(0, "memhog starts");
		return;
	}
	r = tc_call(c, "{\"op\":\"move\",\"pid\":%d,\"to_node\":0}", h.pid);
	job = tc_wait_job(c, tc_int(tc_get(r, "job"), "id"), 60000);
	CHECK(job && !strcmp(tc_str(job, "state"), "done"), "the job is done");
	CHECK(notified(nfd, "STATUS=1 job running, 0 queued", msg, sizeof(msg)),
	      "STATUS while it runs: '%s'", msg);
	CHECK(notified(nfd, "STATUS=0 jobs running, 0 queued", msg, sizeof(msg)),
	      "STATUS once it ended: '%s'", msg);
	json_object_put(job);
	json_object_put(r);
	CHECK(tc_hog_stop(&h), "memhog's data");
}

static void activated(void)
{
	char act[128], notify[64], msg[512] = "", line[512];
	struct run r = { .notify = notify };
	struct json_object *s;
	struct tc_conn *c;
	int nfd, lfd;
	pid_t pid;

	snprintf(notify, sizeof(notify), "@memmig-test-notify-%d", getpid());
	snprintf(act, sizeof(act), "%s/activated.sock", dir);
	snprintf(r.sock, sizeof(r.sock), "%s/not-this.sock", dir);
	nfd = notify_socket(notify);
	lfd = listen_socket(act);
	CHECK(nfd >= 0 && lfd >= 0, "the harness's sockets: %s", strerror(errno));
	r.fd3 = lfd;
	/* stderr is the journal: its own file's dev:ino. */
	snprintf(r.err, sizeof(r.err), "%s/stderr.journal", dir);
	close(open(r.err, O_WRONLY | O_CREAT, 0600));
	r.journal_of = r.err;
	pid = spawn(&r);
	CHECK(notified(nfd, "READY=1", msg, sizeof(msg)), "READY=1 on an abstract socket: '%s'", msg);
	CHECK(strstr(msg, "STATUS=listening on ") != NULL, "STATUS with READY: '%s'", msg);
	c = tc_connect(act);
	s = c ? tc_call(c, "{\"op\":\"status\"}") : NULL;
	CHECK(json_object_get_boolean(tc_get(s, "socket_activated")) &&
	      !strcmp(tc_str(s, "socket"), act), "status: activated on %s: %s", act,
	      s ? json_object_to_json_string(s) : "no reply");
	CHECK(access(r.sock, F_OK) != 0, "--socket not made when activated");
	json_object_put(s);
	job_status(c, nfd);
	tc_close(c);
	CHECK(stop(pid) == 0, "memmigd exits 0");
	CHECK(notified(nfd, "STOPPING=1", msg, sizeof(msg)), "STOPPING=1: '%s'", msg);
	CHECK(access(act, F_OK) == 0, "the socket systemd made is left in place");
	first_line(r.err, line, sizeof(line));
	CHECK(!strncmp(line, "<6>listening on ", 16), "journal format: '%s'", line);
	close(nfd);
	close(lfd);
	unlink(act);
	unlink(r.err);
}

static void not_activated(void)
{
	char notify[128], msg[512] = "", line[512], other[128];
	struct run r = { .notify = notify, .fd3 = -1 };
	struct tc_conn *c = NULL;
	int nfd;
	pid_t pid;

	snprintf(notify, sizeof(notify), "%s/notify", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	snprintf(r.sock, sizeof(r.sock), "%s/own.sock", dir);
	close(open(other, O_WRONLY | O_CREAT, 0600));
	nfd = notify_socket(notify);
	r.journal_of = other;	/* not memmigd's stderr */
	/* fd 3 would be refused if LISTEN_PID were memmigd's: it is not. */
	r.fd3 = open("/dev/null", O_RDONLY);
	snprintf(r.err, sizeof(r.err), "%s/stderr.plain", dir);
	r.listen_pid = "1";
	pid = spawn(&r);
	CHECK(notified(nfd, "READY=1", msg, sizeof(msg)), "READY=1 on a path: '%s'", msg);
	for (int i = 0; i < 100 && !(c = tc_connect(r.sock)); i++)
		usleep(20000);
	CHECK(c != NULL, "LISTEN_PID another's: memmigd made --socket %s", r.sock);
	tc_close(c);
	CHECK(stop(pid) == 0, "memmigd exits 0");
	CHECK(access(r.sock, F_OK) != 0, "its own socket removed at the end");
	first_line(r.err, line, sizeof(line));
	CHECK(!strncmp(line, "memmigd: info: listening on ", 28),
	      "JOURNAL_STREAM another file's: plain format: '%s'", line);
	close(r.fd3);
	close(nfd);
	unlink(notify);
	unlink(other);
	unlink(r.err);
}

static void bad_fd3(void)
{
	struct run r = { .notify = "", .journal_of = "", .fd3 = open("/dev/null", O_RDONLY) };
	char line[512];
	int status;
	pid_t pid;

	snprintf(r.sock, sizeof(r.sock), "%s/bad.sock", dir);
	snprintf(r.err, sizeof(r.err), "%s/stderr.bad", dir);
	pid = spawn(&r);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1, "fd 3 not a socket: exit 1");
	first_line(r.err, line, sizeof(line));
	CHECK(strstr(line, "fd 3 is not a listening AF_UNIX stream socket") != NULL,
	      "says why: '%s'", line);
	close(r.fd3);
	unlink(r.err);
}

int main(void)
{
	memmigd = getenv("MEMMIGD") ? getenv("MEMMIGD") : "src/daemon/memmigd";
	if (!mkdtemp(dir))
		return 1;
	if (getppid() == 1 || access("/run/systemd/system", F_OK) == 0)
		printf("(systemd may be PID 1 here; this harness plays its part anyway)\n");
	activated();
	not_activated();
	bad_fd3();
	rmdir(dir);
	return tc_summary();
}
