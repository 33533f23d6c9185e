/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli: the command table and what the commands share. */
#ifndef MEMMIG_CLI_H
#define MEMMIG_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <json-c/json.h>

#include "memmig.h"

/* Exit codes (documented in memmig-cli(1)). */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAIL = 1,	/* the operation failed */
	CLI_EXIT_USAGE = 2,	/* bad command line */
};

struct cli_cmd {
	const char *name;
	const char *summary;
	/* argv[0] is the command name; returns an exit code. */
	int (*run)(struct memmig_ctx *ctx, int argc, char **argv);
};

/* One table entry per file: cmd-<name>.c. */
extern const struct cli_cmd cli_cmd_cpu;
extern const struct cli_cmd cli_cmd_bench;
extern const struct cli_cmd cli_cmd_nodes;
extern const struct cli_cmd cli_cmd_move;
extern const struct cli_cmd cli_cmd_demo;

/* Finds name in a NULL-terminated table of commands, or NULL. */
const struct cli_cmd *cli_cmd_find(const struct cli_cmd *const *table,
				   const char *name);
void cli_cmd_list(FILE *f, const struct cli_cmd *const *table);

/*
 * Options of a command that takes only --json and --help: CLI_EXIT_OK,
 * CLI_EXIT_USAGE (usage printed), or -1 when --help printed the usage.
 */
int cli_parse_json_only(int argc, char **argv, void (*usage)(FILE *), bool *json);

/* Messages go to stderr, prefixed with "memmig-cli: ". */
void cli_error(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* Parses a size option ("2M"); prints the error and returns -EINVAL. */
int cli_parse_size(const char *opt, const char *arg, size_t *out);
/* Parses a decimal number in [min, max]; prints the error and returns
 * -EINVAL otherwise. */
int cli_parse_int(const char *opt, const char *arg, long min, long max, long *out);
/* Parses a comma-separated list of sizes into a new array. */
int cli_parse_size_list(const char *opt, const char *arg, size_t **out,
			size_t *count);

/* "2 MiB", "168 B", or "never" for MEMMIG_SIZE_NEVER. */
const char *cli_size(size_t v, char *buf, size_t len);

/* Prints obj as pretty JSON on stdout and drops the reference. */
void cli_json_print(struct json_object *obj);
struct json_object *cli_json_cpu(const struct memmig_cpu_info *cpu);
struct json_object *cli_json_tuning(const struct memmig_tuning *t);

#endif
