/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's tiered processes (docs/tiering.md): a policy per process or
 * domain, each a libmemmig tiering (memmig_tier_*) stepped on one tiering
 * thread, interval after interval, until the process ends or the policy is
 * cleared.
 */
#ifndef MEMMIGD_TIERS_H
#define MEMMIGD_TIERS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "daemon/tier-policy.h"

#define TIERS_MAX		32	/* running at once (DAMON's own limit) */
#define TIERS_ROOT		8	/* of them, kept for root: users share the rest */
#define TIERS_MAX_PER_USER	4	/* of them, one non-root user's */
#define TIERS_KEEP_ENDED	16	/* ended ones still listed, per uid */
#define TIERS_KEEP_ENDED_ALL	128	/* ... and of all uids but root */

struct tiers;
struct memmig_ctx;
struct events;
struct auth_pin;

struct tiers_spec {
	int pid;
	const char *domain;	/* NULL: by pid */
	uid_t uid;		/* the owner */
	struct auth_pin *pin;	/* the owner and the process, taken over by
				 * tiers_set() */
	struct tiers_policy policy;	/* checked */
	unsigned int flags;	/* enum memmig_migrate_flags of the moves */
};

int tiers_new(struct memmig_ctx *ctx, struct events *ev, struct tiers **out);
/* Stops the thread, ends every tiering; nothing is moved back. */
void tiers_free(struct tiers *ts);
/*
 * Starts tiering spec->pid, or gives a running tiering of the same
 * process (and owner, or root) the new policy.  Takes spec->pin in
 * every case.  Each interval runs only while the owner may still move the
 * process (auth_pin_check() before and after it): a tiering whose owner
 * may not any more ends with EPERM, the interval's figures unshown.  0
 * with *out (the tiering's JSON object), or -errno with a sentence in
 * msg: -EBUSY (too many), -EPERM (the client's process, tiered by root),
 * -ENOENT (no soft-dirty bits on this kernel), -ESRCH.
 */
int tiers_set(struct tiers *ts, const struct tiers_spec *spec, struct json_object **out,
	      char *msg, size_t len);
/*
 * Ends one (by id, or pid when id is 0): 0 with *out, or -ENOENT.  To a uid
 * other than root, another user's tiering is not there: the same -ENOENT
 * and words as a pid or id nobody tiers (no oracle of whom root tiers).
 */
int tiers_clear(struct tiers *ts, uint64_t id, int pid, uid_t uid, struct json_object **out,
		char *msg, size_t len);
/* {"tiers": [...]} members as an array: those uid may see (root: all). */
struct json_object *tiers_list_json(struct tiers *ts, uid_t uid);
/* One, with its history over time: 0, or -ENOENT (another user's too). */
int tiers_get_json(struct tiers *ts, uint64_t id, uid_t uid, struct json_object **out);
/* For the metrics: the figures of each running tiering uid may see (root:
 * all), malloc'd (*n of them). */
struct tiers_metric {
	uint64_t id;
	int pid;
	char domain[256];
	struct memmig_tier_stats st;
};
int tiers_metrics(struct tiers *ts, uid_t uid, struct tiers_metric **out, unsigned int *n);
unsigned int tiers_running(struct tiers *ts);
/* The id of the tiering that moves process pid's pages now, or 0: a move
 * of the process waits for none (see jobs_moving()). */
uint64_t tiers_of_pid(struct tiers *ts, int pid);

#endif
