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
 * Sources set their bit in src for each unit touched since their last
 * call, and bit 0 of hist where the touch is sure: a write the kernel
 * recorded.  DAMON's marks are estimates (a region's accesses spread over
 * the units it covers): they go to damon_hist, and a unit DAMON marks two
 * intervals in a row counts as touched (and is promoted at three:
 * tier-plan.h).  tier_step shifts both histories once per interval.
 */
struct tier_unit {
	uint64_t addr;		/* start, in the process */
	uint32_t len;		/* bytes, <= TIER_UNIT */
	uint8_t hist;		/* bit i: touched i intervals ago */
	uint8_t src;		/* enum tier_source bits, this interval */
	uint8_t damon_hist;	/* bit i: DAMON marked it i intervals ago */
	int16_t node;		/* where most sampled pages are; -1: none */
	uint16_t sampled;	/* pages sampled, present */
	uint16_t on_fast;	/* of them, on a fast node */
	uint16_t on_slow;	/* of them, on a slow node */
	uint32_t moved_at;	/* interval of its last move (hysteresis) */
	uint32_t cold_since;	/* interval it was last touched or first seen */
	int8_t last_dir;	/* its last move: 1 promoted, -1 demoted, 0 none */
	uint8_t backoff;	/* its bounces, up to TIER_BACKOFF_MAX: each
				 * doubles the idle intervals it needs to go
				 * cold (tier_unit_cold()) */
	uint32_t vma;		/* which mapping it is in, in address order */
};

/* A unit that bounced 4 times needs 16 times cold_intervals untouched. */
#define TIER_BACKOFF_MAX	4

/* Pages of a unit whose node is asked each interval (one per 64 KiB). */
#define TIER_SAMPLES		32

/* What the operator asks for one process. */
struct tier_policy {
	int fast[TIER_MAX_NODES];
	unsigned int nfast;
	int slow[TIER_MAX_NODES];
	unsigned int nslow;
	unsigned int slow_share;	/* % of its memory wanted on the slow
					 * nodes; 0: use fast_free */
	uint64_t fast_free;		/* bytes kept free on the fast nodes;
					 * 0: use slow_share */
	unsigned int interval_ms;	/* TIER_INTERVAL_MIN_MS..MAX */
	uint64_t rate;			/* bytes moved per second; 0: no limit */
	unsigned int cold_intervals;	/* untouched this long before a
					 * demotion, 1..TIER_HIST_BITS */
	unsigned int min_stay;		/* intervals a moved unit stays */
	unsigned int pause_ms;		/* the pause budget of a unit's move */
};

#define TIER_INTERVAL_MIN_MS	100
#define TIER_INTERVAL_MAX_MS	3600000
#define TIER_PAUSE_DEFAULT_MS	50

/* 0 or -EINVAL with a sentence in err: empty or overlapping node sets,
 * both or neither of slow_share and fast_free, values out of range. */
int tier_policy_check(const struct tier_policy *p, char *err, size_t len);
bool tier_policy_is_fast(const struct tier_policy *p, int node);
bool tier_policy_is_slow(const struct tier_policy *p, int node);
/* Resident bytes of a unit (estimated from its samples) and of them on
 * fast and slow nodes. */
uint64_t tier_unit_resident(const struct tier_unit *u);
uint64_t tier_unit_on_fast(const struct tier_unit *u);
uint64_t tier_unit_on_slow(const struct tier_unit *u);
unsigned int tier_unit_samples(const struct tier_unit *u);


/* ---- The engine: one per tiered process ---- */
struct memmig_ctx;
struct tier;

/*
 * The process tiered, as its caller pinned it.  pid is for the system
 * calls that take one (move_pages(2)); every file of the process (maps,
 * smaps, pagemap, clear_refs) is opened through procfd, an fd on its
 * /proc/PID directory, which names that process and no later one with its
 * pid, and a lookup in it before and after each system call says whether
 * the pid is still its own (-ESRCH once it was reaped).  check: NULL, or
 * the caller's rule (memmigd: move_pages(2)'s, for its client), asked with
 * opaque before each interval's reads, before soft-dirty bits are cleared
 * and before each batch of moves (memmig_move_opts.check): its -errno
 * ends the interval with it.
 */
