/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmigd's tiering policy and the library's options (see tier-policy.h). */
#include <string.h>

#include "daemon/tier-policy.h"

void tiers_policy_defaults(struct tiers_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->slow_share = MEMMIG_TIER_SLOW_SHARE_DEFAULT;
	p->interval_ms = MEMMIG_TIER_INTERVAL_DEFAULT_MS;
	p->cold_intervals = MEMMIG_TIER_COLD_DEFAULT;
	p->min_stay = MEMMIG_TIER_STAY_DEFAULT;
	p->pause_ms = MEMMIG_TIER_PAUSE_DEFAULT_MS;
}

struct memmig_tier_opts tiers_policy_opts(const struct tiers_policy *p)
{
	return (struct memmig_tier_opts){
		.sz = sizeof(struct memmig_tier_opts), .fast_nodes = p->fast,
		.nfast = p->nfast, .slow_nodes = p->slow, .nslow = p->nslow,
		.slow_share = p->slow_share, .fast_free = p->fast_free,
		.interval_ms = p->interval_ms, .rate = p->rate,
		.cold_intervals = p->cold_intervals, .min_stay = p->min_stay,
		.pause_ms = p->pause_ms,
	};
}

int tiers_policy_check(const struct tiers_policy *p, char *msg, size_t len)
{
	struct memmig_tier_opts o = tiers_policy_opts(p);

	/* No 0 (the library's default) reaches here: the protocol and the
	 * tier element take interval, cold and pause from 1 on. */
	o.why = msg;
	o.why_len = len;
	return memmig_tier_check_opts(NULL, &o);
}
