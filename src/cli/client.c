/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli's connection to memmigd: a UNIX socket, one JSON line each way. */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "util/log.h"
#include "proto/proto.h"

/* Replies can be larger than requests (a job list with its reports). */
#define REPLY_MAX (16u << 20)
/* A move is checked (every mapping listed) before its reply comes. */
#define REPLY_TIMEOUT_S 60

/* Events set aside while a reply was awaited, beyond which the rest are
 * dropped (and the follower told: it polls then). */
#define STASH_MAX 1024

struct cli_conn {
	int fd;
	char *buf;		/* bytes read past the last reply */
	size_t len, cap;
	bool ack_pending;	/* "subscribe" sent, its reply not yet read */
	bool subscribed;	/* events come between the replies */
	bool dropped;		/* events beyond STASH_MAX were lost */
	struct json_object *stash;	/* events read while awaiting a reply */
};

static int conn_open(const char *path, struct cli_conn **out)
{
	struct timeval tv = { .tv_sec = REPLY_TIMEOUT_S };
	struct cli_conn *c;
	int fd = cli_unix_connect(path);

	if (fd < 0)
		return fd;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	*out = c;
	return 0;
}

void cli_conn_close(struct cli_conn *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c->buf);
	json_object_put(c->stash);
	free(c);
}

/* The name /etc/group gives gid (a new string), or NULL: read as a file,
 * as a statically linked program can (getgrgid() would load NSS modules). */
static char *group_name(gid_t gid)
{
	FILE *f = fopen("/etc/group", "re");
	struct group *gr;
	char *name = NULL;

	while (f && !name && (gr = fgetgrent(f)))
		if (gr->gr_gid == gid)
			name = strdup(gr->gr_name);
	if (f)
		fclose(f);
	return name;
}

/*
 * Why the socket did not answer, for people: a refused connection is
 * memmigd's --group at work (memmigd(8)), which names what to ask for.
 */
static const char *conn_why(int rc, char *buf, size_t len)
{
	char *group = NULL;
	struct stat st;

	if (rc != -EACCES)
		return strerror(-rc);
	if (stat(cli_global.socket, &st) == 0 && st.st_gid)
		group = group_name(st.st_gid);
	if (group)
		snprintf(buf, len, "permission denied on %s: it is for the group %s: ask "
			 "the administrator to add you to %s (memmigd --group, see "
			 "memmigd(8))", cli_global.socket, group, group);
	else
		snprintf(buf, len, "permission denied on %s: ask the administrator to "
			 "start memmigd with --group G and add you to G (see memmigd(8))",
			 cli_global.socket);
	free(group);
	return buf;
}

/* No memmigd at the socket: what starts one, and whether the command
 * runs without it (local_ok: its -l). */
static int connect_failed(const char *cmd, int rc, bool local_ok)
{
	char why[384];

	cli_json_error_errno(rc);
	if (rc == -EACCES)
		cli_error("%s: %s\n", cmd, conn_why(rc, why, sizeof(why)));
	else if (rc == -ENOENT || rc == -ECONNREFUSED)
		cli_error("%s: cannot reach memmigd at %s: %s: start it (systemctl start "
			  "memmigd, or memmigd --foreground)%s\n", cmd, cli_global.socket,
			  strerror(-rc), local_ok ? ", or run in this process with "
			  "memmig-cli -l" : "");
	else
		cli_error("%s: cannot reach memmigd at %s: %s\n", cmd,
			  cli_global.socket, strerror(-rc));
	return rc;
}

static void say_via(const char *cmd, const char *how)
{
	if (!cli_global.quiet_mode)
		util_log(LOG_INFO, "%s: %s", cmd, how);
}

int cli_connect_or_local(const char *cmd, struct cli_conn **out)
{
	char how[256], why[384];
	int rc;

	*out = NULL;
	if (cli_global.local) {
		say_via(cmd, "in-process (--local)");
		return 0;
	}
	rc = conn_open(cli_global.socket, out);
	if (rc == 0) {
		snprintf(how, sizeof(how), "via memmigd at %s", cli_global.socket);
		say_via(cmd, how);
		return 0;
	}
	if (cli_global.socket_given)
		return connect_failed(cmd, rc, true);
	/* memmigd runs but refuses this user: the move would most likely
	 * be refused in-process too, so say why as a warning. */
	if (rc == -EACCES)
		util_log(LOG_WARNING, "%s: in-process: %s", cmd,
			 conn_why(rc, why, sizeof(why)));
	else {
		snprintf(how, sizeof(how), "in-process (memmigd is not running at %s: %s)",
			 cli_global.socket, strerror(-rc));
		say_via(cmd, how);
	}
	return 0;
}

