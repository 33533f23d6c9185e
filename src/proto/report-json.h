/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A whole-process move's report as memmig-cli and memmigd show it. */
#ifndef MEMMIG_PROTO_REPORT_JSON_H
#define MEMMIG_PROTO_REPORT_JSON_H

#include <json-c/json.h>

#include "memmig.h"

/*
 * The report object of docs/json.md, which a job carries (memmigd's and
 * memmig-cli's in-process move alike).  A new reference.
 */
struct json_object *report_json(const struct memmig_report *rep);

#endif
