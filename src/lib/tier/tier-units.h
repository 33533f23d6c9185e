/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A process's tiered memory as 2 MiB units, and where their pages are. */
#ifndef MEMMIG_TIER_UNITS_H
#define MEMMIG_TIER_UNITS_H

#include "lib/tier/tier.h"

/* Units of at most this many: 64 GiB of memory a process. */
#define TIER_MAX_UNITS		(1u << 15)

/*
 * Lists the process's (its maps, through pr's procfd) writable private or shared mappings of at least one unit
 * (guest RAM and heaps; not stacks, code or the kernel's), cut at 2 MiB
 * boundaries, into *units (malloc'd, sorted), carrying over what *old
 * knew of units at the same address.  0, -ESRCH, -E2BIG (more than
 * TIER_MAX_UNITS), -ENOMEM or -errno.
 */
int tier_units_read(const struct tier_proc *pr, const struct tier_unit *old, size_t nold,
		    struct tier_unit **units, size_t *n);
/* What old (sorted) knew of the unit at u->addr stays known; *j walks old
 * and stays where it stopped, so a sorted list of new units carries over
 * in one pass. */
void tier_unit_carry(struct tier_unit *u, const struct tier_unit *old, size_t nold, size_t *j);
/* Asks the node of TIER_SAMPLES pages of each unit (move_pages(2) with
 * no target, between two looks at pr's pin: -ESRCH when the process was
 * reaped around it) and sets node, sampled, on_fast and on_slow.  0 or
 * -errno. */
int tier_units_sample(const struct tier_proc *pr, struct tier_unit *units, size_t n,
		      const struct tier_policy *p);

#endif
