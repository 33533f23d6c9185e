/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A VMM tiers its own guest: minivmm's hot-set guest, whose window the VMM
 * moves phase after phase, tiered between a fast and a slow node by
 * libmemmig (memmig_tier with opts.vm), with where its pages are sampled
 * every interval from the VMM's own view (move_pages(2)) and every page
 * checked at the end.  Shared by minivmm --tier, memmig-cli demo --tier
 * and the tier's guest-tier-vm.
 */
#ifndef MINIVMM_TIER_RUN_H
#define MINIVMM_TIER_RUN_H

#include <memmig.h>
#include <stdbool.h>

#include "minivmm/vmm.h"

struct minivmm_tier_opts {
	int fast, slow;			/* nodes */
	unsigned int hot_pct;		/* of the RAM, unit 0 (code, table)
					 * included: whole 2 MiB units */
	unsigned int phase_ms;		/* the window moves this often */
	unsigned int phases;
	unsigned int interval_ms;	/* the tiering's */
	unsigned int pause_ms;		/* a unit's pause budget */
	bool observe;			/* no tiering by memmig: the same run
					 * under another mechanism (the
					 * kernel's) or none */
};

struct minivmm_tier_result {
	double hot_fast_min_2i;		/* % of the window on fast, two intervals
					 * after each change: the least */
	double slow_pct_mean;		/* % of the RAM on slow, the second half
					 * of every phase */
	double slow_phase_min;		/* the same mean of each phase alone: */
	double slow_phase_max;		/* the lowest and the highest */
	double slow_target;		/* what the hot share leaves for slow */
	struct memmig_tier_stats st;
	struct minivmm_stats vs;	/* the guest's errors and stalls */
	struct minivmm_check check;	/* every page, at the end */
	int verify_rc;
};

/* Each interval, before its step: where the pages are. */
typedef void (*minivmm_tier_sample_fn)(void *opaque, unsigned int phase,
				       unsigned int interval, double hot_fast_pct,
				       double slow_pct);

/*
 * Moves the guest's RAM (slot 0) live to the slow node, then tiers it for
 * the phases, and checks every page.  0 with *out filled, or the first
 * -errno (the initial move's, memmig_tier_new()'s with why); -EINVAL when
 * the RAM has too few units for the hot share.
 */
int minivmm_tier_run(struct memmig_ctx *ctx, struct memmig_vm *vm, struct minivmm *vmm,
		     const struct minivmm_tier_opts *o, minivmm_tier_sample_fn fn,
		     void *opaque, struct minivmm_tier_result *out, char *why, size_t len);
/* No page lost or torn, no error the guest saw, the vCPU still running. */
bool minivmm_tier_intact(const struct minivmm_tier_result *r);

#endif
