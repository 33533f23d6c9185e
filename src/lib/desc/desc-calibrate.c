/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Calibration's descriptor step: one thread initializes a table three ways
 * (the slow path, the template with NT stores, with plain stores), so that
 * the template path writes with whichever stores this machine retires
 * faster (NT on the Intel hosts, plain on AMD Zen 5: docs/desc-tables.md).
 *
 * Cold here means what it means for a real table (1.6 GB for 100 GiB): no
 * line is in the cache when it is written.  The caller's buffer must
 * outgrow what one core can fill (calibration's 512 MiB: a Zen 5 core
 * fills its own CCD's 32 MiB of L3, whatever the VM reports for the
 * socket; Intel's shared L3 is at most 320 MiB on Emerald Rapids), and the
 * passes run back to back with no flush between them: each pass's plain
 * stores then evict the last pass's dirty lines, so their write-backs are
 * inside the timing, as they are when a table is initialized.  A flush
 * would hide them (the last pass's lines are then clean).
 *
 * On a shared host the bandwidth one thread gets swings by 2x from one
 * moment to the next (12 to 21 GB/s, NT stores, on the Zen 5 host), more
 * than the gap being measured.  So each round's three figures are divided
 * by the round's mean before the medians are taken: a round the
 * neighbours slowed weighs as much as any other, and what is compared is
 * the paths against each other within a round.
 */
#include <errno.h>
#include <stdlib.h>

#include "lib/desc/desc-private.h"

#define DESC_CAL_ROUNDS_MAX 16

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int memmig_desc_measure(const struct memmig_cpu_info *cpu, int nt_prim,
			void *buf, size_t len, unsigned int reps,
			struct desc_measured *out)
{
	struct desc_geometry g;
	memmig_desc_fill_fn fill[3];
	int store[3] = { 0, MEMMIG_DESC_STORE_NT, MEMMIG_DESC_STORE_TEMPORAL };
	double gbs[3][DESC_CAL_ROUNDS_MAX], mean[DESC_CAL_ROUNDS_MAX];
	uint64_t n = len / sizeof(struct memmig_desc);

	if (!n || !reps || reps > DESC_CAL_ROUNDS_MAX ||
	    (uintptr_t)buf % sizeof(struct memmig_desc))
		return -EINVAL;
	/* Device offset 0: 2 MB units from the first page, as on a DAX
	 * device; a tail is the commonest descriptor. */
	memmig_desc_geometry(&g, 0, n, 0);
	fill[0] = NULL;	/* the slow path */
	fill[1] = memmig_desc_filler(cpu, nt_prim, &store[1]);
	fill[2] = memmig_desc_filler(cpu, nt_prim, &store[2]);
	/* Round 0 fills the cache with the table's dirty lines, untimed.
	 * The paths take turns, a noisy moment of a shared machine falling
	 * on each of them alike, and each round starts with another one:
	 * the path after the NT pass finds no dirty lines to write back. */
	for (unsigned int r = 0; r <= reps; r++)
		for (int j = 0; j < 3; j++) {
			int k = (int)((r + (unsigned int)j) % 3);
			double t0 = memmig_now(), s;

			memmig_desc_init_descs(buf, &g, fill[k], 0, n);
			s = memmig_now() - t0;
			if (r)
				gbs[k][r - 1] = s > 0 ? len / s / 1e9 : 0;
		}
	/* Relative to each round's mean; scaled back by the median mean. */
	for (unsigned int r = 0; r < reps; r++) {
		mean[r] = (gbs[0][r] + gbs[1][r] + gbs[2][r]) / 3;
		for (int k = 0; k < 3; k++)
			gbs[k][r] = mean[r] > 0 ? gbs[k][r] / mean[r] : 0;
	}
	qsort(mean, reps, sizeof(double), cmp_double);
	for (int k = 0; k < 3; k++)
		qsort(gbs[k], reps, sizeof(double), cmp_double);
	out->slow = gbs[0][reps / 2] * mean[reps / 2];
	out->nt = gbs[1][reps / 2] * mean[reps / 2];
	out->temporal = gbs[2][reps / 2] * mean[reps / 2];
	return 0;
}
