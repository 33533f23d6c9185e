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
 * fills its own CCD's 32 MiB of L3, whatever the VM reports for the whole
 * socket, 508 MiB on the Zen 5 host; Intel's shared L3 is at most 320 MiB
 * on Emerald Rapids).  It is written in 64 MiB segments, round and round:
 * a segment was last written 448 MiB of stores ago.  No flush: plain
 * stores then evict dirty lines of earlier segments and pay for their
 * write-backs inside the timing, as they do when a table is initialized
 * (a flush would leave the lines clean and hide that cost).
 *
 * On a shared host the bandwidth one thread gets swings by 2x from one
 * moment to the next (12 to 21 GB/s, NT stores, on the Zen 5 host), more
 * than the gaps measured here.  Whole-buffer passes, one per path and
 * round, picked NT in one calibration and the slow path in another; with
 * 64 MiB samples (3 ms) the three paths of a round meet the same moment,
 * each round's figures are divided by the round's mean, and the medians
 * of 48 rounds agreed in six runs out of six.
 */
#include <errno.h>
#include <stdlib.h>

#include "lib/desc/desc-private.h"

#define DESC_CAL_ROUNDS_MAX 64
/* A sample: short, so that the three paths of a round meet the same
 * moment of a shared machine; twice the L3 one Zen 5 core fills. */
#define DESC_CAL_SEGMENT (64UL << 20)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int memmig_desc_measure(const struct memmig_cpu_info *cpu, int nt_prim,
			void *buf, size_t len, unsigned int rounds,
			struct desc_measured *out)
{
	struct desc_geometry g;
	memmig_desc_fill_fn fill[3];
	int store[3] = { 0, MEMMIG_DESC_STORE_NT, MEMMIG_DESC_STORE_TEMPORAL };
	double gbs[3][DESC_CAL_ROUNDS_MAX], mean[DESC_CAL_ROUNDS_MAX];
	uint64_t n = len / sizeof(struct memmig_desc), seg, nseg, next = 0;

	seg = (len < DESC_CAL_SEGMENT ? len : DESC_CAL_SEGMENT) / sizeof(struct memmig_desc);
	seg -= seg % DESC_UNIT_PAGES;
	if (!seg || !rounds || rounds > DESC_CAL_ROUNDS_MAX ||
	    (uintptr_t)buf % sizeof(struct memmig_desc))
		return -EINVAL;
	nseg = n / seg;
	/* Device offset 0: 2 MB units from the first page, as on a DAX
	 * device; a tail is the commonest descriptor. */
	memmig_desc_geometry(&g, 0, nseg * seg, 0);
	fill[0] = NULL;	/* the slow path */
	fill[1] = memmig_desc_filler(cpu, nt_prim, &store[1]);
	fill[2] = memmig_desc_filler(cpu, nt_prim, &store[2]);
	/* The segments in turn, round and round the buffer: a segment was
	 * last written (nseg - 1) segments ago, long out of the cache.  An
	 * untimed sweep first leaves the cache full of the table's dirty
	 * lines.  In each round the three paths take the next three
	 * segments, each round starting with another path (the one after the
	 * NT path finds no dirty lines of its own to write back). */
	for (uint64_t k = 0; k < nseg; k++)
		memmig_desc_init_descs(buf, &g, fill[2], k * seg, (k + 1) * seg);
	for (unsigned int r = 0; r < rounds; r++)
		for (int j = 0; j < 3; j++) {
			int k = (int)((r + (unsigned int)j) % 3);
			uint64_t first = next * seg;
			double t0 = memmig_now(), s;

			memmig_desc_init_descs(buf, &g, fill[k], first, first + seg);
			s = memmig_now() - t0;
			gbs[k][r] = s > 0 ? seg * sizeof(struct memmig_desc) / s / 1e9 : 0;
			next = (next + 1) % nseg;
		}
	/* Relative to each round's mean; scaled back by the median mean. */
	for (unsigned int r = 0; r < rounds; r++) {
		mean[r] = (gbs[0][r] + gbs[1][r] + gbs[2][r]) / 3;
		for (int k = 0; k < 3; k++)
			gbs[k][r] = mean[r] > 0 ? gbs[k][r] / mean[r] : 0;
	}
	qsort(mean, rounds, sizeof(double), cmp_double);
	for (int k = 0; k < 3; k++)
		qsort(gbs[k], rounds, sizeof(double), cmp_double);
	out->slow = gbs[0][rounds / 2] * mean[rounds / 2];
	out->nt = gbs[1][rounds / 2] * mean[rounds / 2];
	out->temporal = gbs[2][rounds / 2] * mean[rounds / 2];
	return 0;
}
