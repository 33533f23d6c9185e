/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's counters, and their rendering in Prometheus' text exposition
 * format (the "metrics" op, --metrics-file) or as JSON.  Updated from the
 * loop thread and the libvirt watcher's thread: one mutex, held briefly.
 */
#ifndef MEMMIGD_METRICS_H
#define MEMMIGD_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "memmig.h"
#include "proto/proto.h"

/* Why a request was refused: the "reason" label. */
enum refuse_reason {
	REFUSE_BAD_INPUT,	/* malformed, unknown op or member, out of range */
	REFUSE_PERMISSION,	/* not the client's process, job, or a root op */
	REFUSE_LIMITS,		/* too many jobs or clients */
	REFUSE_NOT_FOUND,	/* no such process, job, domain or node */
	REFUSE_OTHER,
	REFUSE_NR
};

/* What the counters do not keep: read when rendering. */
struct metrics_now {
	unsigned int jobs_queued, jobs_running;
	unsigned int clients, subscribers;
	int libvirt;		/* -1 off, 0 disconnected, 1 connected */
	struct tiers *tiers;	/* each tiering's figures; NULL: none */
	uid_t viewer;		/* whose view: root's (and the file's) has every
				 * tiering, another uid's only its own */
};

struct metrics;

int metrics_new(struct metrics **out);
void metrics_free(struct metrics *m);

enum refuse_reason metrics_refuse_reason(int err);
const char *metrics_refuse_name(enum refuse_reason r);
/* A request (op -1: one that did not parse). */
void metrics_request(struct metrics *m, int op);
/* A request or a connection refused. */
void metrics_refused(struct metrics *m, enum refuse_reason r);
void metrics_job_created(struct metrics *m);
/* A job ended in state ("done", "failed", "cancelled") with its report
 * (NULL: it never ran). */
void metrics_job_ended(struct metrics *m, const char *state, int to_node,
		       const struct memmig_report *rep);
void metrics_subscriber_dropped(struct metrics *m);

/* The text exposition (malloc'd, NUL-terminated) or a JSON object. */
char *metrics_text(struct metrics *m, const struct metrics_now *now);
struct json_object *metrics_json(struct metrics *m, const struct metrics_now *now);

/* Whether a counter changed since the last metrics_file_text(). */
bool metrics_dirty(struct metrics *m);
/* The text for --metrics-file (as metrics_text()), the counters then no
 * longer dirty; metrics-file.h writes it. */
char *metrics_file_text(struct metrics *m, const struct metrics_now *now);

#endif
