/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli tier: memmigd keeps a process's or domain's hot memory on the
 * fast nodes and its cold memory on the slow ones (docs/tiering.md): set a
 * policy, list the tierings, show one over time, or end one.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/table.h"
#include "util/size.h"
#include "cli/client.h"
#include "proto/proto.h"

static void tier_usage(FILE *f)
{
	fprintf(f, "Usage: memmig-cli tier (-p PID | -d DOMAIN) --fast NODES --slow NODES\n"
		   "                      [--slow-share PCT | --fast-free SIZE] [--interval TIME]\n"
		   "                      [--rate SIZE] [--cold N] [--stay N] [--pause MS] [--json]\n"
		   "       memmig-cli tier --off (-p PID | -d DOMAIN | --id ID) [--json]\n"
		   "       memmig-cli tier [--list] [--json]\n"
		   "       memmig-cli tier --show ID [--json]\n"
		   "memmigd keeps the process's hot memory on the fast nodes and its cold\n"
		   "memory on the slow ones, in 2 MiB units, interval after interval, until\n"
		   "the process ends or --off.  A unit written (soft-dirty bits) or read\n"
		   "(DAMON, where the kernel has it) in the last interval is hot; one\n"
		   "untouched for --cold intervals is cold.  Setting a tiered process again\n"
		   "changes its policy.\n"
		   "  --fast NODES       nodes for hot memory (numactl's syntax: 0-1,3)\n"
		   "  --slow NODES       nodes for cold memory, e.g. a CXL expander's\n"
		   "  --slow-share PCT   wanted share of the memory on the slow nodes\n"
		   "                     (default 70); or:\n"
		   "  --fast-free SIZE   keep SIZE free on the fast nodes instead\n"
		   "  --interval TIME    between decisions: 500ms, 2s (default 2s)\n"
		   "  --rate SIZE        at most SIZE moved per second (default: no limit)\n"
		   "  --cold N           intervals untouched before a demotion (default 2)\n"
		   "  --stay N           intervals a moved unit stays put (default 2)\n"
		   "  --pause MS         budget of one batch of moves (default %d)\n"
		   "  --show ID          one tiering, with its last intervals\n",
		MEMMIG_TIER_PAUSE_DEFAULT_MS);
}

enum tier_action { T_LIST, T_SET, T_OFF, T_SHOW };

struct tier_args {
	enum tier_action action;
	bool json;
	struct proto_request req;
};

/* "500ms", "2s", "2": milliseconds (a bare number is seconds). */
static int parse_time(const char *arg, unsigned int *ms)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || v <= 0)
		goto bad;
	if (!strcmp(end, "ms"))
		v /= 1000;
	else if (*end && strcmp(end, "s"))
		goto bad;
	if (v * 1000 < MEMMIG_TIER_INTERVAL_MIN_MS || v * 1000 > MEMMIG_TIER_INTERVAL_MAX_MS)
		goto bad;
	*ms = (unsigned int)(v * 1000 + 0.5);
	return 0;
bad:
	cli_opt_error("--interval", "\"%s\": a time from %d ms to %d s, like 500ms or 2s\n", arg,
		      MEMMIG_TIER_INTERVAL_MIN_MS, MEMMIG_TIER_INTERVAL_MAX_MS / 1000);
	return -1;
}

static int parse_nodes(const char *opt, const char *arg, int *out, unsigned int *n)
{
	int nodes[PROTO_MAX_NODE + 1];
	unsigned int count;

	if (cli_parse_nodeset(opt, arg, nodes, &count))
		return -1;
	if (count > PROTO_TIER_MAX_NODES) {
		cli_opt_error(opt, "at most %d nodes\n", PROTO_TIER_MAX_NODES);
		return -1;
	}
	memcpy(out, nodes, count * sizeof(int));
	*n = count;
	return 0;
}

