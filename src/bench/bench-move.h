/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli bench move: what it moves (a child process holding memory)
 * and the movers it times, memmig's and the kernel's own tools.
 */
#ifndef MEMMIG_BENCH_MOVE_H
#define MEMMIG_BENCH_MOVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <memmig.h>

/* A forked child holding len bytes of 4 KiB pages or THPs, first
 * faulted on one node, that answers checksum requests. */
struct move_child {
	pid_t pid;
	int to_child, from_child;	/* pipes */
	uint64_t addr, len;
	uint64_t sum;			/* the data's checksum at the start */
};

int move_child_start(struct move_child *c, size_t len, bool thp, int node);
/* 0 when the child's data still has its checksum, -EIO otherwise. */
int move_child_check(struct move_child *c);
void move_child_stop(struct move_child *c);
/* The child's buffer: 4 KiB pages on node (move_pages query). */
int move_child_pages_on(const struct move_child *c, int node, uint64_t *pages);
/* Bytes of the buffer in THPs now (/proc/PID/smaps). */
uint64_t move_child_thp_bytes(const struct move_child *c);

/* One timed move and, for memmig's, where its time went. */
struct move_sample {
	double s;		/* what the mover took (memmigd: its job) */
	double wall_s;		/* memmigd: `memmig-cli move --wait`, whole */
	double plan_s, query_s, kernel_s, other_s;	/* memmig's parts */
	uint64_t moved;		/* bytes, as the mover reported them */
};

/* The movers; each moves the child's pages on one node to another, as
 * `migratepages PID FROM TO` asks (memmig: --from FROM), and returns 0 or
 * -errno, with what it said on stderr. */
int mover_memmig(struct memmig_ctx *ctx, const struct move_child *c, int from, int to,
		 unsigned int workers, struct move_sample *out);
int mover_memmigd(const struct move_child *c, int from, int to, unsigned int workers,
		  struct move_sample *out);
int mover_migratepages(const struct move_child *c, int from, int to,
		       struct move_sample *out);
int mover_move_pages(const struct move_child *c, int to, struct move_sample *out);
int mover_migrate_pages(const struct move_child *c, int from, int to,
			struct move_sample *out);
/* What starting memmig-cli costs here: `memmig-cli --version`, median of
 * 5; 0 when it failed. */
double mover_cli_start_s(void);
/* memmigd answers at the CLI's socket. */
bool mover_memmigd_up(void);

#endif
