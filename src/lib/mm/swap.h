/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Swapping a copy over its source with mremap(2) replaces the mapping too.
 * These helpers give the copy the source mapping's attributes first, so that
 * the range looks as it did, with other pages.
 */
#ifndef MEMMIG_SWAP_H
#define MEMMIG_SWAP_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/mm/smaps.h"

struct memmig_ctx;

/* This process's mappings as they were when the copy started. */
struct memmig_swap_src {
	struct memmig_vma *vmas;
	size_t nvmas;
	bool thp_always;	/* THP mode "always" */
};

int memmig_swap_src_read(struct memmig_swap_src *s);
void memmig_swap_src_free(struct memmig_swap_src *s);
/* -EACCES (logged) when a mapping of [addr, addr + len) is not readable:
 * a copy would kill the process reading it. */
int memmig_swap_src_readable(struct memmig_ctx *ctx, const struct memmig_swap_src *s,
			     uint64_t addr, uint64_t len);
/* -EOPNOTSUPP (logged) when a mapping of [addr, addr + len) has a VMA flag
 * or a protection key that a private anonymous copy cannot be given
 * (struct memmig_vma's odd, pkey): the swap would drop it. */
int memmig_swap_src_keepable(struct memmig_ctx *ctx, const struct memmig_swap_src *s,
			     uint64_t addr, uint64_t len);
/*
 * Commit charge: the pieces of dst (mapped with MAP_NORESERVE or not, as
 * dst_noreserve says) whose source mapping differs are mapped again as it
 * is, and bound to node; the swap moves the copy's mapping, charge and all.
 */
int memmig_swap_account(const struct memmig_swap_src *s, uint8_t *dst, uint64_t src,
			uint64_t len, bool dst_noreserve, int node);
/* Whether the source mapping at addr has MAP_NORESERVE. */
bool memmig_swap_noreserve(const struct memmig_swap_src *s, uint64_t addr);
/* The one source mapping that holds all of [addr, addr + len), or NULL. */
const struct memmig_vma *memmig_swap_vma(const struct memmig_swap_src *s,
					 uint64_t addr, uint64_t len);
/* The source's THP advice on the destination, before it is populated. */
int memmig_swap_advise(const struct memmig_swap_src *s, uint64_t src,
		       uint64_t len, uint8_t *dst);
/* Would [src, src + len) get a THP?  Only then may a reserve chunk (one THP)
 * stand in for it. */
bool memmig_swap_takes_thp(const struct memmig_swap_src *s, uint64_t src,
			   uint64_t len);
/*
 * memmig_swap_attrs() gives dst the attributes of [src, src + len)
 * (protection, mlock, fork, wipe-on-fork, dump, access pattern and KSM
 * advice); memmig_swap_in() does
 * that, then moves it over src: one mremap per source
 * mapping (before Linux 6.17 mremap moves one mapping at a time).
 * Attributes first: a failure there leaves the source whole.
 */
int memmig_swap_attrs(const struct memmig_swap_src *s, uint8_t *dst, uint64_t src,
		      uint64_t len);
/* Moves [from, from + len) to [to, to + len) with one mremap per piece
 * that one source mapping of [src, src + len) holds; *moved (if not
 * NULL) says how far it got, pieces in address order. */
int memmig_swap_move(const struct memmig_swap_src *s, uint64_t from, uint64_t to,
		     uint64_t src, uint64_t len, uint64_t *moved);
int memmig_swap_in(const struct memmig_swap_src *s, uint8_t *dst, uint64_t src,
		   uint64_t len);

#endif
