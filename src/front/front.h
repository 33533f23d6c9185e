/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the command-line programs share (memmig-cli and memmig-bench, in
 * src/front/libfront.la): a command table, one error path with its --json
 * error object, option parsers, sizes and JSON for people.  The cli_
 * prefix is the command line's, whichever program runs.
 */
#ifndef MEMMIG_FRONT_H
#define MEMMIG_FRONT_H

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

/* Set by main() from --socket / --local / $MEMMIG_SOCKET. */
struct cli_global {
	const char *socket;	/* where memmigd listens */
	bool socket_given;	/* --socket or $MEMMIG_SOCKET: no fallback */
	bool local;		/* --local: never the daemon */
	bool quiet_mode;	/* no "via ..." line (-q, or the hook) */
	const char *cmd;	/* the command running, for errors' prefix */
	int verbosity;		/* -q: -1, -v: 1, else 0 */
};
extern struct cli_global cli_global;

/*
 * The global options both programs take (-s, -l, -q, -v, -h, -V) into
 * cli_global and the log; *help gets 1 for -h, 2 for -V.  Returns optind
 * past them, or -1 on a bad option (getopt said which).
 */
int cli_global_parse(int argc, char **argv, int *help);
/* Those options again, as parsed, for a program run in turn (at most 4
 * words into args); returns how many. */
int cli_global_args(char **args);

/*
 * Runs cmd, the command at argv[first]: its context opened (one without
 * the environment's copy settings for a command that copies nothing, so
 * that a bad MEMMIG_COPY_NT_MIN is no reason to refuse "jobs"), argv
 * shifted to it, and docs/json.md's error object printed when it failed
 * under --json without printing JSON.  Its exit code.
 */
int cli_cmd_run(const struct cli_cmd *cmd, int argc, char **argv, int first);
/* The command named argv[first] in table, run; an unknown name is a usage
 * error (usage printed). */
int cli_cmd_dispatch(const struct cli_cmd *const *table, void (*usage)(FILE *),
		     int argc, char **argv, int first);

/*
 * The program prog of this package: beside the running one (in a build
 * tree, the libtool wrapper beside .libs/), else in the installed bindir.
 * Fills path (-ENOENT when neither has it).
 */
int cli_program_path(const char *prog, char *path, size_t len);

#endif
