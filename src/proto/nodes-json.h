/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The node and DAX tables as JSON: memmig-cli nodes --json and memmigd's
 * nodes op print the same objects. */
#ifndef MEMMIG_PROTO_NODES_JSON_H
#define MEMMIG_PROTO_NODES_JSON_H

#include <json-c/json.h>

#include "memmig.h"

/* *out: {"nodes": [...], "dax": [...]} (new reference); 0 or -errno. */
int nodes_json(struct memmig_ctx *ctx, struct json_object **out);

#endif
