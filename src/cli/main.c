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
};

int main(int argc, char **argv)
{
	const struct cli_cmd *cmd;
	struct memmig_ctx *ctx;
	int rc, help;

	argv[0] = cli_set_cmd(NULL);
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
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	cmd = cli_cmd_find(commands, argv[optind]);
	if (!cmd) {
		cli_error("unknown command '%s'\n", argv[optind]);
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (cli_ctx_open(&ctx))
		return CLI_EXIT_FAIL;
	argc -= optind;
	argv += optind;
	argv[0] = cli_set_cmd(cmd->name);
	optind = 0; /* the command parses its own options from argv[0] */
	rc = cli_json_error_flush(cmd->run(ctx, argc, argv), argc, argv);
	memmig_ctx_unref(ctx);
	return rc;
}
