/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A process's tiered memory as 2 MiB units (see tier-units.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/mm/proc.h"
#include "lib/mm/smaps.h"
#include "lib/tier/tier-units.h"

static int grow(struct tier_unit **u, size_t *cap, size_t n)
{
	struct tier_unit *x;
	size_t c;

	if (n < *cap)
		return 0;
	if (n >= TIER_MAX_UNITS)
		return -E2BIG;
	c = *cap ? *cap * 2 : 256;
	x = realloc(*u, c * sizeof(*x));
	if (!x)
		return -ENOMEM;
	*u = x;
	*cap = c;
	return 0;
}

void tier_unit_carry(struct tier_unit *u, const struct tier_unit *old, size_t nold, size_t *j)
{
	while (*j < nold && old[*j].addr < u->addr)
		(*j)++;
	if (*j < nold && old[*j].addr == u->addr) {
		u->hist = old[*j].hist;
		u->damon_hist = old[*j].damon_hist;
		u->moved_at = old[*j].moved_at;
		u->cold_since = old[*j].cold_since;
		u->last_dir = old[*j].last_dir;
		u->backoff = old[*j].backoff;
	}
}

/* Whether a mapping is memory tiering is for. */
static bool tiered(const struct memmig_vma *v)
{
	if (v->end - v->start < TIER_UNIT || !v->readable || !v->writable)
		return false;
	/* [stack], [vvar], [vsyscall]: not guest memory, and some not
	 * movable at all; named anonymous memory ([anon:...]) is. */
	return !(v->path[0] == '[' && strncmp(v->path, "[anon:", 6) && strcmp(v->path, "[heap]"));
}

int tier_proc_check(const struct tier_proc *pr)
{
	int rc = pr->check ? pr->check(pr->opaque) : 0;

	return rc ? rc : tier_proc_alive(pr) ? 0 : -ESRCH;
}

bool tier_proc_alive(const struct tier_proc *pr)
{
	/* A reaped process's directory answers no lookup; a zombie's does
	 * (its pid is not free yet). */
	return memmig_proc_pinned(pr->procfd);
}

int tier_units_read(const struct tier_proc *pr, const struct tier_unit *old, size_t nold,
		    struct tier_unit **units, size_t *n)
{
	struct tier_unit *u = NULL;
	struct memmig_vma *v = NULL;
	size_t cap = 0, k = 0, j = 0, nv = 0;
	uint32_t vma = 0;
	/* The mappings, through the pin: libmemmig's one maps reader. */
	int rc = memmig_maps_read_at(pr->pid, pr->procfd, &v, &nv);

	if (rc)
		return rc;
	for (size_t m = 0; m < nv && !rc; m++) {
		uint64_t start = v[m].start, end = v[m].end, a;

		if (!tiered(&v[m]))
			continue;
		vma++;
		for (a = start; a < end && !rc; a = (a & ~(TIER_UNIT - 1)) + TIER_UNIT) {
			uint64_t e = (a & ~(TIER_UNIT - 1)) + TIER_UNIT;

			rc = grow(&u, &cap, k);
			if (rc)
				break;
			memset(&u[k], 0, sizeof(u[k]));
			u[k].addr = a;
			u[k].len = (uint32_t)((e < end ? e : end) - a);
			u[k].node = -1;
			u[k].vma = vma;
			tier_unit_carry(&u[k], old, nold, &j);
			k++;
		}
	}
	free(v);
	if (rc) {
		free(u);
		return rc;
	}
	*units = u;
	*n = k;
	return 0;
}

int tier_units_sample(const struct tier_proc *pr, struct tier_unit *units, size_t n,
		      const struct tier_policy *p)
{
	size_t total = 0, k = 0;
	void **pages;
	int *status, rc = 0;

	for (size_t i = 0; i < n; i++)
		total += tier_unit_samples(&units[i]);
	pages = malloc((total ? total : 1) * sizeof(*pages));
	status = malloc((total ? total : 1) * sizeof(*status));
	if (!pages || !status) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned int s = tier_unit_samples(&units[i]);
		uint64_t step = units[i].len / s;

		for (unsigned int j = 0; j < s; j++)
			pages[k++] = (void *)(uintptr_t)((units[i].addr + j * step) & ~4095ULL);
	}
	/* The pid names the pinned process if the pin still holds after
	 * the call (a pid is free only once its process was reaped); a query
	 * made of another process that took it is dropped. */
	if (total && !tier_proc_alive(pr)) {
		rc = -ESRCH;
		goto out;
	}
	if (total && move_pages(pr->pid, total, pages, NULL, status, 0) < 0) {
		rc = errno == ESRCH ? -ESRCH : -errno;
		goto out;
	}
	if (total && !tier_proc_alive(pr)) {
		rc = -ESRCH;
		goto out;
	}
	k = 0;
	for (size_t i = 0; i < n; i++) {
		struct tier_unit *x = &units[i];
		unsigned int s = tier_unit_samples(x), best = 0;
		unsigned int count[8] = { 0 };
		int nodes[8];
		unsigned int nn = 0;

		x->sampled = x->on_fast = x->on_slow = 0;
		x->node = -1;
		for (unsigned int j = 0; j < s; j++, k++) {
			int st = status[k];
			unsigned int m;

			if (st < 0)	/* absent (-ENOENT), or not movable */
				continue;
			x->sampled++;
			x->on_fast += tier_policy_is_fast(p, st);
			x->on_slow += tier_policy_is_slow(p, st);
			for (m = 0; m < nn && nodes[m] != st; m++)
				;
			if (m == nn && nn < 8)
				nodes[nn++] = st;
			if (m < nn && ++count[m] > best) {
				best = count[m];
				x->node = (int16_t)st;
			}
		}
	}
out:
	free(pages);
	free(status);
	return rc;
}
