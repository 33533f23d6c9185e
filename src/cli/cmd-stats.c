/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli stats: memmigd's counters (the "metrics" op), for people, as
 * JSON, or as the Prometheus text memmigd exports (--prometheus).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

static void stats_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli stats [--json | --prometheus]\n"
		   "Shows memmigd's counters: jobs by state, bytes moved per node pair,\n"
		   "job durations, pages not moved, requests refused by reason.\n"
		   "  --json        the metric families as JSON\n"
		   "  --prometheus  Prometheus' text exposition format, as memmigd's\n"
		   "                --metrics-file holds it\n");
}

/* One sample: its labels as "k=v k=v", then the value. */
static void print_sample(struct json_object *s)
{
	struct json_object *labels = NULL, *v = NULL, *suffix = NULL;
	char text[160] = "";
	size_t n = 0;

	json_object_object_get_ex(s, "labels", &labels);
	json_object_object_get_ex(s, "value", &v);
	json_object_object_get_ex(s, "suffix", &suffix);
	if (suffix)
		n += (size_t)snprintf(text, sizeof(text), "%s ", json_object_get_string(suffix) + 1);
	if (labels) {
		json_object_object_foreach(labels, key, val)
			if (n < sizeof(text))
				n += (size_t)snprintf(text + n, sizeof(text) - n, "%s=%s ", key,
						      json_object_get_string(val));
	}
	printf("    %-40s %s\n", text, v ? json_object_get_string(v) : "?");
}

static void print_stats(struct json_object *metrics)
{
	json_object_object_foreach(metrics, name, fam) {
		struct json_object *samples = NULL, *first;
		size_t n;

		json_object_object_get_ex(fam, "samples", &samples);
		n = samples ? json_object_array_length(samples) : 0;
		first = n ? json_object_array_get_idx(samples, 0) : NULL;
		/* One sample without labels: on the name's line. */
		if (n == 1 && !json_object_object_length(json_object_object_get(first, "labels"))) {
			printf("%-44s %s\n", name,
			       json_object_get_string(json_object_object_get(first, "value")));
			continue;
		}
		printf("%s%s\n", name, n ? "" : " (none yet)");
		for (size_t i = 0; i < n; i++)
			print_sample(json_object_array_get_idx(samples, i));
	}
}

static int stats_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct json_object *reply, *v;
	bool json = false, prom = false;
	int c, rc;

	(void)ctx;
	while ((c = getopt_long(argc, argv, "jph", opts, NULL)) != -1) {
		if (c == 'j') {
			json = true;
		} else if (c == 'p') {
			prom = true;
		} else if (c == 'h') {
			stats_usage(stdout);
			return CLI_EXIT_OK;
		} else {
			stats_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc || (json && prom)) {
		cli_error("stats: %s\n", optind < argc ? "unexpected argument" :
			  "--json or --prometheus, not both");
		return CLI_EXIT_USAGE;
	}
	rc = cli_daemon_call("stats", cli_request("metrics"), &reply);
	if (rc)
		return rc;
	if (prom && json_object_object_get_ex(reply, "text", &v))
		fputs(json_object_get_string(v), stdout);
	else if (!json_object_object_get_ex(reply, "metrics", &v) ||
		 !json_object_is_type(v, json_type_object))
		rc = CLI_EXIT_FAIL;
	else if (json)
		cli_json_print(json_object_get(v));
	else if (!prom)
		print_stats(v);
	else
		rc = CLI_EXIT_FAIL;
	if (rc)
		cli_error("stats: memmigd's reply has no metrics\n");
	json_object_put(reply);
	return rc;
}

const struct cli_cmd cli_cmd_stats = {
	.name = "stats",
	.summary = "memmigd's counters (Prometheus text with --prometheus)",
	.run = stats_run,
	.no_copy = true,
};
