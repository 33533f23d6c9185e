/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli: global options, then one sub-command from the table. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cli/cli.h"
#include "util/log.h"
#include "cli/client.h"

static const struct cli_cmd *const commands[] = {
	&cli_cmd_move,
	&cli_cmd_jobs,
	&cli_cmd_status,
	&cli_cmd_cancel,
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
	fprintf(f, "Usage: memmig-cli [--socket PATH | --local] [--help] [--version]\n"
		   "                  COMMAND [ARGS]\n\n"
		   "  --socket PATH  memmigd's socket (default $MEMMIG_SOCKET, else %s);\n"
		   "                 given, it must answer\n"
		   "  --local        run in this process, without memmigd\n\n"
		   "Commands:\n", PROTO_SOCKET_DEFAULT);
	cli_cmd_list(f, commands);
	fprintf(f, "\nRun 'memmig-cli COMMAND --help' for a command's options.\n"
		   "Exit codes: 0 success, 1 failure, 2 bad usage, 3 memmigd unreachable.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "socket", required_argument, NULL, 'S' },
		{ "local", no_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("MEMMIG_SOCKET");
	const struct cli_cmd *cmd;
	struct memmig_ctx *ctx;
	int c, rc;

	if (env && *env) {
		cli_global.socket = env;
		cli_global.socket_given = true;
	}
	/* Stop at the first non-option: the rest belongs to the command. */
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			cli_global.socket = optarg;
			cli_global.socket_given = true;
			break;
		case 'L':
			cli_global.local = true;
			break;
		case 'h':
			usage(stdout);
			return CLI_EXIT_OK;
		case 'V':
			printf("memmig-cli %s\n", PACKAGE_VERSION);
			return CLI_EXIT_OK;
		default:
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
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
	rc = memmig_ctx_new(&ctx);
	if (rc < 0) {
		cli_error("cannot initialise libmemmig: %s\n", strerror(-rc));
		return CLI_EXIT_FAIL;
	}
	/* libmemmig speaks through the CLI's own log path. */
	memmig_ctx_set_log_fn(ctx, util_log_memmig, NULL);
	argc -= optind;
	argv += optind;
	optind = 0; /* the command parses its own options from argv[0] */
	rc = cli_json_error_flush(cmd->run(ctx, argc, argv), argc, argv);
	memmig_ctx_unref(ctx);
	return rc;
}
