/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli jobs: memmigd's jobs (root sees all, others their own). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/client.h"

static void jobs_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli jobs [--json]\n"
		   "Lists memmigd's jobs, running, queued and the newest finished:\n"
		   "root sees every job, other users their own.  \"done\" is what a job\n"
		   "got through, \"moved\" what is on the node through it once it ended;\n"
		   "GB/s: while running, the recent pace; once ended, moved / seconds.\n");
}

/* Every figure as the job object has it (docs/json.md), so that the
 * table, the JSON and the progress bar agree. */
static void print_row(struct json_object *j)
{
	int64_t total = cli_json_int(j, "bytes_total", 0);
	int64_t done = cli_json_int(j, "bytes_done", 0);
	int64_t moved = cli_json_int(j, "bytes_moved", -1);
	const char *dom = cli_json_str(j, "domain", NULL);
	char target[48], pct[16], mv[32] = "-", created[24] = "-";
	time_t t = (time_t)cli_json_int(j, "created_at_s", 0);
	struct tm tm;

	if (dom)
		snprintf(target, sizeof(target), "domain %.32s", dom);
	else
		snprintf(target, sizeof(target), "pid %lld",
			 (long long)cli_json_int(j, "pid", 0));
	snprintf(pct, sizeof(pct), "%d%%", total ? (int)(100.0 * done / total) : 100);
	if (moved >= 0)
		cli_human((uint64_t)moved, mv, sizeof(mv));
	if (t > 0 && localtime_r(&t, &tm))
		strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%S", &tm);
	printf("%6lld  %-9s  %-22s %4lld  %-7s %5s %10s %7.2f %8.3f  %-9s  %s\n",
	       (long long)cli_json_int(j, "id", 0), cli_json_str(j, "state", "?"),
	       target, (long long)cli_json_int(j, "to_node", -1),
	       cli_json_str(j, "strategy", "?"), pct, mv,
	       cli_json_double(j, "rate", 0) / 1e9, cli_json_double(j, "elapsed_s", 0),
	       cli_json_str(j, "result", "-"), created);
}

void cli_print_jobs(struct json_object *jobs)
{
	size_t n = json_object_array_length(jobs);

	if (!n) {
		printf("no jobs\n");
		return;
	}
	printf("%6s  %-9s  %-22s %4s  %-7s %5s %10s %7s %8s  %-9s  %s\n", "job", "state",
	       "target", "node", "method", "done", "moved", "GB/s", "seconds", "result",
	       "created");
	for (size_t i = 0; i < n; i++)
		print_row(json_object_array_get_idx(jobs, i));
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
};
