/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-bench live: memmig's live migration of a running guest's RAM
 * (minivmm: a KVM guest, or a host thread) at several sizes, with the guest
 * idle and writing all of its RAM at full speed, beside QEMU's own local
 * live migration of a guest of the same size and behaviour
 * (bench-live-qemu.c), in the same run.  Every memmig migration is checked:
 * the writing guest page by page, the idle one by a checksum.  With --busy,
 * the writing guest once more with a CPU-bound process on every CPU: a
 * pause must not grow much when the host is loaded.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench-live.h"
#include "bench/bench.h"
#include "minivmm/embed.h"
#include "util/size.h"

#define MAX_REPS 31
#define DEFAULT_QEMU_TIMEOUT_S 30

struct live_bench {
	struct memmig_ctx *ctx;
	size_t *sizes, nsizes;
	long reps, budget_ms, qemu_timeout_s;
	int dirty, node;
	bool no_kvm, no_qemu, busy, json, stream;
	struct plot_out plot;
};

/* How the guest behaves while it moves. */
enum guest_mode { GUEST_IDLE, GUEST_WRITING, GUEST_BUSY, GUEST_MODES };
static const char *const mode_names[GUEST_MODES] = { "idle", "writing", "busy" };

/* Medians over the repetitions of one case. */
struct live_case {
	size_t mem;
	int mode;			/* enum guest_mode */
	bool kvm;			/* memmig's guest */
	int method;			/* its tracking */
	double raw_s;			/* one raw copy, under the case's load */
	double raw_stall_s;		/* the guest's longest stall beside it */
	double total_s, pause_s, stop_s, rounds;	/* stop: the VMM's pause() */
	double pauses, pause_total_s, piece_bytes;	/* pause_s: the longest */
	double stall_s;			/* the guest's longest stall; not idle */
	double stall_pause_s;		/* the longest that held a pause */
	const char *stall_source;	/* minivmm_stats' */
	unsigned int converged, verified, ran;
	bool qemu_ran;
	double q_total_s, q_downtime_s, q_rounds, q_limit_s;
	unsigned int q_converged;
	struct memmig_live_report last;	/* memmig's last run, for --plot */
};

static void live_usage(FILE *f)
{
	fprintf(f,
		"Usage: memmig-bench live [--sizes LIST] [--reps N] [--budget-ms MS]\n"
		"                         [--dirty METHOD] [--to-node N] [--no-kvm]\n"
		"                         [--no-qemu] [--qemu-timeout S] [--busy] [--stream]\n"
		"                         [--json]\n"
		"                         [--plot FILE] [--plot-data FILE]\n"
		"Live-migrates a running guest's RAM (minivmm: KVM where it can, else a\n"
		"host thread) of each size (default 256M,1G) N times (default 3), idle and\n"
		"writing all of its RAM, to node N (default 0), and runs QEMU's own local\n"
		"live migration of a guest of the same size, idle and writing, beside it\n"
		"(qemu-system-x86_64, KVM where memmig's guest is, else TCG; QEMU's\n"
		"defaults but unlimited bandwidth; cancelled after S seconds, default 30).\n"
		"Medians: total time, against one raw copy, rounds, and the pause (QEMU's\n"
		"downtime).  memmig's pause budget is MS (default 5).  --busy: the writing\n"
		"guest again with a CPU-bound process on every CPU (\"busy\").  --stream:\n"
		"memmig copies and switches over each piece in its turn, with no pre-copy\n"
		"of the whole RAM (MEMMIG_LIVE_STREAM).\n"
		"--plot: the pause against the budget and QEMU's downtime, the total\n"
		"time against a raw copy, and the last pause of each case in its parts.\n"
		PLOT_USAGE);
}

