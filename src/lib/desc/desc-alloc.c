/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Table memory: 2 MB pages, so that walking 1.6 GB of descriptors costs a
 * few hundred TLB entries instead of 400,000.  Nothing is touched here:
 * the first init (or a lazy chunk's) faults the pages in.
 *
 * An eager table (written whole now) takes reserved hugetlb pages where
 * there are some.  A lazy one does not: it may describe terabytes of
 * which little is ever touched, and a host's hugetlb pool is for its
 * guests; it is THP over MAP_NORESERVE, charged as its chunks are used.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "lib/desc/desc-private.h"

#define HUGE MEMMIG_UNIT_SIZE
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << 26)	/* MAP_HUGE_SHIFT: not the default size */
#endif

struct memmig_desc *memmig_desc_alloc(size_t len, bool lazy, size_t *map_len,
				      int *backing)
{
	size_t n = (len + HUGE - 1) & ~(HUGE - 1);
	uint8_t *p, *aligned;

#ifdef MAP_HUGETLB
	/* Only where 2 MB pages are reserved: without MAP_NORESERVE the
	 * mmap fails rather than a later fault raising SIGBUS. */
	p = lazy ? MAP_FAILED :
		   mmap(NULL, n, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
	if (p != MAP_FAILED) {
		*map_len = n;
		*backing = MEMMIG_DESC_BACKING_HUGETLB;
		return (struct memmig_desc *)p;
	}
#endif
	/* THP needs 2 MB-aligned virtual ranges: over-map, trim both ends. */
	p = mmap(NULL, n + HUGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | (lazy ? MAP_NORESERVE : 0), -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	aligned = (uint8_t *)(((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	if (aligned > p)
		munmap(p, aligned - p);
	munmap(aligned + n, p + HUGE - aligned);
	*map_len = n;
	*backing = madvise(aligned, n, MADV_HUGEPAGE) ?
		MEMMIG_DESC_BACKING_PAGES : MEMMIG_DESC_BACKING_THP;
	return (struct memmig_desc *)aligned;
}

void memmig_desc_free(struct memmig_desc *descs, size_t map_len)
{
	if (descs)
		munmap(descs, map_len);
}
