/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How fast the tiering answers a change of the hot set (tier_stats.react_s,
 * memmig_tier_stats.react_s): a change is the hot units differing from the
 * last interval's in more than a quarter of the larger of the two sets (a
 * first hot set counts); the answer, 90 % of the hot set's bytes on fast.
 * Both are seen at an interval's start, before its moves.
 */
#ifndef MEMMIG_TIER_REACT_H
#define MEMMIG_TIER_REACT_H

#include "lib/tier/tier.h"

struct tier_react {
	uint64_t *hot_prev;	/* the last interval's hot units, sorted */
	size_t nhot_prev;
	double change_t;	/* when a change not yet answered was seen; < 0: none */
};

void tier_react_init(struct tier_react *r);
/* One interval's look at the units (sorted by address) and the hot set's
 * bytes, of them on fast, at now_s: *react_s (-1: none yet) grows to the
 * longest answer, 0 for a change already answered when seen. */
void tier_react_note(struct tier_react *r, const struct tier_unit *u, size_t n,
		     uint64_t hot_bytes, uint64_t hot_fast, double now_s, double *react_s);
void tier_react_free(struct tier_react *r);

#endif