static int live_parse(int argc, char **argv, struct live_bench *b)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "reps", required_argument, NULL, 'r' },
		{ "budget-ms", required_argument, NULL, 'b' },
		{ "dirty", required_argument, NULL, 'd' },
		{ "to-node", required_argument, NULL, 'n' },
		{ "no-kvm", no_argument, NULL, 'K' },
		{ "no-qemu", no_argument, NULL, 'Q' },
		{ "qemu-timeout", required_argument, NULL, 't' },
		{ "busy", no_argument, NULL, 'B' },
		{ "stream", no_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		PLOT_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	long node = 0;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			free(b->sizes);
			if (cli_parse_size_list("--sizes", optarg, &b->sizes, &b->nsizes))
				return CLI_EXIT_USAGE;
			for (size_t i = 0; i < b->nsizes; i++) {
				if (b->sizes[i] < (8 << 20) || b->sizes[i] > MINIVMM_MEM_MAX ||
				    b->sizes[i] % (1 << 20)) {
					cli_opt_error("--sizes", "8M to 64G, in MiB\n");
					return CLI_EXIT_USAGE;
				}
			}
			break;
		case 'r':
			if (cli_parse_int("--reps", optarg, 1, MAX_REPS, &b->reps))
				return CLI_EXIT_USAGE;
			break;
		case 'b':
			if (cli_parse_int("--budget-ms", optarg, 1, 10000, &b->budget_ms))
				return CLI_EXIT_USAGE;
			break;
		case 'd':
			if (cli_parse_dirty("--dirty", optarg, &b->dirty))
				return CLI_EXIT_USAGE;
			break;
		case 'n':
			if (cli_parse_int("--to-node", optarg, 0, 4095, &node))
				return CLI_EXIT_USAGE;
			b->node = (int)node;
			break;
		case 'K':
			b->no_kvm = true;
			break;
		case 'Q':
			b->no_qemu = true;
			break;
		case 't':
			if (cli_parse_int("--qemu-timeout", optarg, 1, 3600, &b->qemu_timeout_s))
				return CLI_EXIT_USAGE;
			break;
		case 'B':
			b->busy = true;
			break;
		case 'S':
			b->stream = true;
			break;
		case 'j':
			b->json = true;
			break;
		case 'h':
			live_usage(stdout);
			return CLI_HELP_SHOWN;
		case PLOT_OPT_FILE:
		case PLOT_OPT_DATA:
			plot_opt(&b->plot, c, optarg);
			break;
		default:
			live_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		live_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

/* The idle guest: paused through the whole migration; its RAM must read
 * the same after it. */
static int migrate_idle(struct memmig_vm *vm, struct minivmm *vmm,
			const struct memmig_live_opts *o, struct memmig_live_report *r,
			bool *verified)
{
	struct minivmm_slot s;
	uint64_t before;
	int rc;

	minivmm_pause(vmm);
	minivmm_get_slot(vmm, &s);
	before = bench_checksum(s.hva, s.size);
	rc = memmig_vm_migrate(vm, o, r);
	minivmm_get_slot(vmm, &s);
	*verified = !rc && bench_checksum(s.hva, s.size) == before;
	minivmm_resume(vmm);
	return rc;
}

static int run_memmig(struct live_bench *b, struct minivmm *vmm, struct memmig_vm *vm,
		      struct live_case *c)
{
	struct memmig_live_opts o = {
		.sz = sizeof(o),
		.target_node = b->node,
		.pause_budget_ns = (uint64_t)b->budget_ms * 1000000,
		.dirty_method = b->dirty,
		.flags = b->stream ? MEMMIG_LIVE_STREAM : 0,
	};
	/* Each run's figures, in the order of their medians in med[]. */
	double *const med[] = { &c->total_s, &c->pause_s, &c->stop_s, &c->rounds,
				&c->pauses, &c->pause_total_s, &c->piece_bytes, &c->stall_s,
				&c->stall_pause_s };
	enum { NMED = sizeof(med) / sizeof(med[0]) };
	double v[NMED][MAX_REPS];
	int rc = 0;

	for (long i = 0; i < b->reps && !rc; i++) {
		struct minivmm_migration m = { 0 };	/* idle: no stall of its own */
		bool ok = false;

		bench_progress("live: memmig, %zu MiB, %s, %ld/%ld", c->mem >> 20,
			       mode_names[c->mode], i + 1, b->reps);
		if (c->mode != GUEST_IDLE) {
			rc = minivmm_migrate(vm, vmm, &o, &m);
			ok = !rc && minivmm_migration_ok(&m);
		} else {
			m.rep.sz = sizeof(m.rep);
			rc = migrate_idle(vm, vmm, &o, &m.rep, &ok);
		}
		if (rc < 0) {
			cli_error("live: migration of %zu MiB: %s\n", c->mem >> 20,
				  strerror(-rc));
			break;
		}
		const double got[NMED] = {
			m.rep.total_s, m.rep.pause_s, m.rep.pause_stop_s, m.rep.rounds,
			m.rep.pauses, m.rep.pause_total_s, (double)m.rep.piece_bytes,
			m.stall_max_s, m.stall_pause_s,
		};
		for (unsigned int k = 0; k < NMED; k++)
			v[k][c->ran] = got[k];
		c->last = m.rep;
		c->ran++;
		c->converged += m.rep.converged;
		c->verified += ok;
		c->method = m.rep.dirty_method;
		c->stall_source = m.stall_source;
	}
	for (unsigned int k = 0; k < NMED && c->ran; k++)
		*med[k] = bench_median(v[k], c->ran);
	if (c->ran)
		bench_note("live: memmig, %zu MiB, %s: %u of %u verified, median pause %.3f ms, "
			   "total %.1f ms", c->mem >> 20, mode_names[c->mode], c->verified,
			   c->ran, c->pause_s * 1e3, c->total_s * 1e3);
	return rc;
}

static int run_qemu(struct live_bench *b, struct live_case *c)
{
	struct qemu_peer p = {
		.mem = c->mem, .writing = c->mode != GUEST_IDLE, .kvm = c->kvm,
		.timeout_s = (double)b->qemu_timeout_s,
	};
	double total[MAX_REPS], down[MAX_REPS], rounds[MAX_REPS];
	unsigned int n = 0;
	int rc = 0;

	for (long i = 0; i < b->reps && !rc; i++) {
		struct qemu_result r;

		bench_progress("live: QEMU, %zu MiB, %s, %ld/%ld", c->mem >> 20,
			       mode_names[c->mode], i + 1, b->reps);
		rc = bench_qemu_migrate(&p, &r);
		if (rc < 0)
			break;
		total[n] = r.total_s;
		down[n] = r.converged ? r.downtime_s : 0;
		rounds[n++] = (double)r.rounds;
		c->q_converged += r.converged;
		c->q_limit_s = r.downtime_limit_s;
	}
	c->qemu_ran = n > 0;
	if (n) {
		c->q_total_s = bench_median(total, n);
		c->q_downtime_s = bench_median(down, n);
		c->q_rounds = bench_median(rounds, n);
		bench_note("live: QEMU, %zu MiB, %s: %u of %u converged, median downtime "
			   "%.3f ms, total %.1f ms", c->mem >> 20, mode_names[c->mode],
			   c->q_converged, n, c->q_downtime_s * 1e3, c->q_total_s * 1e3);
	}
	return rc;
}

/* A CPU-bound process on every CPU (as the competitor); their pids in
 * pids[], which holds ncpu entries. */
static void busy_start(pid_t *pids, long n)
{
	for (long i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			/* Gone with memmig-cli, whatever ends it. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (volatile unsigned long x = 0;; x++)
				;
		}
	}
}

static void busy_stop(pid_t *pids, long n)
{
	for (long i = 0; i < n; i++) {
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
		pids[i] = 0;
	}
}

/* memmig's cases of one size on one guest, then QEMU's. */
static int run_size(struct live_bench *b, size_t mem, struct live_case *cs)
{
	long nb = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
	int modes = b->busy ? GUEST_MODES : GUEST_BUSY;
	struct minivmm *vmm = NULL;
	struct memmig_vm *vm = NULL;
	pid_t *busy = calloc(nb, sizeof(*busy));
	const char *why;
	int rc = busy ? minivmm_up_any(b->ctx, mem, MINIVMM_GUEST_MEMCHECK, b->dirty, b->no_kvm,
				       &vmm, &vm, &why) :
			-ENOMEM;

	if (rc < 0)
		cli_error("live: cannot start a guest of %zu MiB: %s\n", mem >> 20,
			  strerror(-rc));
	for (int w = 0; w < modes && !rc; w++) {
		cs[w] = (struct live_case){ .mem = mem, .mode = w, .kvm = !why };
		/* The raw copy under the same load as the migration: it is the
		 * measure of both the total and the guest's stall. */
		if (w == GUEST_BUSY)
			busy_start(busy, nb);
		cs[w].raw_s = bench_raw_copy_s(b->ctx, mem, w == GUEST_IDLE ? NULL : vmm,
					       &cs[w].raw_stall_s);
		rc = run_memmig(b, vmm, vm, &cs[w]);
		if (w == GUEST_BUSY)
			busy_stop(busy, nb);
	}
	memmig_vm_unref(vm);
	if (vmm)
		minivmm_destroy(vmm);
	/* A failed peer is said, not fatal. */
	for (int w = 0; w < modes && !rc && !b->no_qemu; w++) {
		if (w == GUEST_BUSY)
			busy_start(busy, nb);
		run_qemu(b, &cs[w]);
		if (w == GUEST_BUSY)
			busy_stop(busy, nb);
	}
	free(busy);
	return rc;
}

static double busy_ratio(double busy, double quiet)
{
	return quiet > 0 ? busy / quiet : 0;
}

/* The guest's stall in ms, "-" for the idle guest, paused throughout. */
static const char *stall_text(const struct live_case *c, char *buf, size_t len)
{
	if (c->mode == GUEST_IDLE)
		return "-";
	snprintf(buf, len, "%.3f", c->stall_s * 1e3);
	return buf;
}

/* A ratio in at most 4 characters, so that QEMU's row keeps within 100
 * columns whatever the ratios: "6.3", "172", "1.1k", "43k" (with
 * "%.1fx, %.0fx", "6.3x, 172x" took it to 100, and a TCG QEMU's total
 * against memmig's is often over 10). */
static const char *ratio_text(double x, char *buf, size_t len)
{
	if (x < 9.95)
		snprintf(buf, len, "%.1f", x);
	else if (x < 999.5)
		snprintf(buf, len, "%.0f", x);
	else if (x < 9950)
		snprintf(buf, len, "%.1fk", x / 1e3);
	else if (x < 999500)
		snprintf(buf, len, "%.0fk", x / 1e3);
	else
		snprintf(buf, len, "%.0fM", x / 1e6);
	return buf;
}

static void print_text(const struct live_bench *b, const struct live_case *cs, size_t n)
{
	printf("memmig bench live: median of %ld, pause budget %ld ms%s; memmig's guest: %s;\n"
	       "QEMU: %s, downtime-limit %.0f ms (its default), unlimited bandwidth\n\n",
	       b->reps, b->budget_ms, b->stream ? ", streamed" : "", cs[0].kvm ? "KVM (minivmm)" : "a host thread",
	       b->no_qemu ? "not run" : cs[0].kvm ? "KVM" : "TCG", cs[0].q_limit_s * 1e3);
	printf("%-6s %-7s %-6s %8s %6s %6s %7s %6s %7s %5s %7s %5s %s\n", "size",
	       "guest", "who", "total", "/raw", "rounds", "pause", "pauses", "sum",
	       "piece", "stall", "conv", "check");
	for (size_t i = 0; i < n; i++) {
		const struct live_case *c = &cs[i];
		char size[32], stall[32], r_total[16], r_pause[16];

		util_size_format(c->mem, size, sizeof(size));
		printf("%-6s %-7s %-6s %8.1f %5.1fx %6.0f %7.3f %6.0f %7.3f %5.0f %7s %2u/%-2ld "
		       "%u/%u %s\n", size, mode_names[c->mode], "memmig",
		       c->total_s * 1e3, c->raw_s > 0 ? c->total_s / c->raw_s : 0, c->rounds,
		       c->pause_s * 1e3, c->pauses, c->pause_total_s * 1e3, c->piece_bytes / 1048576,
		       stall_text(c, stall, sizeof(stall)), c->converged, b->reps,
		       c->verified, c->ran, c->verified == c->ran ? "ok" : "FAILED");
		/* QEMU's downtime is one pause, of everything; its guest does
		 * not time its stalls. */
		if (c->qemu_ran)
			printf("%-6s %-7s %-6s %8.1f %5.1fx %6.0f %7.3f %6d %7.3f %5.0f %7s "
			       "%2u/%-2ld %sx, %sx\n", "", "", "QEMU",
			       c->q_total_s * 1e3, c->raw_s > 0 ? c->q_total_s / c->raw_s : 0,
			       c->q_rounds, c->q_downtime_s * 1e3, 1, c->q_downtime_s * 1e3,
			       c->mem / 1048576.0, "-", c->q_converged, b->reps,
			       ratio_text(c->total_s > 0 ? c->q_total_s / c->total_s : 0,
					  r_total, sizeof(r_total)),
			       ratio_text(c->pause_s > 0 ? c->q_downtime_s / c->pause_s : 0,
					  r_pause, sizeof(r_pause)));
		if (c->mode != GUEST_IDLE)
			printf("%-6s the guest's stall beside a raw copy, no migration: %.3f\n", "",
			       c->raw_stall_s * 1e3);
		if (c->mode != GUEST_BUSY || i == 0)
			continue;
		printf("%-6s busy over writing: memmig's pause %.2fx, the guest's stall %.2fx",
		       "", busy_ratio(c->pause_s, c[-1].pause_s),
		       busy_ratio(c->stall_s, c[-1].stall_s));
		if (c->qemu_ran)
			printf(", QEMU's downtime %.2fx",
			       busy_ratio(c->q_downtime_s, c[-1].q_downtime_s));
		printf("\n%-6s (of memmig's pause, the VMM's pause() %.3f ms, was %.3f)\n", "",
		       c->stop_s * 1e3, c[-1].stop_s * 1e3);
	}
	printf("\ntimes in ms; pause: the longest pause; pauses: how many, sum: their sum;\n"
	       "piece: the most memory (MiB) switched over under one pause.\n"
	       "stall: the guest's longest stall, by its own clock: from one write to\n"
	       "the next (a host thread), one page to the next (a KVM guest, by its TSC):\n"
	       "memmig's pauses, exits, faults, the scheduler.  Beside a raw copy: the\n"
	       "same guest while one plain copy of its size runs, under the same load.\n"
	       "conv: migrations that converged (memmig: within the pause budget;\n"
	       "QEMU: completed before the timeout; a pause of one that did not is 0).\n"
	       "check: memmig's migrations whose every page was verified; on QEMU's\n"
	       "row, QEMU's total and pause over memmig's.  Writes tracked with %s.\n",
	       memmig_dirty_method_name(cs[0].method));
	if (b->busy)
		printf("busy: the writing guest with a CPU-bound process on every CPU.\n");
}

static struct json_object *case_json(const struct live_case *c)
{
	struct json_object *o = json_object_new_object(), *m = json_object_new_object();

	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)c->mem));
	json_object_object_add(o, "guest", json_object_new_string(mode_names[c->mode]));
	json_object_object_add(o, "raw_copy_s", json_object_new_double(c->raw_s));
	json_object_object_add(o, "raw_copy_stall_s", c->mode == GUEST_IDLE ? NULL :
			       json_object_new_double(c->raw_stall_s));
	json_object_object_add(m, "guest", json_object_new_string(c->kvm ? "kvm" : "thread"));
	json_object_object_add(m, "dirty_method",
			       json_object_new_string(memmig_dirty_method_name(c->method)));
	json_object_object_add(m, "elapsed_s", json_object_new_double(c->total_s));
	json_object_object_add(m, "pause_s", json_object_new_double(c->pause_s));
	json_object_object_add(m, "pause_stop_s", json_object_new_double(c->stop_s));
	json_object_object_add(m, "pauses", json_object_new_double(c->pauses));
	json_object_object_add(m, "pause_total_s", json_object_new_double(c->pause_total_s));
	json_object_object_add(m, "piece_bytes", json_object_new_int64((int64_t)c->piece_bytes));
	json_object_object_add(m, "stall_s", c->mode == GUEST_IDLE ? NULL :
			       json_object_new_double(c->stall_s));
	json_object_object_add(m, "stall_pause_s", c->mode == GUEST_IDLE ? NULL :
			       json_object_new_double(c->stall_pause_s));
	json_object_object_add(m, "stall_source", c->mode == GUEST_IDLE ? NULL :
			       json_object_new_string(c->stall_source));
	json_object_object_add(m, "rounds", json_object_new_double(c->rounds));
	json_object_object_add(m, "converged", json_object_new_int((int)c->converged));
	json_object_object_add(m, "verified", json_object_new_int((int)c->verified));
	json_object_object_add(m, "runs", json_object_new_int((int)c->ran));
	if (c->mode == GUEST_BUSY) {
		json_object_object_add(m, "pause_vs_writing",
				       json_object_new_double(busy_ratio(c->pause_s, c[-1].pause_s)));
		json_object_object_add(m, "stall_vs_writing",
				       json_object_new_double(busy_ratio(c->stall_s, c[-1].stall_s)));
	}
	json_object_object_add(o, "memmig", m);
	if (c->qemu_ran) {
		struct json_object *q = json_object_new_object();

		json_object_object_add(q, "accel", json_object_new_string(c->kvm ? "kvm" : "tcg"));
		json_object_object_add(q, "elapsed_s", json_object_new_double(c->q_total_s));
		json_object_object_add(q, "downtime_s",
				       json_object_new_double(c->q_downtime_s));
		json_object_object_add(q, "downtime_limit_s",
				       json_object_new_double(c->q_limit_s));
		json_object_object_add(q, "rounds", json_object_new_double(c->q_rounds));
		json_object_object_add(q, "converged", json_object_new_int((int)c->q_converged));
		if (c->mode == GUEST_BUSY)
			json_object_object_add(q, "downtime_vs_writing",
					       json_object_new_double(busy_ratio(c->q_downtime_s,
										 c[-1].q_downtime_s)));
		json_object_object_add(o, "qemu", q);
	}
	return o;
}

