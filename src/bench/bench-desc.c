/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-bench desc: the descriptor table of a 100 GiB device region
 * (26,214,400 descriptors, 1.6 GB) initialized by the template path, with
 * NT stores and with plain (temporal) ones, and by the field-by-field slow
 * path, against a memset of the same bytes with each kind of store (the
 * ceilings: the right peer is the memset with the stores that win here),
 * each on one thread and on several (the zone-device memmap thread,
 * docs/sources.md).  The table
 * is allocated and first touched once: the kernel zeroing fresh pages is
 * reported apart, not mixed into the init bandwidth.  The region itself is
 * a reserved, never touched mapping.
 */
#include "config.h"	/* _GNU_SOURCE: sched_getaffinity */

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bench/bench.h"
#include "util/size.h"

#define MAX_REPS 31
#define SEED_SLOW_MS 244.28	/* docs/sources.md: nd_pmem rebind, 100 GB */
#define SEED_TEMPLATE_MS 96.79

/*
 * Ceilings: the raw NT memset (zeros), a memset with plain stores
 * (where plain stores win, as on AMD Zen 5, it is the peer), and one
 * initialized descriptor stored unpatched with the stores the tuning
 * picked.  Zeros and descriptors differ on some machines: one wrote zero
 * lines faster than lines with data (docs/desc-tables.md).
 */
enum { CASE_TEMPLATE_NT, CASE_TEMPLATE_TMP, CASE_TUNED, CASE_SLOW, CASE_MEMSET_NT,
       CASE_MEMSET_TMP, CASE_LINE, NCASES };
static const char *const case_names[NCASES] = {
	"template/NT", "template/temporal", "as tuned", "slow", "NT memset",
	"temporal memset", "desc store",
};
#define NTEMPLATES 2	/* CASE_TEMPLATE_NT + store kind */

/* Stores the 64-byte line over [p, p + len) (NT stores: then drains). */
typedef void (*line_fn)(uint8_t *p, size_t len, const void *line);

struct desc_bench {
	struct memmig_ctx *ctx;
	uint64_t region_len;
	unsigned int threads[2];	/* 1, then the multi-threaded count */
	unsigned int reps;
	bool json;
	void *region;			/* reserved, PROT_NONE */
	size_t region_map;
	struct memmig_desc_table *table;
	struct memmig_desc_table_info info;
	uint8_t *bytes;			/* the table's array */
	size_t nbytes;
	line_fn store[2];		/* by enum memmig_desc_store */
	const char *store_name[2];
	struct memmig_tuning tuning;	/* as loaded: calibration, environment */
	int used_store;			/* what the tuned init wrote most with */
	/* Tuned inits of each thread count whose ranges probed both stores,
	 * and of those, how many wrote most with NT stores. */
	unsigned int probed[2], probed_nt[2];
	struct memmig_desc line[2];	/* [0] zero, [1] a descriptor */
	double alloc_s, first_touch_s;
	/* seconds[threads][case][rep] */
	double seconds[2][NCASES][MAX_REPS];
	struct bench_stats stats[2][NCASES];	/* GB/s */
};

static void desc_usage(FILE *f)
{
	fprintf(f,
		"Usage: memmig-bench desc [--size SIZE] [--threads N] [--reps N] [--json]\n"
		"Initializes the descriptor table of a SIZE (default 100G) device region,\n"
		"one 64-byte descriptor per 4 KiB page, with the template path (NT and\n"
		"temporal stores) and the field-by-field slow path, against a memset of\n"
		"the same bytes with NT and with temporal stores, on one thread and on N\n"
		"(default: the CPUs this process may use, at least 2).  Median of --reps\n"
		"(default 5) runs; allocation and first touch apart.\n");
}

#if defined(__x86_64__)
/* The template path's stores: as wide as the tuning's NT primitive. */
__attribute__((target("avx512f"))) static void
store_avx512(uint8_t *p, size_t len, const void *line)
{
	__m512i v = _mm512_load_si512(line);

	for (size_t i = 0; i < len; i += 64)
		_mm512_stream_si512((void *)(p + i), v);
	_mm_sfence();
}

