/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One interval's decision, from what the units' history and samples say:
 * which units to promote to the fast nodes and which to demote to the
 * slow ones, within the policy's share or watermark, its rate and its
 * hysteresis.  Pure: no system calls, so that it is tested on its own.
 */
#ifndef MEMMIG_TIER_PLAN_H
#define MEMMIG_TIER_PLAN_H

#include "lib/tier/tier.h"

struct tier_plan_in {
	const struct tier_policy *policy;
	uint32_t now;			/* this interval's number, from 1 */
	uint64_t fast_free;		/* bytes free on the fast nodes now */
	uint32_t watched_from;		/* the first interval every source
					 * saw: DAMON's warm-up (tier.c) */
};

struct tier_plan {
	size_t *promote;		/* unit indices, hottest first */
	size_t npromote;
	size_t *demote;			/* unit indices, coldest first */
	size_t ndemote;
	uint64_t promote_bytes;		/* resident bytes not yet on fast */
	uint64_t demote_bytes;		/* resident bytes on fast */
	unsigned int held;		/* wanted to move, kept by min_stay */
	unsigned int deferred;		/* left to a later interval by the rate */
};

/*
 * A DAMON mark becomes a touch when DAMON marked the unit in the interval
 * before too.  A single mark was mostly a neighbour's accesses: promoted,
 * such units went back within two intervals (19 bounces in 42 promotions
 * in the tier).  A unit read through two intervals waits one more.
 */
static inline void tier_unit_confirm(struct tier_unit *u)
{
	if ((u->damon_hist & 3) == 3)
		u->hist |= 1;
}

/* Whether the unit counts as hot: touched in the last interval. */
static inline bool tier_unit_hot(const struct tier_unit *u)
{
	return u->hist & 1;
}

/*
 * Whether the unit goes to the fast nodes if it is not there: a write
 * seen this interval (soft-dirty, a dirty log), or DAMON's marks three
 * intervals running.  A move costs a copy and a pause, and one made on an
 * estimate comes back: the tier's runs that failed their bounce or
 * hot-set check had promoted units DAMON alone saw (3 in 32 promotions, 4
 * bounces; 1 in 30, 2 bounces and a hot unit not yet on fast two
 * intervals after its change), the runs that passed none.  Two marks in a
 * row still keep a unit from going cold; a unit only read is promoted two
 * intervals after a written one would be (one more than before).
 */
static inline bool tier_unit_promotable(const struct tier_unit *u)
{
	return (u->hist & 1) && ((u->src & (TIER_SRC_SOFTDIRTY | TIER_SRC_DIRTYLOG)) ||
				 (u->damon_hist & 7) == 7);
}

/*
 * Whether the unit counts as cold: untouched for cold_intervals, twice that
 * for each time it bounced (u->backoff), and watched that long by every
 * source (a unit first seen has no history yet; before DAMON's warm-up
 * ends, a unit only read looks untouched).  In the tier, memmig-qemu's one
 * bounce in 56 moves was a unit of QEMU's heap demoted in DAMON's warm-up
 * and promoted on its marks three intervals later.
 */
static inline bool tier_unit_cold(const struct tier_unit *u, unsigned int cold_intervals,
				  uint32_t now, uint32_t watched_from)
{
	uint32_t since = u->cold_since > watched_from ? u->cold_since : watched_from;
	unsigned int k = cold_intervals << u->backoff;
	unsigned int mask = k >= TIER_HIST_BITS ? (1u << TIER_HIST_BITS) - 1 : (1u << k) - 1;

	return !(u->hist & mask) && now >= since + k;
}

/*
 * Records the unit's move at interval now (dir 1 promoted, -1 demoted);
 * returns whether it bounced: moved back the other way within window
 * intervals of its last move.  A bounce doubles the idle time the unit
 * needs to go cold.  In CI a unit of QEMU's heap, touched in most
 * intervals with gaps of one (touch bits 0x77, 0xeb), went down after each
 * gap and up at its next touch, three times in one run (3 bounces in 59
 * moves); now it can bounce once for each doubling its gaps outlast.
 */
static inline bool tier_unit_moved(struct tier_unit *u, int dir, uint32_t now,
				   uint32_t window)
{
	bool bounce = u->last_dir == -dir && now - u->moved_at <= window;

	if (bounce && u->backoff < TIER_BACKOFF_MAX)
		u->backoff++;
	u->moved_at = now;
	u->last_dir = (int8_t)dir;
	return bounce;
}

/* 0 or -ENOMEM; free the plan with tier_plan_free(). */
int tier_plan_make(const struct tier_unit *units, size_t n, const struct tier_plan_in *in,
		   struct tier_plan *out);
void tier_plan_free(struct tier_plan *plan);

#endif
