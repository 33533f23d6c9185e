/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * minivmm: a one-vCPU KVM VMM that embeds libmemmig.  Its guest rewrites
 * all of its RAM without pause; every --migrate-every seconds minivmm
 * moves the RAM live to --to-node or --to-path, then checks every page.
 * With --tier FAST,SLOW its guest rewrites a quarter of its RAM (a window
 * it moves every --phase-ms) instead, and minivmm tiers it: libmemmig
 * keeps what the guest writes on FAST and the rest on SLOW, moving 2 MiB
 * units live (memmig_tier with opts.vm); every page is checked at the end.
 *
 *   minivmm [--mem 256M] [--to-node N | --to-path DIR] [--migrate-every S]
 *           [--migrations N] [--backing anon|memfd] [--dirty-ring ENTRIES]
 *           [--method auto|log|log-clear|ring] [--budget-ms MS]
 *   minivmm --tier FAST,SLOW [--mem 64M] [--hot-pct 25] [--phases 4]
 *           [--phase-ms 12000] [--interval-ms 2000] [--budget-ms MS]
 *
 * Exit: 0 every migration verified, 1 a failure, 77 no /dev/kvm.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minivmm/embed.h"
#include "minivmm/tier-run.h"
#include "util/size.h"

struct args {
	struct minivmm_opts vm;
	struct memmig_live_opts live;
	double every_s;
	unsigned int migrations;
	bool tier;
	struct minivmm_tier_opts t;
};

static int parse_size(const char *s, uint64_t *out)
{
	size_t v;
	int rc = util_size_parse(s, &v);

	if (!rc && !v)
		rc = -EINVAL;
	*out = v;
	return rc;
}

