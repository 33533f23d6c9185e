/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A move's report for people.  Reports come as JSON from memmigd or from
 * the in-process move alike, so there is one printer for both.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/size.h"

/* Automatic NUMA balancing moves pages back toward the CPUs that touch
 * them, and its pending hint faults make pages unmovable for a moment. */
static bool numa_balancing_on(void)
{
	FILE *f = fopen("/proc/sys/kernel/numa_balancing", "re");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v != 0;
}

static void print_nodes(struct json_object *rep)
{
	struct json_object *nodes;

	printf("%-10s %12s %12s\n", "4K pages", "before", "after");
	if (!json_object_object_get_ex(rep, "nodes", &nodes) ||
	    !json_object_is_type(nodes, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(nodes); i++) {
		struct json_object *row = json_object_array_get_idx(nodes, i);

		printf("node %-5d %12lld %12lld\n", (int)cli_json_int(row, "node", -1),
		       (long long)cli_json_int(row, "pages_before", 0),
		       (long long)cli_json_int(row, "pages_after", 0));
	}
}

static void print_errnos(struct json_object *rep)
{
	struct json_object *errs;

	if (!json_object_object_get_ex(rep, "errno_pages", &errs) ||
	    !json_object_is_type(errs, json_type_object))
		return;
	json_object_object_foreach(errs, name, pages) {
		int err = proto_errno_value(name);

		printf("not moved: %lld pages %s (%s)\n",
		       (long long)json_object_get_int64(pages), name,
		       err == ENOENT ? "not present: nothing to move" :
		       err ? strerror(err) : "unknown error");
	}
}

/*
 * The first failed ranges, and how many more there are: those the report
 * left out (failed_ranges_omitted, past the MEMMIG_REPORT_MAX_FAILED_RANGES
 * it keeps) with those it has but a person need not read.
 */
#define FAILED_SHOWN 8

static void print_failed(struct json_object *rep)
{
	int64_t more = cli_json_int(rep, "failed_ranges_omitted", 0);
	int64_t pages = cli_json_int(rep, "failed_pages_omitted", 0);
	struct json_object *failed;
	size_t n = 0;

	if (json_object_object_get_ex(rep, "failed_ranges", &failed) &&
	    json_object_is_type(failed, json_type_array))
		n = json_object_array_length(failed);
	for (size_t i = 0; i < n; i++) {
		struct json_object *f = json_object_array_get_idx(failed, i);
		int64_t len = cli_json_int(f, "len", 0);
		char b[32];

		if (i >= FAILED_SHOWN) {
			more++;
			pages += len / 4096;
			continue;
		}
		printf("failed: %s, %s, %s\n", cli_json_str(f, "addr", "?"),
		       util_size_human((uint64_t)len, b, sizeof(b)), cli_json_str(f, "errno", "?"));
	}
	if (more)
		printf("failed: ... and %lld more range%s (%lld pages)\n", (long long)more,
		       more == 1 ? "" : "s", (long long)pages);
}

/* A job's or a report's "result": 0, a positive errno, or EPROTO when it
 * has none. */
int cli_json_result(struct json_object *o)
{
	const char *name = cli_json_str(o, "result", NULL);

	if (!name)
		return EPROTO;
	return strcmp(name, "OK") ? (proto_errno_value(name) ?: EPROTO) : 0;
}

void cli_print_move_report(struct json_object *rep)
{
	int64_t moved = cli_json_int(rep, "bytes_moved", 0);
	int64_t threads = cli_json_int(rep, "threads", 0);
	int64_t regions = cli_json_int(rep, "regions", 0);
	int result = cli_json_result(rep);
	double s = cli_json_double(rep, "elapsed_s", 0);
	char b1[32], b2[32];

	printf("pid %lld: moved %s of %s to node %lld in %.3f s (%.2f GB/s), "
	       "strategy %s, %lld thread%s, %lld region%s\n",
	       (long long)cli_json_int(rep, "pid", 0),
	       util_size_human((uint64_t)moved, b1, sizeof(b1)),
	       util_size_human((uint64_t)cli_json_int(rep, "bytes_total", 0), b2,
				  sizeof(b2)),
	       (long long)cli_json_int(rep, "to_node", -1), s,
	       s > 0 ? (double)moved / s / 1e9 : 0,
	       cli_json_str(rep, "strategy", "?"), (long long)threads,
	       threads == 1 ? "" : "s", (long long)regions, regions == 1 ? "" : "s");
	printf("time: planning %.1f ms before; of the %.1f ms: placement queries "
	       "%.1f ms, preparing %.1f ms, copying or moving %.1f ms (workers' "
	       "average, summed over the regions)\n",
	       cli_json_double(rep, "plan_s", 0) * 1e3, s * 1e3,
	       cli_json_double(rep, "query_s", 0) * 1e3,
	       cli_json_double(rep, "prepare_s", 0) * 1e3,
	       cli_json_double(rep, "copy_s", 0) * 1e3);
	print_nodes(rep);
	print_errnos(rep);
	print_failed(rep);
	if (cli_json_int(rep, "pages_skipped", 0))
		printf("left alone: %lld pages on nodes outside --from\n",
		       (long long)cli_json_int(rep, "pages_skipped", 0));
	if (result)
		printf("result: %s\n", strerror(result));
	if (numa_balancing_on())
		printf("note: kernel.numa_balancing is on: the kernel may move these pages "
		       "back toward the CPUs that use them\n");
}

int cli_move_exit(const char *cmd, struct json_object *job)
{
	struct json_object *rep = NULL;
	int result = cli_json_result(job);
	int64_t failed;

	json_object_object_get_ex(job, "report", &rep);
	failed = cli_json_int(rep, "pages_failed", 0);
	if (result) {
		cli_json_error_errno(result);
		cli_error("%s: %s\n", cmd, result == ECANCELED ? "cancelled: what moved "
			  "stays moved, the rest is where it was" :
			  cli_json_str(job, "message", strerror(result)));
		return CLI_EXIT_FAIL;
	}
	if (failed) {
		cli_error("%s: %lld pages could not be moved (see the errors above)\n",
			  cmd, (long long)failed);
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}
