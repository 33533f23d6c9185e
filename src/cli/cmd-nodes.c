/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli nodes: NUMA nodes, tiers, distances and DAX devices. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void nodes_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli nodes [--json]\n"
		   "Shows the NUMA nodes with memory (kind, CPUs, total and free\n"
		   "memory, kernel memory tier, nearest node with CPUs), the node\n"
		   "distances and the DAX devices.  In --json, null stands for\n"
		   "\"none\" (no tier, no CPU node, unknown target node).\n");
}

/* One snapshot read into plain arrays, for both outputs. */
struct nodes_view {
	int n;
	struct memmig_node_info *nodes;
	int **cpus;		/* nodes[i].ncpus each */
	int ndax;
	struct memmig_dax_info *dax;
};

static void view_free(struct nodes_view *v)
{
	for (int i = 0; v->cpus && i < v->n; i++)
		free(v->cpus[i]);
	free(v->cpus);
	free(v->nodes);
	free(v->dax);
}

static int view_read_node(const struct memmig_topo *topo, int i,
			  struct nodes_view *v)
{
	struct memmig_node_info *info = &v->nodes[i];
	int rc;

	info->sz = sizeof(*info);
	rc = memmig_topo_get_node(topo, (unsigned int)i, info);
	if (rc < 0)
		return rc;
	if (!info->ncpus)
		return 0;
	v->cpus[i] = calloc(info->ncpus, sizeof(int));
	if (!v->cpus[i])
		return -ENOMEM;
	rc = memmig_topo_node_cpus(topo, info->id, v->cpus[i], info->ncpus);
	return rc < 0 ? rc : 0;
}

static int view_read(const struct memmig_topo *topo, struct nodes_view *v)
{
	int rc;

	memset(v, 0, sizeof(*v));
	v->n = memmig_topo_node_count(topo);
	v->ndax = memmig_topo_dax_count(topo);
	if (v->n < 0 || v->ndax < 0)
		return v->n < 0 ? v->n : v->ndax;
	v->nodes = calloc((size_t)v->n + 1, sizeof(*v->nodes));
	v->cpus = calloc((size_t)v->n + 1, sizeof(*v->cpus));
	v->dax = calloc((size_t)v->ndax + 1, sizeof(*v->dax));
	if (!v->nodes || !v->cpus || !v->dax)
		return -ENOMEM;
	for (int i = 0; i < v->n; i++) {
		rc = view_read_node(topo, i, v);
		if (rc < 0)
			return rc;
	}
	for (int i = 0; i < v->ndax; i++) {
		v->dax[i].sz = sizeof(v->dax[i]);
		rc = memmig_topo_get_dax(topo, (unsigned int)i, &v->dax[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* "0-3,8,10-11" from ascending CPU numbers; "-" when there are none. */
static const char *cpulist(const int *cpus, unsigned int n, char *buf,
			   size_t len)
{
	size_t off = 0;

	if (!n)
		return "-";
	buf[0] = '\0';
	for (unsigned int i = 0; i < n && off < len; i++) {
		unsigned int j = i;
		int w;

		while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
			j++;
		if (j == i)
			w = snprintf(buf + off, len - off, "%s%d", i ? "," : "", cpus[i]);
		else
			w = snprintf(buf + off, len - off, "%s%d-%d", i ? "," : "",
				     cpus[i], cpus[j]);
		off += (size_t)w;
		i = j;
	}
	/* Too long for the table: mark the cut. */
	if (off >= len && len > 4)
		strcpy(buf + len - 4, "...");
	return buf;
}

/* Memory sizes for people: "512.0 MiB", "7.84 GiB". */
static const char *human(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double d = (double)v;
	unsigned int u = 0;

	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%llu B", (unsigned long long)v);
	else
		snprintf(buf, len, d < 10 ? "%.2f %s" : "%.1f %s", d, units[u]);
	return buf;
}

static const char *int_or_dash(int v, char *buf, size_t len)
{
	if (v < 0)
		return "-";
	snprintf(buf, len, "%d", v);
	return buf;
}

static const char *kind_name(int kind)
{
	return kind == MEMMIG_NODE_CPULESS ? "cpuless" : "dram";
}

static void print_nodes_text(const struct memmig_topo *topo,
			     const struct nodes_view *v)
{
	char cpus[64], tot[32], fr[32], tier[16], near[16];

	printf("%4s  %-8s %-16s %11s %11s %5s %8s\n", "node", "kind", "cpus",
	       "total", "free", "tier", "nearest");
	for (int i = 0; i < v->n; i++) {
		const struct memmig_node_info *n = &v->nodes[i];

		printf("%4d  %-8s %-16s %11s %11s %5s %8s\n", n->id,
		       kind_name(n->kind),
		       cpulist(v->cpus[i], n->ncpus, cpus, sizeof(cpus)),
		       human(n->mem_total, tot, sizeof(tot)),
		       human(n->mem_free, fr, sizeof(fr)),
		       int_or_dash(n->tier, tier, sizeof(tier)),
		       int_or_dash(n->nearest_cpu_node, near, sizeof(near)));
	}
	printf("\ndistances (10 = local):\n%4s ", "node");
	for (int j = 0; j < v->n; j++)
		printf(" %4d", v->nodes[j].id);
	putchar('\n');
	for (int i = 0; i < v->n; i++) {
		printf("%4d ", v->nodes[i].id);
		for (int j = 0; j < v->n; j++)
			printf(" %4d", memmig_topo_distance(topo, v->nodes[i].id,
							    v->nodes[j].id));
		putchar('\n');
	}
}

static void print_dax_text(const struct nodes_view *v)
{
	char size[32], align[32], node[16], region[16];

	if (!v->ndax) {
		printf("\nno DAX devices\n");
		return;
	}
	printf("\nDAX devices:\n%-12s %6s %11s %11s %6s  %s\n", "device", "region",
	       "size", "align", "node", "mode");
	for (int i = 0; i < v->ndax; i++) {
		const struct memmig_dax_info *d = &v->dax[i];

		printf("%-12s %6s %11s %11s %6s  %s\n", d->dev,
		       int_or_dash(d->region_id, region, sizeof(region)),
		       human(d->size, size, sizeof(size)),
		       human(d->align, align, sizeof(align)),
		       int_or_dash(d->target_node, node, sizeof(node)),
		       d->mode ? "system-ram" : "devdax");
	}
}

/* -1 ("none") is null in JSON. */
static struct json_object *json_id(int v)
{
	return v < 0 ? NULL : json_object_new_int(v);
}

static struct json_object *json_node(const struct memmig_topo *topo,
				     const struct nodes_view *v, int i)
{
	const struct memmig_node_info *n = &v->nodes[i];
	struct json_object *o = json_object_new_object();
	struct json_object *cpus = json_object_new_array();
	struct json_object *dist = json_object_new_object();
	char key[16];

	json_object_object_add(o, "id", json_object_new_int(n->id));
	json_object_object_add(o, "kind", json_object_new_string(kind_name(n->kind)));
	for (unsigned int c = 0; c < n->ncpus; c++)
		json_object_array_add(cpus, json_object_new_int(v->cpus[i][c]));
	json_object_object_add(o, "cpus", cpus);
	json_object_object_add(o, "mem_total", json_object_new_int64((int64_t)n->mem_total));
	json_object_object_add(o, "mem_free", json_object_new_int64((int64_t)n->mem_free));
	json_object_object_add(o, "tier", json_id(n->tier));
	json_object_object_add(o, "nearest_cpu_node", json_id(n->nearest_cpu_node));
	for (int j = 0; j < v->n; j++) {
		snprintf(key, sizeof(key), "%d", v->nodes[j].id);
		json_object_object_add(dist, key, json_object_new_int(
			memmig_topo_distance(topo, n->id, v->nodes[j].id)));
	}
	json_object_object_add(o, "distances", dist);
	return o;
}

static struct json_object *json_dax(const struct memmig_dax_info *d)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "dev", json_object_new_string(d->dev));
	json_object_object_add(o, "region", json_id(d->region_id));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)d->size));
	json_object_object_add(o, "align", json_object_new_int64((int64_t)d->align));
	json_object_object_add(o, "target_node", json_id(d->target_node));
	json_object_object_add(o, "mode", json_object_new_string(
		d->mode ? "system-ram" : "devdax"));
	return o;
}

