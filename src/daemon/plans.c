/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Move requests while libmemmig plans them.  Planning reads the target's
 * mappings (smaps): for a process of 65k mappings that takes 0.36 s, which
 * no client should wait for on the loop thread.  memmig_move_plan_start()
 * plans on the move's own thread and wakes the loop through the eventfd
 * (the move's notify); the loop then queues the job and hands the reply
 * over (plans_collect()).  The client gets nothing else answered until
 * then (replies stay in request order); the other clients go on.
 *
 * A domain's move first widens the domain's nodeset through libvirtd
 * (rebalance.c), a round trip that may wait: it and the plan run on a
 * thread of the plan's own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/memmigd.h"
#include "util/cpuset.h"

struct plan {
	struct memmigd *d;
	struct client_cred cred;
	struct proto_request *req;	/* owned */
	struct memmig_move *mv;
	struct job_spec spec;		/* spec.pin owned */
	struct conn *conn;		/* NULL once the client is gone */
	plan_done_fn done;		/* the requester's continuation */
	struct plan *next;
	/* a domain's move: the widen and the plan on a thread of its own */
	bool threaded;
	pthread_t thread;
	atomic_bool ready;
	int rc;
	char msg[512];			/* why rc, where the thread knows better */
};

/* A domain's move: widen its nodeset, check the cpuset, plan. */
static void *domain_plan(void *arg)
{
	struct plan *p = arg;
	struct proto_request *r = p->req;
	uint64_t one = 1;
	int rc;

	rc = domains_rebalance_begin(p->d->domains, r->domain, p->spec.pid, r->to_node,
				     p->msg, sizeof(p->msg));
	if (!rc) {
		rc = util_cpuset_check_at(p->spec.pid, p->spec.pin->procfd, r->to_node, p->msg,
					  sizeof(p->msg));
		if (!rc) {
			p->msg[0] = '\0';	/* the plan's errors: move_error() words them */
			rc = memmig_move_plan(p->mv);
		}
		if (rc)	/* widened, not moving: restore */
			domains_job_done(p->d->domains, r->domain, r->to_node, rc, 0);
	}
	p->rc = rc;
	atomic_store(&p->ready, true);
	if (write(p->d->wake_fd, &one, sizeof(one)) != sizeof(one))
		util_log(LOG_WARNING, "waking the loop: a move may wait");
	return NULL;
}

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
			    .conn = conn, .done = done, .threaded = req->domain[0] != 0 };
	if (p->threaded)
		rc = -pthread_create(&p->thread, NULL, domain_plan, p);
	else
		rc = memmig_move_plan_start(mv);
	if (rc) {
		free(p);
		return rc;
	}
	p->next = plans;
	plans = p;
	return 0;
}

static bool planned(struct plan *p)
{
	struct memmig_move_progress pr = { .sz = sizeof(pr) };

	if (p->threaded)
		return atomic_load(&p->ready);
	memmig_move_get_progress(p->mv, &pr);
	return pr.state != MEMMIG_MOVE_PLANNING;
}

/* The plan's outcome: the job queued, or why not. */
static struct json_object *plan_reply(struct plan *p)
{
	struct json_object *reply;
	int rc;

	if (!p->threaded)
		rc = memmig_move_wait(p->mv, NULL);
	else
		rc = p->rc;
	if (rc && p->msg[0]) {
		memmig_move_unref(p->mv);
		auth_pin_free(p->spec.pin);
		return proto_reply_error(p->req, rc, "%s", p->msg);
	}
	p->spec.domain = p->req->domain[0] ? p->req->domain : NULL;
	reply = p->done(p->d, p->req, rc, p->mv, &p->spec);
	/* Widened but not queued (the process went away, the table is
	 * full): restore the nodeset. */
	if (p->threaded && !rc && !json_object_object_get_ex(reply, "job", NULL))
		domains_job_done(p->d->domains, p->req->domain, p->req->to_node, -ECANCELED, 0);
	return reply;
}

void plans_collect(void (*deliver)(void *opaque, struct conn *c, struct json_object *reply),
		   void *opaque)
{
	for (;;) {
		struct plan **pp, *p = NULL;
		struct json_object *reply;

		for (pp = &plans; *pp; pp = &(*pp)->next)
			if (planned(*pp)) {
				p = *pp;
				*pp = p->next;
				break;
			}
		if (!p)
			return;
		if (p->threaded)
			pthread_join(p->thread, NULL);
		if (p->conn) {
			reply = plan_reply(p);
			deliver(opaque, p->conn, reply);
		} else {
			memmig_move_unref(p->mv);
			auth_pin_free(p->spec.pin);
			if (p->threaded && !p->rc)	/* widened for no one */
				domains_job_done(p->d->domains, p->req->domain,
						 p->req->to_node, -ECANCELED, 0);
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
