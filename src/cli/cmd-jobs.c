/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli jobs: memmigd's jobs (root sees all, others their own). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "util/size.h"
#include "cli/client.h"
#include "cli/table.h"

static void jobs_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli jobs [--json]\n"
		   "Lists memmigd's jobs, running, queued and the newest finished:\n"
		   "root sees every job, other users their own.  \"done\" is what a job\n"
		   "got through, \"moved\" what is on the node through it once it ended;\n"
		   "GB/s: while running, the recent pace; once ended, moved / seconds.\n");
}

/* The columns: a target's domain name is cut, not the row shifted. */
static const struct cli_col job_cols[] = {
	{ "job", 0, true }, { "state", 0, false }, { "target", 32, false },
	{ "node", 0, true }, { "method", 0, false }, { "done", 0, true },
	{ "moved", 0, true }, { "GB/s", 0, true }, { "seconds", 0, true },
	{ "result", 0, false }, { "created", 0, false },
};

/* Every figure as the job object has it (docs/json.md), so that the
 * table, the JSON and the progress bar agree. */
static void add_row(struct cli_table *t, struct json_object *j)
{
	int64_t total = cli_json_int(j, "bytes_total", 0);
	int64_t done = cli_json_int(j, "bytes_done", 0);
	int64_t moved = cli_json_int(j, "bytes_moved", -1);
	const char *dom = cli_json_str(j, "domain", NULL);
	time_t created_at = (time_t)cli_json_int(j, "created_at_s", 0);
	char mv[32] = "-", created[24] = "-";
	struct tm tm;

	cli_table_cell(t, "%lld", (long long)cli_json_int(j, "id", 0));
	cli_table_cell(t, "%s", cli_json_str(j, "state", "?"));
	if (dom)
		cli_table_cell(t, "domain %s", dom);
	else
		cli_table_cell(t, "pid %lld", (long long)cli_json_int(j, "pid", 0));
	cli_table_cell(t, "%lld", (long long)cli_json_int(j, "to_node", -1));
	cli_table_cell(t, "%s", cli_json_str(j, "strategy", "?"));
	cli_table_cell(t, "%d%%", total ? (int)(100.0 * done / total) : 100);
	if (moved >= 0)
		util_size_human((uint64_t)moved, mv, sizeof(mv));
	cli_table_cell(t, "%s", mv);
	cli_table_cell(t, "%.2f", cli_json_double(j, "rate", 0) / 1e9);
	cli_table_cell(t, "%.3f", cli_json_double(j, "elapsed_s", 0));
	cli_table_cell(t, "%s", cli_json_str(j, "result", "-"));
	if (created_at > 0 && localtime_r(&created_at, &tm))
		strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%S", &tm);
	cli_table_cell(t, "%s", created);
}

void cli_print_jobs(struct json_object *jobs)
{
	size_t n = json_object_array_length(jobs);
	struct cli_table *t;

	if (!n) {
		printf("no jobs\n");
		return;
	}
	t = cli_table_new(job_cols, sizeof(job_cols) / sizeof(job_cols[0]));
	for (size_t i = 0; i < n; i++)
		add_row(t, json_object_array_get_idx(jobs, i));
	cli_table_print(t, stdout);
}

static int jobs_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct json_object *reply, *jobs;
	bool json;
	int rc = cli_parse_json_only(argc, argv, jobs_usage, &json);

	(void)ctx;
	if (rc)
		return cli_exit_code(rc);
	rc = cli_daemon_call("jobs", cli_request("jobs"), &reply);
	if (rc)
		return rc;
	if (!json_object_object_get_ex(reply, "jobs", &jobs) ||
	    !json_object_is_type(jobs, json_type_array)) {
		cli_error("jobs: memmigd's reply has no job list\n");
		json_object_put(reply);
		return CLI_EXIT_FAIL;
	}
	if (json)
		cli_json_print(json_object_get(jobs));
	else
		cli_print_jobs(jobs);
	json_object_put(reply);
	return CLI_EXIT_OK;
}

const struct cli_cmd cli_cmd_jobs = {
	.name = "jobs",
	.summary = "list memmigd's jobs",
	.run = jobs_run,
	.no_copy = true,
};
