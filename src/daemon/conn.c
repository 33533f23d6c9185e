/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A client connection's buffers: lines in, replies out. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/conn.h"

struct conn *conn_new(int fd, const struct client_cred *cred)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	/* calloc: the kernel fills it through io_uring, which valgrind does
	 * not see; zeroed memory keeps it from calling the bytes undefined. */
	c->in = calloc(1, PROTO_MAX_LINE);
	if (!c->in) {
		free(c);
		return NULL;
	}
	c->fd = fd;
	c->cred = *cred;
	c->recv_io = (struct loop_io){ IO_RECV, c };
	c->send_io = (struct loop_io){ IO_SEND, c };
	return c;
}

void conn_free(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	free(c->out);
	free(c->queued);
	free(c);
}

size_t conn_out_pending(const struct conn *c)
{
	return c->out_len - c->out_off + c->queued_len;
}

size_t conn_out_next(struct conn *c, const char **buf)
{
	if (c->out_off == c->out_len && c->queued_len) {
		char *p = c->out;
		size_t cap = c->out_cap;

		c->out = c->queued;
		c->out_cap = c->queued_cap;
		c->out_len = c->queued_len;
		c->out_off = 0;
		c->queued = p;
		c->queued_cap = cap;
		c->queued_len = 0;
	}
	*buf = c->out + c->out_off;
	return c->out_len - c->out_off;
}

void conn_out_sent(struct conn *c, size_t res)
{
	c->out_off += res;
	if (c->out_off >= c->out_len)	/* all of it, or dropped meanwhile */
		c->out_off = c->out_len = 0;
}

void conn_out_drop(struct conn *c)
{
	c->out_off = c->out_len = c->queued_len = 0;
}

/* Queued behind what may be in flight: queued grows, out never moves. */
int conn_queue_line(struct conn *c, const char *line, size_t len)
{
	if (c->queued_len + len > c->queued_cap) {
		size_t cap = c->queued_cap ? c->queued_cap : 4096;
		char *p;

		while (cap < c->queued_len + len)
			cap *= 2;
		p = realloc(c->queued, cap);
		if (!p)
			return -ENOMEM;
		c->queued = p;
		c->queued_cap = cap;
	}
	memcpy(c->queued + c->queued_len, line, len);
	c->queued_len += len;
	return 0;
}

int conn_queue(struct conn *c, struct json_object *reply)
{
	size_t len;
	char *line = reply ? proto_reply_line(reply, &len) : NULL;
	int rc;

	json_object_put(reply);
	if (!line)
		return -ENOMEM;
	rc = conn_queue_line(c, line, len);
	free(line);
	return rc;
}

void conn_process(struct memmigd *d, struct conn *c)
{
	size_t start = 0;

	while (!c->closing && !c->waiting && conn_out_pending(c) < CONN_OUT_HIGH) {
		char *nl = memchr(c->in + c->scan, '\n', c->in_len - c->scan);
		struct json_object *reply;

		if (!nl) {
			c->scan = c->in_len;
			break;
		}
		reply = ops_handle(d, &c->cred, c->in + start, (size_t)(nl - c->in) - start, c);
		start = c->scan = (size_t)(nl - c->in) + 1;
		/* A move planned elsewhere: the next lines wait for its reply. */
		if (!reply) {
			c->waiting = true;
			break;
		}
		if (conn_queue(c, reply))
			c->closing = true;	/* a reply lost: the order would break */
	}
	memmove(c->in, c->in + start, c->in_len - start);
	c->in_len -= start;
	c->scan -= start;
	if (c->in_len == PROTO_MAX_LINE && c->scan == c->in_len) {
		struct json_object *reply = proto_reply_error(NULL, EMSGSIZE,
			"a line longer than %d bytes: closing the connection", PROTO_MAX_LINE);

		ops_account(d, &c->cred, -1, reply);
		conn_queue(c, reply);
		c->in_len = c->scan = 0;
		c->closing = true;
	}
}
