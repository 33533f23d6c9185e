/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-bench copy --pmem: memmig's pmem copy (memmig_copy_run with
 * MEMMIG_COPY_PMEM) beside libpmem's pmem_memcpy(PMEM_F_MEM_NONTEMPORAL)
 * and memmig's machine-check-safe copy (memmig_copy_mc with
 * MEMMIG_COPY_PMEM), call by call and in a batch (memmig_copy_mc_begin()),
 * size by size, in one run, samples interleaved.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "bench/bench.h"
#include "util/size.h"

#define PMEM_MIN_SIZE 256
#define PMEM_MAX_SIZE (1UL << 30)

/* The machine-check-safe copy may cost this much over the plain one: 5%
 * from 4 KiB, twice the time below. */
#define MC_GOAL_PCT 5.0
#define MC_SMALL_GOAL_PCT 100.0
#define MC_SMALL_BELOW 4096

enum { COL_MEMMIG, COL_PMEM, COL_MC, COL_MC_BATCH, COL_COUNT };

struct pmem_bench {
	const struct pmem_bench_args *a;
	size_t *sizes;
	size_t nsizes;
	struct copier cs[COL_COUNT];
	unsigned int ncols;
	int at[COL_COUNT];	/* column -> index in cs, -1: absent */
	struct bench_stats *st;	/* st[size * COL_COUNT + index in cs] */
	struct bench_pool pool;
};

static bool has(const struct pmem_bench *b, int col)
{
	return b->at[col] >= 0;
}

static struct bench_stats *st_at(struct pmem_bench *b, size_t si, int col)
{
	return &b->st[si * COL_COUNT + (unsigned int)b->at[col]];
}

static int default_sizes(struct pmem_bench *b)
{
	b->sizes = calloc(32, sizeof(*b->sizes));
	if (!b->sizes)
		return -1;
	for (size_t n = PMEM_MIN_SIZE; n <= PMEM_MAX_SIZE; n *= 2)
		b->sizes[b->nsizes++] = n;
	return 0;
}

static void add(struct pmem_bench *b, int col, const char *name,
		enum copier_kind kind, struct memmig_ctx *ctx, unsigned int flags)
{
	b->at[col] = (int)b->ncols;
	b->cs[b->ncols++] = (struct copier){ .name = name, .kind = kind,
		.prim = -1, .ctx = ctx, .flags = flags };
}

static void setup(struct pmem_bench *b, struct memmig_ctx *ctx)
{
	for (int c = 0; c < COL_COUNT; c++)
		b->at[c] = -1;
	add(b, COL_MEMMIG, "memmig-pmem", COPIER_MEMMIG, ctx, MEMMIG_COPY_PMEM);
	if (copier_pmem_available())
		add(b, COL_PMEM, "libpmem-nt", COPIER_PMEM, ctx, 0);
	add(b, COL_MC, "memmig-mc", COPIER_MC, ctx, MEMMIG_COPY_PMEM);
	add(b, COL_MC_BATCH, "memmig-mc-batch", COPIER_MC_BATCH, ctx, MEMMIG_COPY_PMEM);
}

static int measure_all(struct pmem_bench *b)
{
	char sz[32];
	int rc = 0;

	for (size_t si = 0; si < b->nsizes && !rc; si++) {
		size_t len = b->sizes[si];

		bench_progress("bench copy --pmem: %s",
			       util_size_format(len, sz, sizeof(sz)));
		if (b->a->hot)
			rc = bench_measure_hot(b->cs, b->ncols, &b->pool, len,
					       &b->a->opts, &b->st[si * COL_COUNT]);
		else
			rc = bench_measure_cold(b->cs, b->ncols, &b->pool, len,
						&b->a->opts, &b->st[si * COL_COUNT]);
	}
	bench_progress_done();
	return rc;
}

/* memmig over libpmem, paired round by round; 0 without libpmem. */
static double ratio_pmem(struct pmem_bench *b, size_t si)
{
	if (!has(b, COL_PMEM))
		return 0;
	return bench_paired_ratio(st_at(b, si, COL_MEMMIG), st_at(b, si, COL_PMEM));
}

/* Percent more time a machine-check-safe column takes, paired. */
static double mc_overhead_pct(struct pmem_bench *b, size_t si, int col)
{
	return 100 * (bench_paired_ratio(st_at(b, si, COL_MEMMIG), st_at(b, si, col)) - 1);
}

/* What libpmem is doing on this machine: it has no pmem. */
static void pmem_facts(const struct pmem_bench *b, int *is_pmem, int *auto_flush)
{
	bench_pmem_facts(b->pool.dst, b->pool.size, is_pmem, auto_flush);
}

static const char *flush_name(struct memmig_ctx *ctx)
{
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };

	memmig_ctx_get_cpu(ctx, &cpu);
	if (cpu.features & MEMMIG_CPU_CLWB)
		return "clwb";
	if (cpu.features & MEMMIG_CPU_CLFLUSHOPT)
		return "clflushopt";
	return cpu.features & MEMMIG_CPU_CLFLUSH ? "clflush" : "none";
}