__attribute__((target("avx512f"))) static void
store_avx512_tmp(uint8_t *p, size_t len, const void *line)
{
	__m512i v = _mm512_load_si512(line);

	for (size_t i = 0; i < len; i += 64)
		_mm512_store_si512((void *)(p + i), v);
}

__attribute__((target("avx2"))) static void
store_avx2(uint8_t *p, size_t len, const void *line)
{
	__m256i a = _mm256_load_si256(line), b = _mm256_load_si256((const __m256i *)line + 1);

	for (size_t i = 0; i < len; i += 64) {
		_mm256_stream_si256((__m256i *)(p + i), a);
		_mm256_stream_si256((__m256i *)(p + i + 32), b);
	}
	_mm_sfence();
}

__attribute__((target("avx2"))) static void
store_avx2_tmp(uint8_t *p, size_t len, const void *line)
{
	__m256i a = _mm256_load_si256(line), b = _mm256_load_si256((const __m256i *)line + 1);

	for (size_t i = 0; i < len; i += 64) {
		_mm256_store_si256((__m256i *)(p + i), a);
		_mm256_store_si256((__m256i *)(p + i + 32), b);
	}
}

static void store_sse2(uint8_t *p, size_t len, const void *line)
{
	const __m128i *l = line;
	__m128i a = _mm_load_si128(l), b = _mm_load_si128(l + 1);
	__m128i c = _mm_load_si128(l + 2), d = _mm_load_si128(l + 3);

	for (size_t i = 0; i < len; i += 64) {
		_mm_stream_si128((__m128i *)(p + i), a);
		_mm_stream_si128((__m128i *)(p + i + 16), b);
		_mm_stream_si128((__m128i *)(p + i + 32), c);
		_mm_stream_si128((__m128i *)(p + i + 48), d);
	}
	_mm_sfence();
}
#endif

static void store_plain(uint8_t *p, size_t len, const void *line)
{
	for (size_t i = 0; i < len; i += 64)
		memcpy(p + i, line, 64);
}

/* The stores of the template path on this CPU, both kinds (the width of
 * the tuning's NT primitive, as src/lib/copy/arch/x86/desc.c has them);
 * plain stores off x86. */
static void pick_store(struct desc_bench *b)
{
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
	int nt = b->tuning.nt_prim;

	memmig_ctx_get_cpu(b->ctx, &cpu);
	if (!memmig_prim_supported(&cpu, nt) || !memmig_prim_is_nt(nt))
		nt = MEMMIG_PRIM_NT_MOVNTI;
	b->store[0] = b->store[1] = store_plain;
	b->store_name[0] = b->store_name[1] = "plain stores";
#if defined(__x86_64__)
	b->store[MEMMIG_DESC_STORE_NT] = store_sse2;
	b->store_name[MEMMIG_DESC_STORE_NT] = "NT 16-byte stores";
	b->store_name[MEMMIG_DESC_STORE_TEMPORAL] = "plain 16-byte stores";
	if (nt == MEMMIG_PRIM_NT_AVX2) {
		b->store[MEMMIG_DESC_STORE_NT] = store_avx2;
		b->store[MEMMIG_DESC_STORE_TEMPORAL] = store_avx2_tmp;
		b->store_name[MEMMIG_DESC_STORE_NT] = "NT 32-byte stores";
		b->store_name[MEMMIG_DESC_STORE_TEMPORAL] = "plain 32-byte stores";
	} else if (nt == MEMMIG_PRIM_NT_AVX512) {
		b->store[MEMMIG_DESC_STORE_NT] = store_avx512;
		b->store[MEMMIG_DESC_STORE_TEMPORAL] = store_avx512_tmp;
		b->store_name[MEMMIG_DESC_STORE_NT] = "NT 64-byte stores";
		b->store_name[MEMMIG_DESC_STORE_TEMPORAL] = "plain 64-byte stores";
	}
#endif
}

static const char *store_kind(int store)
{
	return store == MEMMIG_DESC_STORE_TEMPORAL ? "temporal" : "NT";
}

struct store_part {
	line_fn fn;
	uint8_t *p;
	size_t len;
	const void *line;
};

static void *store_part_main(void *arg)
{
	struct store_part *z = arg;

	z->fn(z->p, z->len, z->line);
	return NULL;
}

