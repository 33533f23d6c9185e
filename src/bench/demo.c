/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-bench demo: live migrations of a running guest's RAM.  minivmm (the
 * example VMM) runs a guest that rewrites all of its memory without pause;
 * its RAM moves between a DRAM node and a node of CXL memory, or a
 * CPU-less memory node, where the host has one, else between two nodes --
 * on a one-node machine to the same node and to a file-backed tier in turn
 * -- and every page is checked after each move.  Without /dev/kvm a host
 * thread plays the guest, in-process.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/demo.h"
#include "front/front.h"
#include "minivmm/embed.h"
#include "util/size.h"

static void demo_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-bench demo [--mem SIZE] [--migrations N] [--file-tier DIR]\n"
		   "                         [--budget-ms MS] [--dirty METHOD] [--no-kvm]\n"
		   "                         [--stream] [--nodes-only] [--json] [--plot FILE]\n"
		   "                         [--plot-data FILE]\n"
		   "       memmig-bench demo --tier [--mem SIZE] [--budget-ms MS] [--no-kvm]\n"
		   "                         [--json]\n"
		   "Runs a guest that rewrites all of its RAM (examples/minivmm) and\n"
		   "migrates the RAM live N times (default 5) while it runs: between\n"
		   "a DRAM node and a node of CXL memory (or a CPU-less node) where\n"
		   "there is one, else between two nodes; on one node, to the same\n"
		   "node and to a file-backed tier (DIR, default /dev/shm) in turn.\n"
		   "After each migration every page is checked (--nodes-only: no\n"
		   "file tier).  Without /dev/kvm (or with --no-kvm) a host thread\n"
		   "writes the memory instead of a guest.\n"
		   "--dirty: how writes are tracked: auto (default), log, log-clear,\n"
		   "ring (KVM), uffd-wp, soft-dirty (host thread).  --mem: up to 64G\n"
		   "(the KVM guest runs in 64-bit long mode).\n"
		   "--stream: no pre-copy of the whole RAM: each piece is copied and\n"
		   "switched over in its turn (MEMMIG_LIVE_STREAM).\n"
		   "--tier: the guest rewrites a quarter of its RAM, a window that moves\n"
		   "every 12 s, and libmemmig tiers it for 48 s: what it writes on the\n"
		   "first node, the rest on the second (2 MiB units, each moved live);\n"
		   "two nodes with memory needed.  Then every page is checked.\n"
		   "--plot FILE: each migration's copy rounds (bytes and time) and its\n"
		   "pause in parts against the budget, drawn by gnuplot (.svg or .png;\n"
		   "the first %d migrations); --plot-data FILE: those numbers.\n"
		   "Exit: 0 every migration verified, 1 otherwise.\n", DEMO_PLOT_MAX);
}

