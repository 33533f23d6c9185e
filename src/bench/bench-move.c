/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-bench move: a process's memory moved between two NUMA nodes,
 * and back, by memmig (in-process and through memmigd, 1 and N workers)
 * and by the kernel's own tools, in one run: numactl's migratepages(8),
 * one move_pages(2) call over the whole buffer, migrate_pages(2).  The
 * movers take turns within each round, so a slow moment of the machine
 * falls on all of them; medians of both directions, and the child's data
 * checksummed at the end of each case.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <json-c/json.h>

#include "bench/bench.h"
#include "bench/bench-move.h"
#include "front/front.h"
#include "util/size.h"

#define MAX_REPS 15
#define MAX_SIZES 8
#define MAX_MOVERS 7
/* Room left on a node beside the buffer: the kernel's own, page tables. */
#define NODE_SLACK (48ULL << 20)

enum mover_kind { MV_MEMMIG, MV_MEMMIGD, MV_MIGRATEPAGES, MV_MOVE_PAGES, MV_MIGRATE_PAGES };

struct mover {
	enum mover_kind kind;
	unsigned int workers;
	char name[40];
	struct move_sample v[2 * MAX_REPS];
	unsigned int n;
	int err;
};

struct move_bench {
	struct memmig_ctx *ctx;
	size_t *sizes;
	size_t nsizes;
	bool page_4k, page_thp, json;
	unsigned int reps, workers;
	int a, b;			/* the two nodes */
	bool daemon, migratepages;
	double cli_start_s;		/* memmig-cli --version */
	struct mover m[MAX_MOVERS];
	unsigned int nm;
	struct json_object *cases, *notes;
};

static void move_usage(FILE *f)
{
	fprintf(f,
		"Usage: memmig-bench move [--sizes LIST] [--pages 4k,thp] [--reps N]\n"
		"                         [--nodes A,B] [--workers N] [--json]\n"
		"Moves a child process's memory (4 KiB pages, or THPs) from node A to\n"
		"node B and back, by memmig in-process (kernel strategy, 1 and N\n"
		"workers), through memmigd (`memmig-cli move --wait`: the job and the\n"
		"command's wall time; when memmigd runs), numactl's migratepages, one\n"
		"move_pages(2) call over the whole buffer, and migrate_pages(2).  Each\n"
		"moves the process's pages on the one node to the other (memmig with\n"
		"--from, as migratepages PID A B asks).\n"
		"Medians of both directions; speeds relative to migratepages; where\n"
		"memmig's time went.  Needs two NUMA nodes with memory.\n\n"
		"  --sizes LIST    buffer sizes (default 64M,256M; those the nodes\n"
		"                  cannot hold are skipped, saying so)\n"
		"  --pages KINDS   4k, thp or both (default 4k,thp)\n"
		"  --reps N        rounds, each mover each way once a round (default 3)\n"
		"  --nodes A,B     the nodes (default: the first node with memory and\n"
		"                  CPUs, and the last node with memory)\n"
		"  --workers N     memmig's larger worker count (default: the usable\n"
		"                  CPUs); 1 is always measured\n"
		"  --json          machine-readable output\n");
}

static void note(struct move_bench *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct move_bench *b, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_array_add(b->notes, json_object_new_string(buf));
	if (!b->json)
		printf("note: %s\n", buf);
}

static void add_mover(struct move_bench *b, enum mover_kind k, unsigned int workers,
		      const char *name)
{
	struct mover *m = &b->m[b->nm++];

	*m = (struct mover){ .kind = k, .workers = workers };
	if (workers)
		snprintf(m->name, sizeof(m->name), "%s, %u worker%s", name, workers,
			 workers == 1 ? "" : "s");
	else
		snprintf(m->name, sizeof(m->name), "%s", name);
}

static void list_movers(struct move_bench *b)
{
	for (unsigned int w = 1;; w = b->workers) {
		add_mover(b, MV_MEMMIG, w, "memmig in-process");
		if (b->daemon)
			add_mover(b, MV_MEMMIGD, w, "memmigd job");
		if (w == b->workers)
			break;
	}
	if (b->migratepages)
		add_mover(b, MV_MIGRATEPAGES, 0, "migratepages");
	add_mover(b, MV_MOVE_PAGES, 0, "move_pages(2), one call");
	add_mover(b, MV_MIGRATE_PAGES, 0, "migrate_pages(2)");
}

