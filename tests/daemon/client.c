/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon tests' client, daemon and memhog helpers (client.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

unsigned int tc_passes, tc_fails;

int tc_summary(void)
{
	printf("%u passed, %u failed\n", tc_passes, tc_fails);
	return tc_fails ? 1 : 0;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool wrapped(void)
{
	const char *w = getenv("MEMMIGD_WRAPPER");

	return w && *w;
}

int tc_daemon_start(struct tc_daemon *d, const char *const *extra)
{
	const char *bin = getenv("MEMMIGD") ? getenv("MEMMIGD") : "src/daemon/memmigd";
	char *argv[64], *wrapper = NULL;
	int argc = 0;
	long deadline;

	snprintf(d->dir, sizeof(d->dir), "/tmp/memmigd-test.XXXXXX");
	if (!mkdtemp(d->dir) || chmod(d->dir, 0755)) {
		perror("mkdtemp");
		return -1;
	}
	snprintf(d->sock, sizeof(d->sock), "%s/memmigd.sock", d->dir);
	if (wrapped()) {
		wrapper = strdup(getenv("MEMMIGD_WRAPPER"));
		for (char *s = strtok(wrapper, " "); s && argc < 40; s = strtok(NULL, " "))
			argv[argc++] = s;
	}
	argv[argc++] = (char *)bin;
	argv[argc++] = "--foreground";
	argv[argc++] = "--no-libvirt";
	argv[argc++] = "--config";
	argv[argc++] = "/dev/null";
	argv[argc++] = "--socket";
	argv[argc++] = d->sock;
	for (int i = 0; extra && extra[i] && argc < 62; i++)
		argv[argc++] = (char *)extra[i];
	argv[argc] = NULL;
	d->pid = fork();
	if (d->pid == 0) {
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	free(wrapper);
	/* valgrind takes seconds to start. */
	deadline = now_ms() + (wrapped() ? 60000 : 10000);
	/*
	 * Started is answering, not accepting: memmigd listens before it
	 * reads and rewrites its state file, and a connect alone came back
	 * while the file still held what a test had written into it
	 * (test-daemon-restart, "a rebalance line cut short is dropped",
	 * once in a CI run).
	 */
	while (now_ms() < deadline) {
		struct tc_conn *c = tc_connect(d->sock);
		struct json_object *r = c ? tc_call(c, "{\"op\":\"version\"}") : NULL;

		if (c)
			tc_close(c);
		if (r) {
			json_object_put(r);
			return 0;
		}
		if (waitpid(d->pid, NULL, WNOHANG) == d->pid) {
			printf("memmigd exited at start\n");
			return -1;
		}
		usleep(20 * 1000);
	}
	printf("memmigd did not answer on %s\n", d->sock);
	return -1;
}

int tc_daemon_stop(struct tc_daemon *d)
{
	long deadline = now_ms() + (wrapped() ? 120000 : 30000);
	char state[sizeof(d->dir) + 16];
	int status, rc = -1;

	kill(d->pid, SIGTERM);
	while (now_ms() < deadline) {
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
			if (!WIFEXITED(status))
				printf("memmigd died of signal %d\n", WTERMSIG(status));
			break;
		}
		usleep(20 * 1000);
	}
	if (now_ms() >= deadline) {
		printf("memmigd did not stop on SIGTERM\n");
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
	}
	if (!access(d->sock, F_OK)) {
		printf("memmigd left its socket behind\n");
		rc = -1;
		unlink(d->sock);
	}
	/* memmigd's state file, beside its socket by default. */
	snprintf(state, sizeof(state), "%s/memmigd.state", d->dir);
	unlink(state);
	rmdir(d->dir);
	return rc;
}

struct tc_conn *tc_connect(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct tc_conn *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	c->len = 0;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (c->fd >= 0)
			close(c->fd);
		free(c);
		return NULL;
	}
	return c;
}

void tc_close(struct tc_conn *c)
{
	if (c) {
		close(c->fd);
		free(c);
	}
}

int tc_write(struct tc_conn *c, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Fills the buffer until a newline is in it; the line's length or -1. */
static ssize_t read_line(struct tc_conn *c, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		long left = deadline - now_ms();
		ssize_t n;

		if (nl)
			return nl - c->buf;
		if (left <= 0 || c->len == sizeof(c->buf) || poll(&p, 1, (int)left) <= 0)
			return -1;
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
		if (n <= 0)
			return -1;
		c->len += (size_t)n;
	}
}

struct json_object *tc_read(struct tc_conn *c, int timeout_ms)
{
	struct json_object *o;
	ssize_t n = read_line(c, timeout_ms);

	if (n < 0)
		return NULL;
	c->buf[n] = 0;
	o = json_tokener_parse(c->buf);
	memmove(c->buf, c->buf + n + 1, c->len - (size_t)n - 1);
	c->len -= (size_t)n + 1;
	return o;
}

