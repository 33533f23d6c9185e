/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-bench copy: every primitive, memmig's dispatch and the peers
 * (glibc memcpy, libpmem) at each size, hot and cold, like the seed tables;
 * then 1 GiB in 2 MiB units against a per-4 KiB-page loop.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "util/size.h"

#define MAX_COPIERS 16
#define GIB (1UL << 30)

static const size_t short_sizes[] = {
	16, 64, 168, 256, 512, 1024, 2048, 4096, 64 << 10, 2 << 20, 1UL << 30,
};

enum mode { MODE_HOT = 1, MODE_COLD = 2 };

/* --pmem compares columns a few percent apart on a shared machine: many
 * short samples, so that a burst of other work spoils few of them. */
static const struct bench_opts pmem_opts = { .reps = 41, .sample_s = 0.001 };

struct copy_bench {
	struct memmig_ctx *ctx;
	struct copier copiers[MAX_COPIERS];
	unsigned int ncopiers;
	/* in copiers[]: memmig unflagged, memmig with MEMMIG_COPY_COLD */
	unsigned int memmig_idx, cold_idx, glibc_idx, pmem_idx;
	size_t *sizes;
	size_t nsizes;
	unsigned int modes;
	struct bench_opts opts;
	size_t pool_size;
	bool json, pmem, opts_set;	/* opts_set: --reps or --sample-ms */
	struct plot_out plot;
	/* results[mode][size][copier] */
	struct bench_stats *results[2];
};

static void copy_usage(FILE *f)
{
	fprintf(f,
		"Usage: memmig-bench copy [OPTIONS]\n"
		"Measures each copy primitive, memmig's dispatched copy (unflagged, and with\n"
		"MEMMIG_COPY_COLD as a migration copies), glibc memcpy and libpmem's\n"
		"pmem_memcpy (when built with libpmem), in GB/s (median of the samples,\n"
		"with the standard deviation in percent of the mean).  Copies above\n"
		"2 MiB go in 2 MiB units, as a migration copies them.  The last line is\n"
		"the dispatch at its worst against the better of glibc and its own best\n"
		"primitive: unflagged on hot copies, MEMMIG_COPY_COLD on cold ones.\n\n"
		"  --sizes LIST     comma-separated sizes (default: a short set, 16 B to 1 GiB)\n"
		"  --full           every power of two from 16 B to 1 GiB, and 168 B\n"
		"  --hot | --cold   only cache-hot, or only cold copies (default: both)\n"
		"  --reps N         samples per measurement (default 7)\n"
		"  --sample-ms MS   length of one sample (default 4)\n"
		"  --pool SIZE      cold pool, each of source and destination (default 1G)\n"
		"  --pmem           memmig's pmem copy against libpmem's NT pmem_memcpy\n"
		"                   and memmig's machine-check-safe copy (default sizes:\n"
		"                   powers of two, 256 B to 1 GiB; cold unless --hot;\n"
		"                   default 41 samples of 1 ms)\n"
		"  --calibrate      measure the dispatch thresholds on this CPU and write them\n"
		"  --output FILE    where --calibrate writes (default: %s)\n"
		"  --json           machine-readable output\n"
		PLOT_USAGE,
		memmig_tuning_default_path());
}

static void add_copier(struct copy_bench *b, const char *name,
		       enum copier_kind kind, int prim, unsigned int flags)
{
	b->copiers[b->ncopiers++] = (struct copier){
		.name = name, .kind = kind, .prim = prim, .ctx = b->ctx,
		.flags = flags,
	};
}

