/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-bench migrate: 1 GiB of THP-backed random data moved by the
 * copy strategy (with and without a prefaulted reserve) and the kernel
 * strategy, 1 and 2 workers, against the raw NT copy of the same size as
 * the ceiling.  Preparation (the kernel zeroing fresh destination pages) and
 * copy + swap are reported apart and together.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "util/size.h"

struct mig_case {
	const char *name;
	int strategy;
	unsigned int workers;
};

static const struct mig_case cases[] = {
	{ "copy, 1 worker", MEMMIG_STRATEGY_COPY, 1 },
	{ "copy, 2 workers", MEMMIG_STRATEGY_COPY, 2 },
	{ "kernel, 1 worker", MEMMIG_STRATEGY_KERNEL, 1 },
	{ "kernel, 2 workers", MEMMIG_STRATEGY_KERNEL, 2 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* GB/s, medians, each from wall-clock time. */
struct mig_result {
	double prepare;		/* filling a reserve of the size: 1 thread */
	double copy;		/* the job, destination from that reserve */
	double all;		/* the job preparing its own destination */
	/* Of copy+swap's wall clock, the job's own parts: the placement
	 * queries before and after, and the copy with its swap (median
	 * shares); the rest is setting up, threads and the reserve's
	 * hand-over. */
	double query_share, copy_share;
	uint64_t moved;		/* bytes, last run */
};

struct mig_bench {
	struct memmig_ctx *ctx;
	size_t len;
	unsigned int reps;
	int node;
	bool json;
	uint8_t *buf;
	struct memmig_region *region;
	double ceiling[2];	/* NT copy GB/s, 1 and 2 threads */
	struct mig_result res[NCASES];
};

static void mig_usage(FILE *f)
{
	fprintf(f,
		"Usage: memmig-bench migrate [--size SIZE] [--reps N] [--to-node N] [--json]\n"
		"Moves SIZE (default 1G) of THP-backed random data with each strategy and\n"
		"worker count, against the raw NT copy of the same size (the ceiling).\n"
		"The copy strategy copies and swaps even where the pages are already on\n"
		"the node (force); the kernel strategy moves only misplaced pages, so on a\n"
		"one-node machine it has nothing to move and says so.\n");
}

static double gbs(size_t len, double s)
{
	return s > 0 ? len / s / 1e9 : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct nt_half {
	struct memmig_ctx *ctx;
	uint8_t *dst;
	const uint8_t *src;
	size_t len;
	int prim;
};

static void *nt_copy(void *arg)
{
	struct nt_half *h = arg;

	for (size_t off = 0; off < h->len; off += MEMMIG_UNIT_SIZE)
		memmig_copy_with(h->ctx, h->prim, h->dst + off, h->src + off,
				 h->len - off < MEMMIG_UNIT_SIZE ? h->len - off : MEMMIG_UNIT_SIZE,
				 MEMMIG_COPY_NODRAIN);
	memmig_copy_drain();
	return NULL;
}

/* The ceiling: NT copies of the same size into prefaulted memory. */
static int measure_ceiling(struct mig_bench *b)
{
	uint8_t *dst = bench_alloc(b->len);
	double v[2][32];

	if (!dst)
		return -ENOMEM;
	for (unsigned int r = 0; r < b->reps; r++) {
		for (int t = 0; t < 2; t++) {
			struct nt_half h[2];
			pthread_t th;
			double t0;

			for (int i = 0; i <= t; i++)
				h[i] = (struct nt_half){
					b->ctx, dst + i * (b->len / 2), b->buf + i * (b->len / 2),
					t ? b->len / 2 : b->len,
					memmig_copy_query(b->ctx, b->len, MEMMIG_COPY_NONTEMPORAL),
				};
			t0 = bench_now();
			if (t && pthread_create(&th, NULL, nt_copy, &h[1]))
				t = 0;
			nt_copy(&h[0]);
			if (t)
				pthread_join(th, NULL);
			v[t][r] = gbs(b->len, bench_now() - t0);
		}
	}
	b->ceiling[0] = median(v[0], b->reps);
	b->ceiling[1] = median(v[1], b->reps);
	bench_free(dst, b->len);
	return 0;
}

static int migrate_once(struct mig_bench *b, const struct mig_case *c,
			double *seconds, uint64_t *moved, struct memmig_report_summary *sum)
{
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = b->node, .strategy = c->strategy,
		.workers = c->workers, .flags = MEMMIG_MIGRATE_FORCE,
	};
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	double t0 = bench_now();
	int rc = memmig_migrate(b->region, &o, &rep);

	*seconds = bench_now() - t0;
	if (rc < 0) {
		cli_error("migrate: %s: %s\n", c->name, strerror(-rc));
	} else {
		memmig_report_get_summary(rep, &s);
		*moved = s.bytes_moved;
		if (sum)
			*sum = s;
	}
	memmig_report_unref(rep);
	return rc;
}

/*
 * Copy cases run twice a round: once from a reserve filled just before
 * (prepare and copy + swap apart), once preparing its own (all three).
 */
static int run_case(struct mig_bench *b, const struct mig_case *c,
		    struct mig_result *out)
{
	double prep[32], copy[32], all[32], query[32], cs[32], t;
	struct memmig_report_summary s = { .sz = sizeof(s) };
	bool copy_strategy = c->strategy == MEMMIG_STRATEGY_COPY;
	int rc = 0;

	for (unsigned int r = 0; !rc && r < b->reps; r++) {
		prep[r] = copy[r] = query[r] = cs[r] = 0;
		if (copy_strategy) {
			t = bench_now();
			rc = memmig_ctx_reserve(b->ctx, b->node, b->len);
			prep[r] = gbs(b->len, bench_now() - t);
			if (!rc)
				rc = migrate_once(b, c, &t, &out->moved, &s);
			copy[r] = gbs(b->len, t);
			query[r] = t > 0 ? s.query_s / t : 0;
			cs[r] = t > 0 ? s.copy_s / t : 0;
			memmig_ctx_reserve(b->ctx, b->node, 0);
		}
		if (!rc)
			rc = migrate_once(b, c, &t, &out->moved, NULL);
		all[r] = gbs(b->len, t);
	}
	if (rc < 0)
		return rc;
	out->prepare = median(prep, b->reps);
	out->copy = median(copy, b->reps);
	out->all = median(all, b->reps);
	out->query_share = median(query, b->reps);
	out->copy_share = median(cs, b->reps);
	return 0;
}

static void print_text(const struct mig_bench *b)
{
	char sz[32];

	printf("memmig bench migrate: %s of THP-backed random data to node %d, "
	       "median of %u, GB/s from wall-clock time\n\n",
	       util_size_format(b->len, sz, sizeof(sz)), b->node, b->reps);
	printf("ceiling (NT copy into prefaulted memory): %.2f on 1 thread, "
	       "%.2f on 2 (%.2fx)\n\n", b->ceiling[0], b->ceiling[1],
	       b->ceiling[1] / b->ceiling[0]);
	printf("%-18s %9s %10s %8s %10s %8s\n", "", "prepare", "copy+swap",
	       "/ceil", "all three", "/ceil");
	for (size_t i = 0; i < NCASES; i++) {
		const struct mig_result *r = &b->res[i];

		if (cases[i].strategy == MEMMIG_STRATEGY_KERNEL) {
			if (!r->moved)
				printf("%-18s nothing to move: every page is already "
				       "on node %d\n", cases[i].name, b->node);
			else
				printf("%-18s %9s %10s %8s %10.2f %7.2fx\n", cases[i].name,
				       "-", "-", "-", r->all, r->all / b->ceiling[0]);
			continue;
		}
		printf("%-18s %9.2f %10.2f %7.2fx %10.2f %7.2fx\n", cases[i].name,
		       r->prepare, r->copy, r->copy / b->ceiling[0], r->all,
		       r->all / b->ceiling[0]);
	}
	for (size_t i = 0; i < NCASES; i++)
		if (cases[i].strategy == MEMMIG_STRATEGY_COPY)
			printf("%-18s copy+swap's time: copy and swap %.0f%%, placement "
			       "queries %.0f%%, the rest %.0f%%\n", cases[i].name,
			       100 * b->res[i].copy_share, 100 * b->res[i].query_share,
			       100 * (1 - b->res[i].copy_share - b->res[i].query_share));
	printf("\nprepare: a reserve of the size filled by one thread (the kernel\n"
	       "zeroes every new page; move_pages allocates without zeroing, which\n"
	       "is its edge).  copy+swap: the job taking its destination from that\n"
	       "reserve.  all three: the job preparing its own destination, each\n"
	       "worker unit by unit, or a helper thread per worker ahead of it where\n"
	       "the CPUs outnumber the workers twice.  Job times include the placement\n"
	       "queries before and after.  /ceil: over the 1-thread NT copy.\n");
}

static void print_json(const struct mig_bench *b)
{
	struct json_object *o = json_object_new_object(), *rows = json_object_new_array();

	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)b->len));
	json_object_object_add(o, "target_node", json_object_new_int(b->node));
	json_object_object_add(o, "ceiling_1t_bytes_per_s",
			       bench_json_rate(b->ceiling[0]));
	json_object_object_add(o, "ceiling_2t_bytes_per_s",
			       bench_json_rate(b->ceiling[1]));
	for (size_t i = 0; i < NCASES; i++) {
		struct json_object *r = json_object_new_object();
		const struct mig_result *m = &b->res[i];

		json_object_object_add(r, "case", json_object_new_string(cases[i].name));
		json_object_object_add(r, "bytes_moved", json_object_new_int64((int64_t)m->moved));
		json_object_object_add(r, "prepare_bytes_per_s",
				       bench_json_rate(m->prepare));
		json_object_object_add(r, "copy_swap_bytes_per_s",
				       bench_json_rate(m->copy));
		json_object_object_add(r, "all_bytes_per_s", bench_json_rate(m->all));
		json_object_object_add(r, "copy_swap_copy_share",
				       json_object_new_double(m->copy_share));
		json_object_object_add(r, "copy_swap_query_share",
				       json_object_new_double(m->query_share));
		json_object_array_add(rows, r);
	}
	json_object_object_add(o, "cases", rows);
	cli_json_print(o);
}

