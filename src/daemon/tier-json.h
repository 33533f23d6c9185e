/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A tiering as JSON (docs/json.md, "tiering"): the one builder. */
#ifndef MEMMIGD_TIER_JSON_H
#define MEMMIGD_TIER_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "daemon/tier-policy.h"

enum tiered_state { TIERED_RUNNING, TIERED_STOPPING, TIERED_ENDED };

/* What memmigd knows of one tiering, copied under its lock. */
struct tiered_view {
	uint64_t id;
	int pid;
	char domain[256];	/* "": by pid */
	uid_t uid;
	int state;		/* enum tiered_state */
	int result;		/* once ended: 0 (cleared) or -errno */
	struct tiers_policy policy;
	struct memmig_tier_stats st;
	struct memmig_tier_sample hist[MEMMIG_TIER_HISTORY];
	unsigned int nhist;
	uint64_t last_moves;	/* promotions + demotions at the last event */
};

/* A new object; with history, the intervals kept (oldest first). */
struct json_object *tier_json(const struct tiered_view *v, bool history);
struct json_object *tier_policy_json(const struct tiers_policy *p);
const char *tier_state_name(int state);

#endif