static const char *placement(const struct pmem_bench *b)
{
	return b->a->hot ? "hot: the same buffers again and again" :
			   "cold: each copy at a new place of a pool far larger than the LLC";
}

/* The primitive memmig's pmem copy runs at one size. */
static const char *prim_of(const struct pmem_bench *b, struct memmig_ctx *ctx,
			   size_t si)
{
	return memmig_prim_name(memmig_copy_query(ctx, b->sizes[si], MEMMIG_COPY_PMEM));
}

/* Sizes from one 2 MiB unit up: where the MC goal is judged. */
static bool mc_judged(const struct pmem_bench *b, size_t si)
{
	return b->sizes[si] >= MEMMIG_UNIT_SIZE;
}

static void print_json(struct pmem_bench *b, struct memmig_ctx *ctx)
{
	struct json_object *o = json_object_new_object(), *rows = json_object_new_array();
	int is_pmem, auto_flush;

	pmem_facts(b, &is_pmem, &auto_flush);
	json_object_object_add(o, "mode", json_object_new_string(b->a->hot ? "hot" : "cold"));
	json_object_object_add(o, "pool_bytes", json_object_new_int64((int64_t)b->pool.size));
	json_object_object_add(o, "unit_bytes", json_object_new_int64(MEMMIG_UNIT_SIZE));
	json_object_object_add(o, "flush", json_object_new_string(flush_name(ctx)));
	json_object_object_add(o, "libpmem", json_object_new_boolean(has(b, COL_PMEM)));
	json_object_object_add(o, "pmem_is_pmem", json_object_new_int(is_pmem));
	json_object_object_add(o, "pmem_has_auto_flush", json_object_new_int(auto_flush));
	json_object_object_add(o, "mc_goal_pct", json_object_new_double(MC_GOAL_PCT));
	json_object_object_add(o, "mc_small_goal_pct", json_object_new_double(MC_SMALL_GOAL_PCT));
	for (size_t si = 0; si < b->nsizes; si++) {
		struct json_object *r = json_object_new_object();

		json_object_object_add(r, "size", json_object_new_int64((int64_t)b->sizes[si]));
		json_object_object_add(r, "memmig_prim", json_object_new_string(prim_of(b, ctx, si)));
		for (unsigned int c = 0; c < b->ncols; c++)
			json_object_object_add(r, b->cs[c].name,
					       bench_json_stats(&b->st[si * COL_COUNT + c]));
		if (has(b, COL_PMEM))
			json_object_object_add(r, "memmig_vs_libpmem",
					       json_object_new_double(ratio_pmem(b, si)));
		json_object_object_add(r, "mc_overhead_pct",
				       json_object_new_double(mc_overhead_pct(b, si, COL_MC)));
		json_object_object_add(r, "mc_batch_overhead_pct",
				       json_object_new_double(mc_overhead_pct(b, si, COL_MC_BATCH)));
		json_object_object_add(r, "mc_in_units", json_object_new_boolean(mc_judged(b, si)));
		json_object_array_add(rows, r);
	}
	json_object_object_add(o, "rows", rows);
	cli_json_print(o);
}

static void print_header(struct pmem_bench *b, struct memmig_ctx *ctx)
{
	int is_pmem, auto_flush;
	char sz[32];

	pmem_facts(b, &is_pmem, &auto_flush);
	printf("memmig bench copy --pmem: memmig_copy_run(MEMMIG_COPY_PMEM): NT stores, "
	       "%s for partial lines, one sfence per call;\n"
	       "memmig-mc: memmig_copy_mc(MEMMIG_COPY_PMEM), the machine-check-safe "
	       "copy, on clean memory; batch: the same calls between\n"
	       "memmig_copy_mc_begin() and _end() (the guard's system calls once).\n"
	       "Copies above 2 MiB go by 2 MiB units (memmig_copy_units, "
	       "memmig_copy_mc; libpmem per unit), one drain at the end.\n",
	       flush_name(ctx));
	if (has(b, COL_PMEM))
		printf("Peer: libpmem pmem_memcpy(PMEM_F_MEM_NONTEMPORAL).  No pmem on "
		       "this machine: all write DRAM (pmem_is_pmem %d, auto-flush %d); "
		       "pmem_memcpy flushes whatever pmem_is_pmem says.\n",
		       is_pmem, auto_flush);
	else
		printf("Peer: none (built without libpmem).\n");
	printf("%s (pool 2 x %s).\n\n", placement(b),
	       util_size_format(b->pool.size, sz, sizeof(sz)));
}

/* A machine-check-safe column's worst cost against its goal, from 4 KiB
 * (small false) or below it. */
static void print_mc_goal(struct pmem_bench *b, int col, bool small)
{
	double worst = -1e9;
	size_t at = 0;
	char sz[32];

	for (size_t si = 0; si < b->nsizes; si++) {
		double ov = mc_overhead_pct(b, si, col);

		if ((b->sizes[si] < MC_SMALL_BELOW) == small && ov > worst) {
			worst = ov;
			at = si;
		}
	}
	if (worst > -1e9)
		printf("%s cost %s 4 KiB at its worst: %+.1f%% at %s (goal: <= %.0f%%)\n",
		       b->cs[b->at[col]].name, small ? "below" : "from", worst,
		       util_size_format(b->sizes[at], sz, sizeof(sz)),
		       small ? MC_SMALL_GOAL_PCT : MC_GOAL_PCT);
}

