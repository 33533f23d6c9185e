/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Copiers, buffers, timing and statistics for the benchmark programs. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "minivmm/embed.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif


const char *bench_library(void)
{
	Dl_info info;

	if (dladdr((void *)memmig_copy_run, &info) && info.dli_fname)
		return info.dli_fname;
	return "?";
}

bool bench_on_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[512];

	while (path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
		if (!access(buf, X_OK))
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

static void copy_pages(const struct copier *c, uint8_t *d, const uint8_t *s,
		       size_t len)
{
	for (size_t off = 0; off < len; off += MEMMIG_PAGE_SIZE) {
		size_t n = len - off < MEMMIG_PAGE_SIZE ? len - off : MEMMIG_PAGE_SIZE;

		if (c->kind == COPIER_GLIBC_PAGES)
			memcpy(d + off, s + off, n);
		else
			memmig_copy_run(c->ctx, d + off, s + off, n, 0);
	}
}

/* One call of a peer or primitive; drain false leaves the fence out. */
/*
 * The batch the COPIER_MC_BATCH copies run in: opened at the first of them,
 * closed at the next plain COPIER_MC one.  Samples are taken one copier at
 * a time, so it opens and closes once a sample, not once a copy.
 */
static void mc_batch_set(bool on)
{
	static bool open;

	if (on == open)
		return;
	if (on) {
		open = memmig_copy_mc_begin() == 0;
	} else {
		memmig_copy_mc_end();
		open = false;
	}
}

static void copy_one(const struct copier *c, uint8_t *d, const uint8_t *s,
		     size_t n, bool drain)
{
	switch (c->kind) {
	case COPIER_PRIM:
		memmig_copy_with(c->ctx, c->prim, d, s, n,
				 c->flags | (drain ? 0 : MEMMIG_COPY_NODRAIN));
		break;
	case COPIER_MEMMIG:
		memmig_copy_run(c->ctx, d, s, n,
				c->flags | (drain ? 0 : MEMMIG_COPY_NODRAIN));
		break;
	case COPIER_GLIBC:
		memcpy(d, s, n);
		break;
	case COPIER_PMEM:
		bench_pmem_memcpy(d, s, n, drain);
		break;
	case COPIER_MEMMIG_PAGES:
	case COPIER_GLIBC_PAGES:
		copy_pages(c, d, s, n);
		break;
	case COPIER_MC:
	case COPIER_MC_BATCH: {
		struct memmig_mc_opts o = {
			.sz = sizeof(o), .src_fd = -1,
			.flags = c->flags | (drain ? 0 : MEMMIG_COPY_NODRAIN),
		};

		mc_batch_set(c->kind == COPIER_MC_BATCH);
		memmig_copy_mc(c->ctx, d, s, n, &o);
		break;
	}
	}
}

void copier_run(const struct copier *c, void *dst, const void *src, size_t len)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	/* One call, as a caller would make it: the same path for everyone.
	 * memmig_copy_mc goes by 2 MiB units itself. */
	if (len <= MEMMIG_UNIT_SIZE || c->kind == COPIER_MEMMIG_PAGES ||
	    c->kind == COPIER_GLIBC_PAGES || c->kind == COPIER_MC || c->kind == COPIER_MC_BATCH) {
		copy_one(c, d, s, len, true);
		return;
	}
	if (c->kind == COPIER_MEMMIG) {
		memmig_copy_units(c->ctx, d, s, len, c->flags);
		return;
	}
	for (size_t off = 0; off < len; off += MEMMIG_UNIT_SIZE) {
		size_t n = len - off < MEMMIG_UNIT_SIZE ? len - off : MEMMIG_UNIT_SIZE;

		copy_one(c, d + off, s + off, n, false);
	}
	memmig_copy_drain();
}

void *bench_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_HUGEPAGE);
	if (madvise(p, len, MADV_POPULATE_WRITE))
		memset(p, 0, len); /* kernels before 5.14 */
	return p;
}

uint64_t bench_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	unsigned long long kb = 0;
	char line[128];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb ? kb * 1024 : UINT64_MAX;	/* unknown: do not refuse */
}

