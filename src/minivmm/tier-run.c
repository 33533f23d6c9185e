/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A VMM tiers its own guest (see tier-run.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "minivmm/tier-run.h"

#define UNIT_PAGES (MEMMIG_TIER_UNIT / MINIVMM_PAGE)
/* A pass over all of the RAM, under TCG's nested KVM. */
#define WINDOW_WAIT_MS 60000

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* % of pages [hot_lo, hot_hi) of the RAM on fast, of all of it on slow. */
static int where(struct minivmm *vmm, const struct minivmm_tier_opts *o, uint64_t hot_lo,
		 uint64_t hot_hi, double *hot_fast_pct, double *slow_pct)
{
	struct minivmm_slot s;
	uint64_t n, hot = 0, hot_fast = 0, slow = 0;
	void **pages;
	int *status, rc = 0;

	minivmm_get_slot(vmm, &s);
	n = s.size / MINIVMM_PAGE;
	pages = malloc(n * sizeof(*pages));
	status = malloc(n * sizeof(*status));
	if (!pages || !status) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0; i < n; i++)
		pages[i] = (uint8_t *)s.hva + i * MINIVMM_PAGE;
	if (move_pages(0, n, pages, NULL, status, 0) < 0) {
		rc = -errno;
		goto out;
	}
	for (uint64_t i = 0; i < n; i++) {
		bool h = i >= hot_lo && i < hot_hi;

		hot += h;
		hot_fast += h && status[i] == o->fast;
		slow += status[i] == o->slow;
	}
	*hot_fast_pct = hot ? 100.0 * (double)hot_fast / (double)hot : 100;
	*slow_pct = 100.0 * (double)slow / (double)n;
out:
	free(pages);
	free(status);
	return rc;
}

/* Everything on the slow node to start with. */
static int to_slow(struct memmig_vm *vm, const struct minivmm_tier_opts *o)
{
	struct memmig_live_opts lo = { .sz = sizeof(lo), .slot = 0, .target_node = o->slow,
				       .pause_budget_ns = (uint64_t)o->pause_ms * 1000000 };
	struct memmig_live_report rep = { .sz = sizeof(rep) };

	return memmig_vm_migrate(vm, &lo, &rep);
}

static int tier_new(struct memmig_ctx *ctx, struct memmig_vm *vm,
		    const struct minivmm_tier_opts *o, unsigned int slow_share,
		    struct memmig_tier **t, char *why, size_t len)
{
	const int fast[] = { o->fast }, slow[] = { o->slow };
	struct memmig_tier_opts to = {
		.sz = sizeof(to), .vm = vm, .vm_slot = 0, .fast_nodes = fast, .nfast = 1,
		.slow_nodes = slow, .nslow = 1, .slow_share = slow_share,
		.interval_ms = o->interval_ms, .cold_intervals = 1, .min_stay = 2,
		.pause_ms = o->pause_ms,
		.why = why, .why_len = len,
	};

	return memmig_tier_new(ctx, &to, t);
}