int cli_connect_daemon(const char *cmd, struct cli_conn **out)
{
	int rc;

	if (cli_global.local) {
		cli_error("%s: needs memmigd (jobs and domains live there), not --local\n",
			  cmd);
		return -EINVAL;
	}
	rc = conn_open(cli_global.socket, out);
	return rc < 0 ? connect_failed(cmd, rc, false) : 0;
}

static int send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One line from the socket, NUL-terminated in place of its newline. */
static int read_line(struct cli_conn *c, char **line)
{
	for (;;) {
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
		ssize_t n;

		if (nl) {
			*nl = '\0';
			*line = c->buf;
			return (int)(nl - c->buf) + 1;
		}
		if (c->len == REPLY_MAX)
			return -EMSGSIZE;
		if (c->cap - c->len < 4096) {
			size_t cap = c->cap ? c->cap * 2 : 65536;
			char *b;

			if (cap > REPLY_MAX)
				cap = REPLY_MAX;
			b = realloc(c->buf, cap);
			if (!b)
				return -ENOMEM;
			c->buf = b;
			c->cap = cap;
		}
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (n == 0)
			return -ECONNRESET;
		c->len += (size_t)n;
	}
}

static int reply_errno(struct json_object *reply)
{
	struct json_object *ok, *err;

	if (!json_object_object_get_ex(reply, "ok", &ok) ||
	    !json_object_is_type(ok, json_type_boolean))
		return -EBADMSG;
	if (json_object_get_boolean(ok))
		return 0;
	if (json_object_object_get_ex(reply, "errno", &err) &&
	    json_object_is_type(err, json_type_int) && json_object_get_int(err) > 0)
		return -json_object_get_int(err);
	return -EPROTO;
}

/* Sends req (the reference is taken) as one line: 0 or -errno, said to
 * nobody. */
static int send_request(struct cli_conn *c, struct json_object *req)
{
	const char *s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(s);
	char *copy = malloc(len + 2);
	int rc = copy ? 0 : -ENOMEM;

	if (copy) {
		memcpy(copy, s, len);
		copy[len] = '\n';
		rc = send_all(c->fd, copy, len + 1);
		free(copy);
	}
	json_object_put(req);
	return rc;
}

/* The next line as a JSON object: 0, -EBADMSG for anything else, or the
 * connection's -errno; said to nobody. */
static int read_object(struct cli_conn *c, struct json_object **out)
{
	char *line = NULL;
	int used = read_line(c, &line);

	*out = NULL;
	if (used < 0)
		return used;
	*out = json_tokener_parse(line);
	c->len -= (size_t)used;
	memmove(c->buf, c->buf + used, c->len);
	if (!*out || !json_object_is_type(*out, json_type_object)) {
		json_object_put(*out);
		*out = NULL;
		return -EBADMSG;
	}
	return 0;
}

/* The next line off the socket (cli_read_line() without the stash). */
static int read_said(struct cli_conn *c, const char *cmd, struct json_object **out)
{
	int rc = read_object(c, out);

	if (rc < 0)
		cli_json_error_errno(rc);
	if (rc == -EBADMSG)
		cli_error("%s: memmigd sent something that is not a JSON object\n", cmd);
	else if (rc < 0 && rc != -ETIMEDOUT)
		cli_error("%s: memmigd at %s: %s\n", cmd, cli_global.socket, strerror(-rc));
	return rc;
}

/* Whether events set aside wait for cli_read_line(). */
static bool stashed(const struct cli_conn *c)
{
	return c->stash && json_object_array_length(c->stash);
}

/* Keeps an event that came before a reply, for cli_read_line(). */
static void stash(struct cli_conn *c, struct json_object *event)
{
	if (!c->stash)
		c->stash = json_object_new_array();
	if (c->stash && json_object_array_length(c->stash) < STASH_MAX &&
	    !json_object_array_add(c->stash, event))
		return;
	json_object_put(event);
	c->dropped = true;
}

/* The next reply, the events before it set aside. */
static int read_reply(struct cli_conn *c, const char *cmd, struct json_object **reply)
{
	for (;;) {
		int rc = read_said(c, cmd, reply);

		if (rc || !c->subscribed || !json_object_object_get_ex(*reply, "event", NULL))
			return rc;
		stash(c, *reply);
		*reply = NULL;
	}
}

