/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Calibration: this CPU's crossovers measured, so that measurement
 * overrides the seed rules (seeds/004: rep movs can lose badly on small
 * copies even with FSRM).  memmig-cli bench copy --calibrate writes the
 * result where libmemmig loads it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lib/core/memmig-private.h"

#define CAL_POOL (256UL << 20)
#define CAL_SAMPLE_S 0.002	/* one sample's length */
#define PASSES 3		/* each ladder, per-size median of these */
#define LADDER_MAX 18		/* rows of any ladder */

static const size_t ladder_small[] = {
	16, 32, 64, 96, 128, 168, 192, 256, 320, 384, 512, 768, 1024,
	1536, 2048, 3072, 4096, 8192,
};
#define N_SMALL (sizeof(ladder_small) / sizeof(ladder_small[0]))

struct cal {
	struct memmig_ctx *ctx;
	struct memmig_cpu_info cpu;
	struct memmig_calibrate_opts o;
	uint8_t *src, *dst;
};

/* iters copies of len bytes with prim, drained once at the end. */
static double time_copies(struct cal *c, int prim, size_t len, size_t iters)
{
	double t0 = memmig_now();

	for (size_t i = 0; i < iters; i++)
		memmig_copy_with(c->ctx, prim, c->dst, c->src, len,
				 i + 1 < iters ? MEMMIG_COPY_NODRAIN : 0);
	return memmig_now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median GB/s of hot copies of len bytes by n primitives, sampled
 * round-robin so that a noisy moment hits them all alike. */
static void hot(struct cal *c, const int *prims, unsigned int n, size_t len, double *out)
{
	double samples[4][64], t = 0;
	size_t iters[4];
	unsigned int reps = c->o.reps;

	for (unsigned int p = 0; p < n; p++) {
		/* Warm-up, growing the count until a sample is long enough. */
		for (iters[p] = 1;; iters[p] *= 4) {
			t = time_copies(c, prims[p], len, iters[p]);
			if (t >= CAL_SAMPLE_S / 4)
				break;
		}
		if (t > 0 && t < CAL_SAMPLE_S)
			iters[p] = (size_t)(iters[p] * (CAL_SAMPLE_S / t)) + 1;
	}
	for (unsigned int r = 0; r < reps; r++)
		for (unsigned int p = 0; p < n; p++) {
			t = time_copies(c, prims[p], len, iters[p]);
			samples[p][r] = t > 0 ? (double)len * iters[p] / t / 1e9 : 0;
		}
	for (unsigned int p = 0; p < n; p++) {
		qsort(samples[p], reps, sizeof(double), cmp_double);
		out[p] = samples[p][reps / 2];
	}
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

static double median3(double a, double b, double c)
{
	if (a > b) {
		double x = a;

		a = b;
		b = x;
	}
	return c < a ? a : c > b ? b : c;
}

/*
 * Temporal crossovers: rep movsq against the movq loop, and rep movsb
 * against the better of the two.  A movsq window survives only below
 * movsb_min.
 */
static void cal_small(struct cal *c, struct memmig_tuning *t)
{
	static const int prims[] = { MEMMIG_PRIM_MOVQ, MEMMIG_PRIM_REP_MOVSQ,
				     MEMMIG_PRIM_REP_MOVSB };
	bool erms = c->cpu.features & (MEMMIG_CPU_ERMS | MEMMIG_CPU_FSRM);
	double v[3][LADDER_MAX], best_q[LADDER_MAX];
	unsigned int ncols = erms ? 3 : 2;

	if (!(c->cpu.features & MEMMIG_CPU_REP_GOOD) && !erms)
		return;	/* the movq loop at every size: nothing to find */
	for (size_t i = 0; i < N_SMALL; i++) {
		double r[PASSES][4], row[3];

		for (int p = 0; p < PASSES; p++)
			hot(c, prims, ncols, ladder_small[i], r[p]);
		for (unsigned int k = 0; k < 3; k++)
			v[k][i] = row[k] = median3(r[0][k], r[1][k], r[2][k]);
		best_q[i] = v[0][i] > v[1][i] ? v[0][i] : v[1][i];
		report(c, MEMMIG_CALIBRATE_SMALL, ladder_small[i], prims, ncols, row);
	}
	t->movsq_min = crossover(ladder_small, N_SMALL, v[0], v[1], 16384);
	if (erms) {
		t->movsb_min = crossover(ladder_small, N_SMALL, best_q, v[2], 16384);
		if (t->movsq_min >= t->movsb_min)
			t->movsq_min = MEMMIG_SIZE_NEVER;	/* no window */
	}
}

/* The fastest NT primitive, on a working set beyond the cache. */
static void cal_nt_prim(struct cal *c, struct memmig_tuning *t)
{
	double r[4], best = 0;
	unsigned int n = 0;
	int prims[4];

	for (int p = 0; p < MEMMIG_PRIM_COUNT && n < 4; p++)
		if (memmig_prim_is_nt(p) && memmig_prim_supported(&c->cpu, p))
			prims[n++] = p;
	if (!n)
		return;
	hot(c, prims, n, CAL_POOL, r);
	report(c, MEMMIG_CALIBRATE_NT_PRIM, CAL_POOL, prims, n, r);
	for (unsigned int i = 0; i < n; i++)
		if (r[i] > best) {
			best = r[i];
			t->nt_prim = prims[i];
		}
}

/* NT crossover: the working set from which NT stores beat cached ones. */
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

		hot(c, prims, 2, ladder[i], r);
		v[0][i] = r[0];
		v[1][i] = r[1];
		report(c, MEMMIG_CALIBRATE_NT_MIN, ladder[i], prims, 2, r);
	}
	t->nt_min = crossover(ladder, n, v[0], v[1], MEMMIG_SIZE_NEVER);
}

int memmig_tuning_calibrate(struct memmig_ctx *ctx, const struct memmig_calibrate_opts *opts,
			    struct memmig_tuning *out)
{
	struct memmig_tuning t = { .sz = sizeof(t) };
	struct cal c = { .ctx = ctx };

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
	cal_small(&c, &t);
	cal_nt_prim(&c, &t);
	cal_nt_min(&c, &t);
	munmap(c.src, 2 * CAL_POOL);
	return memmig_struct_out(out, &t, sizeof(t));
}
