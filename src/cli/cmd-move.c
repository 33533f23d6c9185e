/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli move: migrate a process's memory (all of it, or one range) to
 * a node.  Until memmigd exists the CLI runs the job itself, so it always
 * waits; --wait is accepted for the day it hands jobs to the daemon.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "shared/size.h"

#define MAX_NODE 1024

struct move_args {
	int pid;
	uint64_t addr, len;
	bool have_range;
	int node;
	int strategy;
	unsigned int workers;
	unsigned int flags;
	bool json;
};

/* What the regions' reports add up to. */
struct move_total {
	int result;
	uint64_t bytes_total, bytes_moved, pages_failed, pages_on_target;
	double seconds;
	unsigned int regions, workers;
	int strategy;
	uint64_t before[MAX_NODE], after[MAX_NODE];
	int max_node;
	int errs[64];
	uint64_t err_pages[64];
	unsigned int nerrs;
	struct json_object *failed;	/* failed ranges */
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	stop_requested = sig;
}

static const char *const strategy_names[] = { "auto", "kernel", "copy" };

static void move_usage(FILE *f)
{
	fprintf(f,
		"Usage: memmig-cli move --pid PID --to-node N [OPTIONS]\n"
		"Moves the memory of process PID to NUMA node N: every mapping, or the\n"
		"range given by --addr and --len.  Ctrl-C cancels: what moved stays\n"
		"moved, the rest stays where it was.\n\n"
		"  --pid PID          the process (required)\n"
		"  --to-node N        the target node (required)\n"
		"  --addr ADDR        start of one range (hex or decimal, page aligned)\n"
		"  --len LEN          its length (with --addr)\n"
		"  --strategy S       auto, kernel or copy (default auto: kernel for\n"
		"                     another process)\n"
		"  --workers N        worker threads (default: the usable CPUs)\n"
		"  --wait             wait for the end (always, until memmigd exists)\n"
		"  --json             machine-readable report\n"
		"Exit codes: 0 everything moved, 1 failed or some pages not moved, 2 usage.\n");
}

static int parse_strategy(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, strategy_names[i]))
			return i;
	return -1;
}

