/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli: global options, then one sub-command from the table. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cli/cli.h"
#include "util/log.h"
#include "cli/client.h"

static const struct cli_cmd cli_cmd_help;

static const struct cli_cmd *const commands[] = {
	&cli_cmd_help,
	&cli_cmd_move,
	&cli_cmd_jobs,
	&cli_cmd_status,
	&cli_cmd_cancel,
	&cli_cmd_tier,
	&cli_cmd_where,
	&cli_cmd_nodes,
	&cli_cmd_domains,
	&cli_cmd_cpu,
	&cli_cmd_bench,
	&cli_cmd_demo,
	&cli_cmd_stats,
	&cli_cmd_events,
	NULL,
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli [-s PATH | -l] [-q | -v] [-h] [-V] COMMAND [ARGS]\n\n"
		   "  -s, --socket PATH  memmigd's socket (default $MEMMIG_SOCKET, else\n"
		   "                     %s); given, it must answer\n"
		   "  -l, --local        run in this process, without memmigd\n"
		   "  -q, --quiet        print errors only\n"
		   "  -v, --verbose      print libmemmig's debug log too\n"
		   "  -h, --help         this help\n"
		   "  -V, --version      the version\n\n"
		   "Commands:\n", PROTO_SOCKET_DEFAULT);
	cli_cmd_list(f, commands);
	fprintf(f, "\nRun 'memmig-cli help COMMAND' for a command's options.\n"
		   "Exit codes: 0 success, 1 failure, 2 bad usage, 3 memmigd unreachable.\n");
}

/* "help CMD [SUB]" is "CMD [SUB] --help": each command's usage stays the
 * one its own parser prints. */
static int help_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	const struct cli_cmd *cmd;
	char *args[argc + 1];

	if (argc < 2) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	cmd = cli_cmd_find(commands, argv[1]);
	if (!cmd || cmd == &cli_cmd_help) {
		cli_error("help: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	memcpy(args, argv + 1, (size_t)(argc - 1) * sizeof(*args));
	args[0] = cli_set_cmd(cmd->name);
	args[argc - 1] = "--help";
	args[argc] = NULL;
	return cmd->run(ctx, argc, args);
}

static const struct cli_cmd cli_cmd_help = {
	.name = "help",
	.summary = "this list, or a command's options (help COMMAND)",
	.run = help_run,
	.no_copy = true,
};

/* The options before the command: an exit code, or -1 to go on. */
static int global_options(int argc, char **argv)
{
	int help;

	if (cli_global_parse(argc, argv, &help) < 0) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (help == 1) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (help == 2) {
		printf("memmig-cli %s\n", PACKAGE_VERSION);
		return CLI_EXIT_OK;
	}
	if (optind >= argc) {
		cli_error("a command is missing\n");
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	return -1;
}

int main(int argc, char **argv)
{
	int rc;

	/* --json anywhere asks for JSON, errors before the command's parser
	 * included (docs/json.md's error object). */
	if (cli_json_in_argv(argc, argv))
		cli_json_error_capture();
	argv[0] = cli_set_cmd(NULL);
	rc = global_options(argc, argv);
	if (rc >= 0)
		return cli_json_error_flush(rc, argc, argv);
	return cli_cmd_dispatch(commands, usage, argc, argv, optind);
}
