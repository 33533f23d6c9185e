/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writes, from the kernel's soft-dirty bits: clearing them
 * (/proc/PID/clear_refs, "4") write-protects the process's pages; the
 * next write to a page sets its bit again, which /proc/PID/pagemap shows
 * (bit 55).  Works for any process memmigd may move, KVM guests' RAM
 * included: KVM's own writes fault through the same page tables.
 */
#ifndef MEMMIG_TIER_SOFTDIRTY_H
#define MEMMIG_TIER_SOFTDIRTY_H

#include "lib/tier/tier.h"

struct tier_softdirty;

/* Opens the process's files through pr's pin and clears its bits (pr's
 * check first): the first mark() sees the writes after this call.  pr
 * must outlive the tier_softdirty.  0, -ENOENT (a kernel without
 * CONFIG_MEM_SOFT_DIRTY, found by trying on a page of this process: why
 * says), -ESRCH, -EPERM or -errno. */
int tier_softdirty_open(const struct tier_proc *pr, struct tier_softdirty **out, char *why,
			size_t len);
/* Marks the units written since the last call (hist bit 0, src
 * TIER_SRC_SOFTDIRTY) and clears the bits again, asking pr's check
 * first.  Returns the number of units marked or -errno (-ESRCH: the
 * process is gone; the check's). */
int tier_softdirty_mark(struct tier_softdirty *sd, struct tier_unit *units, size_t n);
/* Mappings whose marks were dropped because the kernel had marked them
 * soft-dirty as a whole (new, or merged with a new neighbour). */
unsigned int tier_softdirty_vma_resets(const struct tier_softdirty *sd);
void tier_softdirty_close(struct tier_softdirty *sd);

#endif
