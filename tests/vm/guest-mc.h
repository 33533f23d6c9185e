/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MEMMIG_GUEST_MC_H
#define MEMMIG_GUEST_MC_H

struct memmig_ctx;

/* memmig_copy_mc() on really poisoned memory: 0 ran (failures counted by
 * CHECK), else a set-up error. */
int mc_cases(struct memmig_ctx *ctx);

#endif