static int move_once(struct move_bench *b, struct mover *m, const struct move_child *c,
		     int from, int to, struct move_sample *s)
{
	*s = (struct move_sample){ 0 };
	switch (m->kind) {
	case MV_MEMMIG:
		return mover_memmig(b->ctx, c, from, to, m->workers, s);
	case MV_MEMMIGD:
		return mover_memmigd(c, from, to, m->workers, s);
	case MV_MIGRATEPAGES:
		return mover_migratepages(c, from, to, s);
	case MV_MOVE_PAGES:
		return mover_move_pages(c, to, s);
	default:
		return mover_migrate_pages(c, from, to, s);
	}
}

/* All of the buffer on node, or put there (untimed) first; -EIO when the
 * kernel cannot. */
static int ensure_on(struct move_bench *b, const struct move_child *c, int node)
{
	uint64_t on = 0, all = c->len / MEMMIG_PAGE_SIZE;
	struct move_sample s;

	if (move_child_pages_on(c, node, &on) == 0 && on == all)
		return 0;
	mover_move_pages(c, node, &s);
	if (move_child_pages_on(c, node, &on) == 0 && on == all)
		return 0;
	note(b, "%llu of %llu pages could not be put on node %d",
	     (unsigned long long)(all - on), (unsigned long long)all, node);
	return -EIO;
}

/* One round trip of a mover: a -> b, then b -> a, each checked arrived. */
static int round_trip(struct move_bench *b, struct mover *m, const struct move_child *c)
{
	int ends[2] = { b->a, b->b };

	for (int dir = 0; dir < 2; dir++) {
		int from = ends[dir], to = ends[!dir];
		uint64_t on = 0;
		int rc = ensure_on(b, c, from);

		if (!rc)
			rc = move_once(b, m, c, from, to, &m->v[m->n]);
		if (!rc && (move_child_pages_on(c, to, &on) || on != c->len / MEMMIG_PAGE_SIZE)) {
			note(b, "%s: %llu of %llu pages arrived on node %d", m->name,
			     (unsigned long long)on, (unsigned long long)(c->len / MEMMIG_PAGE_SIZE),
			     to);
			rc = -EIO;
		}
		if (rc)
			return rc;
		m->n++;
	}
	return 0;
}

static double med(const struct mover *m, size_t off)
{
	double v[2 * MAX_REPS];

	for (unsigned int i = 0; i < m->n; i++)
		v[i] = *(const double *)((const char *)&m->v[i] + off);
	return m->n ? bench_median(v, m->n) : 0;
}

#define MED(m, field) med(m, offsetof(struct move_sample, field))

/* The mover of that kind and worker count that ran, or NULL. */
static const struct mover *find(const struct move_bench *b, enum mover_kind k, unsigned int w)
{
	for (unsigned int i = 0; i < b->nm; i++)
		if (b->m[i].kind == k && b->m[i].workers == w && !b->m[i].err && b->m[i].n)
			return &b->m[i];
	return NULL;
}

static struct json_object *secs(const struct mover *m, size_t off)
{
	return m ? json_object_new_double(med(m, off)) : NULL;
}

static struct json_object *parts_json(const struct mover *m)
{
	struct json_object *o;

	if (!m)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "plan_s", json_object_new_double(MED(m, plan_s)));
	json_object_object_add(o, "query_s", json_object_new_double(MED(m, query_s)));
	json_object_object_add(o, "kernel_s", json_object_new_double(MED(m, kernel_s)));
	json_object_object_add(o, "other_s", json_object_new_double(MED(m, other_s)));
	if (m->kind == MV_MEMMIGD)
		json_object_object_add(o, "client_s",
				       json_object_new_double(MED(m, wall_s) - MED(m, s)));
	return o;
}

/* migratepages' time over the mover's: above 1, the mover is faster. */
static struct json_object *speed(const struct mover *peer, const struct mover *m, size_t off)
{
	return peer && m && med(m, off) > 0 ?
		json_object_new_double(MED(peer, s) / med(m, off)) : NULL;
}

