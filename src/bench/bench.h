/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the benchmark programs share: copiers, buffers, timing, statistics. */
#ifndef MEMMIG_BENCH_H
#define MEMMIG_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/plot.h"
#include "front/front.h"

extern const struct cli_cmd bench_cmd_copy;
extern const struct cli_cmd bench_cmd_migrate;
extern const struct cli_cmd bench_cmd_desc;
extern const struct cli_cmd bench_cmd_live;
extern const struct cli_cmd bench_cmd_move;
extern const struct cli_cmd bench_cmd_demo;

/*
 * One way to copy: a memmig primitive, memmig's dispatch, or a peer.
 * Copies larger than MEMMIG_UNIT_SIZE go in 2 MiB units, as a migration
 * would copy them, with one drain at the end.
 */
enum copier_kind {
	COPIER_PRIM,		/* memmig_copy_with(prim, flags) */
	COPIER_MEMMIG,		/* memmig_copy_run / memmig_copy_units (flags) */
	COPIER_GLIBC,		/* memcpy */
	COPIER_PMEM,		/* libpmem's pmem_memcpy, non-temporal */
	COPIER_MEMMIG_PAGES,	/* memmig_copy_run per 4 KiB page */
	COPIER_GLIBC_PAGES,	/* memcpy per 4 KiB page */
	COPIER_MC,		/* memmig_copy_mc (flags), whole length */
	COPIER_MC_BATCH,	/* the same between memmig_copy_mc_begin() and
				 * _end(), opened once for many copies */
};

struct copier {
	const char *name;
	enum copier_kind kind;
	int prim;
	struct memmig_ctx *ctx;
	unsigned int flags;	/* memmig copy flags of the memmig kinds */
};

void copier_run(const struct copier *c, void *dst, const void *src, size_t len);
/* libpmem, loaded on first use (pmem-peer.c): whether it is there, its
 * NT pmem_memcpy (no drain unless asked), and what it says of p. */
bool copier_pmem_available(void);
void bench_pmem_memcpy(void *d, const void *s, size_t n, bool drain);
void bench_pmem_facts(const void *p, size_t len, int *is_pmem, int *auto_flush);

struct bench_stats {
	double median;		/* GB/s (1e9 bytes per second) */
	double sd_pct;		/* standard deviation, percent of the mean */
	unsigned int n;
	double *rounds;		/* the n samples in round order (malloc'd) */
};

/* Fills out from the n samples in gbs, which it reorders. */
int bench_stats_of(double *gbs, unsigned int n, struct bench_stats *out);
void bench_stats_free(struct bench_stats *s, size_t n);
/* A rate in GB/s as the JSON's rates are: an integer of bytes per second. */
struct json_object *bench_json_rate(double gbs);
/* {"median_bytes_per_s", "sd_pct", "samples"} */
struct json_object *bench_json_stats(const struct bench_stats *s);
/*
 * Median over rounds of a's sample divided by b's sample of the same round:
 * columns measured side by side compare better than their medians do, as a
 * slow moment of the machine falls on both.
 */
double bench_paired_ratio(const struct bench_stats *a, const struct bench_stats *b);

/* Anonymous memory, THP-advised and populated, so no fault is timed. */
void *bench_alloc(size_t len);
/* MemAvailable of /proc/meminfo in bytes; UINT64_MAX when unknown. */
uint64_t bench_mem_available(void);
void bench_free(void *p, size_t len);
void bench_fill(void *p, size_t len, uint64_t seed);
uint64_t bench_checksum(const void *p, size_t len);
/* One cold copy of len bytes between prefaulted buffers of at most 1 GiB,
 * reused, the median of three: what a live migration is measured against.
 * With a running guest (vmm), *stall_s is the median of its longest stall
 * during each copy: what a plain copy beside it costs the guest, with no
 * migration (the host's scheduler, its hypervisor, the memory bus). */
struct minivmm;
double bench_raw_copy_s(struct memmig_ctx *ctx, size_t len, struct minivmm *vmm,
			double *stall_s);
/* The file libmemmig was loaded from: where runs compare builds through
 * LD_LIBRARY_PATH, which one ran (the build tree's src/bench/memmig-bench
 * is libtool's script, which puts its own build's library first). */
const char *bench_library(void);
/* An executable prog in a directory of $PATH. */
bool bench_on_path(const char *prog);
/* Monotonic seconds. */
double bench_now(void);
/* The median of n values, which it sorts. */
double bench_median(double *v, unsigned int n);

/* Source and destination pools far larger than the LLC, for cold copies. */
struct bench_pool {
	uint8_t *src, *dst;
	size_t size;
};
int bench_pool_init(struct bench_pool *pool, size_t size);
void bench_pool_fini(struct bench_pool *pool);

struct bench_opts {
	unsigned int reps;	/* samples per measurement */
	double sample_s;	/* target duration of one sample */
};

/*
 * Measures n copiers, samples taken round-robin, out[i] for cs[i].
 * Hot: the same buffers again and again, caches warm.  Cold: each copy at
 * another place of the pool, in shuffled order, caches cold.
 */
int bench_measure_hot(const struct copier *cs, unsigned int n,
		      const struct bench_pool *pool, size_t len,
		      const struct bench_opts *o, struct bench_stats *out);
int bench_measure_cold(const struct copier *cs, unsigned int n,
		       const struct bench_pool *pool, size_t len,
		       const struct bench_opts *o, struct bench_stats *out);

/*
 * One line of bandwidth against size per copier: the median of
 * st[si * stride + ci] for sizes[si], copiers cs[ci].  memmig's dispatch
 * drawn thick, the peers (glibc, libpmem) dashed.
 */
void bench_plot_copiers(struct plot *p, const struct copier *cs, unsigned int n,
			const size_t *sizes, size_t nsizes,
			const struct bench_stats *st, size_t stride);

/*
 * The pauses r[0..n-1] stacked in their parts (stop, harvest, copy, swap,
 * and what they do not cover as "other"), in ms at x = 1..n, named tics[i],
 * with r[0]'s budget as a line: into the current panel, PLOT_STACKED.
 */
struct memmig_live_report;
void bench_plot_pause(struct plot *p, const struct memmig_live_report *const *r, size_t n,
		      const char *const *tics);

/* A status line on stderr when it is a terminal. */
void bench_progress(const char *format, ...) __attribute__((format(printf, 1, 2)));
void bench_progress_done(void);
/* A line on stderr, terminal or not, for a step of a long run that ended:
 * a user who pipes or logs the output sees it going. */
void bench_note(const char *format, ...) __attribute__((format(printf, 1, 2)));

int bench_calibrate(struct memmig_ctx *ctx, const char *output, bool json);

/* bench copy --pmem (bench-pmem.c): memmig's pmem copy beside libpmem's. */
struct pmem_bench_args {
	const size_t *sizes;	/* ascending; NULL: powers of two, 256 B to 1 GiB */
	size_t nsizes;
	struct bench_opts opts;
	size_t pool_size;	/* cold pool, grown to the largest size */
	bool hot, json;
	const struct plot_out *plot;
};
int bench_pmem(struct memmig_ctx *ctx, const struct pmem_bench_args *a);

#endif