/* Split in 64-byte lines, like the table's init threads split it. */
static void line_store(struct desc_bench *b, line_fn fn, const void *line,
		       unsigned int threads)
{
	struct store_part parts[threads];
	pthread_t tids[threads];
	size_t lines = b->nbytes / 64;
	unsigned int started = 0;

	for (unsigned int k = 0; k < threads; k++) {
		size_t a = lines * k / threads, e = lines * (k + 1) / threads;

		parts[k] = (struct store_part){ fn, b->bytes + a * 64,
						(e - a) * 64, line };
	}
	for (unsigned int k = 1; k < threads; k++) {
		if (pthread_create(&tids[k], NULL, store_part_main, &parts[k]))
			break;
		started = k;
	}
	store_part_main(&parts[0]);
	for (unsigned int k = started + 1; k < threads; k++)
		store_part_main(&parts[k]);
	for (unsigned int k = 1; k <= started; k++)
		pthread_join(tids[k], NULL);
}

/* The template path with the stores of case c alone, whatever the tuning. */
static int force_template(struct desc_bench *b, int c)
{
	struct memmig_tuning t = b->tuning;

	t.desc_store = c == CASE_TEMPLATE_NT ? MEMMIG_DESC_STORE_NT :
					       MEMMIG_DESC_STORE_TEMPORAL;
	t.desc_slow = 0;
	t.desc_probe_min = MEMMIG_SIZE_NEVER;
	return memmig_ctx_set_tuning(b->ctx, &t);
}

/* Whether a tuned init on threads threads probes (desc-probe.h): each
 * thread's share of the table reaches desc_probe_min. */
static bool tuned_probes(const struct desc_bench *b, unsigned int threads)
{
	return !b->tuning.desc_slow && b->nbytes / threads >= b->tuning.desc_probe_min;
}

/* What the tuned init of case CASE_TUNED wrote most with. */
static void note_tuned(struct desc_bench *b, int t)
{
	struct memmig_desc_table_info info = { .sz = sizeof(info) };

	if (memmig_desc_table_get_info(b->table, &info) < 0)
		return;
	b->used_store = info.store;
	if (tuned_probes(b, b->threads[t])) {
		b->probed[t]++;
		b->probed_nt[t] += info.store == MEMMIG_DESC_STORE_NT;
	}
}

static int run_case(struct desc_bench *b, int c, unsigned int threads, double *s)
{
	double t0;
	int rc = 0;

	if (c == CASE_TEMPLATE_NT || c == CASE_TEMPLATE_TMP)
		rc = force_template(b, c);
	if (rc < 0)
		return rc;
	t0 = bench_now();
	switch (c) {
	case CASE_MEMSET_NT:
	case CASE_MEMSET_TMP:
		line_store(b, b->store[c == CASE_MEMSET_TMP], &b->line[0], threads);
		break;
	case CASE_LINE:
		line_store(b, b->store[b->used_store], &b->line[1], threads);
		break;
	default:
		rc = memmig_desc_table_reset(b->table, threads,
					     c == CASE_SLOW ? MEMMIG_DESC_SLOW : 0);
	}
	*s = bench_now() - t0;
	if (c == CASE_TEMPLATE_NT || c == CASE_TEMPLATE_TMP) {
		int rc2 = memmig_ctx_set_tuning(b->ctx, &b->tuning);

		rc = rc ? rc : rc2;
	}
	return rc;
}

