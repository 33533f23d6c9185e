/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli where: where a process's (or a domain's QEMU's) resident
 * memory is, per node and per mapping, like numastat -p: read-only, from
 * the kernel's /proc/PID/numa_maps (util/numa-usage.h).  A domain's pid
 * comes from memmigd, which knows the domains.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/table.h"
#include "util/numa-usage.h"
#include "util/size.h"

struct where_args {
	int pid;
	const char *domain;
	bool json;
};

/* What was read: the mappings with resident pages, the nodes' totals. */
struct where {
	struct json_object *maps;	/* array of mapping objects */
	uint64_t node_bytes[UTIL_USAGE_NODES];
	bool node_seen[UTIL_USAGE_NODES];
};

static void where_usage(FILE *f)
{
	fprintf(f,
		"Usage: memmig-cli where (--pid PID | --domain NAME) [--json]\n"
		"Shows where the resident memory of a process, or of a libvirt\n"
		"domain's QEMU (asked of memmigd), is: the bytes on each node, and\n"
		"each mapping's bytes per node, its kind (anon, heap, stack, file,\n"
		"huge) and page size, as the kernel's /proc/PID/numa_maps counts\n"
		"them.  Moves nothing.\n\n"
		"  -p, --pid PID          the process\n"
		"  -d, --domain NAME      a libvirt domain known to memmigd\n"
		"  -j, --json             machine-readable output (sizes in bytes)\n"
		"Exit codes: 0 shown, 1 failed (no such process or domain), 2 usage,\n"
		"3 memmigd unreachable (--domain).\n");
}

static int where_parse(int argc, char **argv, struct where_args *a)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "domain", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long n;
	int c;

	memset(a, 0, sizeof(*a));
	while ((c = getopt_long(argc, argv, "p:d:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (cli_parse_int("--pid", optarg, 1, INT32_MAX, &n) < 0)
				return CLI_EXIT_USAGE;
			a->pid = (int)n;
			break;
		case 'd':
			if (!*optarg || strlen(optarg) >= PROTO_NAME_MAX) {
				cli_opt_error("--domain", "a name of 1 to %d bytes\n",
					      PROTO_NAME_MAX - 1);
				return CLI_EXIT_USAGE;
			}
			a->domain = optarg;
			break;
		case 'j':
			a->json = true;
			cli_json_error_want();
			break;
		case 'h':
			where_usage(stdout);
			return CLI_HELP_SHOWN;
		default:
			where_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc || !a->pid == !a->domain) {
		cli_error("where: %s\n", optind < argc ? "unexpected argument" :
			  "one of --pid and --domain is required");
		where_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

static struct json_object *node_json(int node, uint64_t bytes)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "node", json_object_new_int(node));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)bytes));
	return o;
}

static int add_mapping(const struct util_numa_map *m, void *opaque)
{
	struct where *w = opaque;
	struct json_object *o, *nodes;
	uint64_t total = 0;
	char addr[24];

	if (!m->n)
		return 0;	/* nothing resident: numastat leaves it out too */
	nodes = json_object_new_array();
	for (unsigned int i = 0; i < m->n; i++) {
		uint64_t b = m->pages[i] * m->page_size;

		json_object_array_add(nodes, node_json(m->node[i], b));
		w->node_bytes[m->node[i]] += b;
		w->node_seen[m->node[i]] = true;
		total += b;
	}
	o = json_object_new_object();
	snprintf(addr, sizeof(addr), "0x%" PRIx64, m->start);
	json_object_object_add(o, "addr", json_object_new_string(addr));
	json_object_object_add(o, "kind", json_object_new_string(m->kind));
	json_object_object_add(o, "path", *m->path ? json_object_new_string(m->path) : NULL);
	json_object_object_add(o, "page_size", json_object_new_int64((int64_t)m->page_size));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)total));
	json_object_object_add(o, "nodes", nodes);
	json_object_array_add(w->maps, o);
	return 0;
}

/* The bytes of a mapping object on node (0 when none there). */
static uint64_t map_on(struct json_object *map, int node)
{
	struct json_object *nodes = NULL;

	json_object_object_get_ex(map, "nodes", &nodes);
	for (size_t i = 0; nodes && i < json_object_array_length(nodes); i++) {
		struct json_object *n = json_object_array_get_idx(nodes, i);

		if (cli_json_int(n, "node", -1) == node)
			return (uint64_t)cli_json_int(n, "bytes", 0);
	}
	return 0;
}

