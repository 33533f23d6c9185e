/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A QMP client on a UNIX socket: one JSON object a line, each way. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/qmp.h"
#include "front/front.h"

/* A QEMU answer takes no longer than this, migration status included. */
#define QMP_TIMEOUT_MS 10000

/* The next line as JSON (the caller's reference), or NULL with *err. */
static struct json_object *read_line(struct qmp *q, int *err)
{
	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);
		struct pollfd p = { .fd = q->fd, .events = POLLIN };
		ssize_t n;

		if (nl) {
			struct json_object *o;

			*nl = '\0';
			o = json_tokener_parse(q->buf);
			q->len -= (size_t)(nl + 1 - q->buf);
			memmove(q->buf, nl + 1, q->len);
			if (o)
				return o;
			continue;	/* not JSON: skip it */
		}
		if (q->len == sizeof(q->buf)) {
			*err = -EMSGSIZE;
			return NULL;
		}
		n = poll(&p, 1, QMP_TIMEOUT_MS);
		if (n == 0) {
			*err = -ETIMEDOUT;
			return NULL;
		}
		n = n < 0 ? -1 : read(q->fd, q->buf + q->len, sizeof(q->buf) - q->len);
		if (n <= 0) {
			*err = n < 0 ? -errno : -ECONNRESET;
			return NULL;
		}
		q->len += (size_t)n;
	}
}

int qmp_call(struct qmp *q, const char *command, struct json_object *args,
	     struct json_object **ret)
{
	struct json_object *o = json_object_new_object(), *r, *v;
	const char *s;
	int rc = 0;

	json_object_object_add(o, "execute", json_object_new_string(command));
	if (args)
		json_object_object_add(o, "arguments", args);
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	/* A QEMU that exited is an error here, not SIGPIPE. */
	if (send(q->fd, s, strlen(s), MSG_NOSIGNAL) != (ssize_t)strlen(s) ||
	    send(q->fd, "\n", 1, MSG_NOSIGNAL) != 1)
		rc = errno ? -errno : -EIO;
	json_object_put(o);
	while (!rc) {
		r = read_line(q, &rc);
		if (!r)
			break;
		if (json_object_object_get_ex(r, "return", &v)) {
			if (ret)
				*ret = json_object_get(v);
			json_object_put(r);
			return 0;
		}
		if (json_object_object_get_ex(r, "error", &v)) {
			cli_error("live: QEMU: %s: %s\n", command, cli_json_str(v, "desc", "error"));
			rc = -EIO;
		}
		json_object_put(r);	/* an event, or the error */
	}
	return rc;
}

int qmp_open(struct qmp *q, const char *path, int timeout_ms)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	struct json_object *greeting;
	int rc = -ENOENT;

	q->len = 0;
	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		rc = cli_unix_connect(path);
		if (rc >= 0 || (rc != -ENOENT && rc != -ECONNREFUSED))
			break;
		nanosleep(&pause, NULL);
	}
	if (rc < 0)
		return rc;
	q->fd = rc;
	greeting = read_line(q, &rc);
	if (!greeting) {
		qmp_close(q);
		return rc;
	}
	json_object_put(greeting);
	rc = qmp_call(q, "qmp_capabilities", NULL, NULL);
	if (rc < 0)
		qmp_close(q);
	return rc;
}

void qmp_close(struct qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
}