void bench_free(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

/* xorshift64: cheap, and a copy of it cannot be optimised away. */
void bench_fill(void *p, size_t len, uint64_t seed)
{
	uint64_t x = seed | 1, *q = p;

	for (size_t i = 0; i < len / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		q[i] = x;
	}
}

int bench_pool_init(struct bench_pool *pool, size_t size)
{
	pool->size = size;
	pool->src = bench_alloc(size);
	pool->dst = bench_alloc(size);
	if (!pool->src || !pool->dst) {
		bench_pool_fini(pool);
		return -ENOMEM;
	}
	bench_fill(pool->src, size, 0x6d656d6d6967);
	return 0;
}

void bench_pool_fini(struct bench_pool *pool)
{
	bench_free(pool->src, pool->size);
	bench_free(pool->dst, pool->size);
	pool->src = pool->dst = NULL;
}

uint64_t bench_checksum(const void *p, size_t len)
{
	const uint64_t *q = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len / 8; i++)
		h = (h ^ q[i]) * 1099511628211ULL;
	return h;
}

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bench_stats_of(double *gbs, unsigned int n, struct bench_stats *out)
{
	double mean = 0, var = 0;

	out->rounds = malloc(n * sizeof(*gbs));
	if (!out->rounds)
		return -ENOMEM;
	memcpy(out->rounds, gbs, n * sizeof(*gbs));

	for (unsigned int i = 0; i < n; i++)
		mean += gbs[i];
	mean /= n;
	for (unsigned int i = 0; i < n; i++)
		var += (gbs[i] - mean) * (gbs[i] - mean);
	out->median = bench_median(gbs, n);
	out->sd_pct = n > 1 && mean > 0 ? 100 * sqrt(var / (n - 1)) / mean : 0;
	out->n = n;
	return 0;
}

void bench_stats_free(struct bench_stats *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		free(s[i].rounds);
		s[i].rounds = NULL;
	}
}

struct json_object *bench_json_rate(double gbs)
{
	return json_object_new_int64((int64_t)(gbs * 1e9 + 0.5));
}

struct json_object *bench_json_stats(const struct bench_stats *s)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "median_bytes_per_s", bench_json_rate(s->median));
	json_object_object_add(o, "sd_pct", json_object_new_double(s->sd_pct));
	json_object_object_add(o, "samples", json_object_new_int((int)s->n));
	return o;
}

double bench_paired_ratio(const struct bench_stats *a, const struct bench_stats *b)
{
	double r[a->n];

	if (!a->n || a->n != b->n)
		return 0;
	for (unsigned int i = 0; i < a->n; i++)
		r[i] = b->rounds[i] > 0 ? a->rounds[i] / b->rounds[i] : 0;
	return bench_median(r, a->n);
}

/*
 * Runs copies [0, iters) through place() and returns the seconds taken.
 * place() gives the i-th copy's destination and source.
 */
typedef void (*place_fn)(const void *arg, size_t i, uint8_t **d,
			 const uint8_t **s);

static void place_hot(const void *arg, size_t i, uint8_t **d, const uint8_t **s);
static void place_cold(const void *arg, size_t i, uint8_t **d, const uint8_t **s);

/* The i-th cold copy's destination and source. */
struct cold_pair {
	uint8_t *d;
	const uint8_t *s;
};

struct cold_place {
	size_t nslots;
	struct cold_pair *pairs;	/* per slot, walked in a shuffled order */
};

/* Keeps a copy whose bytes nothing reads from being left out. */
#define COPIED(d) __asm__ volatile("" : : "r"(d) : "memory")

/*
 * Each copier's hot loop is a function of its own, with the few values it
 * needs held in callee-saved registers across its calls.  In one function
 * with the others, the compiler kept the destination, source and context
 * on the stack and loaded them again for every copy (COPIED()'s clobber);
 * a stack slot whose offset in its page fell among the bytes just copied
 * then waited on those stores (4 KiB aliasing), so each run's stack address
 * decided the result: on an AMD Zen 5 host memmig measured 0.56x to 1.17x
 * glibc on a hot 64 B copy in eight runs of one build.
 */
static __attribute__((noinline)) void hot_glibc(uint8_t *d, const uint8_t *s,
						 size_t len, size_t n)
{
	while (n--) {
		memcpy(d, s, len);
		COPIED(d);
	}
}

static __attribute__((noinline)) void hot_memmig(struct memmig_ctx *ctx, uint8_t *d,
						  const uint8_t *s, size_t len,
						  unsigned int flags, size_t n)
{
	while (n--) {
		memmig_copy_run(ctx, d, s, len, flags);
		COPIED(d);
	}
}