static int demo_parse(int argc, char **argv, struct demo *d)
{
	static const struct option opts[] = {
		{ "mem", required_argument, NULL, 'm' },
		{ "migrations", required_argument, NULL, 'n' },
		{ "file-tier", required_argument, NULL, 'F' },
		{ "tier", no_argument, NULL, 't' },
		{ "budget-ms", required_argument, NULL, 'b' },
		{ "dirty", required_argument, NULL, 'd' },
		{ "no-kvm", no_argument, NULL, 'K' },
		{ "stream", no_argument, NULL, 'S' },
		{ "nodes-only", no_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		PLOT_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (cli_parse_size("--mem", optarg, &d->mem))
				return CLI_EXIT_USAGE;
			if (d->mem < (8 << 20) || d->mem > (64ULL << 30) || d->mem % 4096) {
				cli_opt_error("--mem", "8M to 64G, in 4 KiB pages\n");
				return CLI_EXIT_USAGE;
			}
			break;
		case 'd':
			if (cli_parse_dirty("--dirty", optarg, &d->dirty))
				return CLI_EXIT_USAGE;
			break;
		case 'n':
			if (cli_parse_int("--migrations", optarg, 1, 1000, &d->migrations))
				return CLI_EXIT_USAGE;
			break;
		case 'F':
			d->file_tier = optarg;
			break;
		case 't':
			d->tiering = true;
			d->guest = MINIVMM_GUEST_HOTSET;
			break;
		case 'b':
			if (cli_parse_int("--budget-ms", optarg, 1, 10000, &d->budget_ms))
				return CLI_EXIT_USAGE;
			break;
		case 'K':
			d->no_kvm = true;
			break;
		case 'S':
			d->stream = true;
			break;
		case 'N':
			d->nodes_only = true;
			break;
		case 'j':
			d->json = true;
			break;
		case 'h':
			demo_usage(stdout);
			return CLI_HELP_SHOWN;
		case PLOT_OPT_FILE:
		case PLOT_OPT_DATA:
			plot_opt(&d->plot, c, optarg);
			break;
		default:
			demo_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		demo_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

/* How well a node shows what memmig is for, as the second node. */
enum demo_rank { RANK_OTHER, RANK_CPULESS, RANK_CXL };

static enum demo_rank node_rank(const struct memmig_node_info *n)
{
	if (n->flags & MEMMIG_NODE_F_CXL)
		return RANK_CXL;
	return n->kind == MEMMIG_NODE_CPULESS ? RANK_CPULESS : RANK_OTHER;
}

static const char *rank_name(enum demo_rank r)
{
	static const char *const names[] = {
		[RANK_OTHER] = "DRAM", [RANK_CPULESS] = "CPU-less memory",
		[RANK_CXL] = "CXL memory",
	};

	return names[r];
}

const char *demo_rank_name(const struct demo *d, int i)
{
	return rank_name(d->ranks[i]);
}

/*
 * What memmig is for: the first node with CPUs, where the guest runs, and
 * a node of CXL memory where there is one, else a CPU-less memory node
 * (a CXL expander as the firmware shows it), else the next node; on one
 * node, that one.
 */
int demo_nodes(struct memmig_ctx *ctx, struct demo *d)
{
	struct memmig_node_info n = { .sz = sizeof(n) };
	struct memmig_topo *topo;
	int rc = memmig_topo_new(ctx, &topo), second = -1;
	enum demo_rank best = RANK_OTHER;

	if (rc < 0)
		return rc;
	for (int i = 0; i < memmig_topo_node_count(topo); i++) {
		if (memmig_topo_get_node(topo, i, &n))
			continue;
		if (!d->nnodes && n.kind == MEMMIG_NODE_DRAM) {
			d->ranks[0] = RANK_OTHER;
			d->nodes[d->nnodes++] = n.id;
		} else if (second < 0 || node_rank(&n) > best) {
			second = n.id;
			best = node_rank(&n);
		}
	}
	memmig_topo_unref(topo);
	if (!d->nnodes && second >= 0) {	/* no CPU node: memory only */
		d->nodes[0] = second;
		d->ranks[0] = best;
		second = -1;
	}
	if (d->nnodes && second >= 0) {
		d->ranks[1] = best;
		d->nodes[d->nnodes++] = second;
	}
	return d->nnodes ? 0 : -ENOENT;
}

/* Migration i's target: the other node, or node / tier in turn. */
static struct memmig_live_opts demo_target(const struct demo *d, long i, char *name,
					   size_t len)
{
	struct memmig_live_opts o = { .sz = sizeof(o), .target_node = -1 };

	o.pause_budget_ns = (uint64_t)d->budget_ms * 1000000;
	o.dirty_method = d->dirty;
	o.flags = d->stream ? MEMMIG_LIVE_STREAM : 0;
	if (d->nnodes > 1)
		o.target_node = d->nodes[(i + 1) % 2];
	else if (i % 2 == 0 || d->nodes_only)
		o.target_node = d->nodes[0];
	else
		o.target_path = d->file_tier;
	if (o.target_path)
		snprintf(name, len, "%s", o.target_path);
	else
		snprintf(name, len, "node %d", o.target_node);
	return o;
}

/* The pause's parts, each beside what it was expected to take, its budget,
 * and, over budget though pre-copy converged, the part that ran furthest
 * over (else stop_reason says why). */
static struct json_object *pause_json(const struct memmig_live_report *r)
{
	struct json_object *o = json_object_new_object();
	const char *over = memmig_live_report_overrun(r, NULL, NULL), *name;
	double took, expected;

	json_object_object_add(o, "s", json_object_new_double(r->pause_s));
	json_object_object_add(o, "expected_s", json_object_new_double(r->pause_expected_s));
	json_object_object_add(o, "budget_s", json_object_new_double(r->pause_budget_s));
	for (unsigned int i = 0; !memmig_live_pause_part(r, i, &name, &took, &expected); i++) {
		struct json_object *p = json_object_new_object();

		json_object_object_add(p, "s", json_object_new_double(took));
		json_object_object_add(p, "expected_s", json_object_new_double(expected));
		json_object_object_add(o, name, p);
	}
	json_object_object_add(o, "resume_s", json_object_new_double(r->resume_s));
	json_object_object_add(o, "over_budget", json_object_new_boolean(over != NULL));
	json_object_object_add(o, "overrun_by", over && r->converged ?
					       json_object_new_string(over) : NULL);
	return o;
}

static struct json_object *migration_json(const char *target,
					  const struct minivmm_migration *m,
					  double raw_s)
{
	const struct memmig_live_report *r = &m->rep;
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "target", json_object_new_string(target));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)r->bytes));
	json_object_object_add(o, "elapsed_s", json_object_new_double(r->total_s));
	json_object_object_add(o, "bytes_per_s", bench_json_rate(r->gbps));
	json_object_object_add(o, "prepare_s", json_object_new_double(r->prepare_s));
	json_object_object_add(o, "vs_raw_copy",
			       json_object_new_double(raw_s > 0 ? r->total_s / raw_s : 0));
	json_object_object_add(o, "rounds", json_object_new_int((int)r->rounds));
	json_object_object_add(o, "converged", json_object_new_boolean(r->converged));
	json_object_object_add(o, "stop_reason",
			       json_object_new_string(memmig_live_stop_name(r->stop_reason)));
	json_object_object_add(o, "bytes_copied", json_object_new_int64((int64_t)r->bytes_copied));
	json_object_object_add(o, "pause_s", json_object_new_double(r->pause_s));
	json_object_object_add(o, "pauses", json_object_new_int((int)r->pauses));
	json_object_object_add(o, "pause_total_s", json_object_new_double(r->pause_total_s));
	json_object_object_add(o, "piece_bytes", json_object_new_int64((int64_t)r->piece_bytes));
	json_object_object_add(o, "switchover_s", json_object_new_double(r->switchover_s));
	json_object_object_add(o, "swap_total_s", json_object_new_double(r->swap_total_s));
	json_object_object_add(o, "stall_s", json_object_new_double(m->stall_max_s));
	json_object_object_add(o, "stall_pause_s", json_object_new_double(m->stall_pause_s));
	json_object_object_add(o, "stall_source", json_object_new_string(m->stall_source));
	json_object_object_add(o, "stall_at_s", json_object_new_double(m->stall_at_s));
	json_object_object_add(o, "stall_step", json_object_new_string(minivmm_stall_step(m)));
	json_object_object_add(o, "pause_bytes", json_object_new_int64((int64_t)r->pause_bytes));
	json_object_object_add(o, "pause_bytes_max",
			       json_object_new_int64((int64_t)r->pause_bytes_max));
	json_object_object_add(o, "pause", pause_json(r));
	json_object_object_add(o, "dirty_method",
			       json_object_new_string(memmig_dirty_method_name(r->dirty_method)));
	json_object_object_add(o, "verified", json_object_new_boolean(minivmm_migration_ok(m)));
	json_object_object_add(o, "lost_writes", json_object_new_int64((int64_t)m->check.lost));
	json_object_object_add(o, "torn_pages", json_object_new_int64((int64_t)m->check.torn));
	json_object_object_add(o, "guest_errors",
			       json_object_new_int64((int64_t)(m->guest_errors +
							       m->check.guest_errors)));
	return o;
}

