/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A tiering policy: its checks, and what a unit's samples say. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memmig.h"
#include "lib/tier/tier.h"

static bool in_set(const int *set, unsigned int n, int node)
{
	for (unsigned int i = 0; i < n; i++)
		if (set[i] == node)
			return true;
	return false;
}

bool tier_policy_is_fast(const struct tier_policy *p, int node)
{
	return in_set(p->fast, p->nfast, node);
}

bool tier_policy_is_slow(const struct tier_policy *p, int node)
{
	return in_set(p->slow, p->nslow, node);
}

__attribute__((format(printf, 3, 4)))
static int bad(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int tier_policy_check(const struct tier_policy *p, char *err, size_t len)
{
	if (!p->nfast || !p->nslow || p->nfast > TIER_MAX_NODES || p->nslow > TIER_MAX_NODES)
		return bad(err, len, "give 1 to %d fast nodes and 1 to %d slow nodes",
			   TIER_MAX_NODES, TIER_MAX_NODES);
	for (unsigned int i = 0; i < p->nfast; i++) {
		if (p->fast[i] < 0)
			return bad(err, len, "node %d: not a node", p->fast[i]);
		if (tier_policy_is_slow(p, p->fast[i]))
			return bad(err, len, "node %d is both fast and slow", p->fast[i]);
	}
	for (unsigned int i = 0; i < p->nslow; i++)
		if (p->slow[i] < 0)
			return bad(err, len, "node %d: not a node", p->slow[i]);
	if (!p->slow_share == !p->fast_free)
		return bad(err, len, "give either a share of memory for the slow nodes "
			   "or a free-memory watermark for the fast ones, not %s",
			   p->slow_share ? "both" : "neither");
	if (p->slow_share > 100)
		return bad(err, len, "slow share %u%%: at most 100%%", p->slow_share);
	if (p->interval_ms < TIER_INTERVAL_MIN_MS || p->interval_ms > TIER_INTERVAL_MAX_MS)
		return bad(err, len, "interval %u ms: from %u ms to %u s", p->interval_ms,
			   TIER_INTERVAL_MIN_MS, TIER_INTERVAL_MAX_MS / 1000);
	if (!p->cold_intervals || p->cold_intervals > TIER_HIST_BITS)
		return bad(err, len, "cold after %u intervals: from 1 to %d", p->cold_intervals,
			   TIER_HIST_BITS);
	if (p->min_stay > MEMMIG_TIER_STAY_MAX)
		return bad(err, len, "stay %u intervals: at most %d", p->min_stay,
			   MEMMIG_TIER_STAY_MAX);
	if (!p->pause_ms || p->pause_ms > MEMMIG_TIER_PAUSE_MAX_MS)
		return bad(err, len, "pause budget %u ms: from 1 ms to %d s", p->pause_ms,
			   MEMMIG_TIER_PAUSE_MAX_MS / 1000);
	return 0;
}

unsigned int tier_unit_samples(const struct tier_unit *u)
{
	unsigned int pages = u->len / 4096;

	return pages < TIER_SAMPLES ? pages : TIER_SAMPLES;
}

static uint64_t share(const struct tier_unit *u, unsigned int of)
{
	unsigned int n = tier_unit_samples(u);

	return n ? (uint64_t)u->len * of / n : 0;
}

uint64_t tier_unit_resident(const struct tier_unit *u)
{
	return share(u, u->sampled);
}

uint64_t tier_unit_on_fast(const struct tier_unit *u)
{
	return share(u, u->on_fast);
}

uint64_t tier_unit_on_slow(const struct tier_unit *u)
{
	return share(u, u->on_slow);
}
