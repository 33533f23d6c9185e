/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig_report to JSON: every figure read from the report itself. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "proto/report-json.h"
#include "proto/proto.h"

static struct json_object *json_u64(uint64_t v)
{
	return json_object_new_int64((int64_t)v);
}

static struct json_object *nodes_of(const struct memmig_report *rep)
{
	struct json_object *nodes = json_object_new_array();
	int max = memmig_report_max_node(rep);

	for (int n = 0; n <= max; n++) {
		struct json_object *row;
		uint64_t before, after;

		memmig_report_node_pages(rep, n, &before, &after);
		if (!before && !after)
			continue;
		row = json_object_new_object();
		json_object_object_add(row, "node", json_object_new_int(n));
		json_object_object_add(row, "pages_before", json_u64(before));
		json_object_object_add(row, "pages_after", json_u64(after));
		json_object_array_add(nodes, row);
	}
	return nodes;
}

static struct json_object *errnos_of(const struct memmig_report *rep)
{
	struct json_object *errs = json_object_new_object();

	for (int i = 0; i < memmig_report_errno_count(rep); i++) {
		uint64_t pages;
		char name[16];
		int err;

		memmig_report_get_errno(rep, (unsigned int)i, &err, &pages);
		json_object_object_add(errs, proto_errno_name(err, name, sizeof(name)),
				       json_u64(pages));
	}
	return errs;
}

static struct json_object *failed_of(const struct memmig_report *rep)
{
	struct json_object *failed = json_object_new_array();

	for (int i = 0; i < memmig_report_failed_count(rep); i++) {
		struct json_object *o = json_object_new_object();
		uint64_t addr, len;
		char hex[32], name[16];
		int err;

		memmig_report_get_failed(rep, (unsigned int)i, &addr, &len, &err);
		snprintf(hex, sizeof(hex), "%#llx", (unsigned long long)addr);
		json_object_object_add(o, "addr", json_object_new_string(hex));
		json_object_object_add(o, "len", json_u64(len));
		json_object_object_add(o, "errno", json_object_new_string(
				       proto_errno_name(err, name, sizeof(name))));
		json_object_array_add(failed, o);
	}
	return failed;
}

struct json_object *report_json(const struct memmig_report *rep)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct json_object *o = json_object_new_object();
	char name[16];

	memmig_report_get_summary(rep, &s);
	json_object_object_add(o, "pid", json_object_new_int(s.pid));
	json_object_object_add(o, "to_node", json_object_new_int(s.target_node));
	json_object_object_add(o, "strategy",
			       json_object_new_string(proto_strategy_name(s.strategy)));
	json_object_object_add(o, "result",
			       json_object_new_string(proto_errno_name(s.result, name, sizeof(name))));
	json_object_object_add(o, "regions", json_object_new_int((int)s.regions));
	json_object_object_add(o, "threads", json_object_new_int((int)s.workers));
	json_object_object_add(o, "bytes_total", json_u64(s.bytes_total));
	json_object_object_add(o, "bytes_moved", json_u64(s.bytes_moved));
	json_object_object_add(o, "pages_failed", json_u64(s.pages_failed));
	json_object_object_add(o, "pages_on_target", json_u64(s.pages_verified_on_target));
	json_object_object_add(o, "pages_skipped", json_u64(s.pages_skipped));
	json_object_object_add(o, "elapsed_s", json_object_new_double(s.total_s));
	/* Where the time went: the copy against the bookkeeping around it. */
	json_object_object_add(o, "plan_s", json_object_new_double(s.plan_s));
	json_object_object_add(o, "query_s", json_object_new_double(s.query_s));
	json_object_object_add(o, "prepare_s", json_object_new_double(s.prepare_s));
	json_object_object_add(o, "copy_s", json_object_new_double(s.copy_s));
	json_object_object_add(o, "nodes", nodes_of(rep));
	json_object_object_add(o, "errno_pages", errnos_of(rep));
	/* The first MEMMIG_REPORT_MAX_FAILED_RANGES, and how many more:
	 * bounded, whatever the process (docs/json.md). */
	json_object_object_add(o, "failed_ranges", failed_of(rep));
	json_object_object_add(o, "failed_ranges_omitted", json_u64(s.failed_ranges_omitted));
	json_object_object_add(o, "failed_pages_omitted", json_u64(s.failed_pages_omitted));
	return o;
}