/* A mapping's cell on a node: its resident size there, "-" for none. */
static void size_cell(struct cli_table *t, uint64_t v)
{
	char b[32];

	cli_table_cell(t, "%s", v ? util_size_human(v, b, sizeof(b)) : "-");
}

static void print_text(const struct where *w, const struct where_args *a, uint64_t total)
{
	struct cli_col cols[UTIL_USAGE_NODES + 5], *c = cols;
	char heads[UTIL_USAGE_NODES][16], b[32];
	size_t n = json_object_array_length(w->maps);
	struct cli_table *t;

	printf("pid %d%s%s%s: %s resident\n\n", a->pid, a->domain ? " (domain " : "",
	       a->domain ? a->domain : "", a->domain ? ")" : "",
	       util_size_human(total, b, sizeof(b)));
	*c++ = (struct cli_col){ "address", 0, false };
	*c++ = (struct cli_col){ "kind", 0, false };
	*c++ = (struct cli_col){ "page", 0, true };
	for (int node = 0; node < UTIL_USAGE_NODES; node++) {
		if (w->node_seen[node]) {
			snprintf(heads[node], sizeof(heads[node]), "node %d", node);
			*c++ = (struct cli_col){ heads[node], 0, true };
		}
	}
	*c++ = (struct cli_col){ "total", 0, true };
	*c++ = (struct cli_col){ "path", 48, false };
	t = cli_table_new(cols, (size_t)(c - cols));
	for (size_t i = 0; i < n; i++) {
		struct json_object *m = json_object_array_get_idx(w->maps, i);

		cli_table_cell(t, "%s", cli_json_str(m, "addr", "?"));
		cli_table_cell(t, "%s", cli_json_str(m, "kind", "?"));
		cli_table_cell(t, "%s", util_size_format((size_t)cli_json_int(m, "page_size", 0),
							 b, sizeof(b)));
		for (int node = 0; node < UTIL_USAGE_NODES; node++)
			if (w->node_seen[node])
				size_cell(t, map_on(m, node));
		size_cell(t, (uint64_t)cli_json_int(m, "bytes", 0));
		cli_table_cell(t, "%s", cli_json_str(m, "path", ""));
	}
	cli_table_cell(t, "total");
	cli_table_cell(t, "%s", "");
	cli_table_cell(t, "%s", "");
	for (int node = 0; node < UTIL_USAGE_NODES; node++)
		if (w->node_seen[node])
			size_cell(t, w->node_bytes[node]);
	size_cell(t, total);
	cli_table_cell(t, "%s", "");
	cli_table_print(t, stdout);
}

static int where_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct where_args a;
	struct where *w;
	struct json_object *out, *nodes;
	uint64_t total = 0;
	int rc = where_parse(argc, argv, &a);

	(void)ctx;
	if (rc)
		return cli_exit_code(rc);
	if (a.domain && (rc = cli_domain_pid("where", a.domain, &a.pid)))
		return rc;
	w = calloc(1, sizeof(*w));
	if (!w) {
		cli_error("where: %s\n", strerror(ENOMEM));
		return CLI_EXIT_FAIL;
	}
	w->maps = json_object_new_array();
	rc = util_numa_maps_each(a.pid, add_mapping, w);
	if (rc < 0) {
		cli_json_error_errno(rc);
		cli_error("where: pid %d: %s\n", a.pid, strerror(-rc));
		json_object_put(w->maps);
		free(w);
		return CLI_EXIT_FAIL;
	}
	nodes = json_object_new_array();
	for (int node = 0; node < UTIL_USAGE_NODES; node++) {
		if (w->node_seen[node]) {
			json_object_array_add(nodes, node_json(node, w->node_bytes[node]));
			total += w->node_bytes[node];
		}
	}
	if (a.json) {
		out = json_object_new_object();
		json_object_object_add(out, "pid", json_object_new_int(a.pid));
		json_object_object_add(out, "domain",
				       a.domain ? json_object_new_string(a.domain) : NULL);
		json_object_object_add(out, "bytes", json_object_new_int64((int64_t)total));
		json_object_object_add(out, "nodes", nodes);
		json_object_object_add(out, "mappings", json_object_get(w->maps));
		cli_json_print(out);
	} else {
		print_text(w, &a, total);
		json_object_put(nodes);
	}
	json_object_put(w->maps);
	free(w);
	return CLI_EXIT_OK;
}

const struct cli_cmd cli_cmd_where = {
	.name = "where",
	.summary = "show where a process's or a domain's memory is, per node and mapping",
	.run = where_run,
	.no_copy = true,
};
