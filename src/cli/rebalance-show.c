/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli move --domain --wait: after the job, the rebalance's last
 * step (memmigd narrows the domain's nodeset through libvirtd once the
 * job ended, docs/libvirt.md) and its per-step bytes, from `domains`.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "util/size.h"

#define REBALANCE_WAIT_MS	30000	/* libvirtd answers in ms; a hung one in 20 s */

/* The domain's rebalance object (a new reference), NULL when it has none. */
static struct json_object *rebalance_get(struct cli_conn *c, const char *domain)
{
	struct json_object *reply, *d, *rb = NULL;

	if (cli_call(c, "move", cli_request("domains"), &reply) < 0) {
		json_object_put(reply);
		return NULL;
	}
	d = cli_domain_find(reply, domain);
	if (d && json_object_object_get_ex(d, "rebalance", &rb) && rb)
		json_object_get(rb);
	json_object_put(reply);
	return rb;
}

static bool in_progress(struct json_object *rb)
{
	const char *s = cli_json_str(rb, "state", "");

	return !strcmp(s, "moving") || !strcmp(s, "narrowing");
}

struct json_object *cli_rebalance_wait(struct cli_conn *c, const char *domain)
{
	struct json_object *rb = NULL;

	for (int ms = 0; ms < REBALANCE_WAIT_MS; ms += 50) {
		json_object_put(rb);
		rb = rebalance_get(c, domain);
		if (!rb || !in_progress(rb))
			break;
		usleep(50 * 1000);
	}
	return rb;
}

static void step_line(struct json_object *rb, const char *step, const char *what)
{
	struct json_object *st = NULL;

	json_object_object_get_ex(rb, step, &st);
	char k[32], m[32];

	printf("  %-7s %-32s kernel moved %s, memmig %s\n", step, what,
	       util_size_human((uint64_t)cli_json_int(st, "kernel_bytes", 0), k, sizeof(k)),
	       util_size_human((uint64_t)cli_json_int(st, "memmig_bytes", 0), m, sizeof(m)));
}

void cli_rebalance_print(struct json_object *rb)
{
	const char *before = cli_json_str(rb, "nodeset_before", "?");
	const char *widened = cli_json_str(rb, "nodeset_widened", NULL);
	const char *after = cli_json_str(rb, "nodeset_after", NULL);
	char w[96], n[96];

	printf("rebalance: %s\n", cli_json_str(rb, "state", "?"));
	if (widened)
		snprintf(w, sizeof(w), "nodeset '%s' -> '%s'", before, widened);
	else
		snprintf(w, sizeof(w), "nodeset '%s' has node %lld", before,
			 (long long)cli_json_int(rb, "to_node", -1));
	step_line(rb, "widen", w);
	step_line(rb, "move", "");
	snprintf(n, sizeof(n), "nodeset -> '%s'", after ? after : "?");
	step_line(rb, "narrow", n);
	if (cli_json_str(rb, "message", NULL))
		printf("  %s\n", cli_json_str(rb, "message", ""));
}