/* The region: address space only, 2 MB-aligned so that units form. */
static int reserve_region(struct desc_bench *b)
{
	b->region_map = b->region_len + MEMMIG_UNIT_SIZE;
	b->region = mmap(NULL, b->region_map, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (b->region == MAP_FAILED) {
		b->region = NULL;
		return -errno;
	}
	return 0;
}

static int setup(struct desc_bench *b)
{
	uint64_t base;
	struct memmig_desc_opts o = { .sz = sizeof(o), .len = b->region_len,
				      .threads = b->threads[1],
				      .flags = MEMMIG_DESC_LAZY };
	const struct memmig_desc *d;
	uint64_t table = b->region_len / MEMMIG_DESC_PAGE_SIZE * sizeof(*d);
	double t0;
	int rc;

	/* The table is written for real: refuse what would push the
	 * machine into swap or the OOM killer. */
	if (table > bench_mem_available() / 10 * 8) {
		cli_error("desc: a %llu MiB table does not fit in 80%% of the "
			  "available memory (%llu MiB): a smaller --size\n",
			  (unsigned long long)(table >> 20),
			  (unsigned long long)(bench_mem_available() >> 20));
		return -ENOMEM;
	}
	rc = reserve_region(b);
	if (rc < 0)
		return rc;
	base = ((uintptr_t)b->region + MEMMIG_UNIT_SIZE - 1) & ~(uint64_t)(MEMMIG_UNIT_SIZE - 1);
	o.base = base;
	t0 = bench_now();
	rc = memmig_desc_table_new(b->ctx, &o, &b->table);
	b->alloc_s = bench_now() - t0;
	if (rc < 0)
		return rc;
	t0 = bench_now();
	rc = memmig_desc_table_reset(b->table, b->threads[1], 0);
	b->first_touch_s = bench_now() - t0;
	if (!rc)
		rc = memmig_desc_table_get_info(b->table, &b->info);
	if (!rc)
		rc = memmig_desc_get(b->table, 0, &d);
	if (rc < 0)
		return rc;
	b->used_store = b->info.store;
	if (b->info.flags & MEMMIG_DESC_SLOW) {
		cli_error("desc: the slow path is forced (MEMMIG_DESC_SLOW or a "
			  "debug/sanitizer build): nothing to compare\n");
		return -ENOTSUP;
	}
	/* The ceilings write the very bytes of the table; the descriptor
	 * stored is a tail, the commonest kind. */
	b->bytes = (uint8_t *)d;
	b->line[1] = d[b->info.count > 1];
	b->nbytes = b->info.count * sizeof(*d);
	return 0;
}

/* After the memset rounds: an init as tuned again, checked at random. */
static int verify(struct desc_bench *b)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL, n = b->info.count;
	int rc = memmig_desc_table_reset(b->table, b->threads[1], 0);

	for (int k = 0; !rc && k < 100000; k++) {
		const struct memmig_desc *d;
		uint64_t i, head;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		i = x % n;
		/* The base is 2 MB aligned: units start at multiples of 512. */
		head = i - i % 512 + 512 <= n ? i - i % 512 : i;
		rc = memmig_desc_get(b->table, i, &d);
		if (!rc && (d->offset != b->info.base + i * MEMMIG_DESC_PAGE_SIZE ||
			    d->head != head || d->state != MEMMIG_DESC_CLEAN))
			rc = -EIO;
	}
	return rc;
}

static int measure(struct desc_bench *b)
{
	int rc = 0;

	/* Cases interleaved in each round: a slow moment of this shared
	 * machine falls on every column alike.  Each round starts with
	 * another case and steps through them by another stride (NCASES is
	 * prime, so every stride visits all): a case inherits the dirty lines
	 * its predecessor left, or none after NT stores, and a fixed order
	 * would give each case the same predecessor every round (the tuned
	 * init after the temporal one lost 15 % that way). */
	_Static_assert(NCASES == 7, "a prime number of cases");
	for (unsigned int r = 0; !rc && r < b->reps; r++)
		for (int t = 0; !rc && t < 2; t++)
			for (int j = 0; !rc && j < NCASES; j++) {
				unsigned int stride = 1 + r % (NCASES - 1);
				int c = (int)((r + (unsigned int)j * stride) % NCASES);

				bench_progress("bench desc: round %u/%u, %u thread(s), %s",
					       r + 1, b->reps, b->threads[t], case_names[c]);
				rc = run_case(b, c, b->threads[t], &b->seconds[t][c][r]);
				if (!rc && c == CASE_TUNED)
					note_tuned(b, t);
			}
	bench_progress_done();
	for (int t = 0; !rc && t < 2; t++)
		for (int c = 0; !rc && c < NCASES; c++) {
			double gbs[MAX_REPS];

			for (unsigned int r = 0; r < b->reps; r++)
				gbs[r] = b->nbytes / b->seconds[t][c][r] / 1e9;
			rc = bench_stats_of(gbs, b->reps, &b->stats[t][c]);
		}
	return rc ? rc : verify(b);
}

static double ms_of(const struct bench_stats *s, size_t bytes)
{
	return s->median > 0 ? bytes / s->median / 1e6 : 0;
}

