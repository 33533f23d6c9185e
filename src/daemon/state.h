/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What memmigd must find again after it was killed (docs/protocol.md,
 * "After a restart"): the next job id, so that ids are never reused; the
 * jobs queued or running, which a new memmigd reports as lost; and the
 * kdamond it started, which a new memmigd turns off -- that one, found by
 * the kdamond thread's pid, never anyone else's; and the domains' nodesets
 * it widened for a move and had not yet narrowed or restored, which a new
 * memmigd completes or rolls back (rebalance.c).  Kept in one small file
 * beside the socket, rewritten whole (a temporary file renamed over it)
 * on each change.
 */
#ifndef MEMMIGD_STATE_H
#define MEMMIGD_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define STATE_LOST_MAX	64	/* lost jobs still answered for */
#define STATE_REBALANCE_MAX 64	/* widened nodesets kept (domains moving) */
#define STATE_UUID_MAX	37
#define STATE_NODESET_MAX 256

struct state;

struct state_job {
	uint64_t id;
	int pid, to_node;
	uid_t uid;
	bool running;		/* else queued */
	int64_t created, started;	/* Unix seconds; 0: not (yet, or not known) */
};

/* The file for a socket: "memmigd.sock" -> "memmigd.state", else the
 * socket's path and ".state". */
void state_path_for(const char *socket, char *buf, size_t len);
/*
 * Reads what the last memmigd left at path, then writes this one's.  A
 * file memmigd did not write itself (another owner, writable by others,
 * not a plain file) is ignored, and said so.  Never fails for the file:
 * without it, ids start at 1 and nothing is found again; -ENOMEM only.
 */
int state_open(const char *path, struct state **out);
void state_free(struct state *st);

/* The changes between a hold and its release are written once, at the
 * release: a job queued and started in one pass rewrites the file once,
 * not twice.  Holds nest; st may be NULL. */
void state_hold(struct state *st);
void state_release(struct state *st);

/* The first job id of this memmigd: past every id the last one gave. */
uint64_t state_next_job_id(const struct state *st);
/* A job queued (running false) or started, and ended.  st may be NULL. */
void state_job_set(struct state *st, const struct state_job *job);
void state_job_end(struct state *st, uint64_t id);
/* A job the last memmigd (or one before it) had queued or running when
 * it was killed: true with *out. */
bool state_job_lost(struct state *st, uint64_t id, struct state_job *out);
/* Whether id was given by an earlier memmigd. */
bool state_job_before(const struct state *st, uint64_t id);

/* The kdamond memmigd runs (index, its thread's pid), or none (-1, 0). */
void state_kdamond_set(struct state *st, int index, int kpid);
/* The one a killed memmigd left: true with index and kpid. */
bool state_kdamond_left(const struct state *st, int *index, int *kpid);

/* A domain's nodeset widened for a move (libvirt's live nodeset went
 * from before to widened; the QEMU pid; the move's target). */
struct state_rebalance {
	char uuid[STATE_UUID_MAX];
	int pid, to_node;
	char before[STATE_NODESET_MAX], widened[STATE_NODESET_MAX];
};

/* Widened (kept until ended: a memmigd killed before then leaves it). */
void state_rebalance_set(struct state *st, const struct state_rebalance *rb);
/* Narrowed, restored, or dealt with after a restart. */
void state_rebalance_end(struct state *st, const char *uuid);
/* Those a killed memmigd left, up to max into out: how many. */
unsigned int state_rebalances_left(struct state *st, struct state_rebalance *out,
				   unsigned int max);

#endif
