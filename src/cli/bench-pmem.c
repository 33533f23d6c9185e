/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli bench copy --pmem: memmig's pmem copy (memmig_copy_run with
 * MEMMIG_COPY_PMEM) beside libpmem's pmem_memcpy(PMEM_F_MEM_NONTEMPORAL),
 * size by size, in one run, samples interleaved.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "bench.h"
#include "shared/size.h"

#ifdef HAVE_LIBPMEM
#include <libpmem.h>
#endif

#define PMEM_MIN_SIZE 256
#define PMEM_MAX_SIZE (1UL << 30)

enum { COL_MEMMIG, COL_PMEM, COL_COUNT };

struct pmem_bench {
	const struct pmem_bench_args *a;
	size_t *sizes;
	size_t nsizes;
	struct copier cs[COL_COUNT];
	unsigned int ncols;	/* COL_PMEM only with libpmem */
	struct bench_stats *st;	/* st[size * COL_COUNT + col] */
	struct bench_pool pool;
};

static struct bench_stats *st_at(struct pmem_bench *b, size_t si, unsigned int col)
{
	return &b->st[si * COL_COUNT + col];
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

static void setup(struct pmem_bench *b, struct memmig_ctx *ctx)
{
	b->cs[COL_MEMMIG] = (struct copier){ .name = "memmig-pmem",
		.kind = COPIER_MEMMIG, .prim = -1, .ctx = ctx,
		.flags = MEMMIG_COPY_PMEM };
	b->cs[COL_PMEM] = (struct copier){ .name = "libpmem-nt",
		.kind = COPIER_PMEM, .prim = -1, .ctx = ctx };
	b->ncols = copier_pmem_available() ? COL_PMEM + 1 : COL_PMEM;
}

static int measure_all(struct pmem_bench *b)
{
	char sz[32];
	int rc = 0;

	for (size_t si = 0; si < b->nsizes && !rc; si++) {
		size_t len = b->sizes[si];

		bench_progress("bench copy --pmem: %s",
			       memmig_size_format(len, sz, sizeof(sz)));
		if (b->a->hot)
			rc = bench_measure_hot(b->cs, b->ncols, b->pool.dst,
					       b->pool.src, len, &b->a->opts,
					       st_at(b, si, 0));
		else
			rc = bench_measure_cold(b->cs, b->ncols, &b->pool, len,
						&b->a->opts, st_at(b, si, 0));
	}
	bench_progress_done();
	return rc;
}

/* memmig over libpmem, paired round by round; 0 without libpmem. */
static double ratio_pmem(struct pmem_bench *b, size_t si)
{
	if (b->ncols <= COL_PMEM)
		return 0;
	return bench_paired_ratio(st_at(b, si, COL_MEMMIG), st_at(b, si, COL_PMEM));
}

/* What libpmem is doing on this machine: it has no pmem. */
static void pmem_facts(const struct pmem_bench *b, int *is_pmem, int *auto_flush)
{
	*is_pmem = *auto_flush = -1;
#ifdef HAVE_LIBPMEM
	*is_pmem = pmem_is_pmem(b->pool.dst, b->pool.size);
	*auto_flush = pmem_has_auto_flush();
#endif
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

static void print_json(struct pmem_bench *b, struct memmig_ctx *ctx)
{
	struct json_object *o = json_object_new_object(), *rows = json_object_new_array();
	int is_pmem, auto_flush;

	pmem_facts(b, &is_pmem, &auto_flush);
	json_object_object_add(o, "mode", json_object_new_string(b->a->hot ? "hot" : "cold"));
	json_object_object_add(o, "pool_bytes", json_object_new_int64((int64_t)b->pool.size));
	json_object_object_add(o, "unit_bytes", json_object_new_int64(MEMMIG_UNIT_SIZE));
	json_object_object_add(o, "flush", json_object_new_string(flush_name(ctx)));
	json_object_object_add(o, "libpmem", json_object_new_boolean(b->ncols > COL_PMEM));
	json_object_object_add(o, "pmem_is_pmem", json_object_new_int(is_pmem));
	json_object_object_add(o, "pmem_has_auto_flush", json_object_new_int(auto_flush));
	for (size_t si = 0; si < b->nsizes; si++) {
		struct json_object *r = json_object_new_object();

		json_object_object_add(r, "size", json_object_new_int64((int64_t)b->sizes[si]));
		for (unsigned int c = 0; c < b->ncols; c++)
			json_object_object_add(r, b->cs[c].name,
					       bench_json_stats(st_at(b, si, c)));
		if (b->ncols > COL_PMEM)
			json_object_object_add(r, "memmig_vs_libpmem",
					       json_object_new_double(ratio_pmem(b, si)));
		json_object_array_add(rows, r);
	}
	json_object_object_add(o, "rows", rows);
	cli_json_print(o);
}

static void print_table(struct pmem_bench *b, struct memmig_ctx *ctx)
{
	double worst = 1e9;
	size_t worst_si = 0;
	int is_pmem, auto_flush;
	char sz[32];

	pmem_facts(b, &is_pmem, &auto_flush);
	printf("memmig bench copy --pmem: NT stores, %s for partial lines, one sfence "
	       "per call (copies above 2 MiB: one call per 2 MiB unit, one drain)\n",
	       flush_name(ctx));
	if (b->ncols > COL_PMEM)
		printf("peer: libpmem pmem_memcpy(PMEM_F_MEM_NONTEMPORAL); no pmem here, "
		       "both write DRAM (pmem_is_pmem %d, auto-flush %d): libpmem "
		       "flushes whatever pmem_is_pmem says\n", is_pmem, auto_flush);
	else
		printf("peer: none (built without libpmem)\n");
	printf("%s (pool 2 x %s)\n\n", placement(b),
	       memmig_size_format(b->pool.size, sz, sizeof(sz)));
	printf("%9s %15s %15s %15s\n", "size", "memmig GB/s", "libpmem GB/s",
	       "memmig/libpmem");
	for (size_t si = 0; si < b->nsizes; si++) {
		printf("%9s", memmig_size_format(b->sizes[si], sz, sizeof(sz)));
		for (unsigned int c = 0; c < COL_COUNT; c++) {
			const struct bench_stats *s = st_at(b, si, c);

			if (c < b->ncols)
				printf(" %8.2f ±%4.1f%%", s->median, s->sd_pct);
			else
				printf(" %15s", "-");
		}
		if (b->ncols > COL_PMEM) {
			double r = ratio_pmem(b, si);

			printf(" %14.3fx", r);
			if (r < worst) {
				worst = r;
				worst_si = si;
			}
		}
		printf("\n");
	}
	if (b->ncols > COL_PMEM)
		printf("\nmemmig/libpmem at its worst: %.3fx at %s (ratios paired "
		       "round by round; >= 1 is the goal)\n", worst,
		       memmig_size_format(b->sizes[worst_si], sz, sizeof(sz)));
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
		cli_error("bench copy --pmem: cannot allocate 2 x %zu MiB\n",
			  pool_size >> 20);
		goto out;
	}
	if (measure_all(&b) < 0) {
		cli_error("bench copy --pmem: out of memory\n");
		goto out;
	}
	if (a->json)
		print_json(&b, ctx);
	else
		print_table(&b, ctx);
	rc = CLI_EXIT_OK;
out:
	bench_pool_fini(&b.pool);
	if (b.st)
		bench_stats_free(b.st, b.nsizes * COL_COUNT);
	free(b.st);
	free(b.sizes);
	return rc;
}