static int mig_parse(struct mig_bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "reps", required_argument, NULL, 'r' },
		{ "to-node", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "s:r:n:jh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_parse_size("--size", optarg, &b->len) < 0)
				return CLI_EXIT_USAGE;
			if (b->len < MEMMIG_UNIT_SIZE || b->len % MEMMIG_UNIT_SIZE) {
				cli_opt_error("--size", "a multiple of 2M\n");
				return CLI_EXIT_USAGE;
			}
			break;
		case 'r':
		case 'n':
			if (cli_parse_int(c == 'r' ? "--reps" : "--to-node", optarg,
					  c == 'r' ? 1 : 0, c == 'r' ? 31 : 1023, &v) < 0)
				return CLI_EXIT_USAGE;
			if (c == 'r')
				b->reps = (unsigned int)v;
			else
				b->node = (int)v;
			break;
		case 'j':
			b->json = true;
			break;
		case 'h':
			mig_usage(stdout);
			return CLI_HELP_SHOWN;
		default:
			mig_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	return optind < argc ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}

static int mig_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct mig_bench b = { .ctx = ctx, .len = 1UL << 30, .reps = 5 };
	struct memmig_region_desc d = { .sz = sizeof(d) };
	uint64_t sum;
	int rc = mig_parse(&b, argc, argv);

	if (rc)
		return cli_exit_code(rc);
	b.buf = bench_alloc(b.len);
	if (!b.buf) {
		cli_error("migrate: cannot allocate %zu MiB\n", b.len >> 20);
		return CLI_EXIT_FAIL;
	}
	bench_fill(b.buf, b.len, 0x6d6967);
	sum = bench_checksum(b.buf, b.len);
	d.addr = (uintptr_t)b.buf;
	d.len = b.len;
	rc = memmig_region_new(ctx, &d, &b.region);
	if (!rc) {
		bench_progress("bench migrate: ceiling");
		rc = measure_ceiling(&b);
	}
	for (size_t i = 0; !rc && i < NCASES; i++) {
		bench_progress("bench migrate: %s", cases[i].name);
		rc = run_case(&b, &cases[i], &b.res[i]);
	}
	bench_progress_done();
	if (!rc && bench_checksum(b.buf, b.len) != sum) {
		cli_error("migrate: the data changed: this is a bug\n");
		rc = -EIO;
	}
	if (!rc) {
		if (b.json)
			print_json(&b);
		else
			print_text(&b);
	} else if (rc != -EIO) {
		cli_error("migrate: %s\n", strerror(-rc));
	}
	memmig_region_unref(b.region);
	bench_free(b.buf, b.len);
	return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

const struct cli_cmd bench_cmd_migrate = {
	.name = "migrate",
	.summary = "migration strategies against the NT copy ceiling",
	.run = mig_run,
};
