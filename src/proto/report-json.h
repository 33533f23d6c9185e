/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A whole-process move's report as memmig-cli and memmigd show it. */
#ifndef MEMMIG_PROTO_REPORT_JSON_H
#define MEMMIG_PROTO_REPORT_JSON_H

#include <json-c/json.h>

#include "memmig.h"

/*
 * The object memmig-cli move --json prints and a memmigd job carries
 * (docs/protocol.md): pid, target_node, strategy, result, regions,
 * workers, bytes_total, bytes_moved, pages_failed, pages_on_target,
 * seconds, nodes, errno_pages, failed_ranges.  A new reference.
 */
struct json_object *report_json(const struct memmig_report *rep);

#endif
