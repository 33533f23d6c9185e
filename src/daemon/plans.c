/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Move requests while libmemmig plans them.  Planning reads the target's
 * mappings (smaps): for a process of 65k mappings that takes 0.36 s, which
 * no client should wait for on the loop thread.  memmig_move_plan_start()
 * plans on the move's own thread and wakes the loop through the eventfd
 * (the move's notify); the loop then queues the job and hands the reply
 * over (plans_collect()).  The client gets nothing else answered until
 * then (replies stay in request order); the other clients go on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/memmigd.h"

struct plan {
	struct memmigd *d;
	struct client_cred cred;
	struct proto_request *req;	/* owned */
	struct memmig_move *mv;
	struct job_spec spec;		/* spec.procfd owned */
	struct conn *conn;		/* NULL once the client is gone */
	plan_done_fn done;		/* the requester's continuation */
	struct plan *next;
};

/* The loop thread's alone: no lock. */
static struct plan *plans;

int plans_start(struct memmigd *d, const struct client_cred *c, struct proto_request *req,
		struct conn *conn, struct memmig_move *mv, const struct job_spec *spec,
		plan_done_fn done)
{
	struct plan *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	*p = (struct plan){ .d = d, .cred = *c, .req = req, .mv = mv, .spec = *spec,
			    .conn = conn, .done = done };
	rc = memmig_move_plan_start(mv);
	if (rc) {
		free(p);
		return rc;
	}
	p->next = plans;
	plans = p;
	return 0;
}

static bool planned(struct memmig_move *mv)
{
	struct memmig_move_progress pr = { .sz = sizeof(pr) };

	memmig_move_get_progress(mv, &pr);
	return pr.state != MEMMIG_MOVE_PLANNING;
}

/* The plan's outcome: the job queued, or why not. */
static struct json_object *plan_reply(struct plan *p)
{
	int rc = memmig_move_wait(p->mv, NULL);

	p->spec.domain = p->req->domain[0] ? p->req->domain : NULL;
	return p->done(p->d, p->req, rc, p->mv, &p->spec);
}

void plans_collect(void (*deliver)(void *opaque, struct conn *c, struct json_object *reply),
		   void *opaque)
{
	for (;;) {
		struct plan **pp, *p = NULL;
		struct json_object *reply;

		for (pp = &plans; *pp; pp = &(*pp)->next)
			if (planned((*pp)->mv)) {
				p = *pp;
				*pp = p->next;
				break;
			}
		if (!p)
			return;
		if (p->conn) {
			reply = plan_reply(p);
			deliver(opaque, p->conn, reply);
		} else {
			memmig_move_unref(p->mv);
			close(p->spec.procfd);
		}
		free(p->req);
		free(p);
	}
}

void plans_forget(struct conn *c)
{
	for (struct plan *p = plans; p; p = p->next)
		if (p->conn == c)
			p->conn = NULL;
}

bool plans_pending(void)
{
	return plans != NULL;
}
