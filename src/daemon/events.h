/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events for subscribed clients ({"op":"subscribe"}): a job created or
 * changing state, a domain registered or unregistered.  Posted from any
 * thread into a bounded queue; the loop takes them and queues one line per
 * event on each subscriber (loop.c), closing a subscriber whose unsent
 * events pass EVENTS_MAX_BACKLOG instead of buffering without end.
 */
#ifndef MEMMIGD_EVENTS_H
#define MEMMIGD_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <json-c/json.h>

#define EVENTS_MAX_SUBSCRIBERS	16
#define EVENTS_MAX_QUEUED	1024		/* posted, not yet taken by the loop */
#define EVENTS_MAX_BACKLOG	(64 * 1024)	/* unsent bytes of one subscriber */
#define EVENTS_ANYONE		((uid_t)-1)	/* an event every subscriber sees */

struct events;

/* wake_fd: written when an event is posted off the loop thread (the
 * thread that calls events_new). */
int events_new(int wake_fd, struct events **out);
void events_free(struct events *e);

/* One more subscriber: 0, or -EBUSY beyond EVENTS_MAX_SUBSCRIBERS. */
int events_subscribe(struct events *e);
void events_unsubscribe(struct events *e);
unsigned int events_subscribers(struct events *e);

/* Any thread: {"event": type, "time": ..., name: body} for the
 * subscribers that may see uid's things (root's see all); takes body.
 * Nothing is kept while nobody subscribed. */
void events_post(struct events *e, uid_t uid, const char *type, const char *name,
		 struct json_object *body);

/* The loop: the next queued event as one line with its newline
 * (malloc'd, *len), and who may see it; NULL when none is queued.  After
 * an overflow, a "lost" event with the count follows those kept. */
char *events_take(struct events *e, uid_t *uid, size_t *len);

#endif
