/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli bench: benchmark programs, each a sub-command of its own. */
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"

static const struct cli_cmd *const benches[] = {
	&bench_cmd_copy,
	&bench_cmd_migrate,
	&bench_cmd_desc,
	&bench_cmd_live,
	&bench_cmd_move,
	NULL,
};

static void bench_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli bench BENCHMARK [OPTIONS]\n\nBenchmarks:\n");
	cli_cmd_list(f, benches);
}

static int bench_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	static char name[32];
	const struct cli_cmd *b;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		bench_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
	}
	b = cli_cmd_find(benches, argv[1]);
	if (!b) {
		cli_error("bench: unknown benchmark '%s'\n", argv[1]);
		bench_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	/* Option errors name the benchmark: "bench copy: --sizes: ...". */
	snprintf(name, sizeof(name), "bench %s", b->name);
	argv[1] = cli_set_cmd(name);
	return b->run(ctx, argc - 1, argv + 1);
}

const struct cli_cmd cli_cmd_bench = {
	.name = "bench",
	.summary = "measure copies, migrations and moves against their peers",
	.run = bench_run,
};
