/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal to libmemmig: what topology.c needs from topology-dax.c, and
 * the lighter snapshot a move takes. */
#ifndef MEMMIG_TOPOLOGY_PRIVATE_H
#define MEMMIG_TOPOLOGY_PRIVATE_H

#include "lib/core/memmig-private.h"

/*
 * Lists the DAX devices libdaxctl sees into a new array (*out, to be freed
 * with free(); NULL when *count is 0), sysfs's where libdaxctl cannot be
 * loaded or started.  DAX is optional: a machine without DAX devices gives
 * 0 devices and 0.  Only our own allocation failure is an error (-ENOMEM).
 */
int memmig_topo_dax_scan(struct memmig_ctx *ctx, struct memmig_dax_info **out,
			 unsigned int *count);
/* The same from sysfs alone (topology-dax-sysfs.c). */
int memmig_topo_dax_scan_sysfs(struct memmig_ctx *ctx, struct memmig_dax_info **out,
			       unsigned int *count);
/* Appends *d to the array *v of *n (room for *cap), said in the debug log:
 * 0 or -ENOMEM. */
int memmig_topo_dax_push(struct memmig_ctx *ctx, struct memmig_dax_info **v, unsigned int *n,
			 unsigned int *cap, const struct memmig_dax_info *d);
/* Whether the named DAX device sits under the kernel's CXL bus. */
bool memmig_topo_dax_on_cxl(const char *name);

/*
 * memmig_topo_new() without the memory tiers and the DAX devices: the
 * nodes, their CPUs and distances, which is what a move places its threads
 * by.  The DAX scan starts libdaxctl and walks sysfs per device, some
 * 5 ms a plan under TCG, for nothing a move reads.
 */
int memmig_topo_new_nodes(struct memmig_ctx *ctx, struct memmig_topo **out);

#endif