/* The primitive in the low byte of pf, the flags above it, taken apart
 * in each pass (the empty asm stops the compiler hoisting that): six
 * registers. */
static __attribute__((noinline)) void hot_prim(struct memmig_ctx *ctx, uint8_t *d,
						const uint8_t *s, size_t len,
						uint64_t pf, size_t n)
{
	while (n--) {
		__asm__("" : "+r"(pf));
		memmig_copy_with(ctx, (int)(pf & 0xff), d, s, len, (unsigned int)(pf >> 8));
		COPIED(d);
	}
}

static __attribute__((noinline)) void hot_pmem(uint8_t *d, const uint8_t *s,
						size_t len, size_t n)
{
	while (n--) {
		bench_pmem_memcpy(d, s, len, true);
		COPIED(d);
	}
}

/* Both kinds of machine-check-safe copy: in the batch or not. */
static __attribute__((noinline)) void hot_mc(const struct copier *c, uint8_t *d,
					      const uint8_t *s, size_t len, size_t n)
{
	struct memmig_ctx *ctx = c->ctx;
	const struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .flags = c->flags };

	mc_batch_set(c->kind == COPIER_MC_BATCH);
	while (n--) {
		memmig_copy_mc(ctx, d, s, len, &o);
		COPIED(d);
	}
}

/*
 * Each copier's cold loop too, over copies [q, end) of the walk through
 * the shuffled slots (bench_measure_cold()).  A cold copy waits on its
 * misses, and the copies whose misses overlap are those that fit the
 * CPU's instruction window, so every instruction of the loop counts as in
 * a hot one: through the shared loop (place() called through a pointer,
 * then copier_run()'s switch) every copier but glibc's measured 0.8x of it
 * at 16-64 B on an AMD Zen 5 host, the bare primitives as much as memmig's
 * dispatch.  After the call, the setup: the copier's values in locals;
 * with the walk's three they fit the callee-saved registers.
 */
#define COLD_LOOP(name, call, ...)                                             \
	static __attribute__((noinline)) void cold_##name(                     \
		const struct copier *c, const struct cold_pair *q,             \
		const struct cold_pair *end, size_t len)                       \
	{                                                                      \
		__VA_ARGS__;                                                   \
		for (; q < end; q++) {                                         \
			uint8_t *d = q->d;                                     \
			const uint8_t *s = q->s;                               \
                                                                               \
			call;                                                  \
			COPIED(d);                                             \
		}                                                              \
	}

COLD_LOOP(glibc, memcpy(d, s, len), (void)c)
COLD_LOOP(memmig, memmig_copy_run(ctx, d, s, len, flags),
	  struct memmig_ctx *ctx = c->ctx; unsigned int flags = c->flags)
/* The primitive and flags in one register, as hot_prim() has them. */
COLD_LOOP(prim,
	  __asm__("" : "+r"(pf));
	  memmig_copy_with(ctx, (int)(pf & 0xff), d, s, len, (unsigned int)(pf >> 8)),
	  struct memmig_ctx *ctx = c->ctx;
	  uint64_t pf = (uint64_t)c->flags << 8 | (uint8_t)c->prim)
COLD_LOOP(pmem, bench_pmem_memcpy(d, s, len, true), (void)c)
/* Both kinds of machine-check-safe copy: in the batch or not. */
COLD_LOOP(mc, memmig_copy_mc(ctx, d, s, len, &o),
	  struct memmig_ctx *ctx = c->ctx;
	  const struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .flags = c->flags };
	  mc_batch_set(c->kind == COPIER_MC_BATCH))

/*
 * Hot copies of up to a unit, as a caller makes them: each copier's own call
 * in a loop of its own.  A hot 64-byte copy takes about 2 ns; the shared
 * loop's placement call and per-copy switch cost as much again, by an
 * amount that depended on each copier's path through them (the same build
 * measured memmig at 0.79x and at 1.28x glibc on 64 B in consecutive runs).
 * Returns false for the kinds that need the shared loop.
 */
