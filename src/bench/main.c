/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-bench: the benchmarks and the demo, a program of their own so
 * that memmig-cli needs neither libpmem nor the peers' code.  The same
 * global options and exit codes as memmig-cli (memmig-bench(1)).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "bench/bench.h"

static const struct cli_cmd *const commands[] = {
	&bench_cmd_copy,
	&bench_cmd_migrate,
	&bench_cmd_desc,
	&bench_cmd_live,
	&bench_cmd_move,
	&bench_cmd_demo,
	NULL,
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: memmig-bench [-s PATH | -l] [-q | -v] [-h] [-V] COMMAND [ARGS]\n\n"
		   "  -s, --socket PATH  memmigd's socket, for move's memmigd case (default\n"
		   "                     $MEMMIG_SOCKET, else %s)\n"
		   "  -l, --local        no memmigd case in move\n"
		   "  -q, --quiet        print errors only\n"
		   "  -v, --verbose      print libmemmig's debug log too\n"
		   "  -h, --help         this help\n"
		   "  -V, --version      the version\n\n"
		   "Commands:\n", PROTO_SOCKET_DEFAULT);
	cli_cmd_list(f, commands);
	fprintf(f, "\nRun 'memmig-bench COMMAND --help' for a command's options.\n"
		   "Exit codes: 0 success, 1 failure, 2 bad usage.\n");
}

int main(int argc, char **argv)
{
	int help, first;

	/* --json anywhere asks for JSON, errors before the command's parser
	 * included (docs/json.md's error object). */
	if (cli_json_in_argv(argc, argv))
		cli_json_error_capture();
	argv[0] = cli_set_cmd(NULL);
	first = cli_global_parse(argc, argv, &help);
	if (first < 0 || (!help && first >= argc)) {
		if (first >= argc)
			cli_error("a command is missing\n");
		usage(stderr);
		return cli_json_error_flush(CLI_EXIT_USAGE, argc, argv);
	}
	if (help) {
		if (help == 2)
			printf("memmig-bench %s\n", PACKAGE_VERSION);
		else
			usage(stdout);
		return CLI_EXIT_OK;
	}
	/* "help CMD" reads as "CMD --help". */
	if (!strcmp(argv[first], "help")) {
		if (first + 1 >= argc) {
			usage(stdout);
			return CLI_EXIT_OK;
		}
		argv[first] = argv[first + 1];
		argv[first + 1] = "--help";
	}
	return cli_cmd_dispatch(commands, usage, argc, argv, first);
}
