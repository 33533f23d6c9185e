/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli bench and demo: aliases that run memmig-bench, the program
 * of the benchmarks and the demo (beside memmig-cli, else in bindir), with
 * the global options given to memmig-cli.  memmig-cli itself holds no
 * benchmark code and needs no libpmem.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static int run_memmig_bench(int argc, char **argv, bool demo)
{
	char path[PATH_MAX];
	/* The program, 4 global words, "demo", the arguments, NULL. */
	char *args[argc + 7];
	int n = 0, rc;

	rc = cli_program_path("memmig-bench", path, sizeof(path));
	if (rc < 0) {
		cli_json_error_errno(rc);
		cli_error("memmig-bench is not installed (not beside memmig-cli, "
			  "nor in %s): %s\n", MEMMIG_BINDIR, strerror(-rc));
		return CLI_EXIT_FAIL;
	}
	args[n++] = "memmig-bench";
	n += cli_global_args(args + n);
	if (demo)
		args[n++] = "demo";
	for (int i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	fflush(NULL);
	execv(path, args);
	rc = -errno;
	cli_json_error_errno(rc);
	cli_error("cannot run %s: %s\n", path, strerror(-rc));
	return CLI_EXIT_FAIL;
}

static int alias_bench(struct memmig_ctx *ctx, int argc, char **argv)
{
	(void)ctx;
	return run_memmig_bench(argc, argv, false);
}

static int alias_demo(struct memmig_ctx *ctx, int argc, char **argv)
{
	(void)ctx;
	return run_memmig_bench(argc, argv, true);
}

const struct cli_cmd cli_cmd_bench = {
	.name = "bench",
	.summary = "measure copies, migrations and moves (runs memmig-bench)",
	.run = alias_bench,
	.no_copy = true,	/* memmig-bench reads the settings */
};

const struct cli_cmd cli_cmd_demo = {
	.name = "demo",
	.summary = "live-migrate a running guest's RAM (runs memmig-bench demo)",
	.run = alias_demo,
	.no_copy = true,
};