static bool time_hot_direct(const struct copier *c, uint8_t *d, const uint8_t *s,
			    size_t len, size_t iters, double *t)
{
	double t0 = bench_now();

	switch (c->kind) {
	case COPIER_GLIBC:
		hot_glibc(d, s, len, iters);
		break;
	case COPIER_MEMMIG:
		hot_memmig(c->ctx, d, s, len, c->flags, iters);
		break;
	case COPIER_PRIM:
		hot_prim(c->ctx, d, s, len, (uint64_t)c->flags << 8 | (uint8_t)c->prim, iters);
		break;
	case COPIER_PMEM:
		hot_pmem(d, s, len, iters);
		break;
	case COPIER_MC:
	case COPIER_MC_BATCH:
		hot_mc(c, d, s, len, iters);
		break;
	default:
		return false;
	}
	*t = bench_now() - t0;
	return true;
}

/* The same for cold copies, through the walk from its copy first. */
static bool time_cold_direct(const struct copier *c, const struct cold_place *p,
			     size_t len, size_t first, size_t iters, double *t)
{
	void (*loop)(const struct copier *, const struct cold_pair *,
		     const struct cold_pair *, size_t);
	size_t at = first % p->nslots;
	double t0;

	switch (c->kind) {
	case COPIER_GLIBC:
		loop = cold_glibc;
		break;
	case COPIER_MEMMIG:
		loop = cold_memmig;
		break;
	case COPIER_PRIM:
		loop = cold_prim;
		break;
	case COPIER_PMEM:
		loop = cold_pmem;
		break;
	case COPIER_MC:
	case COPIER_MC_BATCH:
		loop = cold_mc;
		break;
	default:
		return false;
	}
	t0 = bench_now();
	/* The walk wraps around: runs to the end of the slots. */
	while (iters) {
		size_t run = p->nslots - at < iters ? p->nslots - at : iters;

		loop(c, &p->pairs[at], &p->pairs[at + run], len);
		iters -= run;
		at = 0;
	}
	*t = bench_now() - t0;
	return true;
}

static double time_copies(const struct copier *c, place_fn place,
			  const void *arg, size_t len, size_t first,
			  size_t iters)
{
	double t0 = bench_now();

	if (place == place_hot && len <= MEMMIG_UNIT_SIZE) {
		uint8_t *d;
		const uint8_t *s;
		double t;

		place(arg, first, &d, &s);
		if (time_hot_direct(c, d, s, len, iters, &t))
			return t;
	}
	if (place == place_cold && len <= MEMMIG_UNIT_SIZE) {
		double t;

		if (time_cold_direct(c, arg, len, first, iters, &t))
			return t;
	}

	for (size_t i = first; i < first + iters; i++) {
		uint8_t *d;
		const uint8_t *s;

		place(arg, i, &d, &s);
		copier_run(c, d, s, len);
	}
	return bench_now() - t0;
}

/*
 * Measures n copiers on the same placements.  Each copier first gets the
 * copies per sample that make one sample last about sample_s; then the
 * samples are taken round-robin, so that a noisy neighbour on this shared
 * machine slows every column alike instead of one column.
 */
static int measure(const struct copier *cs, unsigned int n, place_fn place,
		   const void *arg, size_t len, size_t max_iters,
		   const struct bench_opts *o, struct bench_stats *out)
{
	double *gbs, t;
	size_t *iters, next = 0;
	int rc = -ENOMEM;

	gbs = calloc((size_t)n * o->reps, sizeof(*gbs));
	iters = calloc(n, sizeof(*iters));
	if (!gbs || !iters)
		goto out;
	for (unsigned int c = 0; c < n; c++) {
		/* Warm-up, growing the count until a sample is long enough. */
		for (iters[c] = 1;; iters[c] *= 4) {
			t = time_copies(&cs[c], place, arg, len, next, iters[c]);
			next += iters[c];
			if (t >= o->sample_s / 4 || iters[c] >= max_iters)
				break;
		}
		if (t > 0 && t < o->sample_s)
			iters[c] = (size_t)(iters[c] * (o->sample_s / t)) + 1;
		if (iters[c] > max_iters)
			iters[c] = max_iters;
	}
	for (unsigned int r = 0; r < o->reps; r++) {
		for (unsigned int c = 0; c < n; c++) {
			t = time_copies(&cs[c], place, arg, len, next, iters[c]);
			next += iters[c];
			gbs[(size_t)c * o->reps + r] = (double)len * iters[c] / t / 1e9;
		}
	}
	rc = 0;
	for (unsigned int c = 0; c < n && !rc; c++)
		rc = bench_stats_of(&gbs[(size_t)c * o->reps], o->reps, &out[c]);
out:
	free(gbs);
	free(iters);
	return rc;
}

