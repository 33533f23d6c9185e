/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal to the descriptor tables: the table body and its init paths. */
#ifndef MEMMIG_DESC_PRIVATE_H
#define MEMMIG_DESC_PRIVATE_H

#include <pthread.h>
#include <stdint.h>

#include "lib/core/memmig-private.h"
#include "lib/copy/arch/arch.h"
#include "lib/desc/desc-choose.h"

#define DESC_UNIT_PAGES (1UL << MEMMIG_DESC_COMPOUND_ORDER)
#define DESC_CHUNK_PAGES ((1UL << 30) / MEMMIG_DESC_PAGE_SIZE)

/*
 * Where the compounds are: pages [0, first_unit) are single, then nunits
 * units of 512 pages, then single pages to the end.  Units follow the
 * device offsets' 2 MB alignment, not the table's.
 */
struct desc_geometry {
	uint64_t base;		/* device offset of page 0 */
	uint64_t count;
	uint64_t first_unit;	/* index of the first head */
	uint64_t nunits;
	uint32_t node;
};

struct memmig_desc_table {
	int refcount;
	struct memmig_ctx *ctx;
	struct desc_geometry geo;
	struct memmig_desc *descs;
	size_t map_len;
	int backing;		/* enum memmig_desc_backing */
	unsigned int flags;	/* opts flags | MEMMIG_DESC_SLOW if forced */
	unsigned int threads;
	int path;		/* enum memmig_desc_path of the last init */
	int store;		/* enum memmig_desc_store of the last init */
	uint64_t nchunks;
	uint8_t *chunk_ready;	/* lazy: per chunk, read with acquire */
	pthread_mutex_t *chunk_lock;
};

/* desc-alloc.c: a 2 MB-aligned mapping backed by huge pages if it can be. */
struct memmig_desc *memmig_desc_alloc(size_t len, bool lazy, size_t *map_len,
				      int *backing);
void memmig_desc_free(struct memmig_desc *descs, size_t map_len);

/* desc-init.c */
void memmig_desc_geometry(struct desc_geometry *g, uint64_t base,
			  uint64_t count, uint32_t node);
/* Slow path: descriptor idx field by field, as the template is seeded. */
void memmig_desc_init_one(struct memmig_desc *d, const struct desc_geometry *g,
			  uint64_t idx);
/* The template filler as wide as nt_prim (the narrowest NT one if this
 * CPU cannot run it) with the stores *store asks for; *store becomes the
 * kind it has. */
memmig_desc_fill_fn memmig_desc_filler(const struct memmig_cpu_info *cpu,
				       int nt_prim, int *store);
/* Descriptors [first, last) of descs: the template path with fill (one
 * drain), the slow path when fill is NULL. */
void memmig_desc_init_descs(struct memmig_desc *descs, const struct desc_geometry *g,
			    memmig_desc_fill_fn fill, uint64_t first, uint64_t last);
/* Initializes descriptors [first, last) of t with path (one drain);
 * returns the stores it wrote with (enum memmig_desc_store). */
int memmig_desc_init_range(struct memmig_desc_table *t, int path,
			   uint64_t first, uint64_t last);
/* The whole table on threads threads, *store as above; 0 or -errno. */
int memmig_desc_init_all(struct memmig_desc_table *t, int path,
			 unsigned int threads, int *store);
/* Sets the state of pages [idx, idx + n); a poisoned page stays
 * poisoned, pages past the table's end are left alone. */
void memmig_desc_mark(struct memmig_desc_table *t, uint64_t idx, uint64_t n,
		      int state);
/* desc-calibrate.c: GB/s of one thread initializing 64 MiB segments of
 * the len bytes at buf (64-byte aligned) with each path, rounds rounds
 * (at most 64), each relative to its round's mean, medians; 0 or
 * -EINVAL. */
int memmig_desc_measure(const struct memmig_cpu_info *cpu, int nt_prim,
			void *buf, size_t len, unsigned int rounds,
			struct desc_measured *out);
/* The path a table gets from its flags, the environment and the build. */
bool memmig_desc_slow_forced(void);

#endif
