/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Descriptor initialization, two ways that must write the same bytes
 * (docs/sources.md, seed 002):
 *  - slow: every field of every descriptor stored one by one, as the
 *    kernel's __init_single_page() does; each line is first read for
 *    ownership, so the table crosses the memory bus twice;
 *  - template: the first descriptor of each kind (single, head, tail) is
 *    built by the slow code and then stored whole, only the offset and
 *    head fields patched, one drain at the end; with NT stores or plain
 *    ones, whichever calibration found faster (memmig_tuning.desc_store),
 *    or, on a range of desc_probe_min bytes or more, whichever is faster
 *    while it is written (desc-probe.h).
 */
#include "config.h"	/* MEMMIG_DEBUG */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/copy/arch/arch.h"
#include "lib/core/memmig-private.h"
#include "lib/desc/desc-private.h"
#include "lib/desc/desc-probe.h"


#ifndef __has_feature
#define __has_feature(x) 0
#endif

bool memmig_desc_slow_forced(void)
{
	const char *env = getenv("MEMMIG_DESC_SLOW");

	/* Sanitizers and debug builds check each store of the slow path;
	 * the NT stores of the template path are not instrumented. */
#if defined(MEMMIG_DEBUG) || defined(__SANITIZE_ADDRESS__) || \
	defined(__SANITIZE_THREAD__) || __has_feature(address_sanitizer) || \
	__has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
	return true;
#endif
	return env && *env && strcmp(env, "0") != 0;
}

void memmig_desc_geometry(struct desc_geometry *g, uint64_t base,
			  uint64_t count, uint32_t node)
{
	uint64_t aligned = (base + MEMMIG_UNIT_SIZE - 1) & ~(uint64_t)(MEMMIG_UNIT_SIZE - 1);

	g->base = base;
	g->count = count;
	g->node = node;
	g->first_unit = (aligned - base) / MEMMIG_PAGE_SIZE;
	g->nunits = g->first_unit < count ?
		(count - g->first_unit) / DESC_UNIT_PAGES : 0;
}

void memmig_desc_init_one(struct memmig_desc *d, const struct desc_geometry *g,
			  uint64_t idx)
{
	uint64_t rel = idx - g->first_unit, head = idx;
	uint16_t flags = 0;
	uint8_t order = 0;

	/* Unsigned: pages before the first unit wrap past the end too. */
	if (rel < g->nunits * DESC_UNIT_PAGES) {
		rel %= DESC_UNIT_PAGES;
		head = idx - rel;
		flags = rel ? MEMMIG_DESC_TAIL : MEMMIG_DESC_HEAD;
		order = MEMMIG_DESC_COMPOUND_ORDER;
	}
	d->offset = g->base + idx * MEMMIG_PAGE_SIZE;
	d->head = head;
	d->generation = 0;
	d->state = MEMMIG_DESC_CLEAN;
	d->node = g->node;
	d->flags = flags;
	d->order = order;
	d->reserved0 = 0;
	for (int k = 0; k < 4; k++)
		d->reserved[k] = 0;
}

static void init_slow(struct memmig_desc *descs, const struct desc_geometry *g,
		      uint64_t first, uint64_t last)
{
	for (uint64_t i = first; i < last; i++)
		memmig_desc_init_one(&descs[i], g, i);
}

/* Templates seeded from the first page of each kind met. */
struct desc_templates {
	struct memmig_desc single, head, tail;
	bool have_single, have_head, have_tail;
};

static const struct memmig_desc *seed(struct memmig_desc *tmpl, bool *have,
				      const struct desc_geometry *g, uint64_t i)
{
	if (!*have) {
		memmig_desc_init_one(tmpl, g, i);
		*have = true;
	}
	return tmpl;
}

static void init_template(struct memmig_desc *d, const struct desc_geometry *g,
			  memmig_desc_fill_fn fill, uint64_t i, uint64_t last)
{
	uint64_t ustart = g->first_unit, uend = ustart + g->nunits * DESC_UNIT_PAGES;
	struct desc_templates t = { .have_single = false };

	while (i < last) {
		uint64_t end, head;

		if (i < ustart || i >= uend) {
			end = i < ustart && ustart < last ? ustart : last;
			fill(&d[i], seed(&t.single, &t.have_single, g, i), end - i,
			     g->base + i * MEMMIG_PAGE_SIZE, i, 1);
			i = end;
			continue;
		}
		head = i - (i - ustart) % DESC_UNIT_PAGES;
		if (i == head) {
			fill(&d[i], seed(&t.head, &t.have_head, g, i), 1,
			     g->base + i * MEMMIG_PAGE_SIZE, i, 0);
			i++;
		}
		end = head + DESC_UNIT_PAGES < last ? head + DESC_UNIT_PAGES : last;
		if (i < end)
			fill(&d[i], seed(&t.tail, &t.have_tail, g, i), end - i,
			     g->base + i * MEMMIG_PAGE_SIZE, head, 0);
		i = end;
	}
	memmig_arch_drain();
}

