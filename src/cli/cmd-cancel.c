/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli cancel JOB: stop a memmigd job between 2 MB units. */
#include <stdio.h>

#include "cli/cli.h"

static void cancel_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli cancel JOB [--json]\n"
		   "Cancels a memmigd job: a queued job ends at once, a running one after\n"
		   "the 2 MB units in flight.  What moved stays moved; the rest stays.\n"
		   "A job that had already ended cannot be: that fails (exit 1).\n");
}

static const struct job_cmd cancel_cmd = { "cancel", "cancel", cancel_usage };

static int cancel_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	(void)ctx;
	return cli_job_show(&cancel_cmd, argc, argv);
}

const struct cli_cmd cli_cmd_cancel = {
	.name = "cancel",
	.summary = "cancel a memmigd job",
	.run = cancel_run,
	.no_copy = true,
};
