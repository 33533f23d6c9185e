/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli status [JOB]: memmigd itself (version, uptime, libvirt,
 * limits), or one of its jobs: its progress, and its report.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "util/duration.h"
#include "util/size.h"

static void status_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli status [JOB] [--json]\n"
		   "Without JOB: memmigd's version, uptime, libvirt connection, clients,\n"
		   "jobs and limits.  With JOB: that job, its progress, and its report\n"
		   "once it ended.\n");
}

static const struct job_cmd status_cmd = { "status", "job", status_usage };

static void print_limits(struct json_object *l)
{
	char backlog[32], event[32];

	printf("limits:   %lld jobs queued or running (%lld running per node), %lld clients "
	       "(the last %lld root's, %lld per user),\n"
	       "          idle clients closed after %lld s, %lld event subscribers "
	       "(the last %lld root's, %lld per user;\n"
	       "          each dropped past %s unread, an event %s at most),\n"
	       "          %lld processes tiered (%lld kept for root, %lld per user)\n",
	       (long long)cli_json_int(l, "max_jobs", 0),
	       (long long)cli_json_int(l, "max_jobs_per_node", 0),
	       (long long)cli_json_int(l, "max_clients", 0),
	       (long long)cli_json_int(l, "root_clients", 0),
	       (long long)cli_json_int(l, "max_clients_per_user", 0),
	       (long long)cli_json_int(l, "idle_timeout_s", 0),
	       (long long)cli_json_int(l, "max_subscribers", 0),
	       (long long)cli_json_int(l, "root_subscribers", 0),
	       (long long)cli_json_int(l, "max_subscribers_per_user", 0),
	       util_size_human((uint64_t)cli_json_int(l, "bytes_subscriber_backlog", 0), backlog,
			       sizeof(backlog)),
	       util_size_human((uint64_t)cli_json_int(l, "bytes_event_max", 0), event, sizeof(event)),
	       (long long)cli_json_int(l, "max_tiers", 0),
	       (long long)cli_json_int(l, "root_tiers", 0),
	       (long long)cli_json_int(l, "max_tiers_per_user", 0));
}

/* "connected to URI", or "disconnected from URI (why), retrying". */
static void print_libvirt(struct json_object *r)
{
	const char *state = cli_json_str(r, "libvirt_state", "?");
	const char *uri = cli_json_str(r, "libvirt_uri", "libvirt's default URI");
	const char *why = cli_json_str(r, "libvirt_error", NULL);

	if (!strcmp(state, "connected"))
		printf("libvirt:  connected to %s\n", uri);
	else if (!strcmp(state, "disconnected"))
		printf("libvirt:  disconnected from %s%s%s%s, retrying\n", uri, why ? " (" : "",
		       why ? why : "", why ? ")" : "");
	else
		printf("libvirt:  %s\n", state);
}

static void print_status(struct json_object *r)
{
	struct json_object *jobs = json_object_object_get(r, "jobs");
	struct json_object *limits = json_object_object_get(r, "limits");
	const char *metrics = cli_json_str(r, "metrics_file", NULL);
	char up[48];

	printf("memmigd %s (protocol %lld), pid %lld, up %s\n",
	       cli_json_str(r, "version", "?"), (long long)cli_json_int(r, "protocol", 0),
	       (long long)cli_json_int(r, "pid", 0),
	       util_duration_human(cli_json_double(r, "uptime_s", 0), up, sizeof(up)));
	printf("socket:   %s%s\n", cli_json_str(r, "socket", "?"),
	       json_object_get_boolean(json_object_object_get(r, "socket_activated")) ?
	       " (made by systemd: socket activation)" : "");
	print_libvirt(r);
	printf("clients:  %lld connected, %lld subscribed to events\n",
	       (long long)cli_json_int(r, "clients", 0), (long long)cli_json_int(r, "subscribers", 0));
	printf("jobs:     %lld running, %lld queued\n", (long long)cli_json_int(jobs, "running", 0),
	       (long long)cli_json_int(jobs, "queued", 0));
	printf("tiering:  %lld processes (memmig-cli tier)\n", (long long)cli_json_int(r, "tiers", 0));
	printf("metrics:  %s\n", metrics ? metrics : "no file (memmig-cli stats asks)");
	if (limits)
		print_limits(limits);
}

static int daemon_status(int argc, char **argv)
{
	struct json_object *reply;
	bool json;
	int rc = cli_parse_json_only(argc, argv, status_usage, &json);

	if (rc)
		return cli_exit_code(rc);
	rc = cli_daemon_call("status", cli_request("status"), &reply);
	if (rc)
		return rc;
	json_object_object_del(reply, "ok");
	if (json)
		cli_json_print(json_object_get(reply));
	else
		print_status(reply);
	json_object_put(reply);
	return CLI_EXIT_OK;
}

static int status_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	(void)ctx;
	/* An argument that is not an option is the job. */
	for (int i = 1; i < argc; i++)
		if (argv[i][0] != '-')
			return cli_job_show(&status_cmd, argc, argv);
	return daemon_status(argc, argv);
}

const struct cli_cmd cli_cmd_status = {
	.name = "status",
	.summary = "memmigd's status, or one of its jobs with its report",
	.run = status_run,
	.no_copy = true,
};
