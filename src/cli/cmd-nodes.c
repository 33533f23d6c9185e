/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli nodes: NUMA nodes, tiers, distances and DAX devices. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/table.h"
#include "util/size.h"
#include "cli/client.h"
#include "proto/nodes-json.h"

static void nodes_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli nodes [--json]\n"
		   "Shows the NUMA nodes with memory (kind, CPUs, total and free\n"
		   "memory, kernel memory tier, nearest node with CPUs, and the\n"
		   "device DAX its memory came from: CXL where it is), the node\n"
		   "distances and the DAX devices.  In --json, null stands for\n"
		   "\"none\" (no tier, no CPU node, unknown target node).\n");
}

/* "0-3,8,10-11" from ascending CPU numbers; "-" when there are none. */
static const char *cpulist(struct json_object *arr, char *buf, size_t len)
{
	size_t n = arr ? json_object_array_length(arr) : 0;
	int cpus[n + 1];

	for (size_t i = 0; i < n; i++)
		cpus[i] = json_object_get_int(json_object_array_get_idx(arr, i));
	return cli_list_format(cpus, n, buf, len);
}

/* null ("none") is "-". */
static const char *int_or_dash(struct json_object *o, const char *key,
			       char *buf, size_t len)
{
	int64_t v = cli_json_int(o, key, -1);

	if (v < 0)
		return "-";
	snprintf(buf, len, "%lld", (long long)v);
	return buf;
}

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

static const struct cli_col node_cols[] = {
	{ "node", 0, true }, { "kind", 0, false }, { "cpus", 24, false },
	{ "total", 0, true }, { "free", 0, true }, { "tier", 0, true },
	{ "nearest", 0, true }, { "memory", 0, false },
};

static void print_nodes_text(struct json_object *nodes)
{
	size_t n = json_object_array_length(nodes);
	char buf[64], key[24];
	struct cli_table *t = cli_table_new(node_cols, sizeof(node_cols) / sizeof(node_cols[0]));

	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(nodes, i);
		const char *dax = cli_json_str(o, "dax", NULL);
		struct json_object *cxl = member(o, "cxl");

		cli_table_cell(t, "%lld", (long long)cli_json_int(o, "id", -1));
		cli_table_cell(t, "%s", cli_json_str(o, "kind", "?"));
		cli_table_cell(t, "%s", cpulist(member(o, "cpus"), buf, sizeof(buf)));
		cli_table_cell(t, "%s", util_size_human((uint64_t)cli_json_int(o, "mem_total", 0),
							buf, sizeof(buf)));
		cli_table_cell(t, "%s", util_size_human((uint64_t)cli_json_int(o, "mem_free", 0),
							buf, sizeof(buf)));
		cli_table_cell(t, "%s", int_or_dash(o, "tier", buf, sizeof(buf)));
		cli_table_cell(t, "%s", int_or_dash(o, "nearest_cpu_node", buf, sizeof(buf)));
		cli_table_cell(t, "%s%s%s", cxl && json_object_get_boolean(cxl) ? "CXL, " : "",
			       dax ? "device DAX " : "-", dax ? dax : "");
	}
	cli_table_print(t, stdout);
	printf("\ndistances (10 = local):\n%4s ", "node");
	for (size_t j = 0; j < n; j++)
		printf(" %4lld", (long long)cli_json_int(
			json_object_array_get_idx(nodes, j), "id", -1));
	putchar('\n');
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(nodes, i);

		printf("%4lld ", (long long)cli_json_int(o, "id", -1));
		for (size_t j = 0; j < n; j++) {
			snprintf(key, sizeof(key), "%lld", (long long)cli_json_int(
				json_object_array_get_idx(nodes, j), "id", -1));
			printf(" %4lld", (long long)cli_json_int(member(o, "distances"),
								 key, -1));
		}
		putchar('\n');
	}
}

static const struct cli_col dax_cols[] = {
	{ "device", 24, false }, { "region", 0, true }, { "size", 0, true },
	{ "align", 0, true }, { "node", 0, true }, { "mode", 0, false },
};

static void print_dax_text(struct json_object *dax)
{
	size_t n = json_object_array_length(dax);
	struct cli_table *t;
	char buf[32];

	if (!n) {
		printf("\nno DAX devices\n");
		return;
	}
	printf("\nDAX devices:\n");
	t = cli_table_new(dax_cols, sizeof(dax_cols) / sizeof(dax_cols[0]));
	for (size_t i = 0; i < n; i++) {
		struct json_object *d = json_object_array_get_idx(dax, i);
		struct json_object *cxl = member(d, "cxl");

		cli_table_cell(t, "%s", cli_json_str(d, "dev", "?"));
		cli_table_cell(t, "%s", int_or_dash(d, "region", buf, sizeof(buf)));
		cli_table_cell(t, "%s", util_size_human((uint64_t)cli_json_int(d, "size", 0), buf,
							sizeof(buf)));
		cli_table_cell(t, "%s", util_size_human((uint64_t)cli_json_int(d, "align", 0), buf,
							sizeof(buf)));
		cli_table_cell(t, "%s", int_or_dash(d, "target_node", buf, sizeof(buf)));
		cli_table_cell(t, "%s%s", cli_json_str(d, "mode", "?"),
			       cxl && json_object_get_boolean(cxl) ? ", CXL" : "");
	}
	cli_table_print(t, stdout);
}

/* From memmigd when it runs (its view is the one moves use), else here. */
static int nodes_get(struct memmig_ctx *ctx, struct json_object **out)
{
	struct cli_conn *c;
	struct json_object *reply;
	int rc;

	if (cli_connect_or_local("nodes", &c) < 0)
		return CLI_EXIT_NO_DAEMON;
	if (!c) {
		rc = nodes_json(ctx, out);
		if (rc < 0)
			cli_error("nodes: cannot read the NUMA topology: %s\n",
				  strerror(-rc));
		return rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	}
	rc = cli_call(c, "nodes", cli_request("nodes"), &reply);
	cli_conn_close(c);
	if (rc < 0) {
		if (reply)
			cli_print_reply_error("nodes", reply);
		json_object_put(reply);
		return CLI_EXIT_FAIL;
	}
	json_object_object_del(reply, "ok");
	json_object_object_del(reply, "tag");
	*out = reply;
	return CLI_EXIT_OK;
}

static int nodes_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct json_object *o, *nodes, *dax;
	bool json = false;
	int rc;

	rc = cli_parse_json_only(argc, argv, nodes_usage, &json);
	if (rc)
		return cli_exit_code(rc);
	rc = nodes_get(ctx, &o);
	if (rc)
		return rc;
	nodes = member(o, "nodes");
	dax = member(o, "dax");
	if (!json_object_is_type(nodes, json_type_array) ||
	    !json_object_is_type(dax, json_type_array)) {
		cli_error("nodes: no node table in the reply\n");
		rc = CLI_EXIT_FAIL;
	} else if (json) {
		cli_json_print(json_object_get(o));
	} else {
		print_nodes_text(nodes);
		print_dax_text(dax);
	}
	json_object_put(o);
	return rc;
}

const struct cli_cmd cli_cmd_nodes = {
	.name = "nodes",
	.summary = "show NUMA nodes, memory tiers, distances and DAX devices",
	.run = nodes_run,
	.no_copy = true,
};
