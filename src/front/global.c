/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The global options of memmig-cli and memmig-bench, and passing them on. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "front/front.h"
#include "util/log.h"

struct cli_global cli_global = { .socket = PROTO_SOCKET_DEFAULT };

int cli_global_parse(int argc, char **argv, int *help)
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
	const char *env = getenv("MEMMIG_SOCKET");
	int c, verbosity = 0;

	*help = 0;
	if (env && *env) {
		cli_global.socket = env;
		cli_global.socket_given = true;
	}
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
			verbosity = -1;
			break;
		case 'v':
			verbosity = 1;
			break;
		case 'h':
			*help = 1;
			return optind;
		case 'V':
			*help = 2;
			return optind;
		default:
			return -1;
		}
	}
	cli_global.verbosity = verbosity;
	if (verbosity < 0) {
		util_log_setup(NULL, LOG_ERR);
		cli_global.quiet_mode = true;
	}
	/* Through the environment, so that the context's own start is
	 * logged too, and a program run in turn logs alike. */
	if (verbosity)
		setenv("MEMMIG_LOG", verbosity > 0 ? "debug" : "err", 1);
	return optind;
}

int cli_global_args(char **args)
{
	int n = 0;

	/* -v travels as $MEMMIG_LOG, set above. */
	if (cli_global.socket_given) {
		args[n++] = "--socket";
		args[n++] = (char *)cli_global.socket;
	}
	if (cli_global.local)
		args[n++] = "--local";
	if (cli_global.quiet_mode)
		args[n++] = "--quiet";
	return n;
}

static int ctx_open(const struct cli_cmd *cmd, struct memmig_ctx **ctx)
{
	int rc = cmd->no_copy ? memmig_ctx_new_flags(ctx, MEMMIG_CTX_NO_ENV) :
				memmig_ctx_new(ctx);

	if (rc < 0) {
		/* libmemmig named the variable, the file or the CPUs above. */
		cli_json_error_errno(rc);
		cli_error("%s: cannot initialise libmemmig: %s\n", cmd->name, rc == -ESTALE ?
			  "$MEMMIG_CALIBRATION was measured on another CPU" : rc == -EINVAL ?
			  "a MEMMIG_* variable or the calibration file is bad (said above)" :
			  strerror(-rc));
		return CLI_EXIT_FAIL;
	}
	/* Without the environment, $MEMMIG_LOG from -v is not read either. */
	if (cmd->no_copy && cli_global.verbosity)
		memmig_ctx_set_log_priority(*ctx, cli_global.verbosity > 0 ? LOG_DEBUG : LOG_ERR);
	/* libmemmig speaks through the command line's own log path. */
	memmig_ctx_set_log_fn(*ctx, util_log_memmig, NULL);
	return CLI_EXIT_OK;
}

int cli_cmd_run(const struct cli_cmd *cmd, int argc, char **argv, int first)
{
	struct memmig_ctx *ctx;
	int rc = ctx_open(cmd, &ctx);

	if (rc)
		return cli_json_error_flush(rc, argc, argv);
	argc -= first;
	argv += first;
	argv[0] = cli_set_cmd(cmd->name);
	optind = 0; /* the command parses its own options from argv[0] */
	rc = cli_json_error_flush(cmd->run(ctx, argc, argv), argc, argv);
	memmig_ctx_unref(ctx);
	return rc;
}

int cli_cmd_dispatch(const struct cli_cmd *const *table, void (*usage)(FILE *),
		     int argc, char **argv, int first)
{
	const struct cli_cmd *cmd = cli_cmd_find(table, argv[first]);

	if (!cmd) {
		cli_error("unknown command '%s'\n", argv[first]);
		usage(stderr);
		return cli_json_error_flush(CLI_EXIT_USAGE, argc, argv);
	}
	return cli_cmd_run(cmd, argc, argv, first);
}