static int parse_method(const char *s)
{
	for (int m = MEMMIG_DIRTY_AUTO; memmig_dirty_method_name(m); m++)
		if (!strcmp(s, memmig_dirty_method_name(m)))
			return m;
	return -EINVAL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: minivmm [--mem SIZE] [--to-node N | --to-path DIR] "
		   "[--migrate-every SECONDS]\n"
		   "               [--migrations N] [--backing anon|memfd] "
		   "[--dirty-ring ENTRIES]\n"
		   "               [--method auto|log|log-clear|ring] [--budget-ms MS]\n"
		   "       minivmm --tier FAST,SLOW [--mem SIZE] [--hot-pct PCT] [--phases N]\n"
		   "               [--phase-ms MS] [--interval-ms MS] [--budget-ms MS]\n");
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longopts[] = {
		{ "mem", required_argument, NULL, 'm' },
		{ "to-node", required_argument, NULL, 'n' },
		{ "to-path", required_argument, NULL, 'p' },
		{ "migrate-every", required_argument, NULL, 'e' },
		{ "migrations", required_argument, NULL, 'c' },
		{ "backing", required_argument, NULL, 'b' },
		{ "dirty-ring", required_argument, NULL, 'r' },
		{ "method", required_argument, NULL, 'M' },
		{ "budget-ms", required_argument, NULL, 'B' },
		{ "tier", required_argument, NULL, 'T' },
		{ "hot-pct", required_argument, NULL, 'H' },
		{ "phases", required_argument, NULL, 'P' },
		{ "phase-ms", required_argument, NULL, 'L' },
		{ "interval-ms", required_argument, NULL, 'I' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t v;
	char *end, extra;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		errno = 0;
		switch (c) {
		case 'm':
			if (parse_size(optarg, &a->vm.mem))
				return -EINVAL;
			break;
		case 'n':
			a->live.target_node = (int)strtol(optarg, &end, 10);
			if (*end || a->live.target_node < 0)
				return -EINVAL;
			break;
		case 'p':
			a->live.target_path = optarg;
			break;
		case 'e':
			a->every_s = strtod(optarg, &end);
			if (*end || a->every_s < 0)
				return -EINVAL;
			break;
		case 'c':
			a->migrations = (unsigned int)strtoul(optarg, &end, 10);
			if (*end || errno)
				return -EINVAL;
			break;
		case 'b':
			if (!strcmp(optarg, "anon"))
				a->vm.backing = MINIVMM_BACKING_ANON;
			else if (!strcmp(optarg, "memfd"))
				a->vm.backing = MINIVMM_BACKING_MEMFD;
			else
				return -EINVAL;
			break;
		case 'r':
			if (parse_size(optarg, &v) || v > UINT32_MAX)
				return -EINVAL;
			a->vm.dirty_ring = (uint32_t)v;
			break;
		case 'M':
			a->live.dirty_method = parse_method(optarg);
			if (a->live.dirty_method < 0)
				return -EINVAL;
			break;
		case 'B':
			a->live.pause_budget_ns = (uint64_t)(strtod(optarg, &end) * 1e6);
			if (*end || !a->live.pause_budget_ns)
				return -EINVAL;
			break;
		case 'T':
			a->tier = true;
			if (sscanf(optarg, "%d,%d%c", &a->t.fast, &a->t.slow, &extra) != 2 ||
			    a->t.fast < 0 || a->t.slow < 0)
				return -EINVAL;
			break;
		case 'H':
		case 'P':
		case 'L':
		case 'I':
			v = strtoul(optarg, &end, 10);
			if (*end || errno || !v || v > 10000000)
				return -EINVAL;
			*(c == 'H' ? &a->t.hot_pct : c == 'P' ? &a->t.phases :
			  c == 'L' ? &a->t.phase_ms : &a->t.interval_ms) = (unsigned int)v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (optind < argc)
		return -EINVAL;
	if (a->live.target_path)
		a->live.target_node = -1;
	return 0;
}

static void print_migration(unsigned int i, const struct minivmm_migration *m)
{
	const struct memmig_live_report *r = &m->rep;

	printf("migration %u: %llu MiB in %.1f ms (%.2f GB/s), prepare %.1f ms, "
	       "%u rounds (%s), pause %.3f ms (%llu KiB; stop %.3f harvest %.3f copy %.3f "
	       "swap %.3f), %s: %s, lost %llu, torn %llu, guest errors %llu\n",
	       i, (unsigned long long)(r->bytes >> 20), r->total_s * 1e3, r->gbps,
	       r->prepare_s * 1e3, r->rounds, memmig_live_stop_name(r->stop_reason),
	       r->pause_s * 1e3,
	       (unsigned long long)(r->pause_bytes >> 10), r->pause_stop_s * 1e3,
	       r->pause_harvest_s * 1e3, r->pause_copy_s * 1e3,
	       r->pause_swap_s * 1e3, memmig_dirty_method_name(r->dirty_method),
	       minivmm_migration_ok(m) ? "verified" : "FAILED",
	       (unsigned long long)m->check.lost, (unsigned long long)m->check.torn,
	       (unsigned long long)(m->guest_errors + m->check.guest_errors));
}

static int run(const struct args *a)
{
	struct memmig_ctx *ctx = NULL;
	struct memmig_vm *vm = NULL;
	struct minivmm *vmm = NULL;
	int rc, failed = 0;

	rc = memmig_ctx_new(&ctx);
	if (!rc)
		rc = minivmm_up(ctx, &a->vm, &vmm, &vm);
	if (rc == -ENODEV) {
		printf("minivmm: no /dev/kvm on this machine\n");
		memmig_ctx_unref(ctx);
		return 77;
	}
	for (unsigned int i = 1; !rc && i <= a->migrations; i++) {
		struct minivmm_migration m;

		usleep((useconds_t)(a->every_s * 1e6));
		rc = minivmm_migrate(vm, vmm, &a->live, &m);
		if (rc < 0) {
			fprintf(stderr, "minivmm: migration %u: %s\n", i, strerror(-rc));
			break;
		}
		print_migration(i, &m);
		failed += !minivmm_migration_ok(&m);
	}
	if (rc < 0 && rc != -ECANCELED)
		fprintf(stderr, "minivmm: %s\n", strerror(-rc));
	memmig_vm_unref(vm);
	if (vmm)
		minivmm_destroy(vmm);
	memmig_ctx_unref(ctx);
	return rc < 0 || failed ? 1 : 0;
}

static void tier_sample(void *opaque, unsigned int phase, unsigned int interval,
			double hot_fast_pct, double slow_pct)
{
	(void)opaque;
	printf("phase %u, interval %u: %5.1f %% of the hot set on fast, %5.1f %% of the RAM "
	       "on slow\n", phase, interval, hot_fast_pct, slow_pct);
}

/* --tier: the hot-set guest, tiered by libmemmig. */
static int tier(struct args *a)
{
	struct memmig_ctx *ctx = NULL;
	struct memmig_vm *vm = NULL;
	struct minivmm *vmm = NULL;
	struct minivmm_tier_result r;
	char why[200] = "";
	int rc;

	a->vm.guest = MINIVMM_GUEST_HOTSET;
	if (a->live.pause_budget_ns)
		a->t.pause_ms = (unsigned int)(a->live.pause_budget_ns / 1000000);
	rc = memmig_ctx_new(&ctx);
	if (!rc)
		rc = minivmm_up(ctx, &a->vm, &vmm, &vm);
	if (rc == -ENODEV)
		printf("minivmm: no /dev/kvm on this machine\n");
	if (!rc)
		rc = minivmm_tier_run(ctx, vm, vmm, &a->t, tier_sample, NULL, &r, why, sizeof(why));
	if (!rc)
		printf("tiering: %u intervals, %llu promotions, %llu demotions, bounces %.1f %%, "
		       "hot set on fast two intervals after each change >= %.1f %%, slow %.1f %% "
		       "(target %.1f %%), longest pause %.1f ms, reaction %.1f s, CPU %.2f %% a GiB; "
		       "%s: lost %llu, torn %llu, guest errors %llu\n", r.st.intervals,
		       (unsigned long long)r.st.promotions, (unsigned long long)r.st.demotions,
		       r.st.bounce_pct, r.hot_fast_min_2i, r.slow_pct_mean, r.slow_target,
		       r.st.pause_max_s * 1e3, r.st.react_s, r.st.cpu_pct_per_gib,
		       minivmm_tier_intact(&r) ? "verified" : "FAILED",
		       (unsigned long long)r.check.lost, (unsigned long long)r.check.torn,
		       (unsigned long long)(r.vs.guest_errors + r.check.guest_errors));
	else if (rc != -ENODEV)
		fprintf(stderr, "minivmm: --tier: %s%s%s\n", strerror(-rc), *why ? ": " : "", why);
	memmig_vm_unref(vm);
	minivmm_destroy(vmm);
	memmig_ctx_unref(ctx);
	return rc == -ENODEV ? 77 : rc || !minivmm_tier_intact(&r) ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct args a = {
		.vm = { .backing = MINIVMM_BACKING_ANON },
		.live = { .sz = sizeof(a.live), .target_node = 0 },
		.every_s = 1,
		.migrations = 5,
		.t = { .hot_pct = 25, .phases = 4, .phase_ms = 12000, .interval_ms = 2000,
		       .pause_ms = 50 },
	};

	if (parse_args(argc, argv, &a)) {
		usage(stderr);
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (a.tier) {
		a.vm.mem = a.vm.mem ? a.vm.mem : 64ULL << 20;
		return tier(&a);
	}
	a.vm.mem = a.vm.mem ? a.vm.mem : 256ULL << 20;
	return run(&a);
}
