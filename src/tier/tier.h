/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tiering: keeping a process's hot memory on fast nodes and its cold memory
 * on slow ones, in 2 MiB units, without being asked.  One struct tier per
 * process; each interval (tier_step) it asks its hotness sources which
 * units were touched, ages what it knows, plans promotions and demotions
 * within the policy's limits and moves them with libmemmig's kernel
 * strategy.  The daemon (memmigd) owns the clock and the threads.
 */
#ifndef MEMMIG_TIER_H
#define MEMMIG_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TIER_UNIT_SHIFT		21
#define TIER_UNIT		(1ULL << TIER_UNIT_SHIFT)	/* 2 MiB */
#define TIER_MAX_NODES		64	/* in each of the fast and slow sets */
#define TIER_HIST_BITS		8	/* intervals of history kept per unit */

/* Where a unit's "touched" came from (struct tier_unit.src, bits). */
enum tier_source {
	TIER_SRC_SOFTDIRTY = 1 << 0,	/* writes: /proc/PID/clear_refs + pagemap */
	TIER_SRC_DAMON = 1 << 1,	/* reads and writes: DAMON's sysfs */
	TIER_SRC_DIRTYLOG = 1 << 2,	/* writes: an embedder's KVM dirty log */
};

/*
 * One 2 MiB-aligned piece of one mapping (shorter at a mapping's edges).
 * Sources set bit 0 of hist and their bit in src for each unit touched
 * since their last call; tier_step shifts hist once per interval.
 */
struct tier_unit {
	uint64_t addr;		/* start, in the process */
	uint32_t len;		/* bytes, <= TIER_UNIT */
	uint8_t hist;		/* bit i: touched i intervals ago */
	uint8_t src;		/* enum tier_source bits, this interval */
	int16_t node;		/* where most sampled pages are; -1: none */
	uint16_t sampled;	/* pages sampled, present */
	uint16_t on_fast;	/* of them, on a fast node */
	uint16_t on_slow;	/* of them, on a slow node */
	uint32_t moved_at;	/* interval of its last move (hysteresis) */
	uint32_t cold_since;	/* interval it was last touched */
};

#endif
