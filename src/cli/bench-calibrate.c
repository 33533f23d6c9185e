/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli bench copy --calibrate: measures this CPU's crossovers, so that
 * measurement overrides the seed rules (seeds/004: rep movs can lose badly
 * on small copies even with FSRM), and writes them for libmemmig to load.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "shared/size.h"

#define CAL_POOL (256UL << 20)

static const size_t ladder_small[] = {
	16, 32, 64, 96, 128, 168, 192, 256, 320, 384, 512, 768, 1024,
	1536, 2048, 3072, 4096, 8192,
};
#define N_SMALL (sizeof(ladder_small) / sizeof(ladder_small[0]))
#define LADDER_MAX 18 /* rows of any ladder */

static const struct bench_opts cal_opts = { .reps = 11, .sample_s = 0.002 };

/* Medians of hot copies of len bytes by n primitives, sampled round-robin. */
static void hot(struct memmig_ctx *ctx, const int *prims, unsigned int n,
		const struct bench_pool *p, size_t len, double *out)
{
	struct copier cs[4];
	struct bench_stats st[4];

	for (unsigned int i = 0; i < n; i++)
		cs[i] = (struct copier){ .name = memmig_prim_name(prims[i]),
					 .kind = COPIER_PRIM, .prim = prims[i],
					 .ctx = ctx };
	if (bench_measure_hot(cs, n, p->dst, p->src, len, &cal_opts, st) < 0)
		n = 0;
	for (unsigned int i = 0; i < 4; i++)
		out[i] = i < n ? st[i].median : 0;
	bench_stats_free(st, n);
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

/* Calibration repeats each ladder and keeps the per-size median. */
#define PASSES 3

static double median3(double a, double b, double c)
{
	if (a > b) {
		double x = a;

		a = b;
		b = x;
	}
	return c < a ? a : c > b ? b : c;
}

static void print_ladder(const char *title, const size_t *ladder, size_t n,
			 unsigned int ncols, const char *const *names,
			 double (*v)[LADDER_MAX])
{
	char sz[32];

	printf("%s\n%10s", title, "size");
	for (unsigned int c = 0; c < ncols; c++)
		printf(" %10s", names[c]);
	printf("\n");
	for (size_t i = 0; i < n; i++) {
		printf("%10s", memmig_size_format(ladder[i], sz, sizeof(sz)));
		for (unsigned int c = 0; c < ncols; c++)
			printf(" %10.2f", v[c][i]);
		printf("\n");
	}
}

static int mkdir_parent(const char *path)
{
	char *copy = strdup(path), *dir;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (strcmp(dir, ".") && strcmp(dir, "/")) {
		rc = mkdir_parent(dir);
		if (!rc && mkdir(dir, 0755) && errno != EEXIST)
			rc = -errno;
	}
	free(copy);
	return rc;
}

/*
 * Temporal crossovers: rep movsq against the movq loop, and rep movsb
 * against the better of the two.  A movsq window survives only below
 * movsb_min.
 */
static void cal_small(struct memmig_ctx *ctx, const struct memmig_cpu_info *cpu,
		      const struct bench_pool *pool, struct memmig_tuning *t,
		      bool json)
{
	static const char *const names[] = { "movq", "movsq", "movsb" };
	double v[3][LADDER_MAX], best_q[LADDER_MAX];
	bool erms = cpu->features & (MEMMIG_CPU_ERMS | MEMMIG_CPU_FSRM);
	unsigned int ncols = erms ? 3 : 2;
	static const int prims[] = { MEMMIG_PRIM_MOVQ, MEMMIG_PRIM_REP_MOVSQ,
				     MEMMIG_PRIM_REP_MOVSB };

	if (!(cpu->features & MEMMIG_CPU_REP_GOOD) && !erms)
		return; /* the movq loop at every size: nothing to find */
	for (size_t i = 0; i < N_SMALL; i++) {
		double r[PASSES][4];

		bench_progress("calibrate: %zu B", ladder_small[i]);
		for (int p = 0; p < PASSES; p++)
			hot(ctx, prims, ncols, pool, ladder_small[i], r[p]);
		for (int c = 0; c < 3; c++)
			v[c][i] = median3(r[0][c], r[1][c], r[2][c]);
		best_q[i] = v[0][i] > v[1][i] ? v[0][i] : v[1][i];
	}
	bench_progress_done();
	t->movsq_min = crossover(ladder_small, N_SMALL, v[0], v[1], 16384);
	if (erms) {
		t->movsb_min = crossover(ladder_small, N_SMALL, best_q, v[2], 16384);
		if (t->movsq_min >= t->movsb_min)
			t->movsq_min = MEMMIG_SIZE_NEVER; /* no window */
	}
	if (!json)
		print_ladder("hot copies, GB/s", ladder_small, N_SMALL, ncols,
			     names, v);
}

/* The fastest NT primitive, on a working set beyond the cache. */
static void cal_nt_prim(struct memmig_ctx *ctx, const struct memmig_cpu_info *cpu,
			const struct bench_pool *pool, struct memmig_tuning *t,
			bool json)
{
	int prims[4];
	unsigned int n = 0;
	double r[4], best = 0;

	for (int p = 0; p < MEMMIG_PRIM_COUNT; p++)
		if (memmig_prim_is_nt(p) && memmig_prim_supported(cpu, p))
			prims[n++] = p;
	bench_progress("calibrate: NT primitives");
	hot(ctx, prims, n, pool, CAL_POOL, r);
	bench_progress_done();
	for (unsigned int i = 0; i < n; i++) {
		if (!json)
			printf("%s, %zu MiB: %.2f GB/s\n", memmig_prim_name(prims[i]),
			       CAL_POOL >> 20, r[i]);
		if (r[i] > best) {
			best = r[i];
			t->nt_prim = prims[i];
		}
	}
}

/* NT crossover: the working set from which NT stores beat cached ones. */
static void cal_nt_min(struct memmig_ctx *ctx, const struct memmig_cpu_info *cpu,
		       const struct bench_pool *pool, struct memmig_tuning *t,
		       bool json)
{
	const char *names[] = { "temporal", memmig_prim_name(t->nt_prim) };
	double v[2][LADDER_MAX];
	size_t ladder[LADDER_MAX], n = 0;

	for (size_t len = 256 << 10; len <= CAL_POOL && n < LADDER_MAX; len *= 2)
		ladder[n++] = len;
	for (size_t i = 0; i < n; i++) {
		/* The temporal primitive this size gets under the new t. */
		int tp = memmig_policy_choose(cpu, t, ladder[i], MEMMIG_COPY_TEMPORAL);

		int prims[] = { tp, t->nt_prim };
		double r[4];

		bench_progress("calibrate: NT at %zu KiB", ladder[i] >> 10);
		hot(ctx, prims, 2, pool, ladder[i], r);
		v[0][i] = r[0];
		v[1][i] = r[1];
	}
	bench_progress_done();
	t->nt_min = crossover(ladder, n, v[0], v[1], MEMMIG_SIZE_NEVER);
	if (!json)
		print_ladder("repeated copies of one buffer, GB/s", ladder, n, 2,
			     names, v);
}

/* Creates and removes the file memmig_tuning_save() will write first. */
static int output_writable(const char *path)
{
	char tmp[4096];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	unlink(tmp);
	return 0;
}

int bench_calibrate(struct memmig_ctx *ctx, const char *output, bool json)
{
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
	struct memmig_tuning t = { .sz = sizeof(t) };
	struct bench_pool pool;
	int rc;

	/* A path that cannot be written fails now, not after the measuring. */
	rc = mkdir_parent(output);
	if (!rc)
		rc = output_writable(output);
	if (rc < 0) {
		cli_error("calibrate: cannot write %s: %s\n", output, strerror(-rc));
		return rc;
	}
	memmig_ctx_get_cpu(ctx, &cpu);
	memmig_tuning_default(&cpu, &t);
	if (bench_pool_init(&pool, CAL_POOL) < 0) {
		cli_error("calibrate: cannot allocate 2 x %lu MiB\n", CAL_POOL >> 20);
		return -ENOMEM;
	}
	cal_small(ctx, &cpu, &pool, &t, json);
	cal_nt_prim(ctx, &cpu, &pool, &t, json);
	cal_nt_min(ctx, &cpu, &pool, &t, json);
	bench_pool_fini(&pool);

	rc = memmig_tuning_save(ctx, output, &t);
	if (rc < 0) {
		cli_error("calibrate: cannot write %s: %s\n", output, strerror(-rc));
		return rc;
	}
	memmig_ctx_set_tuning(ctx, &t);
	if (json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "file", json_object_new_string(output));
		json_object_object_add(o, "tuning", cli_json_tuning(&t));
		cli_json_print(o);
	} else {
		char a[32], b[32], c[32];

		printf("\nwrote %s: movsb from %s, movsq from %s, NT (%s) from %s\n",
		       output, cli_size(t.movsb_min, a, sizeof(a)),
		       cli_size(t.movsq_min, b, sizeof(b)), memmig_prim_name(t.nt_prim),
		       cli_size(t.nt_min, c, sizeof(c)));
	}
	return 0;
}
