/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The node and DAX tables as JSON, read from one topology snapshot. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "proto/nodes-json.h"

/* -1 ("none") is null in JSON. */
static struct json_object *json_id(int v)
{
	return v < 0 ? NULL : json_object_new_int(v);
}

static int json_node(const struct memmig_topo *topo, unsigned int idx,
		     struct json_object *nodes)
{
	struct memmig_node_info n = { .sz = sizeof(n) };
	struct json_object *o, *cpus, *dist;
	int *cpu = NULL, count = memmig_topo_node_count(topo), rc;
	char key[16];

	rc = memmig_topo_get_node(topo, idx, &n);
	if (rc < 0)
		return rc;
	if (n.ncpus) {
		cpu = calloc(n.ncpus, sizeof(*cpu));
		if (!cpu)
			return -ENOMEM;
		rc = memmig_topo_node_cpus(topo, n.id, cpu, n.ncpus);
		if (rc < 0) {
			free(cpu);
			return rc;
		}
	}
	o = json_object_new_object();
	cpus = json_object_new_array();
	dist = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int(n.id));
	json_object_object_add(o, "kind", json_object_new_string(
		n.kind == MEMMIG_NODE_CPULESS ? "cpuless" : "dram"));
	for (unsigned int c = 0; c < n.ncpus; c++)
		json_object_array_add(cpus, json_object_new_int(cpu[c]));
	free(cpu);
	json_object_object_add(o, "cpus", cpus);
	json_object_object_add(o, "mem_total", json_object_new_int64((int64_t)n.mem_total));
	json_object_object_add(o, "mem_free", json_object_new_int64((int64_t)n.mem_free));
	json_object_object_add(o, "tier", json_id(n.tier));
	json_object_object_add(o, "nearest_cpu_node", json_id(n.nearest_cpu_node));
	json_object_object_add(o, "cxl", json_object_new_boolean(!!(n.flags & MEMMIG_NODE_F_CXL)));
	json_object_object_add(o, "dax", n.dax_dev[0] ? json_object_new_string(n.dax_dev) : NULL);
	for (int j = 0; j < count; j++) {
		struct memmig_node_info m = { .sz = sizeof(m) };

		if (memmig_topo_get_node(topo, (unsigned int)j, &m) < 0)
			continue;
		snprintf(key, sizeof(key), "%d", m.id);
		json_object_object_add(dist, key, json_object_new_int(
			memmig_topo_distance(topo, n.id, m.id)));
	}
	json_object_object_add(o, "distances", dist);
	json_object_array_add(nodes, o);
	return 0;
}

static int json_dax(const struct memmig_topo *topo, unsigned int idx,
		    struct json_object *dax)
{
	struct memmig_dax_info d = { .sz = sizeof(d) };
	struct json_object *o;
	int rc = memmig_topo_get_dax(topo, idx, &d);

	if (rc < 0)
		return rc;
	o = json_object_new_object();
	json_object_object_add(o, "dev", json_object_new_string(d.dev));
	json_object_object_add(o, "region", json_id(d.region_id));
	json_object_object_add(o, "size", json_object_new_int64((int64_t)d.size));
	json_object_object_add(o, "align", json_object_new_int64((int64_t)d.align));
	json_object_object_add(o, "target_node", json_id(d.target_node));
	json_object_object_add(o, "mode", json_object_new_string(
		d.mode ? "system-ram" : "devdax"));
	json_object_object_add(o, "cxl", json_object_new_boolean(!!(d.flags & MEMMIG_DAX_F_CXL)));
	json_object_array_add(dax, o);
	return 0;
}

int nodes_json(struct memmig_ctx *ctx, struct json_object **out)
{
	struct json_object *o, *nodes, *dax;
	struct memmig_topo *topo;
	int rc = memmig_topo_new(ctx, &topo), n, ndax;

	if (rc < 0)
		return rc;
	n = memmig_topo_node_count(topo);
	ndax = memmig_topo_dax_count(topo);
	o = json_object_new_object();
	nodes = json_object_new_array();
	dax = json_object_new_array();
	json_object_object_add(o, "nodes", nodes);
	json_object_object_add(o, "dax", dax);
	rc = n < 0 ? n : ndax < 0 ? ndax : 0;
	for (int i = 0; !rc && i < n; i++)
		rc = json_node(topo, (unsigned int)i, nodes);
	for (int i = 0; !rc && i < ndax; i++)
		rc = json_dax(topo, (unsigned int)i, dax);
	memmig_topo_unref(topo);
	if (rc < 0) {
		json_object_put(o);
		return rc;
	}
	*out = o;
	return 0;
}
