/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One interval's promotions and demotions (see tier-plan.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/tier/tier-plan.h"

struct cand {
	size_t idx;
	uint64_t bytes;		/* what the move would carry */
	unsigned int key;	/* sort key: smaller goes first */
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* A unit moved lately stays where it went (hysteresis). */
static bool settled(const struct tier_unit *u, const struct tier_plan_in *in)
{
	return !u->last_dir || in->now - u->moved_at >= in->policy->min_stay;
}

/* Takes candidates in order while the budget lasts; returns the bytes. */
static uint64_t take(const struct cand *c, size_t nc, uint64_t *budget, size_t *out,
		     size_t *nout, unsigned int *deferred)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < nc; i++) {
		if (*budget < c[i].bytes) {
			*deferred += (unsigned int)(nc - i);
			break;
		}
		*budget -= c[i].bytes;
		sum += c[i].bytes;
		out[(*nout)++] = c[i].idx;
	}
	return sum;
}

int tier_plan_make(const struct tier_unit *u, size_t n, const struct tier_plan_in *in,
		   struct tier_plan *out)
{
	const struct tier_policy *p = in->policy;
	uint64_t total = 0, slow = 0, budget, want = 0, gain, free_after;
	uint64_t down_bytes = 0, pbudget, left;
	struct cand *up = NULL, *down = NULL;
	size_t nup = 0, ndown = 0, ncold = 0;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	budget = p->rate ? p->rate * p->interval_ms / 1000 : UINT64_MAX;
	up = calloc(n ? n : 1, sizeof(*up));
	down = calloc(n ? n : 1, sizeof(*down));
	out->promote = calloc(n ? n : 1, sizeof(*out->promote));
	out->demote = calloc(n ? n : 1, sizeof(*out->demote));
	if (!up || !down || !out->promote || !out->demote)
		goto out;

	for (size_t i = 0; i < n; i++) {
		const struct tier_unit *x = &u[i];
		uint64_t res = tier_unit_resident(x);

		total += res;
		slow += tier_unit_on_slow(x);
		if (!x->sampled)
			continue;
		if (tier_unit_promotable(x) && x->on_fast < x->sampled) {
			if (!settled(x, in)) {
				out->held++;
				continue;
			}
			/* Touched in more of the last intervals goes first. */
			up[nup++] = (struct cand){ i, res - tier_unit_on_fast(x),
						   TIER_HIST_BITS - __builtin_popcount(x->hist) };
		} else if (tier_unit_cold(x, p->cold_intervals, in->now, in->watched_from) && x->on_fast) {
			if (!settled(x, in)) {
				out->held++;
				continue;
			}
			/* Untouched for longest goes first. */
			down[ndown++] = (struct cand){ i, tier_unit_on_fast(x),
						       in->now - x->cold_since > 0xffff ? 0 :
						       0xffff - (in->now - x->cold_since) };
		}
	}
	qsort(up, nup, sizeof(*up), cand_cmp);
	qsort(down, ndown, sizeof(*down), cand_cmp);

	/*
	 * Hot units always belong on the fast nodes; the share or the
	 * watermark says how much of the cold memory goes down.  What the
	 * promotions take off the slow nodes counts towards the share.
	 */
	gain = 0;
	for (size_t i = 0; i < nup; i++)
		gain += u[up[i].idx].sampled ? tier_unit_on_slow(&u[up[i].idx]) : 0;
	if (p->slow_share) {
		uint64_t target = total * p->slow_share / 100;
		uint64_t after = slow > gain ? slow - gain : 0;

		want = target > after ? target - after : 0;
	} else {
		uint64_t need = 0;

		for (size_t i = 0; i < nup; i++)
			need += up[i].bytes;
		free_after = in->fast_free > need ? in->fast_free - need : 0;
		want = p->fast_free > free_after ? p->fast_free - free_after : 0;
	}
	for (size_t i = 0; i < ndown && want; i++, ncold++) {
		want = want > down[i].bytes ? want - down[i].bytes : 0;
		down_bytes += down[i].bytes;
	}

	/* Under a watermark, promotions take only the room above it. */
	pbudget = budget;
	if (!p->slow_share) {
		uint64_t room = in->fast_free + down_bytes;

		room = room > p->fast_free ? room - p->fast_free : 0;
		pbudget = room < budget ? room : budget;
	}
	left = pbudget;
	out->promote_bytes = take(up, nup, &left, out->promote, &out->npromote, &out->deferred);
	budget -= pbudget - left;
	out->demote_bytes = take(down, ncold, &budget, out->demote, &out->ndemote, &out->deferred);
	rc = 0;
out:
	free(up);
	free(down);
	if (rc)
		tier_plan_free(out);
	return rc;
}

void tier_plan_free(struct tier_plan *plan)
{
	free(plan->promote);
	free(plan->demote);
	memset(plan, 0, sizeof(*plan));
}
