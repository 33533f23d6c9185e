/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The DAMON hotness source: which 2 MiB units of a process the kernel's
 * Data Access MONitor saw accessed, reads as well as writes, through its
 * sysfs interface (CONFIG_DAMON_SYSFS, Linux 6.x; Debian's 6.12 has it,
 * its 6.1 does not).  Every process tiered this way is one target of one
 * kdamond of memmig's; one call per interval collects them all.
 */
#ifndef MEMMIG_TIER_DAMON_H
#define MEMMIG_TIER_DAMON_H

#include <stddef.h>

#include "lib/tier/tier.h"

#define TIER_DAMON_MAX_TARGETS	32	/* processes at once */
#define TIER_DAMON_MIN_REGIONS	10	/* DAMON regions per process */
#define TIER_DAMON_MAX_REGIONS	1000

struct tier_damon;

/*
 * Starts DAMON monitoring of pid's virtual address space (vaddr
 * operations), sampling and aggregating so that one aggregation fits in
 * interval_ms (a quarter of it: see tier-damon.c).  0, or -ENOENT (no
 * DAMON sysfs, or no vaddr operations), -EBUSY (a kdamond someone else
 * started is on, or TIER_DAMON_MAX_TARGETS reached), -ESRCH, -EPERM (not
 * root), -errno; why (may be NULL) gets a sentence for people on failure.
 * Adding a process to a running kdamond waits for its next aggregation.
 */
int tier_damon_open(int pid, unsigned int interval_ms, struct tier_damon **out,
		    char *why, size_t len);

/*
 * Marks the units (sorted by addr, non-overlapping) that DAMON saw
 * accessed in its last aggregation(s) since the previous call:
 * unit->hist |= 1; unit->src |= TIER_SRC_DAMON.  Returns the number of
 * units marked, or -errno (-ESRCH when the process is gone).  May wait
 * for the end of DAMON's current aggregation (a quarter interval, plus
 * the kernel's 100 ms polling of its own command).
 */
int tier_damon_mark(struct tier_damon *d, struct tier_unit *units, size_t n);

/* Stops monitoring the process; the last close stops memmig's kdamond.
 * No tier_damon_mark() on d may run or follow. */
void tier_damon_close(struct tier_damon *d);

/*
 * Who keeps a record of memmig's kdamond (memmigd's state file), so that
 * a memmig killed with it on can be followed by one that stops it: fn
 * hears (index, the kdamond thread's pid) when memmig starts it, and
 * (-1, 0) when memmig gives it back.  Called with DAMON's lock held.
 */
typedef void (*tier_damon_owner_fn)(int index, int kpid, void *opaque);
void tier_damon_set_owner_fn(tier_damon_owner_fn fn, void *opaque);
/*
 * Stops the kdamond an earlier memmig left on: kdamond index, only while
 * it still runs as thread kpid (a kdamond started since, by anyone, has
 * another pid).  0 stopped; -ESRCH not that one any more (left alone);
 * -errno from DAMON's files, with why.
 */
int tier_damon_reclaim(int index, int kpid, char *why, size_t len);

#endif