static const char *backing_name(int backing)
{
	return backing == MEMMIG_DESC_BACKING_HUGETLB ? "hugetlb 2 MB pages" :
	       backing == MEMMIG_DESC_BACKING_THP ? "THP (madvise)" : "4 KiB pages";
}

/* The better memset of a run. */
/* How the tuned init chose its stores on threads[t]: "NT stores",
 * "temporal stores", or "probing: NT in 3 of 5". */
static const char *tuned_how(const struct desc_bench *b, int t, char *buf, size_t len)
{
	if (b->tuning.desc_slow)
		snprintf(buf, len, "slow path");
	else if (b->probed[t])
		snprintf(buf, len, "probing: NT in %u of %u", b->probed_nt[t], b->probed[t]);
	else
		snprintf(buf, len, "%s stores", store_kind(b->tuning.desc_store));
	return buf;
}

static int best_memset(const struct bench_stats *s)
{
	return s[CASE_MEMSET_TMP].median > s[CASE_MEMSET_NT].median ? CASE_MEMSET_TMP :
								      CASE_MEMSET_NT;
}

static void print_text(const struct desc_bench *b)
{
	char rs[32], ts[80];

	printf("memmig bench desc: %s region, %llu descriptors, %s table (%s),\n"
	       "median of %u, GB/s of table written, from wall-clock time\n\n",
	       util_size_format(b->region_len, rs, sizeof(rs)),
	       (unsigned long long)b->info.count,
	       util_size_format(b->nbytes, ts, sizeof(ts)),
	       backing_name(b->info.backing), b->reps);
	printf("allocation %.2f ms; first touch (kernel zeroing + first init, %u threads) "
	       "%.1f ms = %.2f GB/s\n", b->alloc_s * 1e3, b->threads[1],
	       b->first_touch_s * 1e3, b->nbytes / b->first_touch_s / 1e9);
	if (b->tuning.desc_probe_min == MEMMIG_SIZE_NEVER)
		snprintf(ts, sizeof(ts), "never measured as it writes");
	else
		snprintf(ts, sizeof(ts), "measured as it writes a thread's share from %s",
			 util_size_format(b->tuning.desc_probe_min, rs, sizeof(rs)));
	printf("init as tuned (calibration, environment): %s path, %s stores first (%s);\n"
	       "both stores %s%s\n\n",
	       b->tuning.desc_slow ? "slow" : "template",
	       store_kind(b->tuning.desc_store), b->store_name[b->tuning.desc_store],
	       ts, b->tuning.desc_slow ? "; the template rows are forced" : "");
	printf("%-8s %-21s %8s %7s %6s %8s %9s %9s %8s\n", "threads", "path", "time ms",
	       "GB/s", "+-SD%", "vs slow", "of NTmem", "of tmpmem", "of desc");
	for (int t = 0; t < 2; t++)
		for (int c = 0; c < NCASES; c++) {
			const struct bench_stats *s = &b->stats[t][c];
			char name[32];

			snprintf(name, sizeof(name), "%s%s", c == CASE_LINE ?
				 (b->used_store == MEMMIG_DESC_STORE_TEMPORAL ?
				  "temporal " : "NT ") : "", case_names[c]);
			if (c == CASE_TUNED)
				strcat(name, " *");
			printf("%-8u %-21s %8.1f %7.2f %6.1f", b->threads[t], name,
			       ms_of(s, b->nbytes), s->median, s->sd_pct);
			if (c == CASE_TEMPLATE_NT || c == CASE_TEMPLATE_TMP || c == CASE_TUNED)
				printf(" %7.2fx %8.1f%% %8.1f%% %7.1f%%\n",
				       bench_paired_ratio(s, &b->stats[t][CASE_SLOW]),
				       100 * bench_paired_ratio(s, &b->stats[t][CASE_MEMSET_NT]),
				       100 * bench_paired_ratio(s, &b->stats[t][CASE_MEMSET_TMP]),
				       100 * bench_paired_ratio(s, &b->stats[t][CASE_LINE]));
			else
				printf("\n");
		}
	printf("\n");
	for (int t = 0; t < 2; t++) {
		const struct bench_stats *s = b->stats[t];
		int m = best_memset(s);

		char how[48];

		printf("%u thread(s): as tuned (%s) %.2fx the slow path, "
		       "%.1f%% of the better memset (%s)\n", b->threads[t],
		       tuned_how(b, t, how, sizeof(how)),
		       bench_paired_ratio(&s[CASE_TUNED], &s[CASE_SLOW]),
		       100 * bench_paired_ratio(&s[CASE_TUNED], &s[m]),
		       m == CASE_MEMSET_TMP ? "temporal" : "NT");
	}
	printf("\n* as tuned: the template stores the tuning picks (bench copy --calibrate\n"
	       "measures them; MEMMIG_DESC_STORE overrides), both measured while writing\n"
	       "a thread's share from desc_probe_min (MEMMIG_DESC_PROBE_MIN).  Template/NT\n"
	       "and template/temporal: one store alone, whatever the tuning.\n"
	       "vs slow, of NTmem, of tmpmem, of desc: medians of the per-round ratios\n"
	       "to the slow path, the NT memset, the temporal memset, the desc store.\n"
	       "NT memset, temporal memset: zeros over the table with %s and\n"
	       "with %s, the ceilings; the better one is the peer.\n"
	       "desc store: one descriptor over the table, unpatched, with the stores the\n"
	       "tuned init wrote most with: the ceiling for bytes like these (zero\n"
	       "lines write faster on some machines).\n"
	       "The kernel's own, nd_pmem rebind of 100 GB (Li Zhe, \"mm: optimize\n"
	       "zone-device memmap initialization\", linux-mm, 2026): %.2f ms -> %.2f ms.\n",
	       b->store_name[MEMMIG_DESC_STORE_NT], b->store_name[MEMMIG_DESC_STORE_TEMPORAL],
	       SEED_SLOW_MS, SEED_TEMPLATE_MS);
}

