/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli events: follows memmigd's events (the "subscribe" op) --
 * jobs created and changing state, domains registered and unregistered --
 * one line each, until memmigd says it stops or --count events came.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/client.h"

static void events_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli events [--json] [--count N]\n"
		   "Prints memmigd's events as they happen: jobs queued, running, done,\n"
		   "failed or cancelled, domains registered or unregistered.  A user\n"
		   "other than root sees the events of their own jobs and the domains'.\n"
		   "  --json     one JSON object per line, as memmigd sends them\n"
		   "  --count N  stop after N events\n"
		   "Ends with status 0 when memmigd says it stops, 1 when the\n"
		   "connection ends without that.\n");
}

static void print_event(struct json_object *ev)
{
	const char *type = cli_json_str(ev, "event", "?");
	time_t t = (time_t)cli_json_int(ev, "time", 0);
	struct json_object *o = NULL;
	char when[32];
	struct tm tm;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
	json_object_object_get_ex(ev, type, &o);
	if (!strcmp(type, "job") && o) {
		const char *state = cli_json_str(o, "state", "?");
		const char *msg = cli_json_str(o, "message", NULL);

		printf("%s job %lld %s: pid %lld to node %lld%s%s\n", when,
		       (long long)cli_json_int(o, "id", 0), state, (long long)cli_json_int(o, "pid", 0),
		       (long long)cli_json_int(o, "to_node", -1), msg ? ": " : "", msg ? msg : "");
	} else if (!strcmp(type, "domain") && o) {
		printf("%s domain %s %s\n", when, cli_json_str(o, "name", "?"),
		       cli_json_str(o, "state", "?"));
	} else if (!strcmp(type, "memmigd") && o) {
		printf("%s memmigd %s (%s)\n", when, cli_json_str(o, "state", "?"),
		       cli_json_str(o, "signal", "?"));
	} else if (!strcmp(type, "lost")) {
		printf("%s %lld events lost (memmigd's queue was full)\n", when,
		       (long long)cli_json_int(ev, "count", 0));
	} else {
		printf("%s %s\n", when, proto_json_string(ev, JSON_C_TO_STRING_PLAIN));
	}
}

static int parse(int argc, char **argv, bool *json, long *count)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*json = false;
	*count = 0;
	while ((c = getopt_long(argc, argv, "jn:h", opts, NULL)) != -1) {
		if (c == 'j') {
			*json = true;
		} else if (c == 'n') {
			if (cli_parse_int("--count", optarg, 1, INT32_MAX, count) < 0)
				return CLI_EXIT_USAGE;
		} else if (c == 'h') {
			events_usage(stdout);
			return CLI_HELP_SHOWN;
		} else {
			events_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("events: unexpected argument '%s'\n", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

static int events_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct json_object *reply, *ev, *o;
	struct cli_conn *c;
	long count, seen = 0;
	bool json, stopped = false;
	int rc = parse(argc, argv, &json, &count);

	(void)ctx;
	if (rc)
		return cli_exit_code(rc);
	if (cli_connect_daemon("events", &c) < 0)
		return CLI_EXIT_NO_DAEMON;
	rc = cli_call(c, "events", cli_request("subscribe"), &reply);
	if (rc && reply)
		cli_print_reply_error("events", reply);
	json_object_put(reply);
	while (!rc && !stopped && (!count || seen < count)) {
		rc = cli_read_line(c, "events", &ev);
		if (rc == -ETIMEDOUT) {		/* a quiet minute */
			rc = 0;
			continue;
		}
		if (rc)
			break;
		if (json)
			printf("%s\n", proto_json_string(ev, JSON_C_TO_STRING_PLAIN));
		else
			print_event(ev);
		fflush(stdout);	/* a pipe: each event as it comes */
		/* memmigd's last event: nothing follows it. */
		stopped = !strcmp(cli_json_str(ev, "event", ""), "memmigd") &&
			  json_object_object_get_ex(ev, "memmigd", &o) &&
			  !strcmp(cli_json_str(o, "state", ""), "stopping");
		json_object_put(ev);
		seen++;
	}
	cli_conn_close(c);
	/* memmigd stopping ends the stream: that is not a failure; the
	 * connection ending without its word is (events may be missing). */
	if (stopped && !json)
		printf("memmigd stopped\n");
	return !rc ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

const struct cli_cmd cli_cmd_events = {
	.name = "events",
	.summary = "follow memmigd's job and domain events",
	.run = events_run,
	.no_copy = true,
};
