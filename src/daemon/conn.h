/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A client connection: its input split into lines, its replies queued in
 * order.  The loop (loop.c) moves the bytes; conn.c knows what they mean.
 */
#ifndef MEMMIGD_CONN_H
#define MEMMIGD_CONN_H

#include <time.h>

#include "daemon/memmigd.h"

/* Replies waiting beyond this stop the reading of requests, so that a
 * client that does not read cannot make the daemon buffer without end. */
#define CONN_OUT_HIGH	(256 * 1024)

enum io_kind { IO_ACCEPT, IO_ACCEPT_PAUSE, IO_SIGNAL, IO_WAKE, IO_RECV, IO_SEND, IO_CANCEL };

/* What an io_uring completion belongs to: its user_data points at one. */
struct loop_io {
	enum io_kind kind;
	struct conn *conn;
};

struct conn {
	int fd;
	struct client_cred cred;
	char *in;			/* PROTO_MAX_LINE bytes */
	size_t in_len, scan;		/* in[0..scan) has no newline */
	/* Replies: out is what a send in flight reads (never moved or
	 * reallocated while it is), queued what waits behind it. */
	char *out;
	size_t out_len, out_off, out_cap;	/* out[out_off..out_len) unsent */
	char *queued;
	size_t queued_len, queued_cap;
	bool recv_busy, send_busy;	/* an SQE in flight */
	bool eof;			/* no more reading */
	bool closing;			/* close once the replies are out */
	bool cancelling;		/* the recv is being cancelled */
	bool waiting;			/* a move's reply comes from plans.c */
	bool subscribed;		/* gets events (events.h) */
	struct loop_io recv_io, send_io;
	time_t last_active;		/* the last bytes in or out */
	struct conn *next, *prev;
};

struct conn *conn_new(int fd, const struct client_cred *cred);
void conn_free(struct conn *c);
size_t conn_out_pending(const struct conn *c);
/* With no send in flight: the bytes to send next (moving what queued into
 * out when out is done), or 0. */
size_t conn_out_next(struct conn *c, const char **buf);
/* res bytes of out were sent. */
void conn_out_sent(struct conn *c, size_t res);
/* Nobody will read the replies: drops them. */
void conn_out_drop(struct conn *c);
/* Queues a reply line; takes the reference. */
int conn_queue(struct conn *c, struct json_object *reply);
/* Queues len bytes of complete lines as they are. */
int conn_queue_line(struct conn *c, const char *line, size_t len);
/* Answers the complete lines received while the replies are not backed
 * up; a line over PROTO_MAX_LINE gets EMSGSIZE and closes the connection
 * (the rest of it cannot be told from the next request). */
void conn_process(struct memmigd *d, struct conn *c);

#endif
