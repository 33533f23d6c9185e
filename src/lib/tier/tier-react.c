/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The reaction to a change of the hot set (see tier-react.h). */
#include <stdbool.h>
#include <stdlib.h>

#include "lib/tier/tier-plan.h"
#include "lib/tier/tier-react.h"

void tier_react_init(struct tier_react *r)
{
	*r = (struct tier_react){ .change_t = -1 };
}

/* Whether the hot units changed by more than a quarter of the larger of
 * the two sets; keeps this interval's for the next. */
static bool changed(struct tier_react *r, const struct tier_unit *u, size_t n)
{
	size_t k = 0, common = 0, j = 0, larger;
	uint64_t *cur = malloc((n ? n : 1) * sizeof(*cur));
	bool ch;

	if (!cur)
		return false;
	for (size_t i = 0; i < n; i++)
		if (tier_unit_hot(&u[i]))
			cur[k++] = u[i].addr;
	/* Both sorted by address: one walk counts what they share. */
	for (size_t i = 0; i < k; i++) {
		while (j < r->nhot_prev && r->hot_prev[j] < cur[i])
			j++;
		common += j < r->nhot_prev && r->hot_prev[j] == cur[i];
	}
	larger = k > r->nhot_prev ? k : r->nhot_prev;
	ch = k && (k + r->nhot_prev - 2 * common) * 4 > larger;
	free(r->hot_prev);
	r->hot_prev = cur;
	r->nhot_prev = k;
	return ch;
}

void tier_react_note(struct tier_react *r, const struct tier_unit *u, size_t n,
		     uint64_t hot_bytes, uint64_t hot_fast, double now_s, double *react_s)
{
	bool placed = hot_fast * 10 >= hot_bytes * 9;
	bool ch = changed(r, u, n);

	if (r->change_t >= 0 && placed) {
		if (now_s - r->change_t > *react_s)
			*react_s = now_s - r->change_t;
		r->change_t = -1;
	}
	if (!ch || r->change_t >= 0)
		return;
	if (!placed)
		r->change_t = now_s;
	else if (*react_s < 0)
		*react_s = 0;	/* already there: an answer of no time */
}

void tier_react_free(struct tier_react *r)
{
	free(r->hot_prev);
	r->hot_prev = NULL;
}