static void setup_copiers(struct copy_bench *b)
{
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };

	memmig_ctx_get_cpu(b->ctx, &cpu);
	for (int p = 0; p < MEMMIG_PRIM_COUNT; p++)
		if (p != MEMMIG_PRIM_GENERIC && memmig_prim_supported(&cpu, p))
			add_copier(b, memmig_prim_name(p), COPIER_PRIM, p, 0);
	b->memmig_idx = b->ncopiers;
	add_copier(b, "memmig", COPIER_MEMMIG, -1, 0);
	b->cold_idx = b->ncopiers;
	add_copier(b, "memmig-cold", COPIER_MEMMIG, -1, MEMMIG_COPY_COLD);
	b->glibc_idx = b->ncopiers;
	add_copier(b, "glibc", COPIER_GLIBC, -1, 0);
	b->pmem_idx = b->ncopiers;
	if (copier_pmem_available())
		add_copier(b, "libpmem-nt", COPIER_PMEM, -1, 0);
}

static struct bench_stats *cell(struct copy_bench *b, int m, size_t si,
				unsigned int ci)
{
	return &b->results[m][si * b->ncopiers + ci];
}

static int run_mode(struct copy_bench *b, int m, const struct bench_pool *pool)
{
	char sz[32];
	int rc;

	for (size_t si = 0; si < b->nsizes; si++) {
		size_t len = b->sizes[si];

		bench_progress("bench copy: %s %s", m ? "cold" : "hot",
			       util_size_format(len, sz, sizeof(sz)));
		/* Hot copies reuse the pool's start: the same lines each time. */
		if (m == 0)
			rc = bench_measure_hot(b->copiers, b->ncopiers, pool, len,
					       &b->opts, cell(b, m, si, 0));
		else
			rc = bench_measure_cold(b->copiers, b->ncopiers, pool, len,
						&b->opts, cell(b, m, si, 0));
		if (rc < 0)
			return rc;
	}
	bench_progress_done();
	return 0;
}

static const char *const mode_names[] = { "hot", "cold" };

/* What the tables fit in. */
#define TEXT_WIDTH 100

/* prefix and the items of a list ("a, b, c"), cut between items to fit
 * TEXT_WIDTH, the lines after the first indented. */
static void print_wrapped(const char *prefix, const char *list)
{
	size_t col = (size_t)printf("%s", prefix);
	bool fresh = true;

	while (*list) {
		const char *comma = strstr(list, ", ");
		/* an item with its comma */
		size_t n = comma ? (size_t)(comma - list) + 1 : strlen(list);

		if (!fresh && col + 1 + n > TEXT_WIDTH) {
			col = (size_t)printf("\n  ") - 1;
			fresh = true;
		}
		col += (size_t)printf("%s%.*s", fresh ? "" : " ", (int)n, list);
		fresh = false;
		list += n;
		while (*list == ' ')
			list++;
	}
	printf("\n");
}

/* Copier columns in one table, so that a table fits 100 columns; the JSON
 * has every column of a row in one object. */
#define TABLE_COPIERS 6

/* Copiers [first, end) of every size; the dispatch's choices with the last
 * part. */
static void print_part(struct copy_bench *b, int m, unsigned int first, unsigned int end)
{
	bool last = end == b->ncopiers;
	char sz[32];

	printf("%9s", "size");
	for (unsigned int ci = first; ci < end; ci++)
		printf(" %12s", b->copiers[ci].name);
	printf(last ? "  %-9s %s\n" : "\n", "dispatch", "cold");
	for (size_t si = 0; si < b->nsizes; si++) {
		printf("%9s", util_size_format(b->sizes[si], sz, sizeof(sz)));
		for (unsigned int ci = first; ci < end; ci++) {
			const struct bench_stats *s = cell(b, m, si, ci);

			printf(" %6.2f±%4.1f%%", s->median, s->sd_pct);
		}
		if (!last) {
			printf("\n");
			continue;
		}
		printf("  %-9s %s\n",
		       memmig_prim_name(memmig_copy_query(b->ctx, b->sizes[si], 0)),
		       memmig_prim_name(memmig_copy_query(b->ctx, b->sizes[si],
							  MEMMIG_COPY_COLD)));
	}
}