struct hot_place {
	uint8_t *d;
	const uint8_t *s;
};

static void place_hot(const void *arg, size_t i, uint8_t **d, const uint8_t **s)
{
	const struct hot_place *h = arg;

	*d = h->d;
	*s = h->s;
}

/* A page per slot at least, so neighbours do not share lines. */
static size_t slot_stride(size_t len)
{
	return (len + MEMMIG_PAGE_SIZE - 1) & ~(MEMMIG_PAGE_SIZE - 1);
}

/*
 * The destination never at the source's own offset where the pool has room:
 * source and destination are the pool's size apart, and on AMD Zen lines
 * whose addresses agree in bits 12-27 evict each other from L1 (its way
 * predictor's tags hash those bits).  A hot 16 KiB copy so placed ran at
 * 31-39 GB/s on a Zen 3 host whatever copied it; pages apart, AVX2's and
 * glibc's at 90-94 GB/s, SSE2's at 51.
 */
int bench_measure_hot(const struct copier *cs, unsigned int n,
		      const struct bench_pool *pool, size_t len,
		      const struct bench_opts *o, struct bench_stats *out)
{
	size_t stride = slot_stride(len);
	struct hot_place h = { pool->dst + (2 * stride <= pool->size ? stride : 0), pool->src };

	if (len > pool->size)
		return -E2BIG;
	return measure(cs, n, place_hot, &h, len, SIZE_MAX, o, out);
}

static void place_cold(const void *arg, size_t i, uint8_t **d, const uint8_t **s)
{
	const struct cold_place *p = arg;
	const struct cold_pair *q = &p->pairs[i % p->nslots];

	*d = q->d;
	*s = q->s;
}