static void print_json(const struct desc_bench *b)
{
	struct json_object *o = json_object_new_object(), *rows = json_object_new_array();

	json_object_object_add(o, "region_bytes", json_object_new_int64((int64_t)b->region_len));
	json_object_object_add(o, "descriptors", json_object_new_int64((int64_t)b->info.count));
	json_object_object_add(o, "table_bytes", json_object_new_int64((int64_t)b->nbytes));
	json_object_object_add(o, "backing", json_object_new_string(backing_name(b->info.backing)));
	json_object_object_add(o, "reps", json_object_new_int((int)b->reps));
	json_object_object_add(o, "alloc_s", json_object_new_double(b->alloc_s));
	json_object_object_add(o, "first_touch_s", json_object_new_double(b->first_touch_s));
	json_object_object_add(o, "first_touch_threads", json_object_new_int((int)b->threads[1]));
	json_object_object_add(o, "nt_stores", json_object_new_string(
		b->store_name[MEMMIG_DESC_STORE_NT]));
	json_object_object_add(o, "temporal_stores", json_object_new_string(
		b->store_name[MEMMIG_DESC_STORE_TEMPORAL]));
	json_object_object_add(o, "tuned_path", json_object_new_string(
		b->info.path == MEMMIG_DESC_PATH_SLOW ? "slow" : "template"));
	json_object_object_add(o, "tuned_store", json_object_new_string(
		b->used_store == MEMMIG_DESC_STORE_TEMPORAL ? "temporal" : "nt"));
	for (int t = 0; t < 2; t++) {
		const struct bench_stats *s = b->stats[t];
		struct json_object *r = json_object_new_object();
		int tc = CASE_TUNED, m = best_memset(s);

		json_object_object_add(r, "threads", json_object_new_int((int)b->threads[t]));
		json_object_object_add(r, "tuned_probed", json_object_new_int((int)b->probed[t]));
		json_object_object_add(r, "tuned_probed_nt", json_object_new_int((int)b->probed_nt[t]));
		for (int c = 0; c < NCASES; c++) {
			static const char *const keys[NCASES][2] = {
				{ "template_nt_s", "template_nt_bytes_per_s" },
				{ "template_temporal_s", "template_temporal_bytes_per_s" },
				{ "tuned_s", "tuned_bytes_per_s" },
				{ "slow_s", "slow_bytes_per_s" },
				{ "memset_s", "memset_bytes_per_s" },
				{ "memset_temporal_s", "memset_temporal_bytes_per_s" },
				{ "desc_store_s", "desc_store_bytes_per_s" },
			};

			json_object_object_add(r, keys[c][0],
					       json_object_new_double(ms_of(&s[c], b->nbytes) / 1e3));
			json_object_object_add(r, keys[c][1],
					       bench_json_rate(s[c].median));
		}
		/* template_*, speedup_vs_slow, fraction_of_*: the init as tuned. */
		json_object_object_add(r, "template_s",
				       json_object_new_double(ms_of(&s[tc], b->nbytes) / 1e3));
		json_object_object_add(r, "template_bytes_per_s",
				       bench_json_rate(s[tc].median));
		json_object_object_add(r, "speedup_vs_slow", json_object_new_double(
			bench_paired_ratio(&s[tc], &s[CASE_SLOW])));
		json_object_object_add(r, "fraction_of_memset", json_object_new_double(
			bench_paired_ratio(&s[tc], &s[CASE_MEMSET_NT])));
		json_object_object_add(r, "fraction_of_temporal_memset", json_object_new_double(
			bench_paired_ratio(&s[tc], &s[CASE_MEMSET_TMP])));
		json_object_object_add(r, "best_memset", json_object_new_string(
			m == CASE_MEMSET_TMP ? "temporal" : "nt"));
		json_object_object_add(r, "fraction_of_best_memset", json_object_new_double(
			bench_paired_ratio(&s[tc], &s[m])));
		json_object_object_add(r, "fraction_of_desc_store", json_object_new_double(
			bench_paired_ratio(&s[tc], &s[CASE_LINE])));
		json_object_array_add(rows, r);
	}
	json_object_object_add(o, "results", rows);
	json_object_object_add(o, "seed_slow_s", json_object_new_double(SEED_SLOW_MS / 1e3));
	json_object_object_add(o, "seed_template_s", json_object_new_double(SEED_TEMPLATE_MS / 1e3));
	cli_json_print(o);
}

