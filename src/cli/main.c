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

/*
 * The context a command runs with.  One that copies nothing gets a
 * context without the environment's copy settings (a bad
 * MEMMIG_COPY_NT_MIN is no reason to refuse "jobs"), its log priority
 * from -v alone; one that copies fails on a bad setting, which libmemmig
 * named above.
 */
static int ctx_for(const struct cli_cmd *cmd, int verbosity, struct memmig_ctx **ctx)
{
	int rc = cmd->no_copy ? memmig_ctx_new_flags(ctx, MEMMIG_CTX_NO_ENV) :
				memmig_ctx_new(ctx);

	if (rc < 0) {
		cli_json_error_errno(rc);
		cli_error("%s: cannot initialise libmemmig: %s\n", cmd->name, rc == -ESTALE ?
			  "$MEMMIG_CALIBRATION was measured on another CPU" : rc == -EINVAL ?
			  "a MEMMIG_* variable or the calibration file is bad (said above)" :
			  strerror(-rc));
		return CLI_EXIT_FAIL;
	}
	if (cmd->no_copy && verbosity)
		memmig_ctx_set_log_priority(*ctx, verbosity > 0 ? LOG_DEBUG : LOG_ERR);
	/* libmemmig speaks through the CLI's own log path. */
	memmig_ctx_set_log_fn(*ctx, util_log_memmig, NULL);
	return CLI_EXIT_OK;
}

/* The options before the command: an exit code, or -1 to go on. */
static int global_options(int argc, char **argv, int *verbosity)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "socket", required_argument, NULL, 's' },
		{ "local", no_argument, NULL, 'l' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/* Stop at the first non-option: the rest belongs to the command. */
	while ((c = getopt_long(argc, argv, "+hVs:lqv", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			cli_global.socket = optarg;
			cli_global.socket_given = true;
			break;
		case 'l':
			cli_global.local = true;
			break;
		case 'q':
			*verbosity = -1;
			break;
		case 'v':
			*verbosity = 1;
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
		cli_error("a command is missing\n");
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *env = getenv("MEMMIG_SOCKET");
	const struct cli_cmd *cmd;
	struct memmig_ctx *ctx;
	int rc, verbosity = 0;

	if (env && *env) {
		cli_global.socket = env;
		cli_global.socket_given = true;
	}
	/* --json anywhere asks for JSON, errors before the command's parser
	 * included (docs/json.md's error object). */
	if (cli_json_in_argv(argc, argv))
		cli_json_error_capture();
	argv[0] = cli_set_cmd(NULL);
	rc = global_options(argc, argv, &verbosity);
	if (rc >= 0)
		return cli_json_error_flush(rc, argc, argv);
	if (verbosity < 0) {
		util_log_setup(NULL, LOG_ERR);
		cli_global.quiet_mode = true;
	}
	/* Through the environment, so that the context's own start is
	 * logged too. */
	if (verbosity)
		setenv("MEMMIG_LOG", verbosity > 0 ? "debug" : "err", 1);
	cmd = cli_cmd_find(commands, argv[optind]);
	if (!cmd) {
		cli_error("unknown command '%s'\n", argv[optind]);
		usage(stderr);
		return cli_json_error_flush(CLI_EXIT_USAGE, argc, argv);
	}
	rc = ctx_for(cmd, verbosity, &ctx);
	if (rc)
		return cli_json_error_flush(rc, argc, argv);
	argc -= optind;
	argv += optind;
	argv[0] = cli_set_cmd(cmd->name);
	optind = 0; /* the command parses its own options from argv[0] */
	rc = cli_json_error_flush(cmd->run(ctx, argc, argv), argc, argv);
	memmig_ctx_unref(ctx);
	return rc;
}