/* The cases a picture names on its x axis, at most this many. */
#define LIVE_PLOT_MAX 24

/*
 * Per case (size and guest): the pause's median against the budget and
 * QEMU's downtime, the total against one raw copy and QEMU's, and the last
 * pause in its parts.
 */
static int live_plot(const struct live_bench *b, const struct live_case *cs, size_t n)
{
	const struct memmig_live_report *last[LIVE_PLOT_MAX];
	char tics[LIVE_PLOT_MAX][48], size[32], budget[48];
	const char *names[LIVE_PLOT_MAX];
	struct plot *p = plot_new("memmig bench live");
	int rc;

	n = n < LIVE_PLOT_MAX ? n : LIVE_PLOT_MAX;
	for (size_t i = 0; i < n; i++) {
		snprintf(tics[i], sizeof(tics[i]), "%s %s",
			 util_size_format(cs[i].mem, size, sizeof(size)), mode_names[cs[i].mode]);
		names[i] = tics[i];
		last[i] = &cs[i].last;
	}
	for (int panel = 0; panel < 2; panel++) {
		plot_panel(p, panel ? "the whole migration (median)" :
			   "the pause, vCPUs stopped (median; QEMU: its downtime)", "guest",
			   panel ? "total (ms, log scale)" : "pause (ms, log scale)", PLOT_LOGY);
		for (size_t i = 0; i < n; i++)
			plot_xtic(p, (double)(i + 1), names[i]);
		plot_series(p, panel ? "memmig" : "memmig pause", PLOT_MAIN);
		for (size_t i = 0; i < n; i++)
			plot_point(p, (double)(i + 1), (panel ? cs[i].total_s : cs[i].pause_s) * 1e3);
		plot_series(p, panel ? "QEMU" : "QEMU downtime", PLOT_PEER);
		for (size_t i = 0; i < n; i++)
			if (cs[i].qemu_ran)	/* 0 where it did not converge: left out */
				plot_point(p, (double)(i + 1),
					   (panel ? cs[i].q_total_s : cs[i].q_downtime_s) * 1e3);
		if (panel) {
			plot_series(p, "one raw copy", PLOT_THIN);
			for (size_t i = 0; i < n; i++)
				plot_point(p, (double)(i + 1), cs[i].raw_s * 1e3);
		} else {
			snprintf(budget, sizeof(budget), "budget %ld ms", b->budget_ms);
			plot_hline(p, (double)b->budget_ms, budget);
		}
	}
	plot_panel(p, "the last pause of each, in its parts", "guest", "pause (ms)",
		   PLOT_STACKED);
	bench_plot_pause(p, last, n, names);
	rc = plot_emit(p, &b->plot, "live");
	plot_free(p);
	return rc;
}

