/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-bench demo --tier: the VMM tiers its own guest.  minivmm's hot-set
 * guest rewrites a quarter of its RAM, a window that moves every phase;
 * libmemmig (memmig_tier with opts.vm) keeps what it writes on the first
 * node and the rest on the second, moving 2 MiB units live; every page is
 * checked at the end (src/minivmm/tier-run.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/demo.h"
#include "minivmm/tier-run.h"
#include "util/size.h"

/* Four phases of six intervals: each change, its promotions and the old
 * set's demotion, then a steady half to measure. */
#define DEMO_TIER_PHASES	4
#define DEMO_TIER_INTERVAL_MS	2000
#define DEMO_TIER_PHASE_MS	12000

static void sample_text(void *opaque, unsigned int phase, unsigned int interval,
			double hot_fast_pct, double slow_pct)
{
	(void)opaque;
	printf("%5u %8u %12.1f %10.1f\n", phase + 1, interval, hot_fast_pct, slow_pct);
}

static void sample_json(void *opaque, unsigned int phase, unsigned int interval,
			double hot_fast_pct, double slow_pct)
{
	struct json_object *s = json_object_new_object();

	json_object_object_add(s, "phase", json_object_new_int((int)phase + 1));
	json_object_object_add(s, "interval", json_object_new_int((int)interval));
	json_object_object_add(s, "hot_fast_pct", json_object_new_double(hot_fast_pct));
	json_object_object_add(s, "slow_pct", json_object_new_double(slow_pct));
	json_object_array_add(opaque, s);
}

static struct json_object *result_json(const struct demo *d, const struct minivmm_tier_result *r,
				       struct json_object *samples)
{
	struct json_object *o = json_object_new_object();
	const struct memmig_tier_stats *st = &r->st;

	json_object_object_add(o, "guest", json_object_new_string(d->kvm ? "kvm" : "thread"));
	json_object_object_add(o, "nodes", demo_nodes_json(d));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)d->mem));
	json_object_object_add(o, "samples", samples);
	json_object_object_add(o, "hot_fast_min_2i_pct", json_object_new_double(r->hot_fast_min_2i));
	json_object_object_add(o, "slow_pct_mean", json_object_new_double(r->slow_pct_mean));
	json_object_object_add(o, "slow_target_pct", json_object_new_double(r->slow_target));
	json_object_object_add(o, "promotions", json_object_new_int64((int64_t)st->promotions));
	json_object_object_add(o, "demotions", json_object_new_int64((int64_t)st->demotions));
	json_object_object_add(o, "bounce_pct", json_object_new_double(st->bounce_pct));
	/* null before any change of the hot set was seen, as tiering's. */
	json_object_object_add(o, "react_s", st->react_s < 0 ? NULL :
			       json_object_new_double(st->react_s));
	json_object_object_add(o, "pause_max_s", json_object_new_double(st->pause_max_s));
	json_object_object_add(o, "cpu_pct_per_gib", json_object_new_double(st->cpu_pct_per_gib));
	json_object_object_add(o, "stall_max_s",
			       json_object_new_double((double)r->vs.stall_max_ns / 1e9));
	json_object_object_add(o, "lost", json_object_new_int64((int64_t)r->check.lost));
	json_object_object_add(o, "torn", json_object_new_int64((int64_t)r->check.torn));
	json_object_object_add(o, "verified", json_object_new_boolean(minivmm_tier_intact(r)));
	return o;
}

int demo_tier(struct memmig_ctx *ctx, struct demo *d)
{
	struct minivmm_tier_opts o = {
		.hot_pct = 25, .phases = DEMO_TIER_PHASES, .phase_ms = DEMO_TIER_PHASE_MS,
		.interval_ms = DEMO_TIER_INTERVAL_MS, .pause_ms = (unsigned int)d->budget_ms,
	};
	struct json_object *samples = json_object_new_array();
	struct minivmm_tier_result r;
	struct minivmm *vmm = NULL;
	struct memmig_vm *vm = NULL;
	char why[200] = "", size[32];
	int rc = demo_nodes(ctx, d);

	if (!rc && d->nnodes < 2) {
		cli_error("demo --tier: tiering needs two nodes with memory; this host has %d "
			  "(the multi-node tier runs it: tests/vm/guest-demo.sh)\n", d->nnodes);
		json_object_put(samples);
		return CLI_EXIT_FAIL;
	}
	o.fast = d->nodes[0];
	o.slow = d->nodes[1];
	if (!rc)
		rc = demo_guest(ctx, d, &vmm, &vm);
	if (rc < 0) {
		cli_error("demo: cannot start the guest: %s\n", strerror(-rc));
		goto out;
	}
	if (!d->json) {
		printf("%s guest (%s) rewriting a quarter of its RAM, a window that moves every "
		       "%u s;\ntiered by libmemmig: what it writes on node %d (%s), the rest on "
		       "node %d (%s)\n\n%5s %8s %12s %10s\n",
		       util_size_format(d->mem, size, sizeof(size)),
		       d->kvm ? "KVM, examples/minivmm" : "host thread, in-process",
		       o.phase_ms / 1000, o.fast, demo_rank_name(d, 0), o.slow,
		       demo_rank_name(d, 1), "phase", "interval", "hot on fast %", "on slow %");
	}
	rc = minivmm_tier_run(ctx, vm, vmm, &o, d->json ? sample_json : sample_text, samples, &r,
			      why, sizeof(why));
	if (rc < 0) {
		cli_error("demo --tier: %s%s%s\n", strerror(-rc), *why ? ": " : "", why);
		goto out;
	}
	if (d->json) {
		cli_json_print(result_json(d, &r, samples));
		samples = NULL;
	} else {
		printf("\nhot set on fast two intervals after each change: at least %.1f %%\n"
		       "on slow, the second half of each phase: %.1f %% (target %.1f %%)\n"
		       "%llu promotions, %llu demotions, bounces %.1f %% of moves, reaction %.1f s\n"
		       "longest pause of a unit %.1f ms; the guest's longest stall %.1f ms\n"
		       "CPU: %.2f %% of one CPU per GiB tracked\n"
		       "check: %s (%llu lost, %llu torn)\n",
		       r.hot_fast_min_2i, r.slow_pct_mean, r.slow_target,
		       (unsigned long long)r.st.promotions, (unsigned long long)r.st.demotions,
		       r.st.bounce_pct, r.st.react_s, r.st.pause_max_s * 1e3,
		       (double)r.vs.stall_max_ns / 1e6, r.st.cpu_pct_per_gib,
		       minivmm_tier_intact(&r) ? "ok" : "FAILED",
		       (unsigned long long)r.check.lost, (unsigned long long)r.check.torn);
	}
out:
	json_object_put(samples);
	memmig_vm_unref(vm);
	if (vmm)
		minivmm_destroy(vmm);
	return rc < 0 || !minivmm_tier_intact(&r) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