struct tier_proc {
	int pid;
	int procfd;
	int (*check)(void *opaque);
	void *opaque;
	/* A VMM's own guest (tier-vm.h): pid and procfd are this process's,
	 * the units slot vm_slot's RAM. NULL: the process's mappings. */
	struct memmig_vm *vm;
	uint32_t vm_slot;
};

/* The caller's rule and the pin: 0, check's -errno, or -ESRCH. */
int tier_proc_check(const struct tier_proc *pr);
/* A lookup in procfd: false once the process was reaped. */
bool tier_proc_alive(const struct tier_proc *pr);

/* Intervals of history kept for reports (struct tier_sample). */
#define TIER_HISTORY		64

/* One interval, as the report shows it over time. */
struct tier_sample {
	uint32_t interval;
	double t_s;			/* since the tiering began */
	uint64_t bytes_fast, bytes_slow;	/* at the interval's start */
	uint64_t hot_bytes, hot_fast;	/* the hot units', and of them on fast */
	uint64_t promoted, demoted;	/* bytes the interval moved */
	double pause_s;			/* its longest pause of a unit */
};

struct tier_stats {
	uint32_t intervals;
	unsigned int sources;		/* enum tier_source bits in use */
	uint32_t units, hot_units;
	uint64_t bytes_resident, bytes_fast, bytes_slow;
	uint64_t hot_bytes, hot_fast;
	uint64_t promotions, demotions;	/* units, since the start */
	uint64_t promoted_bytes, demoted_bytes;
	/* Which source saw each promoted unit written or read. */
	uint64_t promoted_softdirty, promoted_damon, promoted_dirtylog;
	uint64_t bounces;		/* moves back within min_stay + cold_intervals */
	double bounce_pct;		/* bounces over moves, % */
	double react_s;			/* longest hot-set change to 90 % of it on
					 * fast (memmig_tier_stats); -1: none */
	uint64_t held, deferred;	/* kept by hysteresis, by the rate */
	uint64_t softdirty_resets;	/* intervals a mapping read as all
					 * written (new, or merged): ignored */
	uint64_t pages_failed;		/* did not move (the reports') */
	double cpu_s;			/* the process's CPU time during the
					 * intervals, the moves' workers included
					 * (a job running meanwhile counts too) */
	double pause_max_s;		/* longest pause of a unit: its share of a
					 * batch's move_pages time */
	double batch_max_s;		/* longest batch's move_pages time */
	uint64_t over_budget;		/* units whose pause passed pause_ms */
	double cpu_pct_per_gib;		/* cpu_s / elapsed_s, %, per GiB resident */
	double elapsed_s;
	int last_error;			/* 0 or -errno of the last interval */
	char damon_why[160];		/* why DAMON is not a source, or "" */
};

/*
 * Starts tiering pr's memory under policy p (checked by the caller).
 * Soft-dirty is required; DAMON is used where the kernel has it.  flags
 * are enum memmig_migrate_flags for the moves.  procfd is duplicated (the
 * engine's until tier_free()); check and opaque must outlive the engine.
 * 0, or -errno with why.
 */
int tier_new(struct memmig_ctx *ctx, const struct tier_proc *pr, const struct tier_policy *p,
	     unsigned int flags, struct tier **out, char *why, size_t len);
/* One interval: reads the sources, samples, plans and moves (the first
 * also tries DAMON, which may block an aggregation).  0, -ESRCH
 * (the process is gone: stop), the check's -errno (stop), or another
 * -errno (the interval failed, the next may not). */
int tier_step(struct tier *t);
void tier_get_stats(const struct tier *t, struct tier_stats *out);
/* The last n intervals (at most TIER_HISTORY), oldest first; returns n. */
unsigned int tier_get_history(const struct tier *t, struct tier_sample *out, unsigned int max);
/* A new policy (checked) from the next interval on; history is kept. */
void tier_set_policy(struct tier *t, const struct tier_policy *p);
/* Lets other moves of the process run (memmig_move_lock()'s lock, held
 * since tier_new()): the tiering moves nothing more.  t may be NULL. */
void tier_unlock(struct tier *t);
void tier_free(struct tier *t);

#endif