static int parse_opt(struct tier_args *a, int c, const char *arg)
{
	struct proto_tier_request *t = &a->req.tier;
	size_t size;
	long v;

	switch (c) {
	case 'p':
		if (cli_parse_int("--pid", arg, 1, INT32_MAX, &v))
			return -1;
		a->req.pid = (int)v;
		return 0;
	case 'd':
		if (strlen(arg) >= sizeof(a->req.domain) || !arg[0]) {
			cli_opt_error("--domain", "1 to %zu bytes\n", sizeof(a->req.domain) - 1);
			return -1;
		}
		strcpy(a->req.domain, arg);
		return 0;
	case 'F':
		a->action = T_SET;
		return parse_nodes("--fast", arg, t->fast, &t->nfast);
	case 'S':
		a->action = T_SET;
		return parse_nodes("--slow", arg, t->slow, &t->nslow);
	case 'P':
		t->given |= PROTO_TIER_SHARE;
		if (cli_parse_int("--slow-share", arg, 1, 100, &v))
			return -1;
		t->slow_share = (unsigned int)v;
		return 0;
	case 'W':
		t->given |= PROTO_TIER_FREE;
		if (cli_parse_size("--fast-free", arg, &size))
			return -1;
		t->fast_free = size;
		return 0;
	case 'i':
		t->given |= PROTO_TIER_INTERVAL;
		return parse_time(arg, &t->interval_ms);
	case 'r':
		t->given |= PROTO_TIER_RATE;
		if (cli_parse_size("--rate", arg, &size))
			return -1;
		t->rate = size;
		return 0;
	case 'c':
		t->given |= PROTO_TIER_COLD;
		if (cli_parse_int("--cold", arg, 1, MEMMIG_TIER_COLD_MAX, &v))
			return -1;
		t->cold_intervals = (unsigned int)v;
		return 0;
	case 's':
		t->given |= PROTO_TIER_STAY;
		if (cli_parse_int("--stay", arg, 0, 1000, &v))
			return -1;
		t->min_stay = (unsigned int)v;
		return 0;
	case 'u':
		t->given |= PROTO_TIER_PAUSE;
		if (cli_parse_int("--pause", arg, 1, 10000, &v))
			return -1;
		t->pause_ms = (unsigned int)v;
		return 0;
	case 'I':
	case 'w':
		if (cli_parse_int(c == 'I' ? "--id" : "--show", arg, 1, INT32_MAX, &v))
			return -1;
		t->id = (uint64_t)v;
		if (c == 'w')
			a->action = T_SHOW;
		return 0;
	case 'o':
		a->action = T_OFF;
		return 0;
	case 'l':
		a->action = T_LIST;
		return 0;
	case 'j':
		a->json = true;
		return 0;
	}
	return -1;
}

