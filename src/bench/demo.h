/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-bench demo's parts: its migrations (demo.c), its tiering
 * (demo-tier.c). */
#ifndef MEMMIG_BENCH_DEMO_H
#define MEMMIG_BENCH_DEMO_H

#include <json-c/json.h>
#include <stdbool.h>

#include "bench/plot.h"
#include "minivmm/embed.h"

struct demo {
	size_t mem;
	long migrations;
	long budget_ms;
	int dirty;		/* enum memmig_dirty_method */
	const char *file_tier;	/* the one-node host's second target */
	bool tiering;		/* --tier: the hot-set guest, tiered */
	int guest;		/* enum minivmm_guest */
	bool json, no_kvm, nodes_only;
	bool stream;		/* MEMMIG_LIVE_STREAM */
	int nodes[2], nnodes;
	int ranks[2];		/* enum demo_rank of each */
	double raw_s;		/* one copy of mem bytes, for scale */
	double raw_stall_s;	/* the guest's longest stall beside it */
	bool kvm;
	unsigned int tracked;	/* the tracking methods used, 1 << method */
	struct plot_out plot;
	struct demo_run *runs;	/* with --plot: the first DEMO_PLOT_MAX */
	long nruns;
};

/* A picture with more migrations than this would not read. */
#define DEMO_PLOT_MAX 16

struct demo_run {
	char target[64];
	struct minivmm_migration m;
};

/* The nodes it uses: the first with CPUs, then the one that shows best
 * what memmig is for (CXL, CPU-less).  0 or -ENOENT. */
int demo_nodes(struct memmig_ctx *ctx, struct demo *d);
/* What node d->nodes[i] is, in words (DRAM, CXL memory, ...). */
const char *demo_rank_name(const struct demo *d, int i);
/* [{"id": 0, "kind": "DRAM"}, ...] */
struct json_object *demo_nodes_json(const struct demo *d);
/* Starts the guest (d->guest): under KVM, or as a host thread (saying why). */
int demo_guest(struct memmig_ctx *ctx, struct demo *d, struct minivmm **vmm,
	       struct memmig_vm **vm);
/* --tier: a CLI exit code. */
int demo_tier(struct memmig_ctx *ctx, struct demo *d);

#endif