static void print_json(const struct memmig_topo *topo,
		       const struct nodes_view *v)
{
	struct json_object *o = json_object_new_object();
	struct json_object *nodes = json_object_new_array();
	struct json_object *dax = json_object_new_array();

	for (int i = 0; i < v->n; i++)
		json_object_array_add(nodes, json_node(topo, v, i));
	for (int i = 0; i < v->ndax; i++)
		json_object_array_add(dax, json_dax(&v->dax[i]));
	json_object_object_add(o, "nodes", nodes);
	json_object_object_add(o, "dax", dax);
	cli_json_print(o);
}

static int nodes_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct memmig_topo *topo;
	struct nodes_view v;
	bool json = false;
	int c, rc;

	c = cli_parse_json_only(argc, argv, nodes_usage, &json);
	if (c)
		return c < 0 ? CLI_EXIT_OK : c;
	rc = memmig_topo_new(ctx, &topo);
	if (rc < 0) {
		cli_error("nodes: cannot read the NUMA topology: %s\n",
			  strerror(-rc));
		return CLI_EXIT_FAIL;
	}
	rc = view_read(topo, &v);
	if (rc < 0) {
		cli_error("nodes: cannot read the topology snapshot: %s\n",
			  strerror(-rc));
	} else if (json) {
		print_json(topo, &v);
	} else {
		print_nodes_text(topo, &v);
		print_dax_text(&v);
	}
	view_free(&v);
	memmig_topo_unref(topo);
	return rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

const struct cli_cmd cli_cmd_nodes = {
	.name = "nodes",
	.summary = "show NUMA nodes, memory tiers, distances and DAX devices",
	.run = nodes_run,
};