static int move_parse(int argc, char **argv, struct move_args *a)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "to-node", required_argument, NULL, 'n' },
		{ "addr", required_argument, NULL, 'a' },
		{ "len", required_argument, NULL, 'l' },
		{ "strategy", required_argument, NULL, 's' },
		{ "workers", required_argument, NULL, 'w' },
		{ "wait", no_argument, NULL, 'W' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_addr = false, have_len = false;
	size_t v;
	long n;
	int c;

	*a = (struct move_args){ .pid = -1, .node = -1 };
	while ((c = getopt_long(argc, argv, "p:n:a:l:s:w:Wjh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (cli_parse_int("--pid", optarg, 1, INT32_MAX, &n) < 0)
				return CLI_EXIT_USAGE;
			a->pid = (int)n;
			break;
		case 'n':
			if (cli_parse_int("--to-node", optarg, 0, MAX_NODE - 1, &n) < 0)
				return CLI_EXIT_USAGE;
			a->node = (int)n;
			break;
		case 'a':
		case 'l':
			if (cli_parse_size(c == 'a' ? "--addr" : "--len", optarg, &v) < 0)
				return CLI_EXIT_USAGE;
			if (c == 'a') {
				a->addr = v;
				have_addr = true;
			} else {
				a->len = v;
				have_len = true;
			}
			break;
		case 's':
			a->strategy = parse_strategy(optarg);
			if (a->strategy < 0) {
				cli_error("--strategy: auto, kernel or copy, not '%s'\n", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'w':
			if (cli_parse_int("--workers", optarg, 1, 1024, &n) < 0)
				return CLI_EXIT_USAGE;
			a->workers = (unsigned int)n;
			break;
		case 'W':
			break;
		case 'j':
			a->json = true;
			break;
		case 'h':
			move_usage(stdout);
			return -1;
		default:
			move_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc || a->pid < 0 || a->node < 0 || have_addr != have_len) {
		cli_error("move: %s\n", optind < argc ? "unexpected argument" :
			  have_addr != have_len ? "--addr and --len go together" :
			  "--pid and --to-node are required");
		move_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	a->have_range = have_addr;
	return CLI_EXIT_OK;
}

static void progress_bar(uint64_t done, uint64_t total, double rate)
{
	int width = 30, fill = total ? (int)(width * done / total) : width;

	if (!isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\r[%.*s%*s] %3d%% %7.2f GB/s", fill,
		"##############################", width - fill, "",
		total ? (int)(100 * done / total) : 100, rate / 1e9);
	fflush(stderr);
}

static void total_add_errno(struct move_total *t, int err, uint64_t pages)
{
	for (unsigned int i = 0; i < t->nerrs; i++)
		if (t->errs[i] == err) {
			t->err_pages[i] += pages;
			return;
		}
	if (t->nerrs < 64) {
		t->errs[t->nerrs] = err;
		t->err_pages[t->nerrs++] = pages;
	}
}

static void total_add(struct move_total *t, const struct memmig_report *rep)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	int max = memmig_report_max_node(rep);

	memmig_report_get_summary(rep, &s);
	t->bytes_total += s.bytes_total;
	t->bytes_moved += s.bytes_moved;
	t->pages_failed += s.pages_failed;
	t->pages_on_target += s.pages_verified_on_target;
	t->seconds += s.total_s;
	t->strategy = s.strategy;
	t->workers = s.workers > t->workers ? s.workers : t->workers;
	for (int n = 0; n <= max && n < MAX_NODE; n++) {
		uint64_t b, a;

		memmig_report_node_pages(rep, n, &b, &a);
		t->before[n] += b;
		t->after[n] += a;
		if ((b || a) && n > t->max_node)
			t->max_node = n;
	}
	for (int i = 0; i < memmig_report_errno_count(rep); i++) {
		uint64_t pages;
		int err;

		memmig_report_get_errno(rep, i, &err, &pages);
		total_add_errno(t, err, pages);
	}
	for (int i = 0; i < memmig_report_failed_count(rep); i++) {
		struct json_object *o = json_object_new_object();
		uint64_t addr, len;
		char hex[32];
		int err;

		memmig_report_get_failed(rep, i, &addr, &len, &err);
		snprintf(hex, sizeof(hex), "%#llx", (unsigned long long)addr);
		json_object_object_add(o, "addr", json_object_new_string(hex));
		json_object_object_add(o, "len", json_object_new_int64((int64_t)len));
		json_object_object_add(o, "errno", json_object_new_string(strerrorname_np(err)));
		json_object_array_add(t->failed, o);
	}
}

/* Runs one region's job to its end, cancelling it on SIGINT/SIGTERM. */
static int move_region(struct memmig_region *r, const struct move_args *a,
		       struct move_total *t, uint64_t done_before, uint64_t all)
{
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = a->node, .strategy = a->strategy,
		.workers = a->workers, .flags = a->flags,
	};
	struct memmig_progress p = { .sz = sizeof(p) };
	struct memmig_report *rep = NULL;
	struct memmig_job *job;
	int rc = memmig_job_start(r, &o, &job);

	if (rc < 0)
		return rc;
	for (;;) {
		memmig_job_get_progress(job, &p);
		if (stop_requested)
			memmig_job_cancel(job);
		progress_bar(done_before + p.bytes_done, all, p.rate);
		if (p.state == MEMMIG_JOB_DONE)
			break;
		usleep(100 * 1000);
	}
	rc = memmig_job_wait(job, &rep);
	if (rep)
		total_add(t, rep);
	memmig_report_unref(rep);
	memmig_job_unref(job);
	return rc;
}

/* Automatic NUMA balancing moves pages back toward the CPUs that touch
 * them, and its pending hint faults make pages unmovable for a moment. */
static bool numa_balancing_on(void)
{
	FILE *f = fopen("/proc/sys/kernel/numa_balancing", "re");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v != 0;
}

static void print_text(const struct move_args *a, const struct move_total *t)
{
	char b1[32], b2[32];

	if (isatty(STDERR_FILENO))
		fputs("\r\033[K", stderr);
	printf("pid %d: moved %s of %s to node %d in %.3f s (%.2f GB/s), strategy %s, "
	       "%u worker%s, %u region%s\n", a->pid,
	       memmig_size_format(t->bytes_moved, b1, sizeof(b1)),
	       memmig_size_format(t->bytes_total, b2, sizeof(b2)), a->node, t->seconds,
	       t->seconds > 0 ? t->bytes_moved / t->seconds / 1e9 : 0,
	       strategy_names[t->strategy], t->workers, t->workers == 1 ? "" : "s",
	       t->regions, t->regions == 1 ? "" : "s");
	printf("%-10s %12s %12s\n", "4K pages", "before", "after");
	for (int n = 0; n <= t->max_node; n++)
		if (t->before[n] || t->after[n])
			printf("node %-5d %12llu %12llu\n", n,
			       (unsigned long long)t->before[n],
			       (unsigned long long)t->after[n]);
	for (unsigned int i = 0; i < t->nerrs; i++)
		printf("not moved: %llu pages %s (%s)\n", (unsigned long long)t->err_pages[i],
		       strerrorname_np(t->errs[i]),
		       t->errs[i] == ENOENT ? "not present: nothing to move" :
					      strerror(t->errs[i]));
	if (t->result)
		printf("result: %s\n", strerror(-t->result));
	if (numa_balancing_on())
		printf("note: kernel.numa_balancing is on: the kernel may move these pages "
		       "back toward the CPUs that use them\n");
}

static void print_json(const struct move_args *a, struct move_total *t)
{
	struct json_object *o = json_object_new_object(), *nodes = json_object_new_array();
	struct json_object *errs = json_object_new_object();

	json_object_object_add(o, "pid", json_object_new_int(a->pid));
	json_object_object_add(o, "target_node", json_object_new_int(a->node));
	json_object_object_add(o, "strategy", json_object_new_string(strategy_names[t->strategy]));
	json_object_object_add(o, "result", json_object_new_int(t->result));
	json_object_object_add(o, "regions", json_object_new_int((int)t->regions));
	json_object_object_add(o, "workers", json_object_new_int((int)t->workers));
	json_object_object_add(o, "bytes_total", json_object_new_int64((int64_t)t->bytes_total));
	json_object_object_add(o, "bytes_moved", json_object_new_int64((int64_t)t->bytes_moved));
	json_object_object_add(o, "pages_failed", json_object_new_int64((int64_t)t->pages_failed));
	json_object_object_add(o, "pages_on_target", json_object_new_int64((int64_t)t->pages_on_target));
	json_object_object_add(o, "seconds", json_object_new_double(t->seconds));
	for (int n = 0; n <= t->max_node; n++) {
		struct json_object *row;

		if (!t->before[n] && !t->after[n])
			continue;
		row = json_object_new_object();
		json_object_object_add(row, "node", json_object_new_int(n));
		json_object_object_add(row, "pages_before", json_object_new_int64((int64_t)t->before[n]));
		json_object_object_add(row, "pages_after", json_object_new_int64((int64_t)t->after[n]));
		json_object_array_add(nodes, row);
	}
	json_object_object_add(o, "nodes", nodes);
	for (unsigned int i = 0; i < t->nerrs; i++)
		json_object_object_add(errs, strerrorname_np(t->errs[i]),
				       json_object_new_int64((int64_t)t->err_pages[i]));
	json_object_object_add(o, "errno_pages", errs);
	json_object_object_add(o, "failed_ranges", json_object_get(t->failed));
	cli_json_print(o);
}

static int move_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct move_args a;
	struct move_total t = { .max_node = -1 };
	struct memmig_region **list = NULL;
	unsigned int n = 0;
	uint64_t all = 0, done = 0;
	struct sigaction sa = { .sa_handler = on_stop };
	int rc = move_parse(argc, argv, &a);

	if (rc)
		return rc < 0 ? CLI_EXIT_OK : rc;
	if (a.have_range) {
		struct memmig_region_desc d = {
			.sz = sizeof(d), .pid = a.pid, .addr = a.addr, .len = a.len,
		};

		list = calloc(1, sizeof(*list));
		rc = list ? memmig_region_new(ctx, &d, &list[0]) : -ENOMEM;
		n = rc ? 0 : 1;
	} else {
		rc = memmig_region_list_pid(ctx, a.pid, &list, &n);
	}
	if (rc < 0) {
		cli_error("move: pid %d: %s\n", a.pid, strerror(-rc));
		free(list);
		return CLI_EXIT_FAIL;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	t.failed = json_object_new_array();
	for (unsigned int i = 0; i < n; i++) {
		struct memmig_region_desc d = { .sz = sizeof(d) };

		memmig_region_get_desc(list[i], &d);
		all += d.len;
	}
	for (unsigned int i = 0; i < n && !t.result; i++) {
		struct memmig_region_desc d = { .sz = sizeof(d) };

		memmig_region_get_desc(list[i], &d);
		rc = move_region(list[i], &a, &t, done, all);
		done += d.len;
		t.regions++;
		/* A mapping that went away meanwhile is not an error of ours. */
		if (rc < 0 && rc != -EFAULT)
			t.result = rc;
	}
	memmig_region_list_free(list, n);
	if (a.json)
		print_json(&a, &t);
	else
		print_text(&a, &t);
	json_object_put(t.failed);
	if (t.result) {
		cli_error("move: %s\n", t.result == -ECANCELED ? "cancelled: what moved "
			  "stays moved, the rest is where it was" : strerror(-t.result));
		return CLI_EXIT_FAIL;
	}
	if (t.pages_failed) {
		cli_error("move: %llu pages could not be moved (see the errors above)\n",
			  (unsigned long long)t.pages_failed);
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

const struct cli_cmd cli_cmd_move = {
	.name = "move",
	.summary = "move a process's memory to a NUMA node",
	.run = move_run,
};