static void migration_text(long i, const char *target, const struct minivmm_migration *m,
			   double raw_s)
{
	const struct memmig_live_report *r = &m->rep;
	const char *over = memmig_live_report_overrun(r, NULL, NULL);
	char piece[32];

	printf("%3ld %-10s %5.2f %6.1f %5.1fx %5.1f %6u %6.3f %6u %7.3f %6s %6.3f  %s",
	       i + 1, target, r->gbps, r->total_s * 1e3,
	       raw_s > 0 ? r->total_s / raw_s : 0, r->prepare_s * 1e3, r->rounds,
	       r->pause_s * 1e3, r->pauses, r->pause_total_s * 1e3,
	       util_size_format(r->piece_bytes, piece, sizeof(piece)), m->stall_max_s * 1e3,
	       minivmm_migration_ok(m) ? "ok" : "FAILED");
	if (m->check.lost)
		printf(", lost %llu", (unsigned long long)m->check.lost);
	/* Why the pause missed its budget: pre-copy's stop, or a part. */
	if (over)
		printf(", over: %s", r->converged ? over :
		       memmig_live_stop_name(r->stop_reason));
	putchar('\n');
	/* A stall no pause explains (the goal: at most twice the longest). */
	if (m->stall_max_s > 2 * r->pause_s)
		printf("%4s the stall began in %s, %.1f ms into the migration\n", "",
		       minivmm_stall_step(m), m->stall_at_s * 1e3);
}

