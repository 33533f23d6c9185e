/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli move: migrate a process's memory (all of it, or some ranges)
 * to a node.  Through memmigd when it runs (a job: --wait follows it to
 * the end), else in-process, where the CLI itself is the job and always
 * waits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "proto/job-json.h"
#include "proto/report-json.h"
#include "util/cpuset.h"

struct move_args {
	struct memmig_move_opts req;
	struct memmig_range ranges[PROTO_MAX_RANGES];
	struct cli_move_map map;	/* --from, --to-node */
	const char *from_arg;
	const char *domain;
	bool wait, json, dry_run;
	time_t created;			/* in-process: when the move was asked */
	/* --json of a mapping's moves: their jobs, printed as one array. */
	struct json_object *jobs;
	bool update_cpuset;
	struct cli_cpuset_move *cs;	/* --update-cpuset: widened, not yet narrowed */
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	stop_requested = sig;
}

static void move_usage(FILE *f)
{
	fprintf(f,
		"Usage: memmig-cli move (--pid PID | --domain NAME) --to-node NODES [OPTIONS]\n"
		"Moves the memory of a process, or of a libvirt domain's QEMU, to a NUMA\n"
		"node (or, like migratepages, nodes to nodes): every mapping, or the\n"
		"ranges given.  Through memmigd when it runs, else in-process.  Ctrl-C\n"
		"cancels (with --wait): what moved stays moved, the rest stays where it\n"
		"was; a second Ctrl-C leaves at once.\n\n"
		"  -p, --pid PID          the process\n"
		"  -d, --domain NAME      a libvirt domain known to memmigd\n"
		"  -n, --to-node NODES    the target node (required); several, with as\n"
		"                         many --from nodes, map in order like\n"
		"                         migratepages: --from 0,1 --to-node 2,3 moves\n"
		"                         node 0's pages to 2 and node 1's to 3\n"
		"  -f, --from NODES       only pages on these nodes (like migratepages:\n"
		"                         0-2,4, all, !1; each named node must have\n"
		"                         memory); the others are left alone\n"
		"  -r, --range A-B        one range [A, B), page-aligned addresses (hex\n"
		"                         or decimal); repeat for more (up to %d)\n"
		"  -a, --addr A -l, --len L  one range, as a start and a length\n"
		"  -s, --strategy S       auto, kernel or copy (default auto: kernel for\n"
		"                         another process; memmigd refuses copy)\n"
		"  -t, --threads T        worker threads (default: the usable CPUs)\n"
		"  -w, --wait             with memmigd: follow the job to its end (a\n"
		"                         progress bar on a terminal); in-process it\n"
		"                         always waits\n"
		"  -j, --json             machine-readable output\n"
		"  -D, --dry-run          what would move, per source node and mapping\n"
		"                         kind; nothing moves (read in-process, always)\n"
		"      --update-cpuset    with --pid: widen the process's cgroup\n"
		"                         cpuset.mems to take node N, move, then narrow\n"
		"                         it to N (a failed move restores it); implies\n"
		"                         --wait\n"
		"Exit codes: 0 everything moved (or job queued), 1 failed or some pages\n"
		"not moved, 2 usage, 3 memmigd unreachable at --socket.\n",
		PROTO_MAX_RANGES);
}

static int add_range(struct move_args *a, uint64_t addr, uint64_t len)
{
	if (a->req.nranges == PROTO_MAX_RANGES) {
		cli_error("move: at most %d ranges\n", PROTO_MAX_RANGES);
		return -EINVAL;
	}
	a->ranges[a->req.nranges++] = (struct memmig_range){ addr, len };
	return 0;
}

/* Ranges are whole pages, as move_pages(2) and memmigd take them: one
 * reason for an unaligned one, whichever path would have run it. */
static int page_check(const char *opt, const char *text, size_t v)
{
	if (!(v % (size_t)sysconf(_SC_PAGESIZE)))
		return 0;
	cli_opt_error(opt, "%s is not page-aligned\n", text);
	return -EINVAL;
}

/* "0x7f0000000000-0x7f0000200000": [A, B). */
static int parse_range(struct move_args *a, const char *arg)
{
	const char *dash = strchr(arg, '-');
	size_t from, to;
	char first[64];

	if (!dash || (size_t)(dash - arg) >= sizeof(first))
		goto bad;
	memcpy(first, arg, (size_t)(dash - arg));
	first[dash - arg] = '\0';
	if (cli_parse_size("--range", first, &from) < 0 ||
	    cli_parse_size("--range", dash + 1, &to) < 0)
		return -EINVAL;
	if (to <= from)
		goto bad;
	if (page_check("--range", first, from) < 0 || page_check("--range", dash + 1, to) < 0)
		return -EINVAL;
	return add_range(a, from, to - from);
bad:
	cli_opt_error("--range", "START-END with END > START, not '%s'\n", arg);
	return -EINVAL;
}