/* The primitives in even parts, then memmig's dispatch beside the peers. */
static void print_table(struct copy_bench *b, int m)
{
	unsigned int nprims = b->memmig_idx;
	unsigned int parts = (nprims + TABLE_COPIERS - 1) / TABLE_COPIERS;
	unsigned int per = parts ? (nprims + parts - 1) / parts : 0;

	printf("\n%s copies, GB/s (median ± SD%%)%s\n", mode_names[m],
	       m ? ": each copy at a new place in a pool far larger than the LLC" :
		   ": the same buffers again and again");
	for (unsigned int first = 0; first < nprims; first += per) {
		print_part(b, m, first, first + per < nprims ? first + per : nprims);
		printf("\n");
	}
	print_part(b, m, nprims, b->ncopiers);
}

/* The best primitive's median at one cell, and which one it was. */
static double best_prim(struct copy_bench *b, int m, size_t si, unsigned int *which)
{
	double best = 0;

	for (unsigned int ci = 0; ci < b->memmig_idx; ci++)
		if (cell(b, m, si, ci)->median > best) {
			best = cell(b, m, si, ci)->median;
			*which = ci;
		}
	return best;
}

/* The dispatch each mode is judged by: unflagged hot, MEMMIG_COPY_COLD cold. */
static unsigned int judged(const struct copy_bench *b, int m)
{
	return m ? b->cold_idx : b->memmig_idx;
}

/* The better of glibc and the best primitive at one cell. */
static unsigned int best_peer(struct copy_bench *b, int m, size_t si)
{
	unsigned int which = 0;
	double best = best_prim(b, m, si, &which);

	return cell(b, m, si, b->glibc_idx)->median > best ? b->glibc_idx : which;
}

static struct json_object *json_mode(struct copy_bench *b, int m)
{
	struct json_object *rows = json_object_new_array();

	for (size_t si = 0; si < b->nsizes; si++) {
		struct json_object *row = json_object_new_object(), *res = json_object_new_object();
		unsigned int best = 0;

		json_object_object_add(row, "size", json_object_new_int64((int64_t)b->sizes[si]));
		json_object_object_add(row, "dispatch", json_object_new_string(
			memmig_prim_name(memmig_copy_query(b->ctx, b->sizes[si], 0))));
		json_object_object_add(row, "dispatch_cold", json_object_new_string(
			memmig_prim_name(memmig_copy_query(b->ctx, b->sizes[si],
							   MEMMIG_COPY_COLD))));
		for (unsigned int ci = 0; ci < b->ncopiers; ci++)
			json_object_object_add(res, b->copiers[ci].name,
					       bench_json_stats(cell(b, m, si, ci)));
		json_object_object_add(row, "results", res);
		best_prim(b, m, si, &best);
		json_object_object_add(row, "memmig_vs_best_prim", json_object_new_double(
			bench_paired_ratio(cell(b, m, si, b->memmig_idx), cell(b, m, si, best))));
		/* The figure the last line gives: the judged dispatch against
		 * the better of glibc and the best primitive. */
		json_object_object_add(row, "judged", json_object_new_string(
			b->copiers[judged(b, m)].name));
		json_object_object_add(row, "peer", json_object_new_string(
			b->copiers[best_peer(b, m, si)].name));
		json_object_object_add(row, "vs_peer", json_object_new_double(
			bench_paired_ratio(cell(b, m, si, judged(b, m)),
					   cell(b, m, si, best_peer(b, m, si)))));
		json_object_array_add(rows, row);
	}
	return rows;
}

/* Where a column is furthest behind its peer (the best primitive, or with
 * glibc the better of the two), each ratio paired round by round, over
 * [from, to) of the sizes; *v is lowered where it finds worse. */
struct verdict {
	double ratio;
	int mode;
	size_t si;
	unsigned int peer;
};

