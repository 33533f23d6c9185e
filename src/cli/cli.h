/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli: the command table and what the commands share. */
#ifndef MEMMIG_CLI_H
#define MEMMIG_CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "memmig.h"
#include "proto/proto.h"
#include "front/front.h"

/* One table entry per file: cmd-<name>.c. */
extern const struct cli_cmd cli_cmd_cpu;
extern const struct cli_cmd cli_cmd_bench;
extern const struct cli_cmd cli_cmd_nodes;
extern const struct cli_cmd cli_cmd_move;
extern const struct cli_cmd cli_cmd_demo;
extern const struct cli_cmd cli_cmd_jobs;
extern const struct cli_cmd cli_cmd_status;
extern const struct cli_cmd cli_cmd_cancel;
extern const struct cli_cmd cli_cmd_domains;
extern const struct cli_cmd cli_cmd_stats;
extern const struct cli_cmd cli_cmd_events;
extern const struct cli_cmd cli_cmd_tier;
extern const struct cli_cmd cli_cmd_where;

/* A move's source and target nodes, as migratepages(8) maps them: with
 * one target, the pages on the from nodes (nfrom 0: on any node) go to
 * to[0]; with several, the nth from node's go to the nth target. */
struct cli_move_map {
	int from[PROTO_MAX_NODE + 1], to[PROTO_MAX_NODE + 1];
	unsigned int nfrom, nto;
};
/* move --dry-run (move-dry-run.c): what would move, printed (JSON with
 * json); nothing moved.  An exit code. */
int cli_move_dry_run(int pid, const struct memmig_range *ranges, unsigned int nranges,
		     const struct cli_move_map *map, bool json);

/* A move's report (JSON from memmigd or the in-process move) for people. */
void cli_print_move_report(struct json_object *rep);
/* A job's or a report's result: 0, an errno, EPROTO when it has none. */
int cli_json_result(struct json_object *o);
/* The exit code an ended job (docs/json.md) stands for; says why not 0. */
int cli_move_exit(const char *cmd, struct json_object *job);

/* memmig-cli status and cancel: a job op and how the command reads. */
struct job_cmd {
	const char *name;	/* the command */
	const char *op;		/* its protocol op */
	void (*usage)(FILE *f);
};
int cli_job_show(const struct job_cmd *jc, int argc, char **argv);
/* memmigd's jobs (a JSON array) as a table. */
void cli_print_jobs(struct json_object *jobs);

/* The progress bar: drawn on stderr when stdout and stderr are terminals. */
bool cli_progress_wanted(void);
void cli_progress(uint64_t done, uint64_t total, double rate);
void cli_progress_end(void);

/* move --domain --wait: the domain's rebalance once memmigd ended it
 * (rebalance-show.c); NULL when there is none (new reference). */
struct cli_conn;
struct json_object *cli_rebalance_wait(struct cli_conn *c, const char *domain);
void cli_rebalance_print(struct json_object *rb);
/* move --pid --update-cpuset (cpuset-move.c): widens the process's cgroup
 * cpuset.mems to take node (0 or -errno, said); finish narrows it to node
 * when the ended job (docs/json.md) says the move succeeded, else restores
 * it, and adds the steps to the job as "rebalance" (job may be NULL);
 * frees m. */
struct cli_cpuset_move;
int cli_cpuset_widen(int pid, int node, struct cli_cpuset_move **out);
int cli_cpuset_finish(struct cli_cpuset_move *m, struct json_object *job);

#endif
