/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A whole-process move in one walk of the kernel's (walk.c). */
#ifndef MEMMIG_WALK_H
#define MEMMIG_WALK_H

#include <stdbool.h>

struct memmig_job;
struct memmig_pin;

/* What the move asks, as far as the walk cares. */
struct memmig_walk_req {
	int pid;
	bool ranges;		/* ranges given: not the whole process */
	int strategy;		/* resolved */
	int target;
	unsigned int flags;	/* enum memmig_migrate_flags */
};

/* The move can go in one walk: the kernel strategy over the whole process,
 * not limited to its own pages; MEMMIG_MOVE_WALK=0 in the environment
 * says no (to compare). */
bool memmig_walk_wanted(const struct memmig_walk_req *req);
/*
 * migrate_pages(2) from each node that holds pages the jobs want moved
 * (their before, which must be known) to target, one node a call, asking
 * stop(arg) before each; *walk_s is how long it took.  0 (nothing to move
 * is 0 too), -ECANCELED when stop said so (the nodes walked are moved), or
 * the kernel's -errno, or the pin's (memmig_pin: asked around each call).
 */
int memmig_walk_run(struct memmig_job **jobs, unsigned int n, int pid,
		    const struct memmig_pin *pin, int target, bool (*stop)(void *), void *arg,
		    double *walk_s);

#endif