static int live_main(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct live_bench b = {
		.ctx = ctx, .reps = 3, .budget_ms = 5,
		.qemu_timeout_s = DEFAULT_QEMU_TIMEOUT_S,
	};
	struct live_case *cs = NULL;
	size_t n = 0;
	int rc = live_parse(argc, argv, &b), failed = 0;

	if (!rc)
		rc = plot_check(&b.plot, "live");
	if (rc) {
		rc = cli_exit_code(rc);
		goto out;
	}
	if (!b.sizes) {
		b.nsizes = 2;
		b.sizes = calloc(2, sizeof(*b.sizes));
		if (!b.sizes)
			return CLI_EXIT_FAIL;
		b.sizes[0] = 256 << 20;
		b.sizes[1] = 1 << 30;
	}
	if (!b.no_qemu && !bench_qemu_available()) {
		cli_error("live: qemu-system-x86_64 is not on the PATH: no peer "
			  "(apt-get install qemu-system-x86, or --no-qemu)\n");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	cs = calloc(GUEST_MODES * b.nsizes, sizeof(*cs));
	if (!cs) {
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	/* A size that failed is said and left out. */
	for (size_t i = 0; i < b.nsizes && !rc; i++) {
		rc = run_size(&b, b.sizes[i], &cs[n]);
		if (!rc)
			n += b.busy ? GUEST_MODES : GUEST_BUSY;
	}
	bench_progress_done();
	for (size_t i = 0; i < n; i++)
		failed += cs[i].verified < cs[i].ran;
	if (b.json) {
		struct json_object *o = json_object_new_object(), *a = json_object_new_array();

		json_object_object_add(o, "budget_s", json_object_new_double(b.budget_ms / 1e3));
		json_object_object_add(o, "reps", json_object_new_int((int)b.reps));
		json_object_object_add(o, "stream", json_object_new_boolean(b.stream));
		for (size_t i = 0; i < n; i++)
			json_object_array_add(a, case_json(&cs[i]));
		json_object_object_add(o, "cases", a);
		cli_json_print(o);
	} else if (n) {
		print_text(&b, cs, n);
	}
	if (n && plot_wanted(&b.plot) && live_plot(&b, cs, n) < 0)
		failed++;
	rc = rc || failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
	free(cs);
	free(b.sizes);
	return rc;
}

const struct cli_cmd bench_cmd_live = {
	.name = "live",
	.summary = "live migration of a running guest, beside QEMU's own",
	.run = live_main,
};
