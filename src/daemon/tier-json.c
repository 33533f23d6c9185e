/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A tiering as JSON (see tier-json.h). */
#include <stdio.h>

#include "daemon/tier-json.h"
#include "proto/proto.h"

static struct json_object *nodes(const int *set, unsigned int n)
{
	struct json_object *a = json_object_new_array();

	for (unsigned int i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_int(set[i]));
	return a;
}

static struct json_object *u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

struct json_object *tier_policy_json(const struct tiers_policy *p)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "fast", nodes(p->fast, p->nfast));
	json_object_object_add(o, "slow", nodes(p->slow, p->nslow));
	json_object_object_add(o, "slow_share", p->slow_share ?
			       json_object_new_int((int)p->slow_share) : NULL);
	json_object_object_add(o, "fast_free", p->fast_free ? u64(p->fast_free) : NULL);
	json_object_object_add(o, "interval_ms", json_object_new_int((int)p->interval_ms));
	json_object_object_add(o, "rate", p->rate ? u64(p->rate) : NULL);
	json_object_object_add(o, "cold_intervals", json_object_new_int((int)p->cold_intervals));
	json_object_object_add(o, "min_stay", json_object_new_int((int)p->min_stay));
	json_object_object_add(o, "pause_ms", json_object_new_int((int)p->pause_ms));
	return o;
}

static struct json_object *sources(unsigned int bits)
{
	struct json_object *a = json_object_new_array();

	if (bits & MEMMIG_TIER_SRC_SOFTDIRTY)
		json_object_array_add(a, json_object_new_string("soft-dirty"));
	if (bits & MEMMIG_TIER_SRC_DAMON)
		json_object_array_add(a, json_object_new_string("damon"));
	if (bits & MEMMIG_TIER_SRC_DIRTYLOG)
		json_object_array_add(a, json_object_new_string("dirty-log"));
	return a;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

static struct json_object *sample_json(const struct memmig_tier_sample *s)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "interval", json_object_new_int64(s->interval));
	json_object_object_add(o, "t_s", json_object_new_double(s->t_s));
	json_object_object_add(o, "bytes_fast", u64(s->bytes_fast));
	json_object_object_add(o, "bytes_slow", u64(s->bytes_slow));
	json_object_object_add(o, "hot_bytes", u64(s->hot_bytes));
	json_object_object_add(o, "hot_fast", u64(s->hot_fast));
	json_object_object_add(o, "promoted_bytes", u64(s->promoted));
	json_object_object_add(o, "demoted_bytes", u64(s->demoted));
	json_object_object_add(o, "pause_s", json_object_new_double(s->pause_s));
	return o;
}

struct json_object *tier_json(const struct tiered_view *v, bool history)
{
	const struct memmig_tier_stats *st = &v->st;
	struct json_object *o = json_object_new_object(), *by, *h;
	char name[16];

	json_object_object_add(o, "id", u64(v->id));
	json_object_object_add(o, "pid", json_object_new_int(v->pid));
	json_object_object_add(o, "domain", v->domain[0] ? json_object_new_string(v->domain) : NULL);
	json_object_object_add(o, "uid", json_object_new_int64(v->uid));
	json_object_object_add(o, "state", json_object_new_string(tier_state_name(v->state)));
	json_object_object_add(o, "result", v->state == TIERED_ENDED ?
			       json_object_new_string(proto_errno_name(v->result, name, sizeof(name))) :
			       NULL);
	json_object_object_add(o, "policy", tier_policy_json(&v->policy));
	json_object_object_add(o, "sources", sources(st->sources));
	json_object_object_add(o, "damon", st->why[0] ?
			       json_object_new_string(st->why) : NULL);
	json_object_object_add(o, "intervals", json_object_new_int64(st->intervals));
	json_object_object_add(o, "elapsed_s", json_object_new_double(st->elapsed_s));
	json_object_object_add(o, "units", json_object_new_int64(st->units));
	json_object_object_add(o, "hot_units", json_object_new_int64(st->hot_units));
	json_object_object_add(o, "bytes_resident", u64(st->bytes_resident));
	json_object_object_add(o, "bytes_fast", u64(st->bytes_fast));
	json_object_object_add(o, "bytes_slow", u64(st->bytes_slow));
	json_object_object_add(o, "slow_pct", json_object_new_double(pct(st->bytes_slow,
									 st->bytes_resident)));
	json_object_object_add(o, "hot_bytes", u64(st->hot_bytes));
	json_object_object_add(o, "hot_fast", u64(st->hot_fast));
	json_object_object_add(o, "hot_fast_pct", json_object_new_double(pct(st->hot_fast,
									     st->hot_bytes)));
	json_object_object_add(o, "promotions", u64(st->promotions));
	json_object_object_add(o, "demotions", u64(st->demotions));
	json_object_object_add(o, "promoted_bytes", u64(st->promoted_bytes));
	json_object_object_add(o, "demoted_bytes", u64(st->demoted_bytes));
	by = json_object_new_object();
	json_object_object_add(by, "soft-dirty", u64(st->promoted_softdirty));
	json_object_object_add(by, "damon", u64(st->promoted_damon));
	json_object_object_add(by, "dirty-log", u64(st->promoted_dirtylog));
	json_object_object_add(o, "promoted_by", by);
	json_object_object_add(o, "bounces", u64(st->bounces));
	json_object_object_add(o, "bounce_pct", json_object_new_double(st->bounce_pct));
	json_object_object_add(o, "react_s", st->react_s >= 0 ?
			       json_object_new_double(st->react_s) : NULL);
	json_object_object_add(o, "held", u64(st->held));
	json_object_object_add(o, "deferred", u64(st->deferred));
	json_object_object_add(o, "softdirty_resets", u64(st->softdirty_resets));
	json_object_object_add(o, "pages_failed", u64(st->pages_failed));
	json_object_object_add(o, "cpu_s", json_object_new_double(st->cpu_s));
	json_object_object_add(o, "cpu_pct_per_gib", json_object_new_double(st->cpu_pct_per_gib));
	json_object_object_add(o, "pause_max_s", json_object_new_double(st->pause_max_s));
	json_object_object_add(o, "batch_max_s", json_object_new_double(st->batch_max_s));
	json_object_object_add(o, "over_budget", u64(st->over_budget));
	json_object_object_add(o, "last_error", st->last_error ?
			       json_object_new_string(proto_errno_name(st->last_error, name,
								       sizeof(name))) : NULL);
	if (history) {
		h = json_object_new_array();
		for (unsigned int i = 0; i < v->nhist; i++)
			json_object_array_add(h, sample_json(&v->hist[i]));
		json_object_object_add(o, "history", h);
	}
	return o;
}