/* The nodes it moves between: [{"id": 0, "kind": "DRAM"}, ...]. */
struct json_object *demo_nodes_json(const struct demo *d)
{
	struct json_object *a = json_object_new_array();

	for (int i = 0; i < d->nnodes; i++) {
		struct json_object *n = json_object_new_object();

		json_object_object_add(n, "id", json_object_new_int(d->nodes[i]));
		json_object_object_add(n, "kind", json_object_new_string(rank_name(d->ranks[i])));
		json_object_array_add(a, n);
	}
	return a;
}

/* Starts the guest: under KVM, or as a host thread (saying why). */
int demo_guest(struct memmig_ctx *ctx, struct demo *d, struct minivmm **vmm,
	       struct memmig_vm **vm)
{
	const char *why;
	int rc = minivmm_up_any(ctx, d->mem, d->guest, d->dirty, d->no_kvm, vmm, vm, &why);

	d->kvm = !why;
	if (!rc && why && !d->no_kvm && !d->json)
		printf("%s: a host thread writes the memory instead of a guest\n", why);
	return rc;
}

static int demo_run(struct memmig_ctx *ctx, struct demo *d)
{
	struct json_object *list = json_object_new_array();
	struct minivmm *vmm = NULL;
	struct memmig_vm *vm = NULL;
	char size[32], target[64];
	int rc, failed = 0;

	rc = demo_nodes(ctx, d);
	if (!rc)
		rc = demo_guest(ctx, d, &vmm, &vm);
	if (rc < 0) {
		cli_error("demo: cannot start the guest: %s\n", strerror(-rc));
		goto out;
	}
	d->raw_s = bench_raw_copy_s(ctx, d->mem, vmm, &d->raw_stall_s);
	if (!d->json) {
		printf("%s guest (%s) rewriting all of its RAM;\n",
		       util_size_format(d->mem, size, sizeof(size)),
		       d->kvm ? "KVM, examples/minivmm" : "host thread, in-process");
		if (d->nnodes > 1)
			printf("moving it between node %d (%s) and node %d (%s)\n", d->nodes[0],
			       rank_name(d->ranks[0]), d->nodes[1], rank_name(d->ranks[1]));
		else if (d->nodes_only)
			printf("one NUMA node: to node %d each time\n", d->nodes[0]);
		else
			printf("one NUMA node: to node %d and the file tier %s in turn\n",
			       d->nodes[0], d->file_tier);
		printf("one raw copy of %s: %.1f ms; the guest's longest stall beside it\n"
		       "(no migration): %.3f ms\n\n", size, d->raw_s * 1e3, d->raw_stall_s * 1e3);
		printf("%3s %-10s %5s %6s %6s %5s %6s %6s %6s %7s %6s %6s  %s\n", "#",
		       "target", "GB/s", "ms", "/raw", "prep", "rounds", "pause",
		       "pauses", "sum", "piece", "stall", "check");
	}
	for (long i = 0; i < d->migrations; i++) {
		struct memmig_live_opts o = demo_target(d, i, target, sizeof(target));
		struct minivmm_migration m;

		rc = minivmm_migrate(vm, vmm, &o, &m);
		if (rc < 0) {
			cli_error("demo: migration %ld to %s: %s\n", i + 1, target,
				  strerror(-rc));
			break;
		}
		failed += !minivmm_migration_ok(&m);
		if (d->runs && d->nruns < DEMO_PLOT_MAX) {
			snprintf(d->runs[d->nruns].target, sizeof(d->runs[0].target), "%s", target);
			d->runs[d->nruns++].m = m;
		}
		if (d->json)
			json_object_array_add(list, migration_json(target, &m, d->raw_s));
		else
			migration_text(i, target, &m, d->raw_s);
		d->tracked |= 1u << m.rep.dirty_method;
	}
	if (!d->json) {
		printf("\ntimes in ms; /raw: the migration's time over the raw copy's; prep:\n"
		       "the destination's allocation; pause: the longest pause; pauses: how\n"
		       "many, sum: their sum; piece: the most memory switched over under one\n"
		       "pause; stall: %s;\ncheck: every page against the guest, ok or FAILED; over: what took\nthe pause over its budget (a part, or pre-copy's stop).  Below a line\nwhose stall is over twice its pause: the step where that stall began.\nWrites tracked with",
		       d->kvm ? "the guest's longest time from one page to the next, by\n"
			       "its TSC (memmig's pauses, exits, faults, the scheduler)" :
			       "the writer's longest time from one write to the next,\n"
			       "by its own clock (memmig's pauses, faults, the scheduler)");
		for (int m = 0; memmig_dirty_method_name(m); m++)
			if (d->tracked & (1u << m))
				printf(" %s", memmig_dirty_method_name(m));
		printf("\n");
	}
out:
	if (d->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "guest", json_object_new_string(
				d->kvm ? "kvm" : "thread"));
		json_object_object_add(o, "raw_copy_s", json_object_new_double(d->raw_s));
		json_object_object_add(o, "raw_copy_stall_s",
				       json_object_new_double(d->raw_stall_s));
		json_object_object_add(o, "nodes", demo_nodes_json(d));
		json_object_object_add(o, "migrations", list);
		cli_json_print(o);
	} else {
		json_object_put(list);
	}
	memmig_vm_unref(vm);
	if (vmm)
		minivmm_destroy(vmm);
	return rc < 0 || failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* One series per migration: its rounds' bytes (MiB) or seconds (ms). */
