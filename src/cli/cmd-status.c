/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli status JOB: a memmigd job's progress, and its report. */
#include <stdio.h>

#include "cli/cli.h"

static void status_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli status JOB [--json]\n"
		   "Shows a memmigd job: its progress, and its report once it ended.\n");
}

static const struct job_cmd status_cmd = { "status", "job", status_usage };

static int status_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	(void)ctx;
	return cli_job_show(&status_cmd, argc, argv);
}

const struct cli_cmd cli_cmd_status = {
	.name = "status",
	.summary = "show one memmigd job, with its report",
	.run = status_run,
};