/* One object per worker count, every mover's median in it. */
static void add_cases(struct move_bench *b, bool thp, size_t len, const double thp_share[2],
		      bool verified)
{
	const struct mover *mp = find(b, MV_MIGRATEPAGES, 0);

	for (unsigned int w = 1;; w = b->workers) {
		struct json_object *o = json_object_new_object();
		const struct mover *d = find(b, MV_MEMMIGD, w), *in = find(b, MV_MEMMIG, w);

		json_object_object_add(o, "page", json_object_new_string(thp ? "thp" : "4k"));
		json_object_object_add(o, "bytes", json_object_new_int64((int64_t)len));
		json_object_object_add(o, "workers", json_object_new_int((int)w));
		json_object_object_add(o, "memmig_s", secs(d, offsetof(struct move_sample, s)));
		json_object_object_add(o, "memmig_wall_s",
				       secs(d, offsetof(struct move_sample, wall_s)));
		json_object_object_add(o, "inproc_s", secs(in, offsetof(struct move_sample, s)));
		json_object_object_add(o, "migratepages_s",
				       secs(mp, offsetof(struct move_sample, s)));
		json_object_object_add(o, "move_pages_s",
				       secs(find(b, MV_MOVE_PAGES, 0),
					    offsetof(struct move_sample, s)));
		json_object_object_add(o, "migrate_pages_s",
				       secs(find(b, MV_MIGRATE_PAGES, 0),
					    offsetof(struct move_sample, s)));
		json_object_object_add(o, "memmig_vs_migratepages",
				       speed(mp, d, offsetof(struct move_sample, s)));
		json_object_object_add(o, "inproc_vs_migratepages",
				       speed(mp, in, offsetof(struct move_sample, s)));
		json_object_object_add(o, "wall_over_job", d && MED(d, s) > 0 ?
				       json_object_new_double(MED(d, wall_s) / MED(d, s)) : NULL);
		json_object_object_add(o, "memmig_parts", parts_json(d));
		json_object_object_add(o, "inproc_parts", parts_json(in));
		json_object_object_add(o, "thp_share", json_object_new_double(thp_share[0]));
		json_object_object_add(o, "thp_share_end", json_object_new_double(thp_share[1]));
		json_object_object_add(o, "verified", json_object_new_boolean(verified));
		json_object_array_add(b->cases, o);
		if (w == b->workers)
			break;
	}
}

static void print_case(const struct move_bench *b, bool thp, size_t len,
		       const double thp_share[2])
{
	const struct mover *mp = find(b, MV_MIGRATEPAGES, 0);
	char sz[32];

	printf("\n%s, %s (in THPs: %.0f%% at the start, %.0f%% at the end), node %d <-> %d, "
	       "median of %u moves\n", thp ? "THPs" : "4 KiB pages",
	       util_size_format(len, sz, sizeof(sz)), 100 * thp_share[0], 100 * thp_share[1],
	       b->a, b->b, 2 * b->reps);
	printf("  %-28s %9s %8s %12s\n", "mover", "s", "GB/s", "vs migratepages");
	for (unsigned int i = 0; i < b->nm; i++) {
		const struct mover *m = &b->m[i];
		double s = MED(m, s);

		if (m->err || !m->n) {
			printf("  %-28s failed: %s\n", m->name, strerror(-m->err));
			continue;
		}
		printf("  %-28s %9.3f %8.2f", m->name, s, s > 0 ? len / s / 1e9 : 0);
		if (mp && s > 0)
			printf(" %11.2fx", MED(mp, s) / s);
		printf("\n");
		if (m->kind == MV_MEMMIGD)
			printf("  %-28s %9.3f %8s %11.2fx  (memmig-cli move --wait)\n", "  wall",
			       MED(m, wall_s), "", mp && MED(m, wall_s) > 0 ?
			       MED(mp, s) / MED(m, wall_s) : 0);
	}
	for (unsigned int i = 0; i < b->nm; i++) {
		const struct mover *m = &b->m[i];

		if ((m->kind != MV_MEMMIG && m->kind != MV_MEMMIGD) || m->err || !m->n)
			continue;
		printf("  %s: plan %.3f, queries %.3f, kernel's move %.3f, the rest %.3f",
		       m->name, MED(m, plan_s), MED(m, query_s), MED(m, kernel_s),
		       MED(m, other_s));
		if (m->kind == MV_MEMMIGD)
			printf(", client %.3f", MED(m, wall_s) - MED(m, s));
		printf(" s\n");
	}
}

