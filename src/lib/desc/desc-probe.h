/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which stores a large table's init writes with, measured as it writes.
 *
 * Calibration picks NT or plain stores once, at set-up.  A shared host
 * does not keep its ranking: on the AMD Zen 5 host one thread's NT stores
 * ran at 22 GB/s one minute and 63 the next, while plain stores stayed
 * near 30 (docs/desc-tables.md), so a table initialized an hour later
 * could get the slower stores.  A range of at least desc_probe_min bytes
 * is written in segments instead: a segment of each store first, then the
 * faster one, with a segment of the other now and then to see whether the
 * host changed its mind.  The probes are real work, not extra work: they
 * cost only what the slower store loses on them.
 *
 * The first segment after a change of store is not timed: it pays for the
 * other store's leftovers (dirty lines to write back, or none).  This is
 * the schedule alone, a pure state machine, so that tests can feed it the
 * timings of hosts they do not run on.
 */
#ifndef MEMMIG_DESC_PROBE_H
#define MEMMIG_DESC_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "memmig.h"

/* One segment: 8 MiB of descriptors (a multiple of a unit's 512). */
#define DESC_PROBE_SEG_DESCS (8u << 20 >> 6)
/*
 * Steady segments between two probes of the other store: as many as keep
 * a probe's cost (its two segments' loss, (r - 1) each where the steady
 * store is r times as fast) within 1 % of the time between probes, from
 * DESC_PROBE_EVERY (a near tie costs nothing to probe) to
 * DESC_PROBE_EVERY_MAX (8 GiB).  NT stores 2.5x ahead, as on an Intel
 * Emerald Rapids host, probe every 300 segments; 1.7x ahead, as on the
 * Zen 5 host in its NT-fast moments, every 140.
 */
#define DESC_PROBE_EVERY 32
#define DESC_PROBE_EVERY_MAX 1024
#define DESC_PROBE_COST 0.01
/* The other store must be ahead by this much to take over: one 8 MiB
 * segment's time wobbles by a few per cent. */
#define DESC_PROBE_MARGIN 0.03

struct desc_probe {
	int cur;		/* enum memmig_desc_store of steady segments */
	int last;		/* the store of the segment before, -1 none */
	int probe;		/* the store being probed, -1 none */
	unsigned int probe_left;	/* its segments still to write */
	unsigned int steady;	/* steady segments since the last probe */
	unsigned int every;	/* steady segments before the next probe */
	double rate[2];		/* GB/s of each store's last timed segment */
	uint64_t segs[2];	/* segments written with each store */
};

static inline int desc_probe_other(int store)
{
	return store == MEMMIG_DESC_STORE_NT ? MEMMIG_DESC_STORE_TEMPORAL :
					       MEMMIG_DESC_STORE_NT;
}

/* Starts with two segments of the tuned store, then two of the other. */
static inline void desc_probe_start(struct desc_probe *p, int tuned)
{
	*p = (struct desc_probe){ .cur = tuned, .last = -1, .probe = tuned,
				  .probe_left = 2, .every = DESC_PROBE_EVERY };
}

/* The store of the next segment; *timed: whether its time is a rate. */
static inline int desc_probe_next(const struct desc_probe *p, bool *timed)
{
	int s = p->probe >= 0 ? p->probe : p->cur;

	*timed = s == p->last;
	return s;
}

/* After a probe: the faster store, the current one on a near tie, and
 * the wait before the next probe. */
static inline void desc_probe_decide(struct desc_probe *p)
{
	int o = desc_probe_other(p->cur);
	double r, every;

	if (p->rate[o] > p->rate[p->cur] * (1 + DESC_PROBE_MARGIN)) {
		p->cur = o;
		o = desc_probe_other(o);
	}
	r = p->rate[o] > 0 ? p->rate[p->cur] / p->rate[o] : 1;
	every = 2 * (r - 1) / DESC_PROBE_COST;
	p->every = every < DESC_PROBE_EVERY ? DESC_PROBE_EVERY :
		   every > DESC_PROBE_EVERY_MAX ? DESC_PROBE_EVERY_MAX : (unsigned int)every;
}

/* Records the segment desc_probe_next() gave: its store, whether it was
 * timed, and its GB/s if it was. */
static inline void desc_probe_record(struct desc_probe *p, int store,
				     bool timed, double gbps)
{
	p->segs[store]++;
	if (timed && gbps > 0)
		p->rate[store] = gbps;
	p->last = store;
	if (p->probe >= 0) {
		if (--p->probe_left)
			return;
		if (p->probe == p->cur) {	/* the start: now the other */
			p->probe = desc_probe_other(p->cur);
			p->probe_left = 2;
			return;
		}
		p->probe = -1;
		p->steady = 0;
		desc_probe_decide(p);
		return;
	}
	if (++p->steady >= p->every) {
		p->probe = desc_probe_other(p->cur);
		p->probe_left = 2;
	}
}

/* The store that wrote the most segments. */
static inline int desc_probe_majority(const struct desc_probe *p)
{
	return p->segs[MEMMIG_DESC_STORE_TEMPORAL] > p->segs[MEMMIG_DESC_STORE_NT] ?
	       MEMMIG_DESC_STORE_TEMPORAL : MEMMIG_DESC_STORE_NT;
}

#endif
