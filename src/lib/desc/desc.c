/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device-memory descriptor tables: one 64-byte descriptor per 4 KiB page
 * of a region, read and updated by the migration engine and the poison
 * handling.  Lazy tables initialize each 1 GiB chunk of the region on
 * first use.
 */
#include <errno.h>
#include <stdlib.h>

#include "lib/desc/desc-private.h"

#define ALL_FLAGS (MEMMIG_DESC_LAZY | MEMMIG_DESC_SLOW)

/* The flags force the slow path; else the tuning says (calibration
 * finds the slow path ahead where plain stores of a few fields beat
 * whole-line stores). */
static int path_of(const struct memmig_desc_table *t, unsigned int flags)
{
	if (flags & MEMMIG_DESC_SLOW || t->ctx->tuning.desc_slow)
		return MEMMIG_DESC_PATH_SLOW;
	return MEMMIG_DESC_PATH_TEMPLATE;
}

static int check_opts(struct memmig_ctx *ctx, const struct memmig_desc_opts *o)
{
	if (o->flags & ~ALL_FLAGS) {
		err(ctx, "descriptor table: unknown flags %#x\n", o->flags);
		return -EINVAL;
	}
	if (!o->len || o->len % MEMMIG_PAGE_SIZE || o->base % MEMMIG_PAGE_SIZE ||
	    o->base + o->len < o->base ||
	    o->base + o->len > UINT64_MAX - MEMMIG_UNIT_SIZE) {
		err(ctx, "descriptor table: region %#llx+%#llx is empty, not 4 KiB "
			 "aligned or wraps\n", (unsigned long long)o->base,
		    (unsigned long long)o->len);
		return -EINVAL;
	}
	/* A table beyond 128 TiB fits no x86-64 or arm64 user address space. */
	if (o->len / MEMMIG_PAGE_SIZE > (1ULL << 47) / sizeof(struct memmig_desc)) {
		err(ctx, "descriptor table: region of %#llx bytes is too large\n",
		    (unsigned long long)o->len);
		return -ENOMEM;
	}
	return 0;
}

static void table_free(struct memmig_desc_table *t)
{
	for (uint64_t c = 0; t->chunk_lock && c < t->nchunks; c++)
		pthread_mutex_destroy(&t->chunk_lock[c]);
	free(t->chunk_lock);
	free(t->chunk_ready);
	memmig_desc_free(t->descs, t->map_len);
	memmig_ctx_unref(t->ctx);
	free(t);
}

static int table_alloc(struct memmig_ctx *ctx, const struct memmig_desc_opts *o,
		       struct memmig_desc_table **out)
{
	struct memmig_desc_table *t = calloc(1, sizeof(*t));
	uint64_t count = o->len / MEMMIG_PAGE_SIZE;

	if (!t)
		return -ENOMEM;
	t->refcount = 1;
	t->ctx = memmig_ctx_ref(ctx);
	memmig_desc_geometry(&t->geo, o->base, count, o->node);
	t->flags = o->flags | (memmig_desc_slow_forced() ? MEMMIG_DESC_SLOW : 0);
	t->threads = o->threads ? o->threads : memmig_usable_cpus();
	t->nchunks = (count + DESC_CHUNK_PAGES - 1) / DESC_CHUNK_PAGES;
	t->chunk_ready = calloc(t->nchunks, 1);
	t->chunk_lock = calloc(t->nchunks, sizeof(*t->chunk_lock));
	if (t->chunk_lock)
		for (uint64_t c = 0; c < t->nchunks; c++)
			pthread_mutex_init(&t->chunk_lock[c], NULL);
	t->descs = memmig_desc_alloc(count * sizeof(struct memmig_desc),
				     o->flags & MEMMIG_DESC_LAZY, &t->map_len, &t->backing);
	if (!t->chunk_ready || !t->chunk_lock || !t->descs) {
		if (!t->chunk_lock)
			t->nchunks = 0;
		table_free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

static void mark_all_ready(struct memmig_desc_table *t)
{
	for (uint64_t c = 0; c < t->nchunks; c++)
		__atomic_store_n(&t->chunk_ready[c], 1, __ATOMIC_RELEASE);
}

int memmig_desc_table_new(struct memmig_ctx *ctx, const struct memmig_desc_opts *opts,
			  struct memmig_desc_table **out)
{
	struct memmig_desc_opts o = { .sz = sizeof(o) };
	struct memmig_desc_table *t;
	int rc;

	if (!ctx || !out || memmig_struct_in(&o, sizeof(o), opts) < 0)
		return -EINVAL;
	rc = check_opts(ctx, &o);
	if (!rc)
		rc = table_alloc(ctx, &o, &t);
	if (rc < 0)
		return rc;
	if (!(t->flags & MEMMIG_DESC_LAZY)) {
		rc = memmig_desc_table_reset(t, 0, 0);
		if (rc < 0) {
			table_free(t);
			return rc;
		}
	}
	dbg(ctx, "descriptor table: %llu descriptors, backing %d, %s%s\n",
	    (unsigned long long)t->geo.count, t->backing,
	    t->flags & MEMMIG_DESC_SLOW ? "slow path" : "template path",
	    t->flags & MEMMIG_DESC_LAZY ? ", lazy" : "");
	*out = t;
	return 0;
}

struct memmig_desc_table *memmig_desc_table_ref(struct memmig_desc_table *t)
{
	if (t)
		__atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
	return t;
}

void memmig_desc_table_unref(struct memmig_desc_table *t)
{
	if (t && __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) == 0)
		table_free(t);
}

int memmig_desc_table_reset(struct memmig_desc_table *t, unsigned int threads,
			    unsigned int flags)
{
	int path, store, rc;

	if (!t || flags & ~MEMMIG_DESC_SLOW)
		return -EINVAL;
	path = path_of(t, t->flags | flags);
	rc = memmig_desc_init_all(t, path, threads ? threads : t->threads, &store);
	if (rc < 0)
		return rc;
	t->path = path;
	t->store = store;
	mark_all_ready(t);
	return 0;
}

int memmig_desc_table_get_info(const struct memmig_desc_table *t,
			       struct memmig_desc_table_info *out)
{
	struct memmig_desc_table_info i = { .sz = sizeof(i) };