static void worst_of(struct copy_bench *b, int m, unsigned int judged_idx,
		     size_t from, size_t to, bool with_glibc, struct verdict *v)
{
	for (size_t si = from; si < to; si++) {
		unsigned int peer = 0;
		double r;

		if (with_glibc)
			peer = best_peer(b, m, si);
		else
			best_prim(b, m, si, &peer);
		r = bench_paired_ratio(cell(b, m, si, judged_idx), cell(b, m, si, peer));
		if (r < v->ratio)
			*v = (struct verdict){ r, m, si, peer };
	}
}

static void print_dispatch_worst(struct copy_bench *b, int m, unsigned int judged_idx,
				 size_t from, size_t to, const char *what)
{
	struct verdict v = { .ratio = 1e9 };
	char sz[32];

	if (from >= to)
		return;
	worst_of(b, m, judged_idx, from, to, false, &v);
	printf("%s, %s: %s at its worst is %.3fx the best primitive "
	       "(%s, at %s)\n", mode_names[m], what, b->copiers[judged_idx].name, v.ratio,
	       b->copiers[v.peer].name,
	       util_size_format(b->sizes[v.si], sz, sizeof(sz)));
}

/*
 * Hot: every size.  Cold: the policy sees a length, not the cache, so below
 * the NT threshold the unflagged copy keeps cached stores (right when the
 * data is hot) and that part is reported apart; MEMMIG_COPY_COLD is what a
 * caller that knows says.
 */
static void print_dispatch_summary(struct copy_bench *b, int m)
{
	struct memmig_tuning t = { .sz = sizeof(t) };
	size_t nt_from = 0;

	if (m == 0) {
		print_dispatch_worst(b, m, b->memmig_idx, 0, b->nsizes, "all sizes");
		return;
	}
	memmig_ctx_get_tuning(b->ctx, &t);
	while (nt_from < b->nsizes && b->sizes[nt_from] < t.nt_min)
		nt_from++;
	print_dispatch_worst(b, m, b->memmig_idx, 0, nt_from, "below the NT threshold");
	print_dispatch_worst(b, m, b->memmig_idx, nt_from, b->nsizes,
			     "from the NT threshold");
	print_dispatch_worst(b, m, b->cold_idx, 0, b->nsizes, "all sizes");
}

/* Each mode's judged dispatch against the better of glibc and its own
 * best primitive, at its worst over every size and mode. */
static struct verdict dispatch_verdict(struct copy_bench *b)
{
	struct verdict v = { .ratio = 1e9 };

	for (int m = 0; m < 2; m++)
		if (b->modes & (1 << m))
			worst_of(b, m, judged(b, m), 0, b->nsizes, true, &v);
	return v;
}

static void print_verdict(struct copy_bench *b)
{
	struct verdict v = dispatch_verdict(b);
	char sz[32];

	printf("memmig's dispatch (hot: unflagged; cold: MEMMIG_COPY_COLD) at its worst "
	       "is %.3fx the better of glibc and its best primitive (%s %s, %s)\n",
	       v.ratio, mode_names[v.mode], util_size_format(b->sizes[v.si], sz, sizeof(sz)),
	       b->copiers[v.peer].name);
}

static struct json_object *json_verdict(struct copy_bench *b)
{
	struct verdict v = dispatch_verdict(b);
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "ratio", json_object_new_double(v.ratio));
	json_object_object_add(o, "mode", json_object_new_string(mode_names[v.mode]));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)b->sizes[v.si]));
	json_object_object_add(o, "peer", json_object_new_string(b->copiers[v.peer].name));
	return o;
}

/* 1 GiB (or the pool) cold: one call per 2 MiB unit against one per page. */
static const struct {
	const char *name;
	enum copier_kind kind;
} unit_rows[] = {
	{ "memmig, 2 MiB units", COPIER_MEMMIG },
	{ "memmig, 4 KiB pages", COPIER_MEMMIG_PAGES },
	{ "glibc, 2 MiB units", COPIER_GLIBC },
	{ "glibc, 4 KiB pages", COPIER_GLIBC_PAGES },
	{ "libpmem-nt, 2 MiB units", COPIER_PMEM },
};
#define N_UNIT_ROWS (sizeof(unit_rows) / sizeof(unit_rows[0]))

