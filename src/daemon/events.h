/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Events for subscribed clients ({"op":"subscribe"}): a job created or
 * changing state, a domain registered or unregistered.  Posted from any
 * thread into a bounded queue; the loop takes them and queues one line per
 * event on each subscriber (loop.c), closing a subscriber whose unsent
 * events pass EVENTS_MAX_BACKLOG instead of buffering without end.
 *
 * Every bound is per client as well: an event line is at most
 * EVENTS_MAX_EVENT bytes (a job's report keeps at most
 * MEMMIG_REPORT_MAX_FAILED_RANGES failed ranges, memmig.h), and a
 * subscriber's backlog holds two of the longest, so that one that reads is
 * never closed for the size of an event; of the EVENTS_MAX_SUBSCRIBERS
 * places, one uid other than root takes at most EVENTS_USER_SUBSCRIBERS
 * and the last EVENTS_ROOT_SUBSCRIBERS are root's.
 */
#ifndef MEMMIGD_EVENTS_H
#define MEMMIGD_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <json-c/json.h>

#define EVENTS_MAX_SUBSCRIBERS	16
#define EVENTS_ROOT_SUBSCRIBERS	4		/* of those, kept for root */
#define EVENTS_USER_SUBSCRIBERS	4		/* at most, one uid other than root */
#define EVENTS_MAX_QUEUED	1024		/* posted, not yet taken by the loop */
#define EVENTS_MAX_EVENT	(128 * 1024)	/* one event line, bytes */
#define EVENTS_MAX_BACKLOG	(2 * EVENTS_MAX_EVENT)	/* unsent bytes of one subscriber */
#define EVENTS_SNDBUF		(64 * 1024)	/* a subscriber's SO_SNDBUF */
#define EVENTS_ANYONE		((uid_t)-1)	/* an event every subscriber sees */

struct events;

/* wake_fd: written when an event is posted off the loop thread (the
 * thread that calls events_new). */
int events_new(int wake_fd, struct events **out);
void events_free(struct events *e);

/* One more subscriber of uid: 0, or -EBUSY with why (no place left, the
 * last ones root's, or uid's share taken). */
int events_subscribe(struct events *e, uid_t uid, const char **why);
void events_unsubscribe(struct events *e, uid_t uid);
unsigned int events_subscribers(struct events *e);

/* Any thread: {"event": type, "time": ..., name: body} for the
 * subscribers that may see uid's things (root's see all); takes body.
 * Nothing is kept while nobody subscribed.  A line longer than
 * EVENTS_MAX_EVENT (none that memmigd makes) is not sent: it is counted
 * in the next "lost" event, and logged. */
void events_post(struct events *e, uid_t uid, const char *type, const char *name,
		 struct json_object *body);

/* The loop: the next queued event as one line with its newline
 * (malloc'd, *len), and who may see it; NULL when none is queued.  After
 * an overflow, a "lost" event with the count follows those kept. */
char *events_take(struct events *e, uid_t *uid, size_t *len);

#endif
