// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TEMP: a throwaway nodes-json.h implementation (ids and sizes only) so
 * that memmigd builds on the daemon branch.  The lead's
 * src/shared/nodes-json.c on main replaces it at merge.
 */
#include <errno.h>

#include "nodes-json.h"

int nodes_json(struct memmig_ctx *ctx, struct json_object **out)
{
	struct json_object *o, *nodes;
	struct memmig_topo *topo;
	int rc = memmig_topo_new(ctx, &topo);

	if (rc)
		return rc;
	o = json_object_new_object();
	nodes = json_object_new_array();
	for (int i = 0; i < memmig_topo_node_count(topo); i++) {
		struct memmig_node_info ni = { .sz = sizeof(ni) };
		struct json_object *n;

		if (memmig_topo_get_node(topo, (unsigned int)i, &ni))
			continue;
		n = json_object_new_object();
		json_object_object_add(n, "id", json_object_new_int(ni.id));
		json_object_object_add(n, "mem_total", json_object_new_int64((int64_t)ni.mem_total));
		json_object_object_add(n, "mem_free", json_object_new_int64((int64_t)ni.mem_free));
		json_object_array_add(nodes, n);
	}
	json_object_object_add(o, "nodes", nodes);
	json_object_object_add(o, "dax", json_object_new_array());
	memmig_topo_unref(topo);
	*out = o;
	return 0;
}