static int parse_opt(struct move_args *a, int c, size_t *addr, size_t *len)
{
	long n;

	switch (c) {
	case 'p':
		if (cli_parse_int("--pid", optarg, 1, INT32_MAX, &n) < 0)
			return -EINVAL;
		a->req.pid = (int)n;
		return 0;
	case 'd':
		if (!*optarg || strlen(optarg) >= PROTO_NAME_MAX) {
			cli_opt_error("--domain", "a name of 1 to %d bytes\n", PROTO_NAME_MAX - 1);
			return -EINVAL;
		}
		a->domain = optarg;
		return 0;
	case 'n':
		if (cli_parse_nodeset("--to-node", optarg, a->map.to, &a->map.nto) < 0)
			return -EINVAL;
		a->req.target_node = a->map.to[0];
		return 0;
	case 'f':
		if (cli_parse_nodeset("--from", optarg, a->map.from, &a->map.nfrom) < 0)
			return -EINVAL;
		a->from_arg = optarg;
		a->req.from_nodes = a->map.from;
		a->req.nfrom_nodes = a->map.nfrom;
		return 0;
	case 'r':
		return parse_range(a, optarg);
	case 'a':
		if (cli_parse_size("--addr", optarg, addr) < 0)
			return -EINVAL;
		return page_check("--addr", optarg, *addr);
	case 'l':
		if (cli_parse_size("--len", optarg, len) < 0)
			return -EINVAL;
		return page_check("--len", optarg, *len);
	case 's':
		a->req.strategy = proto_strategy_parse(optarg);
		if (a->req.strategy >= 0)
			return 0;
		cli_opt_error("--strategy", "auto, kernel or copy, not '%s'\n", optarg);
		return -EINVAL;
	case 't':
		if (cli_parse_int("--threads", optarg, 1, PROTO_MAX_THREADS, &n) < 0)
			return -EINVAL;
		a->req.workers = (unsigned int)n;
		return 0;
	case 'w':
		a->wait = true;
		return 0;
	case 'j':
		a->json = true;
		cli_json_error_want();
		return 0;
	case 'C':
		a->update_cpuset = a->wait = true;
		return 0;
	case 'D':
		a->dry_run = true;
		return 0;
	}
	return -EINVAL;
}

