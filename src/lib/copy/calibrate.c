/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Calibration: this CPU's crossovers measured, so that measurement
 * overrides the seed rules (docs/sources.md, seed 004: rep movs can lose
 * badly on small copies even with FSRM).  memmig-cli bench copy --calibrate writes the
 * result where libmemmig loads it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lib/core/memmig-private.h"
#include "lib/copy/copy-private.h"
#include "lib/copy/policy.h"
#include "lib/desc/desc-private.h"

#define CAL_POOL (256UL << 20)
#define CAL_SAMPLE_S 0.0005	/* one sample's length */
#define PASSES 3		/* each ladder, per-size median of these */
#define LADDER_MAX 24		/* rows of any ladder */

static const size_t ladder_small[] = {
	16, 32, 64, 96, 128, 168, 192, 256, 320, 384, 512, 768, 1024,
	1536, 2048, 3072, 4096, 8192, 16384, 32768, 65536,
};
#define N_SMALL (sizeof(ladder_small) / sizeof(ladder_small[0]))

struct cal {
	struct memmig_ctx *ctx;
	struct memmig_cpu_info cpu;
	struct memmig_calibrate_opts o;
	uint8_t *src, *dst;
	size_t next;		/* the next cold place */
	unsigned int flags;	/* each copy's, drained each: the pmem step's */
	bool drain_each;	/* every copy drained, as one call is */
	bool dst_apart;		/* hot: each primitive its own destination */
	bool units;		/* above 2 MiB, one call per 2 MiB unit */
	/* Where set, each "primitive" measured is an index into runs: hot
	 * memmig_copy_run() calls on run, tuned so (cal_dispatch()). */
	struct memmig_ctx *run;
	const struct memmig_tuning *runs;
};

/* From one page-aligned place of the pool to the next, for len bytes. */
static size_t page_stride(size_t len)
{
	return (len + MEMMIG_PAGE_SIZE - 1) & ~(MEMMIG_PAGE_SIZE - 1);
}

/*
 * One copy with prim; where c->units asks, one call per 2 MiB unit, as
 * memmig_copy_units() and a migration copy, with flags on the last.  On
 * an AMD Zen 5 host one rep movsb of 256 MiB ran at 22 GB/s and the same
 * in units at 17 (NT stores 18 either way): whole, the hot NT threshold
 * came out never, and the bench's unit copies from 32 MiB lost 20-28 %.
 */
static void copy_once(struct cal *c, int prim, uint8_t *d, const uint8_t *s,
		      size_t len, unsigned int flags)
{
	size_t off = 0;

	for (; c->units && len - off > MEMMIG_UNIT_SIZE; off += MEMMIG_UNIT_SIZE)
		memmig_copy_with(c->ctx, prim, d + off, s + off, MEMMIG_UNIT_SIZE,
				 flags | MEMMIG_COPY_NODRAIN);
	memmig_copy_with(c->ctx, prim, d + off, s + off, len - off, flags);
}

/* n hot copies through memmig_copy_run() itself, in a loop of their own
 * with its values in registers (bench-util.c's hot loops say why). */
static __attribute__((noinline)) void run_hot(struct memmig_ctx *ctx, uint8_t *d,
					       const uint8_t *s, size_t len, size_t n)
{
	while (n--) {
		memmig_copy_run(ctx, d, s, len, 0);
		__asm__ volatile("" : : "r"(d) : "memory");
	}
}

/*
 * iters copies of len bytes with prim, drained once at the end: hot, the
 * same buffers each time (the destination from dst_off; 0 when cold);
 * cold, each at a new page-aligned place in the pool, in an order no
 * prefetcher follows (an odd multiplier modulo a power of two visits
 * every slot), the destination at the next slot's place.  Never at the
 * source's own offset: the two halves of the pool are 256 MiB apart, and
 * on AMD Zen lines whose addresses agree in bits 12-27 evict each other
 * from L1 (its way predictor's tags hash those bits).  A hot 16 KiB copy
 * so placed ran at 31-39 GB/s on a Zen 3 host whatever copied it, AVX2's
 * at 93 GB/s pages apart; the vector copies came out alike, and a
 * calibration chose SSE2, half AVX2's speed from 1 KiB once apart.
 */
