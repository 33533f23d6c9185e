/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which descriptor init a CPU gets, from what calibration measured: a pure
 * function, so that tests can feed it the figures of machines they do not
 * run on.
 */
#ifndef MEMMIG_DESC_CHOOSE_H
#define MEMMIG_DESC_CHOOSE_H

#include <stdbool.h>

#include "memmig.h"

/* One thread's GB/s initializing a table beyond the cache, three ways. */
struct desc_measured {
	double slow;		/* field by field */
	double nt;		/* template, NT stores */
	double temporal;	/* template, plain stores */
};

/*
 * A challenger must be ahead by more than this to displace the seed's
 * choice (template, NT stores): medians on a shared machine wobble by a
 * few per cent, and a tie goes to the stores that leave the cache to the
 * guests, and to the path that issues fewer instructions.
 */
#define DESC_CHOOSE_MARGIN 0.03

static inline bool desc_measured_ok(double v)
{
	return v > 0 && v < 1e6;	/* also false for NaN */
}

/*
 * Sets t->desc_store and t->desc_slow from m: plain stores where they beat
 * NT ones by the margin, the slow path only where it beats the better
 * template store by the margin too.  Figures that are not all positive
 * leave *t as it was.
 */
static inline void memmig_desc_choose(const struct desc_measured *m,
				      struct memmig_tuning *t)
{
	double best;

	if (!desc_measured_ok(m->slow) || !desc_measured_ok(m->nt) ||
	    !desc_measured_ok(m->temporal))
		return;
	t->desc_store = m->temporal > m->nt * (1 + DESC_CHOOSE_MARGIN) ?
			MEMMIG_DESC_STORE_TEMPORAL : MEMMIG_DESC_STORE_NT;
	best = m->temporal > m->nt ? m->temporal : m->nt;
	t->desc_slow = m->slow > best * (1 + DESC_CHOOSE_MARGIN);
}

#endif