static int run_case(struct move_bench *b, bool thp, size_t len)
{
	struct move_child c;
	double thp_share[2];
	int rc = move_child_start(&c, len, thp, b->a);

	if (rc < 0) {
		note(b, "%s %zu MiB: the child could not set up: %s", thp ? "thp" : "4k",
		     len >> 20, strerror(-rc));
		return rc;
	}
	thp_share[0] = (double)move_child_thp_bytes(&c) / len;
	for (unsigned int i = 0; i < b->nm; i++) {
		b->m[i].n = 0;
		b->m[i].err = 0;
	}
	for (unsigned int r = 0; r < b->reps; r++)
		for (unsigned int k = 0; k < b->nm; k++) {
			/* Turns rotate: none always follows the same one. */
			struct mover *m = &b->m[(k + r) % b->nm];

			bench_progress("bench move: %s %zu MiB, round %u, %s", thp ? "thp" : "4k",
				       len >> 20, r + 1, m->name);
			if (!m->err)
				m->err = round_trip(b, m, &c);
		}
	bench_progress_done();
	thp_share[1] = (double)move_child_thp_bytes(&c) / len;
	rc = move_child_check(&c);
	if (rc)
		note(b, "%s %zu MiB: the child's data changed: this is a bug", thp ? "thp" : "4k",
		     len >> 20);
	add_cases(b, thp, len, thp_share, rc == 0);
	if (!b->json)
		print_case(b, thp, len, thp_share);
	move_child_stop(&c);
	return rc;
}

/* Bytes free on the node now; 0 when unknown. */
static uint64_t node_free(struct memmig_topo *t, int node)
{
	struct memmig_node_info n = { .sz = sizeof(n) };

	return memmig_topo_find_node(t, node, &n) ? 0 : n.mem_free;
}

/* The default nodes: the first with memory and CPUs, the last with memory. */
static int pick_nodes(struct move_bench *b, struct memmig_topo *t)
{
	int count = memmig_topo_node_count(t);

	for (int i = 0; i < count && b->a < 0; i++) {
		struct memmig_node_info n = { .sz = sizeof(n) };

		if (memmig_topo_get_node(t, (unsigned int)i, &n) == 0 && n.ncpus)
			b->a = n.id;
	}
	for (int i = count - 1; i >= 0 && b->b < 0; i--) {
		struct memmig_node_info n = { .sz = sizeof(n) };

		if (memmig_topo_get_node(t, (unsigned int)i, &n) == 0 && n.id != b->a)
			b->b = n.id;
	}
	if (count < 2 || b->a < 0 || b->b < 0) {
		cli_error("move: needs two NUMA nodes with memory, one of them with "
			  "CPUs; this host has %d node%s with memory (the multi-node tier "
			  "runs it: tests/vm/guest-bench-move.sh)\n", count, count == 1 ? "" : "s");
		return -ENODEV;
	}
	return 0;
}

static int parse_nodes(struct move_bench *b, const char *arg)
{
	long x, y;
	char *end;

	x = strtol(arg, &end, 10);
	if (*end == ',') {
		y = strtol(end + 1, &end, 10);
		if (!*end && x >= 0 && y >= 0 && x < 64 && y < 64 && x != y) {
			b->a = (int)x;
			b->b = (int)y;
			return 0;
		}
	}
	cli_opt_error("--nodes", "two different node ids below 64, as A,B\n");
	return -EINVAL;
}

static int parse_pages(struct move_bench *b, const char *arg)
{
	b->page_4k = b->page_thp = false;
	for (const char *p = arg; *p; ) {
		size_t n = strcspn(p, ",");

		if (n == 2 && !strncmp(p, "4k", 2))
			b->page_4k = true;
		else if (n == 3 && !strncmp(p, "thp", 3))
			b->page_thp = true;
		else
			break;
		p += n + (p[n] == ',');
		if (!*p)
			return 0;
	}
	cli_opt_error("--pages", "4k, thp, or 4k,thp\n");
	return -EINVAL;
}