static double time_copies(struct cal *c, int prim, size_t len, size_t iters,
			  bool cold, size_t dst_off)
{
	size_t stride = page_stride(len);
	size_t mask = 1, at = c->next;
	double t0;

	if (c->runs) {		/* hot only */
		memmig_ctx_apply_tuning(c->run, &c->runs[prim]);
		t0 = memmig_now();
		run_hot(c->run, c->dst + dst_off, c->src, len, iters);
		return memmig_now() - t0;
	}
	while (mask * 2 <= CAL_POOL / stride)
		mask *= 2;
	mask--;
	t0 = memmig_now();
	for (size_t i = 0; i < iters; i++) {
		uint8_t *d = c->dst + dst_off, *s = c->src;

		if (cold) {
			s += (at * 0x9e3779b1u & mask) * stride;
			d = c->dst + (++at * 0x9e3779b1u & mask) * stride;
		}
		copy_once(c, prim, d, s, len,
			  c->flags ? c->flags :
			  !c->drain_each && i + 1 < iters ? MEMMIG_COPY_NODRAIN : 0);
	}
	t0 = memmig_now() - t0;
	c->next = at;
	return t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median GB/s of copies of len bytes by n primitives, sampled
 * round-robin so that a noisy moment hits them all alike. */
static void measure(struct cal *c, const int *prims, unsigned int n, size_t len,
		    bool cold, double *out)
{
	double samples[4][64], t = 0;
	size_t iters[4], dst_off[4] = { 0 }, stride = page_stride(len);
	unsigned int reps = c->o.reps;

	/* Hot destinations a stride from the source's offset (time_copies()
	 * says why), and where dst_apart asks, a primitive's own, where the
	 * pool holds them: NT stores evict the lines they write, so that a
	 * cached copy sampled after them into the same destination paid for
	 * its misses (at 1-2 MiB on an AMD Zen 3 host with a 32 MiB L3: 18.5
	 * GB/s, 26-27 apart, and NT came out from 1 MiB instead of 8). */
	for (unsigned int p = 0; !cold && p < n && stride * (n + 1) <= CAL_POOL; p++)
		dst_off[p] = (c->dst_apart ? p + 1 : 1) * stride;

	for (unsigned int p = 0; p < n; p++) {
		/* Warm-up, growing the count until a sample is long enough. */
		for (iters[p] = 1;; iters[p] *= 4) {
			t = time_copies(c, prims[p], len, iters[p], cold, dst_off[p]);
			if (t >= CAL_SAMPLE_S / 4)
				break;
		}
		if (t > 0 && t < CAL_SAMPLE_S)
			iters[p] = (size_t)(iters[p] * (CAL_SAMPLE_S / t)) + 1;
	}
	for (unsigned int r = 0; r < reps; r++)
		for (unsigned int p = 0; p < n; p++) {
			t = time_copies(c, prims[p], len, iters[p], cold, dst_off[p]);
			samples[p][r] = t > 0 ? (double)len * iters[p] / t / 1e9 : 0;
		}
	for (unsigned int p = 0; p < n; p++) {
		qsort(samples[p], reps, sizeof(double), cmp_double);
		out[p] = samples[p][reps / 2];
	}
}

static void hot(struct cal *c, const int *prims, unsigned int n, size_t len, double *out)
{
	measure(c, prims, n, len, false, out);
}

static double median3(double a, double b, double c)
{
	if (a > b) {
		double x = a;

		a = b;
		b = x;
	}
	return c < a ? a : c > b ? b : c;
}

/* hot() or cold, each size PASSES times, the per-primitive median. */
static void measure3(struct cal *c, const int *prims, unsigned int n, size_t len,
		     bool cold, double *out)
{
	double r[PASSES][4];

	for (int p = 0; p < PASSES; p++)
		measure(c, prims, n, len, cold, r[p]);
	for (unsigned int k = 0; k < n; k++)
		out[k] = median3(r[0][k], r[1][k], r[2][k]);
}

static void report(struct cal *c, int step, size_t len, const int *prims, unsigned int n,
		   const double *gbps)
{
	struct memmig_calibrate_row row = { .sz = sizeof(row), .step = step, .len = len, .n = n };

	if (!c->o.row)
		return;
	memcpy(row.prims, prims, n * sizeof(*prims));
	memcpy(row.gbps, gbps, n * sizeof(*gbps));
	c->o.row(c->o.opaque, &row);
}

/*
 * The threshold T (a ladder size, or never) that loses least, summed over
 * the ladder, when sizes below T use "base" and the rest use "fast".  One
 * noisy size cannot drag the threshold far: it costs only its own loss.
 */
static size_t crossover(const size_t *ladder, size_t n, const double *base,
			const double *fast, size_t never)
{
	size_t best_t = never;
	double best_loss = 1e300;

	for (size_t t = 0; t <= n; t++) {
		double loss = 0;

		for (size_t i = 0; i < n; i++) {
			double top = base[i] > fast[i] ? base[i] : fast[i];
			double got = i >= t ? fast[i] : base[i];

			if (top > 0)
				loss += (top - got) / top;
		}
		/* Strictly less: on a tie the smaller threshold stays. */
		if (loss < best_loss) {
			best_loss = loss;
			best_t = t < n ? ladder[t] : never;
		}
	}
	return best_t;
}

/*
 * Of nc ways measured over n sizes (v[way][size]), the one with the least
 * loss summed over the sizes, each size's against the best way there;
 * strictly less by 1e-9, so that on a tie the first stays.
 */
static unsigned int least_loss(const double (*v)[LADDER_MAX], unsigned int nc, size_t n)
{
	double best = 1e300;
	unsigned int pick = 0;

	for (unsigned int d = 0; d < nc; d++) {
		double loss = 0;

		for (size_t i = 0; i < n; i++) {
			double top = 0;

			for (unsigned int e = 0; e < nc; e++)
				top = v[e][i] > top ? v[e][i] : top;
			if (top > 0)
				loss += (top - v[d][i]) / top;
		}
		if (loss < best - 1e-9) {
			best = loss;
			pick = d;
		}
	}
	return pick;
}

/*
 * The vector copies against each other: vec_prim for the short copies and,
 * from vec_wide_min, vec_wide_prim, the pair and crossover with the least
 * loss summed over the sizes (each size counts alike, however fast).  A
 * wider copy can win the loop and lose the short copies (AVX2's vzeroupper
 * costs ~2 ns a call on AMD family 17h).
 */
static void cal_vec_prim(struct cal *c, struct memmig_tuning *t)
{
	static const size_t ladder[] = { 16, 64, 128, 256, 512, 1024, 2048, 4096, 16384, 65536 };
	const size_t nl = sizeof(ladder) / sizeof(ladder[0]);
	double v[4][LADDER_MAX], top[LADDER_MAX], best = 1e300;
	int prims[4];
	unsigned int n = 0;

	for (int p = MEMMIG_PRIM_VEC_SSE2; p <= MEMMIG_PRIM_VEC_AVX512; p++)
		if (memmig_prim_supported(&c->cpu, p))
			prims[n++] = p;
	if (n < 2)
		return;
	for (size_t i = 0; i < nl; i++) {
		double row[4];

		measure3(c, prims, n, ladder[i], false, row);
		for (unsigned int k = 0; k < n; k++)
			v[k][i] = row[k];
		report(c, MEMMIG_CALIBRATE_VEC_PRIM, ladder[i], prims, n, row);
	}
	/* Every pair (a below the crossover, b from it) and crossover,
	 * each size's loss against the best of all there. */
	for (size_t i = 0; i < nl; i++) {
		top[i] = 0;
		for (unsigned int k = 0; k < n; k++)
			top[i] = v[k][i] > top[i] ? v[k][i] : top[i];
	}
	for (unsigned int a = 0; a < n; a++)
		for (unsigned int b = 0; b < n; b++)
			for (size_t at = 0; at <= nl; at++) {
				double loss = 0;

				for (size_t i = 0; i < nl; i++)
					if (top[i] > 0)
						loss += (top[i] - (i < at ? v[a][i] : v[b][i])) /
							top[i];
				/* Strictly less: fewer crossovers win ties. */
				if (loss < best - 1e-9) {
					best = loss;
					t->vec_prim = prims[a];
					t->vec_wide_prim = prims[b];
					t->vec_wide_min = at < nl ? ladder[at] : MEMMIG_SIZE_NEVER;
				}
			}
	if (t->vec_wide_min == MEMMIG_SIZE_NEVER)
		t->vec_wide_prim = t->vec_prim;
	if (t->vec_wide_min == ladder[0] || t->vec_wide_prim == t->vec_prim) {
		t->vec_prim = t->vec_wide_prim;	/* one copy at every size */
		t->vec_wide_min = MEMMIG_SIZE_NEVER;
	}
}

/*
 * The vector copy below vec_wide_min judged again, through memmig_copy_run()
 * itself: cal_vec_prim() times a call to each primitive, where the dispatch
 * copies up to 1 KiB with inline moves, of the vector copy the length's
 * range chose (copy.c's apply_inline(), entry.S).  On an AMD Zen 4 host the
 * calls chose SSE2 below 128 B (14.8 GB/s at 64 B, AVX-512's call 13.9),
 * and with it the dispatch lost AVX-512's inline moves up to 1 KiB:
 * hot 64-256 B at 0.61-0.64x glibc's speed, 0.90-1.10x with them.  Two
 * tunings, as found and the wide copy at every size, over the lengths the
 * choice moves (64 B to 1 KiB, and on below vec_wide_min); the one with
 * less loss summed over them, a tie to the wide copy (fewer crossovers).
 */
static void cal_dispatch(struct cal *c, struct memmig_tuning *t)
{
	struct memmig_tuning runs[2] = { *t, *t };
	double v[2][LADDER_MAX];
	const int idx[2] = { 0, 1 };
	size_t n = 0;

	/* A context of its own: the caller's keeps its tuning. */
	if (t->vec_wide_min == MEMMIG_SIZE_NEVER ||
	    memmig_ctx_new_flags(&c->run, MEMMIG_CTX_NO_ENV) < 0)
		return;
	runs[0].vec_prim = t->vec_wide_prim;	/* first: it wins a tie */
	runs[0].vec_wide_min = MEMMIG_SIZE_NEVER;
	c->runs = runs;
	/* From 33 B: entry.S copies 1-32 B alike under any tuning. */
	for (size_t i = 0; i < N_SMALL; i++) {
		const int prims[2] = { t->vec_wide_prim, t->vec_prim };
		size_t len = ladder_small[i];
		double r[4];

		if (len <= 32)
			continue;
		if (len > 1024 && len >= t->vec_wide_min)
			break;
		measure3(c, idx, 2, len, false, r);
		v[0][n] = r[0];
		v[1][n] = r[1];
		n++;
		report(c, MEMMIG_CALIBRATE_DISPATCH, len, prims, 2, r);
	}
	c->runs = NULL;
	memmig_ctx_unref(c->run);
	c->run = NULL;
	*t = runs[least_loss(v, 2, n)];
}

/*
 * Temporal crossovers: rep movsq against the movq loop, rep movsb against
 * the better of the two (a movsq window survives only below movsb_min),
 * then the vector copy against whichever string copy those give: vec_max.
 */
static void cal_small(struct cal *c, struct memmig_tuning *t)
{
	bool erms = c->cpu.features & (MEMMIG_CPU_ERMS | MEMMIG_CPU_FSRM);
	bool rep = c->cpu.features & MEMMIG_CPU_REP_GOOD;
	double v[4][LADDER_MAX], best_q[LADDER_MAX], str[LADDER_MAX];
	int prims[4] = { MEMMIG_PRIM_MOVQ, t->vec_prim };
	unsigned int n = 2, col_q = 0, col_b = 0;
	struct memmig_tuning vt = *t;

	vt.vec_max = MEMMIG_SIZE_NEVER;	/* which vector copy, size by size */

	if (rep) {
		col_q = n;
		prims[n++] = MEMMIG_PRIM_REP_MOVSQ;
	}
	if (erms) {
		col_b = n;
		prims[n++] = MEMMIG_PRIM_REP_MOVSB;
	}
	for (size_t i = 0; i < N_SMALL; i++) {
		double row[4];

		prims[1] = memmig_policy_temporal(&c->cpu, &vt, ladder_small[i]);
		measure3(c, prims, n, ladder_small[i], false, row);
		for (unsigned int k = 0; k < n; k++)
			v[k][i] = row[k];
		report(c, MEMMIG_CALIBRATE_SMALL, ladder_small[i], prims, n, row);
	}
	if (rep) {
		t->movsq_min = crossover(ladder_small, N_SMALL, v[0], v[col_q], 1 << 20);
		for (size_t i = 0; i < N_SMALL; i++)
			best_q[i] = v[0][i] > v[col_q][i] ? v[0][i] : v[col_q][i];
	}
	if (erms) {
		t->movsb_min = crossover(ladder_small, N_SMALL, rep ? best_q : v[0],
					 v[col_b], 1 << 20);
		if (t->movsq_min >= t->movsb_min)
			t->movsq_min = MEMMIG_SIZE_NEVER;	/* no window */
	}
	/* What each size gets without the vector copy, under these t. */
	for (size_t i = 0; i < N_SMALL; i++) {
		struct memmig_tuning s = *t;
		int p;

		s.vec_max = 0;
		p = memmig_policy_temporal(&c->cpu, &s, ladder_small[i]);
		str[i] = v[p == MEMMIG_PRIM_REP_MOVSB ? col_b :
			   p == MEMMIG_PRIM_REP_MOVSQ ? col_q : 0][i];
	}
	t->vec_max = crossover(ladder_small, N_SMALL, v[1], str, MEMMIG_SIZE_NEVER);
}

/*
 * The NT primitive with the least loss summed over a working set beyond
 * the cache and cold pmem copies of 512 B, 2 KiB and 16 KiB (drained each).
 * On the stream the primitives tie within the noise on some hosts, while
 * short cold copies tell them apart: on an AMD family 1Ah host a 2 KiB
 * pmem copy was 0.75-0.80x libpmem with nt-avx2, 1.13x with nt-avx512.
 */
static void cal_nt_prim(struct cal *c, struct memmig_tuning *t)
{
	static const size_t cold_len[] = { 512, 2048, 16384 };
	const size_t nc = sizeof(cold_len) / sizeof(cold_len[0]);
	double r[4][4], loss[4] = { 0 }, best = 1e300;
	unsigned int n = 0;
	int prims[4];

	for (int p = 0; p < MEMMIG_PRIM_COUNT && n < 4; p++)
		if (memmig_prim_is_nt(p) && memmig_prim_supported(&c->cpu, p))
			prims[n++] = p;
	if (!n)
		return;
	hot(c, prims, n, CAL_POOL, r[0]);
	report(c, MEMMIG_CALIBRATE_NT_PRIM, CAL_POOL, prims, n, r[0]);
	c->flags = MEMMIG_COPY_PMEM;
	for (size_t i = 0; i < nc; i++) {
		measure3(c, prims, n, cold_len[i], true, r[i + 1]);
		report(c, MEMMIG_CALIBRATE_NT_PRIM, cold_len[i], prims, n, r[i + 1]);
	}
	c->flags = 0;
	for (size_t i = 0; i <= nc; i++) {
		double top = 0;

		for (unsigned int k = 0; k < n; k++)
			top = r[i][k] > top ? r[i][k] : top;
		for (unsigned int k = 0; k < n && top > 0; k++)
			loss[k] += (top - r[i][k]) / top;
	}
	for (unsigned int k = 0; k < n; k++)
		if (loss[k] < best) {
			best = loss[k];
			t->nt_prim = prims[k];
		}
}

/* NT crossover: the working set from which NT stores beat cached ones,
 * copied in units as memmig_copy_units() copies it (copy_once()). */
static void cal_nt_min(struct cal *c, struct memmig_tuning *t)
{
	double v[2][LADDER_MAX];
	size_t ladder[LADDER_MAX], n = 0;

	for (size_t len = 256 << 10; len <= CAL_POOL && n < LADDER_MAX; len *= 2)
		ladder[n++] = len;
	for (size_t i = 0; i < n; i++) {
		/* The temporal primitive this size gets under the new t. */
		int prims[] = { memmig_policy_choose(&c->cpu, t, ladder[i], MEMMIG_COPY_TEMPORAL),
				t->nt_prim };
		double r[4];

		c->dst_apart = c->units = true;
		hot(c, prims, 2, ladder[i], r);
		c->dst_apart = c->units = false;
		v[0][i] = r[0];
		v[1][i] = r[1];
		report(c, MEMMIG_CALIBRATE_NT_MIN, ladder[i], prims, 2, r);
	}
	t->nt_min = crossover(ladder, n, v[0], v[1], MEMMIG_SIZE_NEVER);
}

/*
 * Cold copies (each at a new place, far from the last): from which size
 * NT stores, which need not read the lines they write, beat what a
 * temporal copy of that size gets.  Each copy is drained, as a call of
 * memmig_copy_run(MEMMIG_COPY_COLD) is: on an Intel Emerald Rapids host
 * the sfence after a 64 B NT copy waited ~200 ns, and undrained copies had
 * put the threshold at 64 B, where drained ones ran at 0.22x a temporal
 * copy.
 */
static void cal_nt_cold(struct cal *c, struct memmig_tuning *t)
{
	double v[2][LADDER_MAX];

	c->drain_each = true;
	for (size_t i = 0; i < N_SMALL; i++) {
		int prims[] = { memmig_policy_choose(&c->cpu, t, ladder_small[i],
						     MEMMIG_COPY_TEMPORAL),
				t->nt_prim };
		double r[4];

		measure3(c, prims, 2, ladder_small[i], true, r);
		v[0][i] = r[0];
		v[1][i] = r[1];
		report(c, MEMMIG_CALIBRATE_NT_COLD, ladder_small[i], prims, 2, r);
	}
	c->drain_each = false;
	t->nt_cold_min = crossover(ladder_small, N_SMALL, v[0], v[1], MEMMIG_SIZE_NEVER);
}

/*
 * Descriptor tables: the slow path and the template with NT and with plain
 * stores, one thread, over the whole pool (src and dst, 512 MiB: beyond
 * the cache one core fills, see desc-calibrate.c).  48 rounds of 64 MiB
 * per path and a first sweep: 0.5 s at 20 GB/s.
 */
static void cal_desc(struct cal *c, struct memmig_tuning *t)
{
	static const int vec_of_nt[] = {
		[MEMMIG_PRIM_NT_MOVNTI] = MEMMIG_PRIM_VEC_SSE2,
		[MEMMIG_PRIM_NT_AVX2] = MEMMIG_PRIM_VEC_AVX2,
		[MEMMIG_PRIM_NT_AVX512] = MEMMIG_PRIM_VEC_AVX512,
	};
	int nt = memmig_policy_nt_ok(&c->cpu, t->nt_prim) ? t->nt_prim :
							     MEMMIG_PRIM_NT_MOVNTI;
	int prims[3] = { MEMMIG_PRIM_MOVQ, nt, vec_of_nt[nt] };
	struct desc_measured m;
	double r[3];

	if (memmig_desc_measure(&c->cpu, nt, c->src, 2 * CAL_POOL, 48, &m) < 0)
		return;
	r[0] = m.slow;
	r[1] = m.nt;
	r[2] = m.temporal;
	report(c, MEMMIG_CALIBRATE_DESC, 2 * CAL_POOL, prims, 3, r);
	memmig_desc_choose(&m, t);
}

/*
 * Cold pmem copies (MEMMIG_COPY_PMEM, drained each, as pmem_memcpy is):
 * from which size NT stores beat the temporal copy that flushes every
 * line.  A cold line costs a temporal store a read first (on an AMD family
 * 17h host NT stores lost below 256 B all the same, on a family 1Ah host
 * they won from 64 B), so this is measured, not assumed.
 */
static void cal_pmem_nt(struct cal *c, struct memmig_tuning *t)
{
	static const size_t ladder[] = { 64, 128, 256, 512, 1024, 2048, 4096 };
	const size_t nl = sizeof(ladder) / sizeof(ladder[0]);
	double v[2][LADDER_MAX];

	c->flags = MEMMIG_COPY_PMEM;
	for (size_t i = 0; i < nl; i++) {
		int prims[] = { memmig_policy_choose(&c->cpu, t, ladder[i],
						     MEMMIG_COPY_TEMPORAL),
				t->nt_prim };
		double r[4];

		measure3(c, prims, 2, ladder[i], true, r);
		v[0][i] = r[0];
		v[1][i] = r[1];
		report(c, MEMMIG_CALIBRATE_PMEM_NT, ladder[i], prims, 2, r);
	}
	c->flags = 0;
	/* Never on this ladder is "temporal up to 4 KiB": a page is the
	 * most it measured, and NT stores are the pmem rule beyond. */
	t->pmem_nt_min = crossover(ladder, nl, v[0], v[1], 8192);
	if (t->pmem_nt_min == ladder[0])
		t->pmem_nt_min = 0;	/* NT at every length, as by default */
}

/*
 * How the NT loops fetch the source: cold pmem copies (each drained, as a
 * MEMMIG_COPY_PMEM call is) from 8 KiB to 2 MiB by the widest NT primitive,
 * prefetching 0, 1 KiB or 4 KiB ahead, and by loads-first blocks (nt.c),
 * samples round-robin, the way with the least loss summed over the sizes.  Some
 * hosts' prefetchers fetch ahead by themselves (then 0 wins and costs
 * nothing); on an AMD family 1Ah host 4 KiB made 8-16 KiB copies 15-20%
 * faster, on an Intel Emerald Rapids host the blocks were 3-5% ahead of the
 * rest from 64 KiB.  It runs before the NT primitives are compared, which
 * then run the way found: the context's bits are left so (the caller puts
 * them back).
 */
static void cal_nt_fetch(struct cal *c, struct memmig_tuning *t)
{
	static const size_t ladder[] = { 8192, 16384, 65536, 262144, 2097152 };
	static const struct { size_t pf; bool block; } way[] = {
		{ 0, false }, { 1024, false }, { 4096, false }, { 0, true },
	};
	const size_t nl = sizeof(ladder) / sizeof(ladder[0]);
	const unsigned int nd = sizeof(way) / sizeof(way[0]);
	double v[4][LADDER_MAX];
	int prims[4] = { t->nt_prim, t->nt_prim, t->nt_prim, t->nt_prim };
	unsigned int bits[4], pick;

	for (unsigned int d = 0; d < nd; d++)
		bits[d] = memmig_prefetch_bits(way[d].pf) | (way[d].block ? MEMMIG_COPY__BLOCK : 0);
	c->flags = MEMMIG_COPY_PMEM;
	for (size_t i = 0; i < nl; i++) {
		double r[PASSES][4], samples[4][64], row[4], tm = 0;
		size_t iters;

		for (iters = 1;; iters *= 4) {
			tm = time_copies(c, t->nt_prim, ladder[i], iters, true, 0);
			if (tm >= CAL_SAMPLE_S / 4)
				break;
		}
		if (tm > 0 && tm < CAL_SAMPLE_S)
			iters = (size_t)(iters * (CAL_SAMPLE_S / tm)) + 1;
		for (int pass = 0; pass < PASSES; pass++) {
			for (unsigned int s = 0; s < c->o.reps; s++)
				for (unsigned int d = 0; d < nd; d++) {
					c->ctx->nt_bits = bits[d];
					tm = time_copies(c, t->nt_prim, ladder[i], iters, true, 0);
					samples[d][s] = tm > 0 ? (double)ladder[i] * iters / tm / 1e9 : 0;
				}
			for (unsigned int d = 0; d < nd; d++) {
				qsort(samples[d], c->o.reps, sizeof(double), cmp_double);
				r[pass][d] = samples[d][c->o.reps / 2];
			}
		}
		for (unsigned int d = 0; d < nd; d++)
			row[d] = v[d][i] = median3(r[0][d], r[1][d], r[2][d]);
		report(c, MEMMIG_CALIBRATE_NT_PREFETCH, ladder[i], prims, nd, row);
	}
	c->flags = 0;
	/* On a tie no prefetch (the first) stays. */
	pick = least_loss(v, nd, nl);
	t->nt_prefetch = way[pick].pf;
	c->ctx->nt_bits = bits[pick];
}

/* The bytes of a block the NT primitive loads (nt.c); 0: it has none. */
static size_t nt_block_bytes(int prim)
{
	return prim == MEMMIG_PRIM_NT_AVX512 ? 1024 : prim == MEMMIG_PRIM_NT_AVX2 ? 512 : 0;
}

int memmig_tuning_calibrate(struct memmig_ctx *ctx, const struct memmig_calibrate_opts *opts,
			    struct memmig_tuning *out)
{
	struct memmig_tuning t = { .sz = sizeof(t) };
	struct cal c = { .ctx = ctx };
	unsigned int saved_bits;

	c.cpu.sz = sizeof(c.cpu);
	c.o.sz = sizeof(c.o);
	if (!ctx || !out || (opts && memmig_struct_in(&c.o, sizeof(c.o), opts) < 0))
		return -EINVAL;
	if (!c.o.reps)
		c.o.reps = 11;
	if (c.o.reps > 64)
		return -EINVAL;
	memmig_ctx_get_cpu(ctx, &c.cpu);
	memmig_tuning_default(&c.cpu, &t);
	c.src = mmap(NULL, 2 * CAL_POOL, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c.src == MAP_FAILED)
		return -ENOMEM;
	/* Huge pages, as the memory memmig copies mostly is; all touched. */
	madvise(c.src, 2 * CAL_POOL, MADV_HUGEPAGE);
	c.dst = c.src + CAL_POOL;
	memset(c.src, 0x5a, CAL_POOL);
	memset(c.dst, 0, CAL_POOL);
	/* Every NT copy below runs as the steps have found so far, not as
	 * this context was tuned before. */
	saved_bits = ctx->nt_bits;
	ctx->nt_bits = 0;
	cal_vec_prim(&c, &t);
	cal_small(&c, &t);
	cal_dispatch(&c, &t);
	if (memmig_prim_is_nt(t.nt_prim))	/* the default: the widest */
		cal_nt_fetch(&c, &t);
	cal_nt_prim(&c, &t);
	/* The way found is in the context's bits; the block, the primitive's. */
	t.nt_block = ctx->nt_bits & MEMMIG_COPY__BLOCK ? nt_block_bytes(t.nt_prim) : 0;
	cal_nt_min(&c, &t);
	cal_nt_cold(&c, &t);
	if (memmig_prim_is_nt(t.nt_prim))
		cal_pmem_nt(&c, &t);
	/* Last: its NT stores are the chosen NT primitive's. */
	cal_desc(&c, &t);
	ctx->nt_bits = saved_bits;
	munmap(c.src, 2 * CAL_POOL);
	return memmig_struct_out(out, &t, sizeof(t));
}