memmig_desc_fill_fn memmig_desc_filler(const struct memmig_cpu_info *cpu,
				       int nt_prim, int *store)
{
	if (!memmig_prim_supported(cpu, nt_prim) || !memmig_prim_is_nt(nt_prim))
		nt_prim = MEMMIG_PRIM_NT_MOVNTI;
	return memmig_arch_desc_filler(nt_prim, store);
}

void memmig_desc_init_descs(struct memmig_desc *descs, const struct desc_geometry *g,
			    memmig_desc_fill_fn fill, uint64_t first, uint64_t last)
{
	if (!fill)
		init_slow(descs, g, first, last);
	else
		init_template(descs, g, fill, first, last);
}

/*
 * [first, last) in segments, each store's filler where desc-probe.h's
 * schedule says (fill[] by enum memmig_desc_store); returns the store that
 * wrote the most.
 */
static int init_probing(struct memmig_desc *descs, const struct desc_geometry *g,
			memmig_desc_fill_fn fill[2], int tuned, uint64_t first,
			uint64_t last)
{
	struct desc_probe p;

	desc_probe_start(&p, tuned);
	for (uint64_t i = first; i < last;) {
		uint64_t end = last - i > DESC_PROBE_SEG_DESCS ? i + DESC_PROBE_SEG_DESCS : last;
		bool timed;
		int s = desc_probe_next(&p, &timed);
		double t0 = memmig_now(), dt;

		memmig_desc_init_descs(descs, g, fill[s], i, end);
		dt = memmig_now() - t0;
		desc_probe_record(&p, s, timed && end - i == DESC_PROBE_SEG_DESCS,
				  dt > 0 ? (end - i) * sizeof(*descs) / dt / 1e9 : 0);
		i = end;
	}
	return desc_probe_majority(&p);
}

int memmig_desc_init_range(struct memmig_desc_table *t, int path,
			   uint64_t first, uint64_t last)
{
	const struct memmig_tuning *tu = &t->ctx->tuning;
	int store = MEMMIG_DESC_STORE_TEMPORAL;	/* the slow path's */
	memmig_desc_fill_fn fill = NULL, both[2];
	int nt = MEMMIG_DESC_STORE_NT, tmp = MEMMIG_DESC_STORE_TEMPORAL;

	if (path != MEMMIG_DESC_PATH_SLOW) {
		store = tu->desc_store;
		fill = memmig_desc_filler(&t->ctx->cpu, tu->nt_prim, &store);
		/* Both stores, where this CPU has both (not the C filler, whose
		 * NT request comes back temporal). */
		both[MEMMIG_DESC_STORE_NT] = memmig_desc_filler(&t->ctx->cpu, tu->nt_prim, &nt);
		both[MEMMIG_DESC_STORE_TEMPORAL] = memmig_desc_filler(&t->ctx->cpu, tu->nt_prim,
								      &tmp);
		if (nt == MEMMIG_DESC_STORE_NT && tmp == MEMMIG_DESC_STORE_TEMPORAL &&
		    (last - first) * sizeof(*t->descs) >= tu->desc_probe_min)
			return init_probing(t->descs, &t->geo, both, store, first, last);
	}
	memmig_desc_init_descs(t->descs, &t->geo, fill, first, last);
	return store;
}

struct init_part {
	struct memmig_desc_table *t;
	int path;
	uint64_t first, last;
	int store;
};

static void *init_part_main(void *arg)
{
	struct init_part *p = arg;

	p->store = memmig_desc_init_range(p->t, p->path, p->first, p->last);
	return NULL;
}

int memmig_desc_init_all(struct memmig_desc_table *t, int path,
			 unsigned int threads, int *store)
{
	uint64_t n = t->geo.count, units = (n + DESC_UNIT_PAGES - 1) / DESC_UNIT_PAGES;
	struct init_part *parts;
	pthread_t *tids;
	unsigned int started = 0;

	if (threads > units)
		threads = (unsigned int)units;
	if (threads <= 1) {
		*store = memmig_desc_init_range(t, path, 0, n);
		return 0;
	}
	parts = calloc(threads, sizeof(*parts));
	tids = calloc(threads, sizeof(*tids));
	if (!parts || !tids) {
		free(parts);
		free(tids);
		return -ENOMEM;
	}
	/* Shares in whole 512-descriptor steps: with a 2 MB-aligned base a
	 * compound's head and tails stay with one thread. */
	for (unsigned int k = 0; k < threads; k++) {
		uint64_t a = units * k / threads * DESC_UNIT_PAGES;
		uint64_t b = units * (k + 1) / threads * DESC_UNIT_PAGES;

		parts[k] = (struct init_part){ t, path, a, b < n ? b : n, 0 };
	}
	for (unsigned int k = 1; k < threads; k++) {
		if (pthread_create(&tids[k], NULL, init_part_main, &parts[k]))
			break;
		started = k;
	}
	init_part_main(&parts[0]);
	for (unsigned int k = started + 1; k < threads; k++)
		init_part_main(&parts[k]);	/* threads that did not start */
	for (unsigned int k = 1; k <= started; k++)
		pthread_join(tids[k], NULL);
	*store = parts[0].store;	/* the same tuning for every part */
	free(parts);
	free(tids);
	return 0;
}