static int run_units(struct copy_bench *b, const struct bench_pool *pool,
		     struct bench_stats *out, unsigned int *nrows)
{
	size_t len = pool->size < GIB ? pool->size : GIB;
	struct copier cs[N_UNIT_ROWS];
	unsigned int n = 0;
	int rc;

	for (unsigned int i = 0; i < N_UNIT_ROWS; i++) {
		if (unit_rows[i].kind == COPIER_PMEM && !copier_pmem_available())
			continue;
		cs[n++] = (struct copier){ .name = unit_rows[i].name,
					   .kind = unit_rows[i].kind, .prim = -1,
					   .ctx = b->ctx };
	}
	bench_progress("bench copy: 2 MiB units against 4 KiB pages");
	rc = bench_measure_cold(cs, n, pool, len, &b->opts, out);
	bench_progress_done();
	*nrows = n;
	return rc;
}

static unsigned int unit_row_index(const char *name, unsigned int nrows)
{
	for (unsigned int i = 0; i < nrows; i++)
		if (!strcmp(unit_rows[i].name, name))
			return i;
	return nrows;
}

static void print_units(const struct bench_pool *pool,
			const struct bench_stats *st, unsigned int nrows)
{
	size_t len = pool->size < GIB ? pool->size : GIB;
	unsigned int g = unit_row_index("glibc, 2 MiB units", nrows);
	unsigned int p = unit_row_index("libpmem-nt, 2 MiB units", nrows);
	char sz[32];

	printf("\ncold %s, batched units against a per-page loop\n",
	       util_size_format(len, sz, sizeof(sz)));
	printf("%-26s %9s %7s %10s\n", "copy", "GB/s", "SD%", "vs pages");
	for (unsigned int i = 0; i < nrows; i++)
		printf("%-26s %9.2f %6.1f%% %9.2fx\n", unit_rows[i].name,
		       st[i].median, st[i].sd_pct, bench_paired_ratio(&st[i], &st[1]));
	printf("\nmemmig in 2 MiB units: %.2fx glibc memcpy",
	       bench_paired_ratio(&st[0], &st[g]));
	if (p < nrows)
		printf(", %.2fx libpmem's NT memcpy", bench_paired_ratio(&st[0], &st[p]));
	printf(" (cold, %s)\n", util_size_format(len, sz, sizeof(sz)));
}

static struct json_object *json_units(const struct bench_stats *st,
				      unsigned int nrows)
{
	struct json_object *rows = json_object_new_array();

	for (unsigned int i = 0; i < nrows; i++) {
		struct json_object *o = bench_json_stats(&st[i]);

		json_object_object_add(o, "copy", json_object_new_string(unit_rows[i].name));
		json_object_array_add(rows, o);
	}
	return rows;
}