int bench_measure_cold(const struct copier *cs, unsigned int n,
		       const struct bench_pool *pool, size_t len,
		       const struct bench_opts *o, struct bench_stats *out)
{
	struct cold_place p;
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	size_t stride = slot_stride(len);
	uint32_t *order;
	int rc = -ENOMEM;

	if (len > pool->size)
		return -E2BIG;
	p.nslots = pool->size / stride;
	if (p.nslots > UINT32_MAX)
		p.nslots = UINT32_MAX;
	order = malloc(p.nslots * sizeof(*order));
	p.pairs = malloc(p.nslots * sizeof(*p.pairs));
	if (!order || !p.pairs)
		goto out;
	for (size_t i = 0; i < p.nslots; i++)
		order[i] = (uint32_t)i;
	for (size_t i = p.nslots - 1; i > 0; i--) {
		size_t j;
		uint32_t tmp;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % (i + 1);
		tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
	/* Consecutive copies walk the shuffled slots: none is reused while
	 * its lines could still be cached.  The destination at the next
	 * slot's place (bench_measure_hot()), and up to half a page, in the
	 * other half of its page: at one page offset, each copy's loads wait
	 * on the last copy's stores (4K aliasing), and the fewer
	 * instructions a copy takes, the more.  On an Intel Emerald Rapids
	 * host glibc's cold 64 B copy ran at 1.16 GB/s and memmig's at 1.33
	 * that way, at 2.35 and 2.48 with the destination 64 B on. */
	for (size_t i = 0; i < p.nslots; i++)
		p.pairs[i] = (struct cold_pair){
			.d = pool->dst + (size_t)order[(i + 1) % p.nslots] * stride +
			     (len <= MEMMIG_PAGE_SIZE / 2 ? MEMMIG_PAGE_SIZE / 2 : 0),
			.s = pool->src + (size_t)order[i] * stride,
		};
	rc = measure(cs, n, place_cold, &p, len, p.nslots, o, out);
out:
	free(order);
	free(p.pairs);
	return rc;
}

void bench_plot_copiers(struct plot *p, const struct copier *cs, unsigned int n,
			const size_t *sizes, size_t nsizes,
			const struct bench_stats *st, size_t stride)
{
	for (unsigned int ci = 0; ci < n; ci++) {
		enum copier_kind k = cs[ci].kind;

		plot_series(p, cs[ci].name, k == COPIER_MEMMIG ? PLOT_MAIN :
			    k == COPIER_GLIBC || k == COPIER_PMEM ? PLOT_PEER : PLOT_THIN);
		for (size_t si = 0; si < nsizes; si++)
			plot_point(p, (double)sizes[si], st[si * stride + ci].median);
	}
}

void bench_plot_pause(struct plot *p, const struct memmig_live_report *const *r, size_t n,
		      const char *const *tics)
{
	const char *name;
	char budget[48];
	double took;
	unsigned int i;

	if (!n)
		return;
	for (i = 0; !memmig_live_pause_part(r[0], i, &name, NULL, NULL); i++) {
		plot_series(p, name, PLOT_THIN);
		for (size_t k = 0; k < n; k++) {
			memmig_live_pause_part(r[k], i, NULL, &took, NULL);
			plot_point(p, (double)(k + 1), took * 1e3);
		}
	}
	plot_series(p, "other", PLOT_THIN);
	for (size_t k = 0; k < n; k++) {
		double parts = 0;

		for (i = 0; !memmig_live_pause_part(r[k], i, NULL, &took, NULL); i++)
			parts += took;
		plot_point(p, (double)(k + 1),
			   r[k]->pause_s > parts ? (r[k]->pause_s - parts) * 1e3 : 0);
		plot_xtic(p, (double)(k + 1), tics[k]);
	}
	snprintf(budget, sizeof(budget), "budget %g ms", r[0]->pause_budget_s * 1e3);
	plot_hline(p, r[0]->pause_budget_s * 1e3, budget);
}

static bool progress_tty = false;

void bench_progress(const char *format, ...)
{
	va_list ap;

	if (!isatty(STDERR_FILENO))
		return;
	progress_tty = true;
	fputs("\r\033[K", stderr);
	va_start(ap, format);
	vfprintf(stderr, format, ap);
	va_end(ap);
	fflush(stderr);
}

void bench_progress_done(void)
{
	if (progress_tty)
		fputs("\r\033[K", stderr);
	progress_tty = false;
}

void bench_note(const char *format, ...)
{
	va_list ap;

	bench_progress_done();
	va_start(ap, format);
	vfprintf(stderr, format, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

/*
 * A guest's size at most from and to buffers of this size, reused: a full
 * source and destination beside the guest would hold three guests (an
 * 8 GiB demo did not fit 24 GiB).  Reuse keeps the copy cold: one pass
 * reads and writes 2 GiB, far beyond any last-level cache, so each part of
 * a buffer is evicted long before the next pass comes back to it.
 */
#define RAW_CHUNK_MAX (1ULL << 30)

/* The guest's longest stall since the reset, once it wrote on: a guest
 * held for the whole copy has a stall as long as the copy.  Its first look
 * at the clock after the reset only takes the reset (the stats say 0 until
 * then), so a guest that had no CPU during the copy needs a second one to
 * count (10 s at most). */
static double raw_copy_stall_s(struct minivmm *vmm)
{
	struct minivmm_stats st = { 0 };

	for (int i = 0; i < 100 && !st.stall_max_ns; i++) {
		minivmm_wait_progress(vmm, 100);
		minivmm_get_stats(vmm, &st);
	}
	return st.stall_max_ns * 1e-9;
}

double bench_raw_copy_s(struct memmig_ctx *ctx, size_t len, struct minivmm *vmm,
			double *stall_s)
{
	size_t chunk = len < RAW_CHUNK_MAX ? len : RAW_CHUNK_MAX;
	uint8_t *src = bench_alloc(chunk), *dst = bench_alloc(chunk);
	double s[3] = { 0 }, stall[3] = { 0 }, t;

	for (int i = 0; i < 3 && src && dst; i++) {
		memset(src, 0x5a + i, chunk);
		if (vmm)
			minivmm_stall_reset(vmm);
		t = bench_now();
		for (size_t off = 0; off < len; off += chunk)
			memmig_copy_run(ctx, dst, src, len - off < chunk ? len - off : chunk, 0);
		s[i] = bench_now() - t;
		if (vmm)
			stall[i] = raw_copy_stall_s(vmm);
	}
	bench_free(src, chunk);
	bench_free(dst, chunk);
	if (stall_s)
		*stall_s = bench_median(stall, 3);
	return bench_median(s, 3);
}
