/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event queue: a bounded ring of serialized lines, filled from any
 * thread (jobs end on the loop, the libvirt watcher submits jobs on its
 * own) and emptied by the loop.  Lines are built when posted so that the
 * loop hands the same bytes to every subscriber.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/events.h"
#include "proto/proto.h"
#include "util/log.h"
#include "util/size.h"

struct event {
	uid_t uid;
	char *line;
	size_t len;
};

struct events {
	pthread_mutex_t lock;
	struct event ring[EVENTS_MAX_QUEUED];
	unsigned int head, count;
	unsigned long lost;		/* dropped: the ring full, or too long */
	unsigned int subscribers;	/* the loop's; read by posters */
	uid_t sub_uid[EVENTS_MAX_SUBSCRIBERS];	/* each subscriber's */
	pthread_t loop;
	int wake_fd;
};

int events_new(int wake_fd, struct events **out)
{
	struct events *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	pthread_mutex_init(&e->lock, NULL);
	e->loop = pthread_self();
	e->wake_fd = wake_fd;
	*out = e;
	return 0;
}

void events_free(struct events *e)
{
	if (!e)
		return;
	for (unsigned int i = 0; i < e->count; i++)
		free(e->ring[(e->head + i) % EVENTS_MAX_QUEUED].line);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

/* Lock held: why uid may not have one more subscription, or NULL.  As
 * for connections (loop.c): the last places are root's, and one uid other
 * than root has a few at most. */
static const char *no_room(const struct events *e, uid_t uid)
{
	unsigned int mine = 0;

	if (e->subscribers >= EVENTS_MAX_SUBSCRIBERS)
		return "too many subscribers";
	if (uid == 0)
		return NULL;
	if (e->subscribers >= EVENTS_MAX_SUBSCRIBERS - EVENTS_ROOT_SUBSCRIBERS)
		return "too many subscribers: the last places are root's";
	for (unsigned int i = 0; i < e->subscribers; i++)
		mine += e->sub_uid[i] == uid;
	return mine >= EVENTS_USER_SUBSCRIBERS ? "too many subscribers of this uid" : NULL;
}

int events_subscribe(struct events *e, uid_t uid, const char **why)
{
	const char *no;

	pthread_mutex_lock(&e->lock);
	no = no_room(e, uid);
	if (!no)
		e->sub_uid[e->subscribers++] = uid;
	pthread_mutex_unlock(&e->lock);
	if (why)
		*why = no;
	return no ? -EBUSY : 0;
}

void events_unsubscribe(struct events *e, uid_t uid)
{
	pthread_mutex_lock(&e->lock);
	for (unsigned int i = 0; i < e->subscribers; i++)
		if (e->sub_uid[i] == uid) {
			e->sub_uid[i] = e->sub_uid[--e->subscribers];
			break;
		}
	pthread_mutex_unlock(&e->lock);
}

unsigned int events_subscribers(struct events *e)
{
	unsigned int n;

	pthread_mutex_lock(&e->lock);
	n = e->subscribers;
	pthread_mutex_unlock(&e->lock);
	return n;
}

static struct json_object *new_event(const char *type)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "event", json_object_new_string(type));
	/* Seconds since the epoch, an integer as in docs/json.md (6-digit
	 * doubles would round it); the order of the lines is the events'. */
	json_object_object_add(o, "time", json_object_new_int64(time(NULL)));
	return o;
}

void events_post(struct events *e, uid_t uid, const char *type, const char *name,
		 struct json_object *body)
{
	struct json_object *o;
	struct event ev = { .uid = uid };
	bool wake = false;

	if (!e || !events_subscribers(e)) {
		json_object_put(body);
		return;
	}
	o = new_event(type);
	json_object_object_add(o, name, body);
	ev.line = proto_reply_line(o, &ev.len);
	json_object_put(o);
	if (!ev.line)
		return;
	/* Every subscriber's backlog has room for a line this long, so that
	 * one that reads is never closed for an event's size: a longer one
	 * (a bug) is lost, and said so, rather than sent. */
	if (ev.len > EVENTS_MAX_EVENT) {
		char len[32], max[32];

		util_log(LOG_WARNING, "a %s event of %s, more than %s: not sent", type,
			 util_size_human(ev.len, len, sizeof(len)),
			 util_size_human(EVENTS_MAX_EVENT, max, sizeof(max)));
	}
	pthread_mutex_lock(&e->lock);
	if (e->count == EVENTS_MAX_QUEUED || ev.len > EVENTS_MAX_EVENT) {
		e->lost++;
		free(ev.line);
	} else {
		e->ring[(e->head + e->count++) % EVENTS_MAX_QUEUED] = ev;
	}
	wake = !pthread_equal(pthread_self(), e->loop);
	pthread_mutex_unlock(&e->lock);
	if (wake) {
		uint64_t one = 1;

		if (write(e->wake_fd, &one, sizeof(one)) != sizeof(one))
			util_log(LOG_WARNING, "waking the loop for an event: %s", strerror(errno));
	}
}

/* Lock held: the count of events dropped, as an event of its own. */
static char *take_lost(struct events *e, uid_t *uid, size_t *len)
{
	struct json_object *o = new_event("lost");
	char *line;

	json_object_object_add(o, "count", json_object_new_uint64(e->lost));
	line = proto_reply_line(o, len);
	json_object_put(o);
	e->lost = 0;
	*uid = EVENTS_ANYONE;
	return line;
}

char *events_take(struct events *e, uid_t *uid, size_t *len)
{
	char *line = NULL;

	pthread_mutex_lock(&e->lock);
	if (e->count) {
		struct event *ev = &e->ring[e->head];

		line = ev->line;
		*len = ev->len;
		*uid = ev->uid;
		e->head = (e->head + 1) % EVENTS_MAX_QUEUED;
		e->count--;
	} else if (e->lost) {
		line = take_lost(e, uid, len);
	}
	pthread_mutex_unlock(&e->lock);
	return line;
}