static int tier_parse(int argc, char **argv, struct tier_args *a)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "domain", required_argument, NULL, 'd' },
		{ "fast", required_argument, NULL, 'F' },
		{ "slow", required_argument, NULL, 'S' },
		{ "slow-share", required_argument, NULL, 'P' },
		{ "fast-free", required_argument, NULL, 'W' },
		{ "interval", required_argument, NULL, 'i' },
		{ "rate", required_argument, NULL, 'r' },
		{ "cold", required_argument, NULL, 'c' },
		{ "stay", required_argument, NULL, 's' },
		{ "pause", required_argument, NULL, 'u' },
		{ "id", required_argument, NULL, 'I' },
		{ "show", required_argument, NULL, 'w' },
		{ "off", no_argument, NULL, 'o' },
		{ "list", no_argument, NULL, 'l' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *why = NULL;
	bool off = false;
	int c;

	memset(a, 0, sizeof(*a));
	while ((c = getopt_long(argc, argv, "p:d:h", opts, NULL)) != -1) {
		if (c == 'h') {
			tier_usage(stdout);
			return CLI_HELP_SHOWN;
		}
		off |= c == 'o';
		if (c == '?' || parse_opt(a, c, optarg) < 0) {
			if (c == '?')
				tier_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (off)
		a->action = T_OFF;
	if (optind < argc)
		why = "unexpected argument";
	else if (a->action == T_SET && (!a->req.tier.nfast || !a->req.tier.nslow))
		why = "--fast and --slow go together";
	else if (a->action == T_SET && !a->req.pid == !a->req.domain[0])
		why = "one of --pid and --domain is required";
	else if (a->action == T_OFF && !!a->req.pid + !!a->req.domain[0] + !!a->req.tier.id != 1)
		why = "--off takes one of --pid, --domain and --id";
	else if (a->action == T_LIST && (a->req.pid || a->req.domain[0] || a->req.tier.given))
		why = "a policy needs --fast and --slow";
	else if ((a->req.tier.given & PROTO_TIER_SHARE) && (a->req.tier.given & PROTO_TIER_FREE))
		why = "--slow-share or --fast-free, not both";
	if (why) {
		cli_error("tier: %s\n", why);
		tier_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	a->req.op = a->action == T_SET ? PROTO_OP_TIER_SET :
		    a->action == T_OFF ? PROTO_OP_TIER_CLEAR :
		    a->action == T_SHOW ? PROTO_OP_TIER : PROTO_OP_TIERS;
	return CLI_EXIT_OK;
}

static const char *nodes_str(struct json_object *policy, const char *key, char *buf, size_t len)
{
	struct json_object *a;
	int v[PROTO_TIER_MAX_NODES];
	size_t n = 0;

	if (json_object_object_get_ex(policy, key, &a) && json_object_is_type(a, json_type_array))
		for (; n < json_object_array_length(a) && n < PROTO_TIER_MAX_NODES; n++)
			v[n] = json_object_get_int(json_object_array_get_idx(a, n));
	return cli_list_format(v, n, buf, len);
}

static const char *target_str(struct json_object *t, char *buf, size_t len)
{
	const char *dom = cli_json_str(t, "domain", NULL);

	if (dom)
		snprintf(buf, len, "domain %s", dom);
	else
		snprintf(buf, len, "pid %lld", (long long)cli_json_int(t, "pid", 0));
	return buf;
}

static const struct cli_col tier_cols[] = {
	{ "id", 0, true }, { "state", 0, false }, { "target", 32, false },
	{ "fast", 12, false }, { "slow", 12, false }, { "ivals", 0, true },
	{ "on fast", 0, true }, { "on slow", 0, true }, { "slow", 0, true },
	{ "hot@f", 0, true }, { "promoted", 0, true }, { "demoted", 0, true },
	{ "bnc", 0, true }, { "cpu s", 0, true }, { "pause", 0, true },
	{ "result", 0, false },
};

/* A size column's cell. */
static void size_cell(struct cli_table *tb, struct json_object *t, const char *key)
{
	char b[32];

	cli_table_cell(tb, "%s", util_size_human((uint64_t)cli_json_int(t, key, 0), b, sizeof(b)));
}

static void add_row(struct cli_table *tb, struct json_object *t)
{
	struct json_object *p = NULL;
	char buf[64];

	json_object_object_get_ex(t, "policy", &p);
	cli_table_cell(tb, "%lld", (long long)cli_json_int(t, "id", 0));
	cli_table_cell(tb, "%s", cli_json_str(t, "state", "?"));
	cli_table_cell(tb, "%s", target_str(t, buf, sizeof(buf)));
	cli_table_cell(tb, "%s", nodes_str(p, "fast", buf, sizeof(buf)));
	cli_table_cell(tb, "%s", nodes_str(p, "slow", buf, sizeof(buf)));
	cli_table_cell(tb, "%lld", (long long)cli_json_int(t, "intervals", 0));
	size_cell(tb, t, "bytes_fast");
	size_cell(tb, t, "bytes_slow");
	cli_table_cell(tb, "%.1f%%", cli_json_double(t, "slow_pct", 0));
	cli_table_cell(tb, "%.1f%%", cli_json_double(t, "hot_fast_pct", 0));
	size_cell(tb, t, "promoted_bytes");
	size_cell(tb, t, "demoted_bytes");
	cli_table_cell(tb, "%lld", (long long)cli_json_int(t, "bounces", 0));
	cli_table_cell(tb, "%.2f", cli_json_double(t, "cpu_s", 0));
	cli_table_cell(tb, "%.1f", cli_json_double(t, "pause_max_s", 0) * 1e3);
	cli_table_cell(tb, "%s", cli_json_str(t, "result", "-"));
}

static void print_list(struct json_object *tiers)
{
	size_t n = json_object_array_length(tiers);
	struct cli_table *tb;

	if (!n) {
		printf("no tierings\n");
		return;
	}
	tb = cli_table_new(tier_cols, sizeof(tier_cols) / sizeof(tier_cols[0]));
	for (size_t i = 0; i < n; i++)
		add_row(tb, json_object_array_get_idx(tiers, i));
	cli_table_print(tb, stdout);
	printf("(hot@f: of the memory touched last interval, the share on the fast nodes;"
	       " pause: longest batch, ms)\n");
}

static void print_sources(struct json_object *t)
{
	struct json_object *src, *by;
	const char *damon = cli_json_str(t, "damon", NULL);

	printf("sources:    ");
	if (json_object_object_get_ex(t, "sources", &src))
		for (size_t i = 0; i < json_object_array_length(src); i++)
			printf("%s%s", i ? ", " : "",
			       json_object_get_string(json_object_array_get_idx(src, i)));
	printf("%s%s%s\n", damon ? " (" : "", damon ? damon : "", damon ? ")" : "");
	if (json_object_object_get_ex(t, "promoted_by", &by))
		printf("promoted:   %lld units seen written by soft-dirty, %lld accessed by DAMON\n",
		       (long long)cli_json_int(by, "soft-dirty", 0),
		       (long long)cli_json_int(by, "damon", 0));
}

static void print_one(struct json_object *t)
{
	struct json_object *h = NULL, *p = NULL;
	char target[48], fast[32], slow[32], a[16], b[16];

	json_object_object_get_ex(t, "policy", &p);
	printf("tiering %lld: %s, %s (%s)\n", (long long)cli_json_int(t, "id", 0),
	       target_str(t, target, sizeof(target)), cli_json_str(t, "state", "?"),
	       cli_json_str(t, "result", "running"));
	printf("policy:     fast %s, slow %s, ", nodes_str(p, "fast", fast, sizeof(fast)),
	       nodes_str(p, "slow", slow, sizeof(slow)));
	if (cli_json_int(p, "slow_share", 0))
		printf("%lld%% on slow", (long long)cli_json_int(p, "slow_share", 0));
	else
		printf("%s kept free on fast",
		       util_size_human((uint64_t)cli_json_int(p, "fast_free", 0), a, sizeof(a)));
	printf(", every %lld ms, cold after %lld, stay %lld, pause budget %lld ms\n",
	       (long long)cli_json_int(p, "interval_ms", 0),
	       (long long)cli_json_int(p, "cold_intervals", 0),
	       (long long)cli_json_int(p, "min_stay", 0), (long long)cli_json_int(p, "pause_ms", 0));
	print_sources(t);
	printf("now:        %s on fast, %s on slow (%.1f%%), hot set %.1f%% on fast\n",
	       util_size_human((uint64_t)cli_json_int(t, "bytes_fast", 0), a, sizeof(a)),
	       util_size_human((uint64_t)cli_json_int(t, "bytes_slow", 0), b, sizeof(b)),
	       cli_json_double(t, "slow_pct", 0), cli_json_double(t, "hot_fast_pct", 0));
	printf("moved:      %lld promotions (%s), %lld demotions (%s), %lld bounces (%.1f%%)\n",
	       (long long)cli_json_int(t, "promotions", 0),
	       util_size_human((uint64_t)cli_json_int(t, "promoted_bytes", 0), a, sizeof(a)),
	       (long long)cli_json_int(t, "demotions", 0),
	       util_size_human((uint64_t)cli_json_int(t, "demoted_bytes", 0), b, sizeof(b)),
	       (long long)cli_json_int(t, "bounces", 0), cli_json_double(t, "bounce_pct", 0));
	/* react_s is null until a change of the hot set was seen. */
	if (json_object_object_get_ex(t, "react_s", &h) && h)
		printf("reaction:   %.1f s at most from a change of the hot set to 90 %% of it "
		       "on fast\n", json_object_get_double(h));
	else
		printf("reaction:   no change of the hot set seen yet\n");
	printf("cost:       %.3f s CPU over %.1f s (%.2f %% of a CPU per GiB), longest batch "
	       "%.1f ms\n", cli_json_double(t, "cpu_s", 0), cli_json_double(t, "elapsed_s", 0),
	       cli_json_double(t, "cpu_pct_per_gib", 0),
	       cli_json_double(t, "pause_max_s", 0) * 1e3);
	h = NULL;
	if (!json_object_object_get_ex(t, "history", &h) || !json_object_array_length(h))
		return;
	printf("%8s %8s %10s %10s %10s %10s %9s\n", "interval", "t s", "on fast", "on slow",
	       "promoted", "demoted", "pause ms");
	for (size_t i = 0; i < json_object_array_length(h); i++) {
		struct json_object *s = json_object_array_get_idx(h, i);
		char c[16], d[16];

		printf("%8lld %8.1f %10s %10s %10s %10s %9.1f\n",
		       (long long)cli_json_int(s, "interval", 0), cli_json_double(s, "t_s", 0),
		       util_size_human((uint64_t)cli_json_int(s, "bytes_fast", 0), a, sizeof(a)),
		       util_size_human((uint64_t)cli_json_int(s, "bytes_slow", 0), b, sizeof(b)),
		       util_size_human((uint64_t)cli_json_int(s, "promoted_bytes", 0), c, sizeof(c)),
		       util_size_human((uint64_t)cli_json_int(s, "demoted_bytes", 0), d, sizeof(d)),
		       cli_json_double(s, "pause_s", 0) * 1e3);
	}
}

static int tier_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	struct json_object *reply, *v;
	char target[48];
	struct tier_args a;
	int rc = tier_parse(argc, argv, &a);

	(void)ctx;
	if (rc)
		return cli_exit_code(rc);
	rc = cli_daemon_call("tier", proto_request_to_json(&a.req), &reply);
	if (rc)
		return rc;
	if (!json_object_object_get_ex(reply, a.action == T_LIST ? "tiers" : "tier", &v)) {
		cli_error("tier: memmigd's reply has no %s\n", a.action == T_LIST ? "list" : "tiering");
		json_object_put(reply);
		return CLI_EXIT_FAIL;
	}
	if (a.json)
		cli_json_print(json_object_get(v));
	else if (a.action == T_LIST)
		print_list(v);
	else if (a.action == T_OFF)
		printf("tiering %lld of %s ends; what moved stays where it is\n",
		       (long long)cli_json_int(v, "id", 0), target_str(v, target, sizeof(target)));
	else
		print_one(v);
	json_object_put(reply);
	return CLI_EXIT_OK;
}

const struct cli_cmd cli_cmd_tier = {
	.name = "tier",
	.summary = "keep hot memory on fast nodes, cold on slow ones (memmigd)",
	.run = tier_run,
	.no_copy = true,
};