int cli_call(struct cli_conn *c, const char *cmd, struct json_object *req,
	     struct json_object **reply)
{
	int rc = send_request(c, req);

	*reply = NULL;
	if (rc < 0) {
		cli_json_error_errno(rc);
		cli_error("%s: memmigd at %s: %s\n", cmd, cli_global.socket, strerror(-rc));
		return rc;
	}
	/* The subscription's answer comes first: replies keep their order. */
	if (c->ack_pending) {
		c->ack_pending = false;
		rc = read_said(c, cmd, reply);
		c->subscribed = !rc && !reply_errno(*reply);
		json_object_put(*reply);
		*reply = NULL;
	}
	if (!rc)
		rc = read_reply(c, cmd, reply);
	if (rc == -ETIMEDOUT)
		cli_error("%s: memmigd at %s: %s\n", cmd, cli_global.socket, strerror(-rc));
	return rc ? rc : reply_errno(*reply);
}

int cli_read_line(struct cli_conn *c, const char *cmd, struct json_object **out)
{
	if (stashed(c)) {
		*out = json_object_get(json_object_array_get_idx(c->stash, 0));
		json_object_array_del_idx(c->stash, 0, 1);
		return 0;
	}
	if (c->dropped) {
		c->dropped = false;
		return -ENOBUFS;
	}
	return read_said(c, cmd, out);
}

int cli_conn_wait(struct cli_conn *c, int timeout_ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	int rc;

	if (stashed(c) || c->dropped ||
	    (c->len && memchr(c->buf, '\n', c->len)))
		return 1;
	rc = poll(&p, 1, timeout_ms);
	if (rc < 0)
		return errno == EINTR ? 0 : -errno;
	return rc > 0;
}

int cli_conn_subscribe(struct cli_conn *c)
{
	int rc = 0;

	if (!c->subscribed && !c->ack_pending) {
		rc = send_request(c, cli_request("subscribe"));
		c->ack_pending = !rc;
	}
	return rc;
}

bool cli_conn_subscribed(const struct cli_conn *c)
{
	return c->subscribed;
}

void cli_print_reply_error(const char *cmd, struct json_object *reply)
{
	struct json_object *name = NULL, *msg = NULL;

	json_object_object_get_ex(reply, "error", &name);
	json_object_object_get_ex(reply, "message", &msg);
	cli_json_error_errno(-reply_errno(reply));
	cli_error("%s: %s: %s\n", cmd, name ? json_object_get_string(name) : "error",
		  msg ? json_object_get_string(msg) : "memmigd gave no message");
}

struct json_object *cli_request(const char *op)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "op", json_object_new_string(op));
	return o;
}

int cli_daemon_call(const char *cmd, struct json_object *req,
		    struct json_object **reply)
{
	struct cli_conn *c;
	int rc;

	*reply = NULL;
	if (cli_connect_daemon(cmd, &c) < 0) {
		json_object_put(req);
		return CLI_EXIT_NO_DAEMON;
	}
	rc = cli_call(c, cmd, req, reply);
	cli_conn_close(c);
	if (rc == 0)
		return CLI_EXIT_OK;
	if (*reply)
		cli_print_reply_error(cmd, *reply);
	json_object_put(*reply);
	*reply = NULL;
	return CLI_EXIT_FAIL;
}

struct json_object *cli_domain_find(struct json_object *reply, const char *name)
{
	struct json_object *doms;

	if (!json_object_object_get_ex(reply, "domains", &doms) ||
	    !json_object_is_type(doms, json_type_array))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(doms); i++) {
		struct json_object *d = json_object_array_get_idx(doms, i);

		if (!strcmp(cli_json_str(d, "name", ""), name))
			return d;
	}
	return NULL;
}

/* The domain's QEMU pid, from memmigd's domain list (client.h). */
int cli_domain_pid(const char *cmd, const char *name, int *pid)
{
	struct json_object *reply, *d;
	int rc = cli_daemon_call(cmd, cli_request("domains"), &reply);

	if (rc)
		return rc;
	d = cli_domain_find(reply, name);
	*pid = d ? (int)cli_json_int(d, "pid", 0) : 0;
	rc = *pid > 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
	if (rc) {
		cli_json_error_errno(-ENOENT);
		cli_error("%s: --domain: memmigd knows no running domain '%s'\n", cmd, name);
	}
	json_object_put(reply);
	return rc;
}
