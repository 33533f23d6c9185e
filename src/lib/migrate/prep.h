/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Preparing a worker's destinations ahead, on a thread of their own: the
 * kernel zeroing fresh pages then runs beside the copy instead of before
 * each unit's.  Units are claimed in order (so injected faults hit the
 * same units as without a helper), at most a window ahead of the worker:
 * bounded memory.  A worker that catches up prepares the next unclaimed
 * unit itself instead of waiting: where zeroing is slower than copying,
 * both CPUs zero.  On a host without a free CPU, no worse than preparing
 * inline.
 */
#ifndef MEMMIG_PREP_H
#define MEMMIG_PREP_H

#include <stddef.h>

struct memmig_prep;

/* Unit i: 0 or -errno, which the worker then gets for it. */
typedef int (*memmig_prep_fn)(void *arg, size_t i);

/*
 * Starts the helper for units [first, last), at most window units ahead of
 * the worker.  claim(arg, i) runs as unit i is claimed, one at a time and
 * in order (a failure is the unit's result); prepare(arg, i) then runs
 * unlocked, on the helper's thread or the worker's.  0, or -errno when it
 * cannot (the worker prepares all).
 */
int memmig_prep_start(size_t first, size_t last, size_t window, memmig_prep_fn claim,
		      memmig_prep_fn prepare, void *arg, struct memmig_prep **out);
/* The worker is at unit i (in order): its result, once prepared. */
int memmig_prep_wait(struct memmig_prep *p, size_t i);
/* Stops and joins the helper; NULL is fine. */
void memmig_prep_stop(struct memmig_prep *p);

#endif
