// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Move requests planned off the loop thread.  Planning reads the target's
 * mappings (smaps) and registers each: for a process of 65k mappings that
 * took 0.36 s, and on the loop thread every client waited for it.  Each
 * move now runs on a thread of its own; its client gets nothing else
 * answered until the reply is out (replies stay in request order), the
 * other clients go on.  The thread wakes the loop through the eventfd, and
 * the loop hands the reply over (plans_collect()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/memmigd.h"

struct plan {
	struct memmigd *d;
	struct client_cred cred;
	struct proto_request *req;	/* owned */
	struct json_object *reply;	/* once done */
	struct conn *conn;		/* NULL once the client is gone */
	pthread_t thread;
	bool done;
	struct plan *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct plan *plans;		/* in flight and done */

static void *plan_thread(void *arg)
{
	struct plan *p = arg;
	struct json_object *reply = ops_move(p->d, &p->cred, p->req);
	uint64_t one = 1;

	pthread_mutex_lock(&lock);
	p->reply = reply;
	p->done = true;
	pthread_mutex_unlock(&lock);
	if (write(p->d->wake_fd, &one, sizeof(one)) != sizeof(one))
		mlog(LOG_LVL_WARN, "waking the loop: a move's reply may wait");
	return NULL;
}

int plans_start(struct memmigd *d, const struct client_cred *c, struct proto_request *req,
		struct conn *conn)
{
	struct plan *p = calloc(1, sizeof(*p));
	int rc;

	if (!p)
		return -ENOMEM;
	*p = (struct plan){ .d = d, .cred = *c, .req = req, .conn = conn };
	pthread_mutex_lock(&lock);
	rc = -pthread_create(&p->thread, NULL, plan_thread, p);
	if (!rc) {
		p->next = plans;
		plans = p;
	}
	pthread_mutex_unlock(&lock);
	if (rc)
		free(p);
	return rc;
}

void plans_collect(void (*deliver)(void *opaque, struct conn *c, struct json_object *reply),
		   void *opaque)
{
	for (;;) {
		struct plan **pp, *p = NULL;

		pthread_mutex_lock(&lock);
		for (pp = &plans; *pp; pp = &(*pp)->next)
			if ((*pp)->done) {
				p = *pp;
				*pp = p->next;
				break;
			}
		pthread_mutex_unlock(&lock);
		if (!p)
			return;
		pthread_join(p->thread, NULL);
		if (p->conn)
			deliver(opaque, p->conn, p->reply);
		else
			json_object_put(p->reply);
		free(p->req);
		free(p);
	}
}

void plans_forget(struct conn *c)
{
	pthread_mutex_lock(&lock);
	for (struct plan *p = plans; p; p = p->next)
		if (p->conn == c)
			p->conn = NULL;
	pthread_mutex_unlock(&lock);
}

bool plans_pending(void)
{
	bool any;

	pthread_mutex_lock(&lock);
	any = plans != NULL;
	pthread_mutex_unlock(&lock);
	return any;
}