	if (!t)
		return -EINVAL;
	i.count = t->geo.count;
	i.base = t->geo.base;
	i.len = t->geo.count * MEMMIG_PAGE_SIZE;
	i.node = t->geo.node;
	i.flags = t->flags;
	i.path = __atomic_load_n(&t->path, __ATOMIC_RELAXED);
	i.store = __atomic_load_n(&t->store, __ATOMIC_RELAXED);
	i.backing = t->backing;
	i.table_bytes = t->map_len;
	i.chunks = t->nchunks;
	for (uint64_t c = 0; c < t->nchunks; c++)
		i.chunks_ready += __atomic_load_n(&t->chunk_ready[c], __ATOMIC_ACQUIRE);
	return memmig_struct_out(out, &i, sizeof(i));
}

uint64_t memmig_desc_table_count(const struct memmig_desc_table *t)
{
	return t ? t->geo.count : 0;
}

/* A lazy chunk, once: the first caller initializes it, the others wait. */
static void chunk_init(struct memmig_desc_table *t, uint64_t c)
{
	uint64_t first = c * DESC_CHUNK_PAGES, last = first + DESC_CHUNK_PAGES;
	int path = path_of(t, t->flags), store;

	pthread_mutex_lock(&t->chunk_lock[c]);
	if (!__atomic_load_n(&t->chunk_ready[c], __ATOMIC_ACQUIRE)) {
		store = memmig_desc_init_range(t, path, first,
					       last < t->geo.count ? last : t->geo.count);
		/* Every chunk gets the same path (and stores), unless the
		 * tuning changed in between. */
		__atomic_store_n(&t->path, path, __ATOMIC_RELAXED);
		__atomic_store_n(&t->store, store, __ATOMIC_RELAXED);
		__atomic_store_n(&t->chunk_ready[c], 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&t->chunk_lock[c]);
}

int memmig_desc_get(struct memmig_desc_table *t, uint64_t idx,
		    const struct memmig_desc **out)
{
	uint64_t c;

	if (!t || !out)
		return -EINVAL;
	if (idx >= t->geo.count)
		return -ERANGE;
	c = idx / DESC_CHUNK_PAGES;
	if (!__atomic_load_n(&t->chunk_ready[c], __ATOMIC_ACQUIRE))
		chunk_init(t, c);
	*out = &t->descs[idx];
	return 0;
}

/* generation and state, adjacent and 8-byte aligned, change together. */
typedef uint64_t __attribute__((may_alias)) stategen_word;

union desc_stategen {
	uint64_t word;
	struct {
		uint32_t generation;
		uint32_t state;
	};
};

int memmig_desc_set_state(struct memmig_desc_table *t, uint64_t idx, int state,
			  uint32_t *generation)
{
	const struct memmig_desc *d;
	union desc_stategen old, new;
	stategen_word *word;
	int rc;

	if (state < 0 || state >= MEMMIG_DESC_STATE_COUNT)
		return -EINVAL;
	rc = memmig_desc_get(t, idx, &d);
	if (rc < 0)
		return rc;
	word = (stategen_word *)&((struct memmig_desc *)d)->generation;
	old.word = __atomic_load_n(word, __ATOMIC_RELAXED);
	do {
		if (old.state == MEMMIG_DESC_POISONED && state != MEMMIG_DESC_POISONED)
			return -EHWPOISON;
		new.generation = old.generation + 1;
		new.state = (uint32_t)state;
	} while (!__atomic_compare_exchange_n(word, &old.word, new.word, false,
					      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	if (generation)
		*generation = new.generation;
	return 0;
}

int memmig_desc_get_state(struct memmig_desc_table *t, uint64_t idx)
{
	const struct memmig_desc *d;
	int rc = memmig_desc_get(t, idx, &d);

	return rc < 0 ? rc : (int)__atomic_load_n(&d->state, __ATOMIC_ACQUIRE);
}

void memmig_desc_mark(struct memmig_desc_table *t, uint64_t idx, uint64_t n, int state)
{
	/* Page by page (~5 ns each, 2.5 us a 2 MB unit): a migration unit
	 * need not line up with the device's 2 MB compounds. */
	for (uint64_t i = idx; i < idx + n; i++)
		if (memmig_desc_set_state(t, i, state, NULL) == -ERANGE)
			return;	/* poison stays: -EHWPOISON is fine */
}