static void plot_rounds(struct plot *p, const struct demo *d, bool bytes)
{
	char name[96];

	for (long i = 0; i < d->nruns; i++) {
		const struct minivmm_migration *m = &d->runs[i].m;

		snprintf(name, sizeof(name), "#%ld to %s", i + 1, d->runs[i].target);
		plot_series(p, name, PLOT_THIN);
		for (unsigned int r = 0; r < m->nrounds; r++)
			plot_point(p, r, bytes ? m->round_bytes[r] / 1048576.0 : m->round_s[r] * 1e3);
	}
}

/*
 * Each migration's rounds, bytes and time, and its pause stacked in its
 * parts (what the parts do not cover as "other") against the budget.
 */
static int demo_plot(const struct demo *d)
{
	struct plot *p = plot_new("memmig-bench demo");
	const struct memmig_live_report *reps[DEMO_PLOT_MAX];
	char title[160], size[32], tics[DEMO_PLOT_MAX][24];
	const char *names[DEMO_PLOT_MAX];
	int rc;

	util_size_format(d->mem, size, sizeof(size));
	snprintf(title, sizeof(title), "%s guest (%s) rewriting its RAM: each copy round, "
		 "0 the full copy", size, d->kvm ? "KVM" : "host thread");
	plot_panel(p, title, "round", "bytes copied (MiB, log scale)", PLOT_LOGY | PLOT_INTEGER_X);
	plot_rounds(p, d, true);
	plot_panel(p, "the time each round took", "round", "duration (ms, log scale)",
		   PLOT_LOGY | PLOT_INTEGER_X);
	plot_rounds(p, d, false);
	snprintf(title, sizeof(title), "the pause, vCPUs stopped, in its parts%s",
		 d->migrations > d->nruns ? " (the first migrations)" : "");
	plot_panel(p, title, "migration", "pause (ms)", PLOT_STACKED);
	for (long k = 0; k < d->nruns; k++) {
		reps[k] = &d->runs[k].m.rep;
		snprintf(tics[k], sizeof(tics[k]), "#%ld", k + 1);
		names[k] = tics[k];
	}
	bench_plot_pause(p, reps, (size_t)d->nruns, names);
	rc = plot_emit(p, &d->plot, "demo");
	plot_free(p);
	return rc;
}

static int demo_main(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct demo d = {
		.mem = 512 << 20,
		.migrations = 5,
		.file_tier = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm",
	};
	int rc = demo_parse(argc, argv, &d);

	if (!rc)
		rc = plot_check(&d.plot, "demo");
	if (rc)
		return cli_exit_code(rc);
	if (plot_wanted(&d.plot)) {
		d.runs = calloc(DEMO_PLOT_MAX, sizeof(*d.runs));
		if (!d.runs)
			return CLI_EXIT_FAIL;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (d.tiering)
		return demo_tier(ctx, &d);
	rc = demo_run(ctx, &d);
	if (d.nruns && demo_plot(&d) < 0)
		rc = CLI_EXIT_FAIL;
	free(d.runs);
	return rc;
}

const struct cli_cmd bench_cmd_demo = {
	.name = "demo",
	.summary = "live-migrate a running guest's RAM and check every page",
	.run = demo_main,
};
