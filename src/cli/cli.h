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

/* Exit codes (documented in memmig-cli(1)). */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAIL = 1,	/* the operation failed */
	CLI_EXIT_USAGE = 2,	/* bad command line */
	CLI_EXIT_NO_DAEMON = 3,	/* memmigd needed but not reachable */
	/* Not an exit code: an option parser printed the help, and the
	 * command ends there (cli_exit_code() makes it CLI_EXIT_OK). */
	CLI_HELP_SHOWN = -1,
};

/* What a parser's result means for the process: help shown is success. */
static inline int cli_exit_code(int rc)
{
	return rc == CLI_HELP_SHOWN ? CLI_EXIT_OK : rc;
}

struct cli_cmd {
	const char *name;
	const char *summary;
	/* argv[0] is the command name; returns an exit code. */
	int (*run)(struct memmig_ctx *ctx, int argc, char **argv);
	/* It copies no memory itself: its context reads no MEMMIG_COPY_*
	 * variable or calibration file, so a bad one stops only the
	 * commands it concerns. */
	bool no_copy;
};

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

/* Finds name in a NULL-terminated table of commands, or NULL. */
const struct cli_cmd *cli_cmd_find(const struct cli_cmd *const *table,
				   const char *name);
void cli_cmd_list(FILE *f, const struct cli_cmd *const *table);

/*
 * Options of a command that takes only --json and --help, and one
 * argument named arg (argv[optind]; none when arg is NULL): CLI_EXIT_OK,
 * CLI_EXIT_USAGE (usage printed), or CLI_HELP_SHOWN.
 */
int cli_parse_json_args(int argc, char **argv, void (*usage)(FILE *), bool *json,
			const char *arg);

static inline int cli_parse_json_only(int argc, char **argv,
				      void (*usage)(FILE *), bool *json)
{
	return cli_parse_json_args(argc, argv, usage, json, NULL);
}

/*
 * Every error of memmig-cli goes through cli_verror() (one place for a
 * --json error object to hook in), down the one log path (util/log.h).
 * One style: "memmig-cli: error: COMMAND: what: why", where the message
 * begins with the command ("move: pid 42: ...") and cli_opt_error() adds
 * it before an option's name ("move: --range: ...").
 */
void cli_verror(const char *format, va_list ap) __attribute__((format(printf, 1, 0)));
void cli_error(const char *format, ...) __attribute__((format(printf, 1, 2)));
void cli_opt_error(const char *opt, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * The command now running, for errors' prefix (bench: "bench copy"; NULL
 * before the command).  Returns "memmig-cli: error: NAME" for argv[0], so
 * that getopt's own messages ("...: unrecognized option '--x'") read the
 * same.
 */
char *cli_set_cmd(const char *name);
/* Parses a size option ("2M"); prints the error and returns -EINVAL. */
int cli_parse_size(const char *opt, const char *arg, size_t *out);
/* Parses a decimal number in [min, max]; prints the error and returns
 * -EINVAL otherwise. */
int cli_parse_int(const char *opt, const char *arg, long min, long max, long *out);
/* A connected stream socket to the UNIX socket at path, or -errno. */
int cli_unix_connect(const char *path);
/* Parses a dirty-tracking method's name (memmig_dirty_method_name()):
 * prints the error and returns -EINVAL for another. */
int cli_parse_dirty(const char *opt, const char *arg, int *out);
/* Parses a comma-separated list of sizes into a new array. */
int cli_parse_size_list(const char *opt, const char *arg, size_t **out,
			size_t *count);

/* Ascending numbers as ranges, "0-3,8,10-11"; "-" for none; a cut is
 * marked "...". */
const char *cli_list_format(const int *v, size_t n, char *buf, size_t len);
/*
 * A nodeset in numactl's syntax: "N", "N-M", comma-separated ("0-2,4"),
 * "all", and "!SET" for all nodes but SET.  Fills nodes[0..PROTO_MAX_NODE]
 * ascending, without repeats; prints the error and returns -EINVAL for
 * anything else or an empty set.
 */
int cli_parse_nodeset(const char *opt, const char *arg, int *nodes, unsigned int *count);
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
/* 0, or -ENOENT with "OPT: node N does not exist (nodes with memory: 0-1)"
 * printed. */
int cli_node_check(struct memmig_ctx *ctx, const char *opt, int node);

/* "2 MiB", "168 B", or "never" for MEMMIG_SIZE_NEVER. */
const char *cli_size(size_t v, char *buf, size_t len);
/* The dispatch thresholds in one line: "avx2 below 4 KiB, movsb from ...";
 * a vector copy this CPU cannot run is marked so (the policy falls back). */
const char *cli_thresholds(struct memmig_ctx *ctx, const struct memmig_tuning *t,
			   char *buf, size_t len);
/* The descriptor-table init the tuning picks: "template path, temporal
 * stores" or "slow path (template stores: NT)". */
const char *cli_desc_init(const struct memmig_tuning *t, char *buf, size_t len);

/* Prints obj as pretty JSON on stdout and drops the reference. */
void cli_json_print(struct json_object *obj);
struct json_object *cli_json_cpu(const struct memmig_cpu_info *cpu);
struct json_object *cli_json_tuning(const struct memmig_tuning *t);

/* Members of a reply or report; def when missing or of another type. */
int64_t cli_json_int(struct json_object *o, const char *key, int64_t def);
double cli_json_double(struct json_object *o, const char *key, double def);
const char *cli_json_str(struct json_object *o, const char *key, const char *def);

/*
 * --json errors (json-error.c): what cli_error() says is kept, and a
 * command that fails without printing JSON of its own gets docs/json.md's
 * error object on stdout from cli_json_error_flush() (main, after run).
 */
void cli_json_error_errno(int err);	/* the errno of the error said next */
void cli_json_error_note(const char *format, va_list ap);
void cli_json_error_want(void);		/* the command parsed --json */
void cli_json_printed(void);		/* cli_json_print() printed */
/* The error object {"ok": false, "error", "errno", "message"} with job
 * (may be NULL; not consumed) as its "job" member. */
void cli_json_print_error(int err, const char *message, struct json_object *job);
/* Whether --json is among argv[1..] (before any "--"): asked for before
 * a parser reached it. */
bool cli_json_in_argv(int argc, char **argv);
/* stderr keeps the first "memmig-cli: error: ..." line written through it
 * as the error object's message: getopt's complaints too. */
void cli_json_error_capture(void);
/* Prints the error object when rc is a failure, --json was asked for and
 * nothing printed; returns rc. */
int cli_json_error_flush(int rc, int argc, char **argv);

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
