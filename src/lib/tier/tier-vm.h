/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A VMM tiering its own guest: the units are the guest RAM of one of its
 * anonymous memslots, the writes come from the vm's own dirty tracking
 * (KVM's log or ring; without KVM, userfaultfd write protection or
 * soft-dirty bits: memmig_vm_track), and a unit moves through the live
 * path, under a pause of its own, so that no vCPU touches a page while it
 * is away.
 */
#ifndef MEMMIG_TIER_VM_H
#define MEMMIG_TIER_VM_H

#include "lib/tier/tier.h"

struct memmig_vm;
struct tier_vm;

/* Tracks slot's writes from now on.  0, -ENOENT (no such slot),
 * -EOPNOTSUPP (fd-backed: it moves whole, not by units; or no tracking
 * here), -EBUSY (a live migration of the vm runs), with why. */
int tier_vm_open(struct memmig_vm *vm, uint32_t slot, struct tier_vm **out, char *why,
		 size_t len);
/* The slot as units, carrying over what old knew (as tier_units_read()). */
int tier_vm_units(struct tier_vm *tv, const struct tier_unit *old, size_t nold,
		  struct tier_unit **units, size_t *n);
/* Marks the units written since the last call: hist bit 0, src
 * TIER_SRC_DIRTYLOG.  Returns how many, or -errno. */
int tier_vm_mark(struct tier_vm *tv, struct tier_unit *units, size_t n);
/*
 * Moves units idx[0..n) (sorted by address) to node, each run of adjacent
 * units in one live migration with pause_ms of budget.  Tracking is off
 * meanwhile (a migration tracks on its own): the guest's writes during
 * the moves are not counted.  Adds the bytes moved, the longest pause and
 * the units whose pause passed the budget.  0 or the first -errno (the
 * runs after it are not tried; those before stay moved).
 */
int tier_vm_move(struct tier_vm *tv, const struct tier_unit *units, const size_t *idx,
		 size_t n, int node, unsigned int pause_ms, uint64_t *bytes, double *pause,
		 uint64_t *over_budget);
void tier_vm_close(struct tier_vm *tv);

#endif