static int desc_parse(struct desc_bench *b, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "reps", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t size;
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "s:t:r:jh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_parse_size("--size", optarg, &size) < 0)
				return CLI_EXIT_USAGE;
			if (!size || size % MEMMIG_DESC_PAGE_SIZE) {
				cli_opt_error("--size", "a multiple of 4K\n");
				return CLI_EXIT_USAGE;
			}
			b->region_len = size;
			break;
		case 't':
		case 'r':
			if (cli_parse_int(c == 't' ? "--threads" : "--reps", optarg, 1,
					  c == 't' ? 256 : MAX_REPS, &v) < 0)
				return CLI_EXIT_USAGE;
			if (c == 't')
				b->threads[1] = (unsigned int)v;
			else
				b->reps = (unsigned int)v;
			break;
		case 'j':
			b->json = true;
			break;
		case 'h':
			desc_usage(stdout);
			return CLI_HELP_SHOWN;
		default:
			desc_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	return optind < argc ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}

static unsigned int default_threads(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) < 2)
		return 2;
	return (unsigned int)CPU_COUNT(&set);
}

static int desc_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct desc_bench b = {
		.ctx = ctx, .region_len = 100ULL << 30, .reps = 5,
		.threads = { 1, default_threads() },
		.info = { .sz = sizeof(b.info) }, .tuning = { .sz = sizeof(b.tuning) },
	};
	int rc = desc_parse(&b, argc, argv);

	if (rc)
		return cli_exit_code(rc);
	memmig_ctx_get_tuning(ctx, &b.tuning);
	pick_store(&b);
	bench_progress("bench desc: allocating and first touch");
	rc = setup(&b);
	if (!rc)
		rc = measure(&b);
	bench_progress_done();
	if (!rc) {
		if (b.json)
			print_json(&b);
		else
			print_text(&b);
	} else if (rc != -ENOTSUP) {
		cli_error("desc: %s\n", rc == -EIO ? "a descriptor is wrong: "
			  "this is a bug" : strerror(-rc));
	}
	bench_stats_free(&b.stats[0][0], 2 * NCASES);
	memmig_desc_table_unref(b.table);
	if (b.region)
		munmap(b.region, b.region_map);
	return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

const struct cli_cmd bench_cmd_desc = {
	.name = "desc",
	.summary = "descriptor table init: template (NT, temporal) vs slow path vs memset",
	.run = desc_run,
};
