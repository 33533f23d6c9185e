/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Moving one process's memory, every mapping or some ranges, region by
 * region, with progress, cancel and one report: what memmig-cli does
 * in-process and what each memmigd job runs.
 */
#ifndef MEMMIG_SHARED_PIDMOVE_H
#define MEMMIG_SHARED_PIDMOVE_H

#include <stdint.h>

#include <json-c/json.h>

#include "memmig.h"
#include "proto.h"

struct pidmove_req {
	int pid;
	const struct proto_range *ranges;	/* NULL: every mapping */
	unsigned int nranges;
	int to_node;
	int strategy;		/* enum memmig_strategy */
	unsigned int threads;	/* 0: the CPUs this process may use */
	bool own_pages;		/* MEMMIG_MIGRATE_OWN_PAGES: not the pages
				 * other processes map too */
};

struct pidmove_progress {
	uint64_t bytes_done, bytes_total;
	double rate;		/* bytes/s, recent */
	double elapsed_s;
	unsigned int regions_done, regions;
	bool finished;
	int result;		/* 0 or -errno once finished */
};

struct pidmove;

/*
 * Lists and checks the regions now, so that bad requests fail before any
 * work: -ESRCH (no such process), -EPERM, -EFAULT (range not mapped),
 * -EINVAL (unaligned or empty range, copy strategy on another process),
 * -ENOENT (no such node).  Nothing is moved yet.
 */
int pidmove_new(struct memmig_ctx *ctx, const struct pidmove_req *req,
		struct pidmove **out);
/*
 * Moves the regions one after the other on the calling thread; returns the
 * result: 0, -ECANCELED, or -errno.  A mapping that went away meanwhile is
 * skipped, not an error.  Pages the kernel could not move are in the
 * report (pages_failed) with a 0 result.
 */
int pidmove_run(struct pidmove *m);
/* From any thread: the running region's job stops after its units; the
 * rest is not started. */
void pidmove_cancel(struct pidmove *m);
/* From any thread, at any time. */
void pidmove_get_progress(struct pidmove *m, struct pidmove_progress *out);
/*
 * The report, once pidmove_run() returned: the object memmig-cli move
 * --json prints (pid, target_node, strategy, result, regions, workers,
 * bytes_total, bytes_moved, pages_failed, pages_on_target, seconds, nodes,
 * errno_pages, failed_ranges).  A new reference.
 */
struct json_object *pidmove_report_json(struct pidmove *m);
void pidmove_free(struct pidmove *m);

#endif
