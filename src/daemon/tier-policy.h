/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A tiering's policy as memmigd keeps it (a request's, a domain's tier
 * element's): the nodes in place, what memmig_tier_opts points into.
 */
#ifndef MEMMIGD_TIER_POLICY_H
#define MEMMIGD_TIER_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "memmig.h"

struct tiers_policy {
	int fast[MEMMIG_TIER_MAX_NODES];
	unsigned int nfast;
	int slow[MEMMIG_TIER_MAX_NODES];
	unsigned int nslow;
	unsigned int slow_share;	/* % on slow; 0: fast_free */
	uint64_t fast_free;
	unsigned int interval_ms;
	uint64_t rate;			/* 0: no limit */
	unsigned int cold_intervals;
	unsigned int min_stay;
	unsigned int pause_ms;
};

/* memmigd's defaults (docs/protocol.md): MEMMIG_TIER_*_DEFAULT, no nodes. */
void tiers_policy_defaults(struct tiers_policy *p);
/* The options of p (pointing into it) for the library. */
struct memmig_tier_opts tiers_policy_opts(const struct tiers_policy *p);
/* memmig_tier_check_opts()'s answer: 0 or -EINVAL with a sentence. */
int tiers_policy_check(const struct tiers_policy *p, char *msg, size_t len);

#endif