static int move_parse(int argc, char **argv, struct move_args *a)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "domain", required_argument, NULL, 'd' },
		{ "to-node", required_argument, NULL, 'n' },
		{ "from", required_argument, NULL, 'f' },
		{ "range", required_argument, NULL, 'r' },
		{ "addr", required_argument, NULL, 'a' },
		{ "len", required_argument, NULL, 'l' },
		{ "strategy", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "workers", required_argument, NULL, 't' },
		{ "wait", no_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "update-cpuset", no_argument, NULL, 'C' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t addr = SIZE_MAX, len = SIZE_MAX;
	const char *why = NULL;
	int c;

	memset(a, 0, sizeof(*a));
	a->req.sz = sizeof(a->req);
	a->req.target_node = -1;
	while ((c = getopt_long(argc, argv, "p:d:n:f:r:a:l:s:t:wjDh", opts, NULL)) != -1) {
		if (c == 'h') {
			move_usage(stdout);
			return CLI_HELP_SHOWN;
		}
		if (c == '?' || parse_opt(a, c, &addr, &len) < 0) {
			if (c == '?')
				move_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if ((addr == SIZE_MAX) != (len == SIZE_MAX))
		why = "--addr and --len go together";
	else if (addr != SIZE_MAX && add_range(a, addr, len) < 0)
		return CLI_EXIT_USAGE;
	if (optind < argc)
		why = "unexpected argument";
	else if (!a->req.pid == !a->domain)
		why = "one of --pid and --domain is required";
	else if (a->req.target_node < 0)
		why = "--to-node is required";
	else if (a->update_cpuset && a->domain)
		why = "--update-cpuset is for --pid: memmigd changes a domain's nodeset through libvirt";
	else if (a->map.nto > 1 && a->map.nto != a->map.nfrom)
		why = "several --to-node nodes map in order onto as many --from nodes "
		      "(migratepages' sets of equal size)";
	else if (a->map.nto > 1 && (a->domain || a->update_cpuset) && !a->dry_run)
		why = "several --to-node nodes are for --pid, without --update-cpuset "
		      "(a domain's nodeset and a cpuset follow one target node)";
	if (why) {
		cli_error("move: %s\n", why);
		move_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	a->req.ranges = a->ranges;
	return CLI_EXIT_OK;
}

/* Ctrl-C asks for a cancel; a second one ends the command at once (the
 * default action again), for a memmigd that does not answer. */
static void catch_stop(void)
{
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESETHAND };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* Prints the ended job (docs/json.md) the way the user asked; the exit
 * code from it. */
static int finish(struct json_object *job, struct move_args *a)
{
	struct json_object *rep = NULL, *rb = NULL;
	int rc;

	cli_progress_end();
	if (a->cs) {	/* narrow (or restore) before the job is shown */
		cli_cpuset_finish(a->cs, job);
		a->cs = NULL;
	}
	json_object_object_get_ex(job, "report", &rep);
	json_object_object_get_ex(job, "rebalance", &rb);
	if (a->json && a->jobs)
		json_object_array_add(a->jobs, json_object_get(job));
	else if (a->json)
		cli_json_print(json_object_get(job));
	/* EBUSY: another move ran, this one did nothing; the error says so. */
	else if (rep && json_object_is_type(rep, json_type_object) &&
		 strcmp(cli_json_str(job, "result", ""), "EBUSY"))
		cli_print_move_report(rep);
	if (rb && !a->json)
		cli_rebalance_print(rb);
	rc = cli_move_exit("move", job);
	if (!rc && rb && !strcmp(cli_json_str(rb, "state", ""), "failed")) {
		cli_error("move: %s\n", cli_json_str(rb, "message", "the rebalance failed"));
		rc = CLI_EXIT_FAIL;
	}
	json_object_put(job);
	return rc;
}

/* ---- in-process ---- */

/* The move's notify: its end wakes the progress loop at once. */
static void wake_fd(struct memmig_move *mv, void *opaque)
{
	uint64_t one = 1;

	if (write(*(int *)opaque, &one, sizeof(one)) < 0) {
		/* The loop polls anyway: it sees the end at its next tick. */
	}
}

/* The in-process move as the job object memmigd would show for it. */
static struct json_object *local_job(const struct move_args *a,
				     const struct memmig_move_progress *p, int result,
				     struct memmig_report *report)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct proto_job j = {
		.via = "local", .state = proto_job_end_state(result),
		.pid = a->req.pid, .to_node = a->req.target_node,
		.strategy = a->req.strategy, .threads = a->req.workers,
		.uid = getuid(), .p = *p, .ended = true, .result = result,
		/* The CLI asks and starts at once. */
		.created_at = a->created, .started_at = a->created, .ended_at = time(NULL),
	};
	struct json_object *job;
	char message[256];

	if (report) {
		memmig_report_get_summary(report, &s);
		j.bytes_moved = s.bytes_moved;
		j.strategy = s.strategy;	/* auto resolved, as memmigd shows it */
		j.report = report_json(report);
		memmig_report_unref(report);
	}
	proto_job_message(message, sizeof(message), result, j.bytes_moved,
			  p->bytes_total, j.to_node, p->elapsed_s);
	j.message = message;
	job = proto_job_json(&j);
	json_object_put(j.report);
	return job;
}

static int move_local(struct memmig_ctx *ctx, struct move_args *a)
{
	struct memmig_move_progress p = { .sz = sizeof(p) };
	struct memmig_report *report = NULL;
	struct memmig_move *mv = NULL;
	struct pollfd pfd = { .events = POLLIN };
	int rc;

	if (a->domain) {
		cli_error("move: --domain needs memmigd, which knows the domains\n");
		return CLI_EXIT_FAIL;
	}
	pfd.fd = eventfd(0, EFD_CLOEXEC);
	if (pfd.fd < 0) {
		cli_error("move: eventfd: %s\n", strerror(errno));
		return CLI_EXIT_FAIL;
	}
	if (!a->cs) {
		char msg[UTIL_CGROUP_DIR_MAX + 256];

		if (util_cpuset_check(a->req.pid, a->req.target_node, msg, sizeof(msg))) {
			cli_json_error_errno(-EACCES);
			cli_error("move: %s\n", msg);
			close(pfd.fd);
			return CLI_EXIT_FAIL;
		}
	}
	a->req.notify = wake_fd;
	a->req.opaque = &pfd.fd;
	a->created = time(NULL);
	/* Before the plan, which takes a while on a big process: a SIGTERM
	 * during it cancels the move cleanly too. */
	catch_stop();
	rc = memmig_move_new(ctx, &a->req, &mv);
	if (!rc)
		rc = memmig_move_plan(mv);
	if (!rc)
		rc = memmig_move_start(mv);
	if (rc == -EPERM || rc == -EACCES) {
		char msg[256];

		/* move_pages(2)'s rule refused it: said and named as memmigd
		 * says it (EPERM), whichever read or call noticed first. */
		proto_perm_message(msg, sizeof(msg), getuid(), getgid(), a->req.pid, NULL, NULL);
		cli_json_error_errno(-EPERM);
		cli_error("move: %s\n", msg);
		memmig_move_unref(mv);
		close(pfd.fd);
		return CLI_EXIT_FAIL;
	}
	if (rc < 0) {
		cli_json_error_errno(rc);
		cli_error("move: pid %d: %s\n", a->req.pid, rc == -EINVAL &&
			  a->req.strategy == MEMMIG_STRATEGY_COPY ?
			  (a->req.from_nodes ? "--from moves page by page, with the "
			   "kernel strategy, not copy" :
			   "the copy strategy works only inside the process itself "
			   "(a VMM embedding libmemmig)") : strerror(-rc));
		memmig_move_unref(mv);
		close(pfd.fd);
		return CLI_EXIT_FAIL;
	}
	/* The bar every 100 ms; the end (or a signal) at once. */
	do {
		poll(&pfd, 1, 100);
		if (stop_requested)
			memmig_move_cancel(mv);
		memmig_move_get_progress(mv, &p);
		cli_progress(p.bytes_done, p.bytes_total, p.rate);
	} while (p.state != MEMMIG_MOVE_DONE);
	rc = memmig_move_wait(mv, &report);
	memmig_move_get_progress(mv, &p);
	memmig_move_unref(mv);
	close(pfd.fd);
	return finish(local_job(a, &p, rc, report), a);
}

/* ---- through memmigd ---- */

static struct json_object *move_request(const struct move_args *a)
{
	struct proto_request req = { .op = PROTO_OP_MOVE };

	req.pid = a->req.pid;
	if (a->domain)
		snprintf(req.domain, sizeof(req.domain), "%s", a->domain);
	req.to_node = a->req.target_node;
	req.strategy = a->req.strategy;
	req.threads = a->req.workers;
	req.nranges = a->req.nranges;
	memcpy(req.ranges, a->ranges, a->req.nranges * sizeof(a->ranges[0]));
	req.nfrom_nodes = a->req.nfrom_nodes;
	memcpy(req.from_nodes, a->req.from_nodes, a->req.nfrom_nodes * sizeof(req.from_nodes[0]));
	return proto_request_to_json(&req);
}

static int move_daemon(struct cli_conn *c, struct move_args *a)
{
	struct json_object *reply, *job = NULL;
	int64_t id;
	int rc;

	/* Subscribed before the job exists: its last event cannot be missed.
	 * Unanswered yet: the move's reply comes after the subscription's,
	 * on the same connection.  Ctrl-C from the request on cancels: memmigd
	 * may start the job before its answer comes. */
	if (a->wait) {
		cli_conn_subscribe(c);
		catch_stop();
	}
	rc = cli_call(c, "move", move_request(a), &reply);
	if (rc < 0) {
		if (reply)
			cli_print_reply_error("move", reply);
		json_object_put(reply);
		return CLI_EXIT_FAIL;
	}
	json_object_object_get_ex(reply, "job", &job);
	id = cli_json_int(job, "id", -1);
	if (!a->wait) {
		if (a->json)
			cli_json_print(json_object_get(job));
		else
			printf("job %lld %s: memmig-cli status %lld\n", (long long)id,
			       cli_json_str(job, "state", "?"), (long long)id);
		json_object_put(reply);
		return CLI_EXIT_OK;
	}
	json_object_put(reply);
	rc = cli_job_follow(c, cli_conn_subscribed(c) ? c : NULL, id, &stop_requested, &job);
	if (rc < 0)
		return CLI_EXIT_FAIL;
	/* The nodeset's narrow follows the job. */
	if (a->domain)
		json_object_object_add(job, "rebalance", cli_rebalance_wait(c, a->domain));
	return finish(job, a);
}

/*
 * Each node --from names must have memory, as migratepages(8) refuses a
 * nodeset with a node the system lacks, whichever path would run the
 * move: a usage error that names it.  "all" names none; "!SET" names SET.
 */
static int from_check(struct memmig_ctx *ctx, const struct move_args *a)
{
	int named[PROTO_MAX_NODE + 1];
	unsigned int n = a->map.nfrom;

	if (!a->from_arg || !strcmp(a->from_arg, "all"))
		return 0;
	if (a->from_arg[0] == '!') {
		if (cli_parse_nodeset("--from", a->from_arg + 1, named, &n) < 0)
			return -EINVAL;
	} else {
		memcpy(named, a->map.from, n * sizeof(named[0]));
	}
	for (unsigned int i = 0; i < n; i++)
		if (cli_node_check(ctx, "--from", named[i]) < 0)
			return -ENOENT;
	return 0;
}

/*
 * The pairs of a mapping (--from A,B --to-node C,D) in an order that
 * moves each page once, as the pairs run one after the other: a pair
 * whose target is another pair's source runs after it (0 to 1 after 1 to
 * 2, so that node 0's pages stop on 1).  Both sets ascend, so the mapping
 * is increasing: a chain of pairs goes all up or all down, and no cycle
 * can form.  Hence the pairs going up, from the highest source down, then
 * the others, from the lowest source up.
 */
static void map_order(const struct cli_move_map *m, unsigned int *order)
{
	unsigned int n = 0;

	for (unsigned int i = m->nto; i-- > 0;)
		if (m->to[i] > m->from[i])
			order[n++] = i;
	for (unsigned int i = 0; i < m->nto; i++)
		if (m->to[i] <= m->from[i])
			order[n++] = i;
}

static int move_one(struct memmig_ctx *ctx, struct cli_conn *c, struct move_args *a)
{
	int rc;

	if (a->update_cpuset && cli_cpuset_widen(a->req.pid, a->req.target_node, &a->cs) < 0)
		return CLI_EXIT_FAIL;
	rc = c ? move_daemon(c, a) : move_local(ctx, a);
	if (a->cs)	/* no report: the move failed before it ran */
		cli_cpuset_finish(a->cs, NULL);
	a->cs = NULL;
	return rc;
}

/* A mapping: one move a pair, each from one node to its own target, in
 * map_order()'s order; through memmigd each job waits for the last. */
static int move_map(struct memmig_ctx *ctx, struct cli_conn *c, struct move_args *a)
{
	unsigned int order[PROTO_MAX_NODE + 1];
	int rc = CLI_EXIT_OK;

	map_order(&a->map, order);
	a->wait = true;
	if (a->json)
		a->jobs = json_object_new_array();
	for (unsigned int k = 0; k < a->map.nto && !stop_requested; k++) {
		unsigned int i = order[k];
		int one;

		a->req.from_nodes = &a->map.from[i];
		a->req.nfrom_nodes = 1;
		a->req.target_node = a->map.to[i];
		if (!a->json)
			printf("node %d to node %d:\n", a->map.from[i], a->map.to[i]);
		one = move_one(ctx, c, a);
		if (one > rc)
			rc = one;
	}
	if (a->jobs)
		cli_json_print(a->jobs);
	return rc;
}

static int move_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct cli_conn *c;
	struct move_args a;
	int rc = move_parse(argc, argv, &a);

	if (rc)
		return cli_exit_code(rc);
	if (from_check(ctx, &a) < 0)
		return CLI_EXIT_USAGE;
	/* A node this host lacks is a fact of the host, not bad syntax. */
	for (unsigned int i = 0; i < a.map.nto; i++)
		if (cli_node_check(ctx, "--to-node", a.map.to[i]) < 0)
			return CLI_EXIT_FAIL;
	if (a.dry_run) {
		if (a.domain && (rc = cli_domain_pid("move", a.domain, &a.req.pid)))
			return rc;
		return cli_move_dry_run(a.req.pid, a.ranges, a.req.nranges, &a.map, a.json);
	}
	if (cli_connect_or_local("move", &c) < 0)
		return CLI_EXIT_NO_DAEMON;
	rc = a.map.nto > 1 ? move_map(ctx, c, &a) : move_one(ctx, c, &a);
	cli_conn_close(c);
	return rc;
}

const struct cli_cmd cli_cmd_move = {
	.name = "move",
	.summary = "move a process's or a domain's memory to a NUMA node",
	.run = move_run,
};