static int parse_args(struct copy_bench *b, int argc, char **argv,
		      bool *calibrate, const char **output)
{
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "full", no_argument, NULL, 'f' },
		{ "hot", no_argument, NULL, 'H' },
		{ "cold", no_argument, NULL, 'C' },
		{ "reps", required_argument, NULL, 'r' },
		{ "sample-ms", required_argument, NULL, 'm' },
		{ "pool", required_argument, NULL, 'p' },
		{ "calibrate", no_argument, NULL, 'c' },
		{ "pmem", no_argument, NULL, 'P' },
		{ "output", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		PLOT_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "s:fHCr:m:p:co:jh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			free(b->sizes);
			b->sizes = NULL;
			if (cli_parse_size_list("--sizes", optarg, &b->sizes, &b->nsizes) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'f':
			free(b->sizes);
			b->nsizes = 0;
			b->sizes = calloc(32, sizeof(*b->sizes));
			if (!b->sizes)
				return CLI_EXIT_FAIL;
			for (size_t n = 16; n <= GIB; n *= 2) {
				b->sizes[b->nsizes++] = n;
				if (n == 128)
					b->sizes[b->nsizes++] = 168;
			}
			break;
		case 'H':
			b->modes = MODE_HOT;
			break;
		case 'C':
			b->modes = MODE_COLD;
			break;
		case 'r':
		case 'm':
			if (cli_parse_int(c == 'r' ? "--reps" : "--sample-ms", optarg,
					  1, 1000, &v) < 0)
				return CLI_EXIT_USAGE;
			b->opts_set = true;
			if (c == 'r')
				b->opts.reps = (unsigned int)v;
			else
				b->opts.sample_s = v / 1000.0;
			break;
		case 'p':
			if (cli_parse_size("--pool", optarg, &b->pool_size) < 0)
				return CLI_EXIT_USAGE;
			if (b->pool_size < MEMMIG_UNIT_SIZE) {
				cli_opt_error("--pool", "at least 2M\n");
				return CLI_EXIT_USAGE;
			}
			break;
		case 'c':
			*calibrate = true;
			break;
		case 'P':
			b->pmem = true;
			break;
		case 'o':
			*output = optarg;
			break;
		case 'j':
			b->json = true;
			break;
		case 'h':
			copy_usage(stdout);
			return CLI_HELP_SHOWN;
		case PLOT_OPT_FILE:
		case PLOT_OPT_DATA:
			plot_opt(&b->plot, c, optarg);
			break;
		default:
			copy_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("copy: unexpected argument '%s'\n", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

static int copy_report(struct copy_bench *b, const struct bench_pool *pool,
		       const struct bench_stats *units, unsigned int nunits)
{
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
	struct memmig_tuning t = { .sz = sizeof(t) };

	memmig_ctx_get_cpu(b->ctx, &cpu);
	memmig_ctx_get_tuning(b->ctx, &t);
	if (b->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "cpu", cli_json_cpu(&cpu));
		json_object_object_add(o, "library", json_object_new_string(bench_library()));
		json_object_object_add(o, "tuning", cli_json_tuning(&t));
		json_object_object_add(o, "pool_bytes", json_object_new_int64((int64_t)pool->size));
		for (int m = 0; m < 2; m++)
			if (b->modes & (1 << m))
				json_object_object_add(o, mode_names[m], json_mode(b, m));
		if (nunits)
			json_object_object_add(o, "units", json_units(units, nunits));
		json_object_object_add(o, "dispatch_worst", json_verdict(b));
		cli_json_print(o);
		return CLI_EXIT_OK;
	}
	char th[256];

	printf("memmig bench copy: %s family %#x model %#x, LLC %zu MiB\n",
	       cpu.vendor, cpu.family, cpu.model, cpu.llc_size >> 20);
	printf("library: %s %s\n", bench_library(), memmig_version());
	print_wrapped("thresholds: ", cli_thresholds(b->ctx, &t, th, sizeof(th)));
	for (int m = 0; m < 2; m++)
		if (b->modes & (1 << m))
			print_table(b, m);
	if (nunits)
		print_units(pool, units, nunits);
	printf("\n");
	for (int m = 0; m < 2; m++)
		if (b->modes & (1 << m))
			print_dispatch_summary(b, m);
	print_verdict(b);
	return CLI_EXIT_OK;
}

/* Bandwidth against size, a panel per mode, a line per copier. */
static int copy_plot(struct copy_bench *b, const struct bench_pool *pool)
{
	struct plot *p = plot_new("memmig bench copy");
	char title[160], sz[32];
	int rc;

	for (int m = 0; m < 2; m++) {
		if (!(b->modes & (1 << m)))
			continue;
		if (m)
			snprintf(title, sizeof(title), "cold copies: each at a new place of a "
				 "2 x %s pool (median of %u samples)",
				 util_size_format(pool->size, sz, sizeof(sz)), b->opts.reps);
		else
			snprintf(title, sizeof(title), "hot copies: the same buffers again "
				 "and again (median of %u samples)", b->opts.reps);
		plot_panel(p, title, "copy size (bytes, log scale)",
			   "bandwidth (GB/s, 10^9 bytes/s)", PLOT_LOGX | PLOT_SIZES);
		bench_plot_copiers(p, b->copiers, b->ncopiers, b->sizes, b->nsizes,
				   b->results[m], b->ncopiers);
	}
	rc = plot_emit(p, &b->plot, "copy");
	plot_free(p);
	return rc;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return (x > y) - (x < y);
}

static int copy_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct copy_bench b = {
		.ctx = ctx,
		.modes = MODE_HOT | MODE_COLD,
		.opts = { .reps = 7, .sample_s = 0.004 },
		.pool_size = GIB,
	};
	struct bench_stats units[N_UNIT_ROWS];
	struct bench_pool pool = { 0 };
	unsigned int nunits = 0;
	const char *output = NULL;
	bool calibrate = false;
	size_t max = 0;
	int rc;

	rc = parse_args(&b, argc, argv, &calibrate, &output);
	if (!rc && calibrate && plot_wanted(&b.plot)) {
		cli_error("copy: --plot is for the measurements, not --calibrate\n");
		rc = CLI_EXIT_USAGE;
	}
	if (!rc)
		rc = plot_check(&b.plot, "copy");
	if (rc)
		goto out;
	if (calibrate) {
		rc = bench_calibrate(ctx, output ? output : memmig_tuning_default_path(),
				     b.json) < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
		goto out;
	}
	if (b.sizes)
		qsort(b.sizes, b.nsizes, sizeof(*b.sizes), cmp_size);
	if (b.pmem) {
		struct pmem_bench_args pa = { .sizes = b.sizes, .nsizes = b.nsizes,
			.opts = b.opts_set ? b.opts : pmem_opts, .pool_size = b.pool_size,
			.hot = b.modes == MODE_HOT, .json = b.json, .plot = &b.plot };

		rc = bench_pmem(ctx, &pa);
		goto out;
	}
	if (!b.sizes) {
		b.nsizes = sizeof(short_sizes) / sizeof(short_sizes[0]);
		b.sizes = malloc(sizeof(short_sizes));
		if (!b.sizes) {
			rc = CLI_EXIT_FAIL;
			goto out;
		}
		memcpy(b.sizes, short_sizes, sizeof(short_sizes));
	}
	max = b.sizes[b.nsizes - 1];
	if (max > b.pool_size)
		b.pool_size = max;
	setup_copiers(&b);
	rc = bench_pool_init(&pool, b.pool_size);
	if (rc < 0) {
		cli_error("copy: cannot allocate 2 x %zu MiB: %s\n",
			  b.pool_size >> 20, strerror(-rc));
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	for (int m = 0; m < 2; m++) {
		if (!(b.modes & (1 << m)))
			continue;
		b.results[m] = calloc(b.nsizes * b.ncopiers, sizeof(struct bench_stats));
		if (!b.results[m] || run_mode(&b, m, &pool) < 0) {
			cli_error("copy: out of memory\n");
			rc = CLI_EXIT_FAIL;
			goto out;
		}
	}
	if ((b.modes & MODE_COLD) && run_units(&b, &pool, units, &nunits) < 0) {
		cli_error("copy: out of memory\n");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	rc = copy_report(&b, &pool, units, nunits);
	if (plot_wanted(&b.plot) && copy_plot(&b, &pool) < 0)
		rc = CLI_EXIT_FAIL;
out:
	bench_pool_fini(&pool);
	for (int m = 0; m < 2; m++)
		if (b.results[m])
			bench_stats_free(b.results[m], b.nsizes * b.ncopiers);
	bench_stats_free(units, nunits);
	free(b.results[0]);
	free(b.results[1]);
	free(b.sizes);
	return cli_exit_code(rc);
}

const struct cli_cmd bench_cmd_copy = {
	.name = "copy",
	.summary = "copy primitives, dispatch, glibc and libpmem; --calibrate",
	.run = copy_run,
};
