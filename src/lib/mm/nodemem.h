/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Anonymous memory bound to one node: destinations and reserves. */
#ifndef MEMMIG_NODEMEM_H
#define MEMMIG_NODEMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEMMIG_MAX_NODES 1024

struct memmig_ctx;

/*
 * Maps len bytes (a multiple of 4 KiB) at a 2 MB-aligned address, advised
 * for THP if thp, with MAP_NORESERVE if noreserve, not yet populated: the
 * address, or NULL with *err set.
 */
void *memmig_map_aligned(size_t len, bool thp, bool noreserve, int *err);
/*
 * Maps len bytes (a multiple of 4 KiB) at a 2 MB-aligned address, bound to
 * node with MPOL_BIND, advised for THP if thp, with MAP_NORESERVE (no
 * commit charge) if noreserve, not yet populated.  Returns the address, or
 * NULL with *err set.
 */
void *memmig_map_on_node(size_t len, int node, bool thp, bool noreserve, int *err);
/*
 * An address window of len bytes (PROT_NONE) congruent with src modulo
 * align (a power of two), for a mapping to be placed there with
 * MAP_FIXED: its huge pages then line up with src's, and device DAX gets
 * the alignment it requires.  NULL with *err set on failure.
 */
void *memmig_window_congruent(size_t len, uint64_t src, size_t align, int *err);
/* Faults the pages in (the kernel zeroes them): 0 or -errno (-ENOMEM). */
int memmig_populate(void *addr, size_t len);
/* Binds [addr, addr + len) to node with the given MPOL_MF_* flags. */
int memmig_bind(void *addr, size_t len, int node, unsigned int flags);
/* Free bytes on a node now, or -ENOENT if it has no memory. */
long long memmig_node_free(int node);
/* The one check that a target node exists and has memory: 0, or -ENOENT
 * said through ctx's log. */
int memmig_node_check(struct memmig_ctx *ctx, int node);
/*
 * What the kernel keeps free on a node (its zones' high watermarks, from
 * /proc/zoneinfo): an allocation bound to the node fails near there, well
 * before the node's free memory is 0.  Bytes, or -errno.
 */
long long memmig_node_reserve(int node);

#endif