static int move_parse(struct move_bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "pages", required_argument, NULL, 'p' },
		{ "reps", required_argument, NULL, 'r' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "workers", required_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "s:p:r:n:w:jh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			free(b->sizes);
			b->sizes = NULL;
			if (cli_parse_size_list("--sizes", optarg, &b->sizes, &b->nsizes) < 0)
				return CLI_EXIT_USAGE;
			for (size_t i = 0; i < b->nsizes; i++)
				if (b->sizes[i] < MEMMIG_UNIT_SIZE || b->sizes[i] % MEMMIG_UNIT_SIZE ||
				    b->nsizes > MAX_SIZES) {
					cli_opt_error("--sizes", "up to %d multiples of 2M\n",
						      MAX_SIZES);
					return CLI_EXIT_USAGE;
				}
			break;
		case 'p':
			if (parse_pages(b, optarg) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'n':
			if (parse_nodes(b, optarg) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'r':
		case 'w':
			if (cli_parse_int(c == 'r' ? "--reps" : "--workers", optarg, 1,
					  c == 'r' ? MAX_REPS : 64, &v) < 0)
				return CLI_EXIT_USAGE;
			*(c == 'r' ? &b->reps : &b->workers) = (unsigned int)v;
			break;
		case 'j':
			b->json = true;
			break;
		case 'h':
			move_usage(stdout);
			return CLI_HELP_SHOWN;
		default:
			move_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	return optind < argc ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}

static void print_json(struct move_bench *b)
{
	struct json_object *o = json_object_new_object(), *nodes = json_object_new_array();
	struct utsname u;

	json_object_array_add(nodes, json_object_new_int(b->a));
	json_object_array_add(nodes, json_object_new_int(b->b));
	json_object_object_add(o, "bench", json_object_new_string("move"));
	json_object_object_add(o, "kernel", json_object_new_string(uname(&u) ? "?" : u.release));
	json_object_object_add(o, "nodes", nodes);
	json_object_object_add(o, "reps", json_object_new_int((int)b->reps));
	json_object_object_add(o, "cpus", json_object_new_int((int)b->workers));
	json_object_object_add(o, "memmigd", json_object_new_boolean(b->daemon));
	json_object_object_add(o, "cli_start_s", json_object_new_double(b->cli_start_s));
	json_object_object_add(o, "cases", json_object_get(b->cases));
	json_object_object_add(o, "notes", json_object_get(b->notes));
	cli_json_print(o);
}

static int run_all(struct move_bench *b)
{
	struct memmig_topo *t = NULL;
	int rc = memmig_topo_new(b->ctx, &t), failed = 0;

	if (!rc && b->a < 0)
		rc = pick_nodes(b, t);
	if (rc) {
		memmig_topo_unref(t);
		return rc;
	}
	b->daemon = mover_memmigd_up();
	b->migratepages = bench_on_path("migratepages");
	b->cli_start_s = mover_cli_start_s();
	if (!b->json)
		printf("memmig-cli starts in %.3f s here (--version, median of 5)\n",
		       b->cli_start_s);
	if (!b->daemon)
		note(b, "memmigd does not answer at %s: no memmigd case", cli_global.socket);
	if (!b->migratepages)
		note(b, "migratepages is not installed (apt-get install numactl): no peer "
			"of that name");
	list_movers(b);
	for (int kind = 0; kind < 2; kind++) {
		bool thp = kind == 1;

		if (!(thp ? b->page_thp : b->page_4k))
			continue;
		for (size_t i = 0; i < b->nsizes; i++) {
			uint64_t room = node_free(t, b->a) < node_free(t, b->b) ?
				node_free(t, b->a) : node_free(t, b->b);

			if (room < b->sizes[i] + NODE_SLACK) {
				note(b, "%s %zu MiB skipped: nodes %d and %d have %llu MiB free "
					"at least", thp ? "thp" : "4k", b->sizes[i] >> 20, b->a, b->b,
				     (unsigned long long)(room >> 20));
				continue;
			}
			failed |= run_case(b, thp, b->sizes[i]) != 0;
			memmig_topo_unref(t);
			t = NULL;
			if (memmig_topo_new(b->ctx, &t))
				break;
		}
	}
	memmig_topo_unref(t);
	for (unsigned int i = 0; i < b->nm; i++)
		failed |= b->m[i].err != 0;
	return failed ? -EIO : 0;
}

static int move_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	static size_t def_sizes[] = { 64ULL << 20, 256ULL << 20 };
	struct move_bench b = { .ctx = ctx, .reps = 3, .a = -1, .b = -1,
				.page_4k = true, .page_thp = true };
	cpu_set_t cpus;
	int rc = move_parse(&b, argc, argv);

	if (rc) {
		free(b.sizes);
		return cli_exit_code(rc);
	}
	if (!b.sizes) {
		b.sizes = malloc(sizeof(def_sizes));
		if (!b.sizes)
			return CLI_EXIT_FAIL;
		memcpy(b.sizes, def_sizes, sizeof(def_sizes));
		b.nsizes = 2;
	}
	if (!b.workers)
		b.workers = sched_getaffinity(0, sizeof(cpus), &cpus) ? 1 :
			    (unsigned int)CPU_COUNT(&cpus);
	b.cases = json_object_new_array();
	b.notes = json_object_new_array();
	if (!b.json)
		printf("memmig bench move: a child's memory between two nodes, each mover "
		       "each way in turn\n");
	rc = run_all(&b);
	if (b.json && rc != -ENODEV)
		print_json(&b);
	json_object_put(b.cases);
	json_object_put(b.notes);
	free(b.sizes);
	return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

const struct cli_cmd bench_cmd_move = {
	.name = "move",
	.summary = "a process's memory between nodes: memmig against migratepages",
	.run = move_run,
};