static void print_table(struct pmem_bench *b, struct memmig_ctx *ctx)
{
	double worst = 1e9;
	size_t worst_si = 0;
	char sz[32];

	print_header(b, ctx);
	printf("GB/s (median ± SD%%)\n");
	printf("%9s %-9s %12s %12s %9s %12s %8s %12s %8s\n", "size", "memmig", "memmig",
	       "libpmem", "ratio", "memmig-mc", "mc cost", "batch", "cost");
	for (size_t si = 0; si < b->nsizes; si++) {
		const struct bench_stats *m = st_at(b, si, COL_MEMMIG), *mc = st_at(b, si, COL_MC);
		const struct bench_stats *mb = st_at(b, si, COL_MC_BATCH);
		double r = ratio_pmem(b, si);

		printf("%9s %-9s %6.2f±%4.1f%%",
		       util_size_format(b->sizes[si], sz, sizeof(sz)),
		       prim_of(b, ctx, si), m->median, m->sd_pct);
		if (has(b, COL_PMEM))
			printf(" %6.2f±%4.1f%% %8.3fx", st_at(b, si, COL_PMEM)->median,
			       st_at(b, si, COL_PMEM)->sd_pct, r);
		else
			printf(" %12s %9s", "-", "-");
		printf(" %6.2f±%4.1f%% %+7.1f%% %6.2f±%4.1f%% %+7.1f%%\n", mc->median,
		       mc->sd_pct, mc_overhead_pct(b, si, COL_MC), mb->median, mb->sd_pct,
		       mc_overhead_pct(b, si, COL_MC_BATCH));
		if (has(b, COL_PMEM) && r < worst) {
			worst = r;
			worst_si = si;
		}
	}
	printf("\nratio: memmig over libpmem, and mc cost: memmig-mc's extra time over "
	       "memmig, both paired round by round.\n");
	if (has(b, COL_PMEM))
		printf("memmig/libpmem at its worst: %.3fx at %s (goal: >= 1 at every size)\n",
		       worst, util_size_format(b->sizes[worst_si], sz, sizeof(sz)));
	for (int col = COL_MC; col <= COL_MC_BATCH; col++) {
		print_mc_goal(b, col, false);
		print_mc_goal(b, col, true);
	}
}

/* Bandwidth against size, a line per column. */
static int plot_pmem(struct pmem_bench *b)
{
	struct plot *p = plot_new("memmig bench copy --pmem");
	char title[160], sz[32];
	int rc;

	snprintf(title, sizeof(title), "pmem copies, %s (pool 2 x %s, median of %u samples)",
		 b->a->hot ? "hot" : "cold", util_size_format(b->pool.size, sz, sizeof(sz)),
		 b->a->opts.reps);
	plot_panel(p, title, "copy size (bytes, log scale)", "bandwidth (GB/s, 10^9 bytes/s)",
		   PLOT_LOGX | PLOT_SIZES);
	bench_plot_copiers(p, b->cs, b->ncols, b->sizes, b->nsizes, b->st, COL_COUNT);
	rc = plot_emit(p, b->a->plot, "bench copy --pmem");
	plot_free(p);
	return rc;
}

int bench_pmem(struct memmig_ctx *ctx, const struct pmem_bench_args *a)
{
	struct pmem_bench b = { .a = a };
	size_t pool_size = a->pool_size;
	int rc = CLI_EXIT_FAIL;

	if (a->sizes) {
		b.sizes = malloc(a->nsizes * sizeof(*b.sizes));
		if (!b.sizes)
			goto out;
		memcpy(b.sizes, a->sizes, a->nsizes * sizeof(*b.sizes));
		b.nsizes = a->nsizes;
	} else if (default_sizes(&b) < 0) {
		goto out;
	}
	for (size_t si = 0; si < b.nsizes; si++)
		if (b.sizes[si] > pool_size)
			pool_size = b.sizes[si];
	setup(&b, ctx);
	b.st = calloc(b.nsizes * COL_COUNT, sizeof(*b.st));
	if (!b.st || bench_pool_init(&b.pool, pool_size) < 0) {
		cli_error("copy --pmem: cannot allocate 2 x %zu MiB\n",
			  pool_size >> 20);
		goto out;
	}
	if (measure_all(&b) < 0) {
		cli_error("copy --pmem: out of memory\n");
		goto out;
	}
	if (a->json)
		print_json(&b, ctx);
	else
		print_table(&b, ctx);
	rc = CLI_EXIT_OK;
	if (a->plot && plot_wanted(a->plot) && plot_pmem(&b) < 0)
		rc = CLI_EXIT_FAIL;
out:
	bench_pool_fini(&b.pool);
	if (b.st)
		bench_stats_free(b.st, b.nsizes * COL_COUNT);
	free(b.st);
	free(b.sizes);
	return rc;
}