int minivmm_tier_run(struct memmig_ctx *ctx, struct memmig_vm *vm, struct minivmm *vmm,
		     const struct minivmm_tier_opts *o, minivmm_tier_sample_fn fn,
		     void *opaque, struct minivmm_tier_result *out, char *why, size_t len)
{
	struct minivmm_slot s;
	struct memmig_tier *t = NULL;
	unsigned int units, hot_units, per_phase, slow_n = 0;
	double slow_sum = 0, t0;
	uint32_t data0;
	int rc;

	minivmm_get_slot(vmm, &s);
	minivmm_data_pages(vmm, &data0, NULL);
	units = (unsigned int)(s.size / MEMMIG_TIER_UNIT);
	/* Unit 0 (code, state, the table of writes) is always hot: the
	 * window takes the rest of the hot share. */
	hot_units = units * o->hot_pct / 100;
	if (hot_units < 2 || hot_units >= units || data0 > UNIT_PAGES || !o->interval_ms ||
	    o->phase_ms < 2 * o->interval_ms) {
		snprintf(why, len, "%u MiB of RAM: too few 2 MiB units for %u %% hot, "
			 "or phases shorter than two intervals", units * 2, o->hot_pct);
		return -EINVAL;
	}
	hot_units--;
	memset(out, 0, sizeof(*out));
	out->st.sz = sizeof(out->st);
	out->hot_fast_min_2i = 100;
	out->slow_phase_min = 100;
	out->slow_target = 100.0 - 100.0 * (hot_units + 1) / units;
	/*
	 * The first window before anything is measured: the guest wrote all
	 * of its RAM until now, and a pass under way still does.
	 */
	minivmm_set_window(vmm, (uint32_t)(UNIT_PAGES - data0), hot_units * UNIT_PAGES);
	minivmm_get_stats(vmm, &out->vs);
	minivmm_wait_pass(vmm, out->vs.passes + 2, WINDOW_WAIT_MS);
	rc = to_slow(vm, o);
	if (rc) {
		snprintf(why, len, "the RAM live to node %d: %s", o->slow, strerror(-rc));
		return rc;
	}
	/* The stalls judged are the tiering's, not this set-up move's: the
	 * whole RAM's pause held the nested vCPU 231 ms under TCG. */
	minivmm_stall_reset(vmm);
	rc = o->observe ? 0 : tier_new(ctx, vm, o, 100 - o->hot_pct, &t, why, len);
	if (rc)
		return rc;
	per_phase = o->phase_ms / o->interval_ms;
	t0 = now_s();
	for (unsigned int k = 0; k < o->phases; k++) {
		/* hot_units whole units from unit 1 on, the next ones each
		 * phase. */
		double phase_sum = 0, phase_mean;
		unsigned int phase_n = 0;
		uint64_t lo = (1 + (uint64_t)k * hot_units % (units - hot_units)) * UNIT_PAGES;

		minivmm_set_window(vmm, (uint32_t)(lo - data0), hot_units * UNIT_PAGES);
		for (unsigned int i = 1; i <= per_phase; i++) {
			double at = t0 + ((double)k * per_phase + i) * o->interval_ms / 1e3;
			double hot_fast = 0, slow = 0, d = at - now_s();

			if (d > 0)
				usleep((useconds_t)(d * 1e6));
			rc = where(vmm, o, lo, lo + (uint64_t)hot_units * UNIT_PAGES, &hot_fast,
				   &slow);
			if (rc) {
				snprintf(why, len, "move_pages(2) query: %s", strerror(-rc));
				goto out;
			}
			if (fn)
				fn(opaque, k, i, hot_fast, slow);
			if (i == 2 && hot_fast < out->hot_fast_min_2i)
				out->hot_fast_min_2i = hot_fast;
			if (i > per_phase / 2) {
				phase_sum += slow;
				phase_n++;
			}
			/* A failed interval is the engine's to report; the
			 * next may move. */
			if (t)
				memmig_tier_step(t);
		}
		phase_mean = phase_n ? phase_sum / phase_n : 0;
		if (phase_mean < out->slow_phase_min)
			out->slow_phase_min = phase_mean;
		if (phase_mean > out->slow_phase_max)
			out->slow_phase_max = phase_mean;
		slow_sum += phase_sum;
		slow_n += phase_n;
	}
	out->slow_pct_mean = slow_n ? slow_sum / slow_n : 0;
out:
	if (t)
		memmig_tier_get_stats(t, &out->st);
	memmig_tier_unref(t);
	minivmm_get_stats(vmm, &out->vs);
	out->verify_rc = minivmm_verify(vmm, &out->check);
	return rc;
}

bool minivmm_tier_intact(const struct minivmm_tier_result *r)
{
	return !r->verify_rc && !r->check.lost && !r->check.torn && !r->check.guest_errors &&
	       !r->vs.guest_errors && !r->vs.fatal;
}