bool tc_closed(struct tc_conn *c, int timeout_ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	ssize_t n;
	char b;

	if (poll(&p, 1, timeout_ms) != 1)
		return false;
	/* A close with our bytes still unread is a reset on UNIX sockets. */
	n = recv(c->fd, &b, 1, MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

struct json_object *tc_call(struct tc_conn *c, const char *fmt, ...)
{
	char *line;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	line = realloc(line, (size_t)n + 2);
	line[n] = '\n';
	n = tc_write(c, line, (size_t)n + 1);
	free(line);
	return n ? NULL : tc_read(c, wrapped() ? 60000 : 10000);
}

struct json_object *tc_get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (o)
		json_object_object_get_ex(o, key, &v);
	return v;
}

const char *tc_error(struct json_object *reply)
{
	if (!reply)
		return "(none)";
	if (json_object_get_boolean(tc_get(reply, "ok")))
		return "OK";
	return tc_get(reply, "error") ? json_object_get_string(tc_get(reply, "error")) : "(none)";
}

int64_t tc_int(struct json_object *o, const char *key)
{
	struct json_object *v = tc_get(o, key);

	return v ? json_object_get_int64(v) : INT64_MIN;
}

const char *tc_str(struct json_object *o, const char *key)
{
	struct json_object *v = tc_get(o, key);

	return v ? json_object_get_string(v) : "(null)";
}

struct json_object *tc_wait_job(struct tc_conn *c, int64_t id, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;

	while (now_ms() < deadline) {
		struct json_object *r = tc_call(c, "{\"op\":\"job\",\"job\":%lld}", (long long)id);
		struct json_object *job = tc_get(r, "job");
		const char *state = tc_str(job, "state");

		if (!job) {
			json_object_put(r);
			return NULL;
		}
		if (strcmp(state, "queued") && strcmp(state, "running")) {
			json_object_get(job);
			json_object_put(r);
			return job;
		}
		json_object_put(r);
		usleep(20 * 1000);
	}
	return NULL;
}

int tc_drop_to(uid_t uid, gid_t gid)
{
	return setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid) ? -1 : 0;
}

pid_t tc_child_ready(int (*prepare)(void *arg), void *arg)
{
	int p[2];
	pid_t pid;
	char b;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (prepare(arg) || write(p[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (pid > 0 && read(p[0], &b, 1) != 1) {
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

int tc_hog_start(struct tc_hog *h, int anon_mib, int memfd_mib, uid_t uid, gid_t gid)
{
	const char *bin = getenv("MEMHOG") ? getenv("MEMHOG") : "tests/helpers/memhog";
	char a[16], m[16], line[256];
	int p[2];

	memset(h, 0, sizeof(*h));
	if (pipe2(p, O_CLOEXEC))
		return -1;
	snprintf(a, sizeof(a), "%d", anon_mib);
	snprintf(m, sizeof(m), "%d", memfd_mib);
	h->pid = fork();
	if (h->pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		if (uid != (uid_t)-1 && tc_drop_to(uid, gid))
			_exit(126);
		execl(bin, bin, a, m, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	h->out = fdopen(p[0], "r");
	while (fgets(line, sizeof(line), h->out)) {
		unsigned long long addr, len;

		if (sscanf(line, "anon %llx %llu", &addr, &len) == 2) {
			h->anon = addr;
			h->anon_len = len;
		} else if (sscanf(line, "memfd %llx %llu", &addr, &len) == 2) {
			h->memfd = addr;
			h->memfd_len = len;
		} else if (!strncmp(line, "ready", 5)) {
			return 0;
		}
	}
	printf("memhog did not start\n");
	return -1;
}

bool tc_hog_verify(struct tc_hog *h)
{
	char line[256];

	kill(h->pid, SIGUSR1);
	if (!fgets(line, sizeof(line), h->out))
		return false;
	return !strncmp(line, "verify ok", 9);
}

bool tc_hog_stop(struct tc_hog *h)
{
	int status;

	kill(h->pid, SIGTERM);
	waitpid(h->pid, &status, 0);
	fclose(h->out);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int tc_touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	return fd < 0 ? -1 : close(fd);
}

int tc_copy_setuid(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	struct stat st;
	int rc = -1;

	if (in < 0 || fstat(in, &st)) {
		if (in >= 0)
			close(in);
		return -1;
	}
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (out >= 0 && sendfile(out, in, NULL, (size_t)st.st_size) == st.st_size &&
	    !fchmod(out, 04755))
		rc = 0;
	if (out >= 0)
		close(out);
	close(in);
	return rc;
}

/* Field n (1: real, 2: effective) of the Uid: line of /proc/PID/status. */
long tc_proc_uid(pid_t pid, int n)
{
	char path[64], line[256];
	long u[4] = { -1, -1, -1, -1 };
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %ld %ld %ld %ld", &u[0], &u[1], &u[2], &u[3]) == 4)
			break;
	if (f)
		fclose(f);
	return u[n - 1];
}
