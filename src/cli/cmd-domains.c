/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli domains: the libvirt domains memmigd knows, and the
 * register/unregister calls of the libvirt hook (contrib/libvirt/hooks).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/table.h"

static void domains_usage(FILE *f)
{
	fprintf(f,
		"Usage: memmig-cli domains [list] [--json]\n"
		"       memmig-cli domains register --name NAME --pid PID [--uuid UUID]\n"
		"                                   [--nodeset SET]\n"
		"       memmig-cli domains unregister --name NAME\n"
		"Lists the libvirt domains memmigd knows (from the hook or libvirtd),\n"
		"or registers one (what the libvirt hook does when a domain starts:\n"
		"root only).\n");
}

struct dom_args {
	const char *name, *uuid, *nodeset;
	long pid;
	bool json;
};

static int parse(int argc, char **argv, struct dom_args *a)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "uuid", required_argument, NULL, 'u' },
		{ "pid", required_argument, NULL, 'p' },
		{ "nodeset", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	while ((c = getopt_long(argc, argv, "n:u:p:s:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			a->name = optarg;
			break;
		case 'u':
			a->uuid = optarg;
			break;
		case 's':
			a->nodeset = optarg;
			break;
		case 'p':
			if (cli_parse_int("--pid", optarg, 1, INT32_MAX, &a->pid) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'j':
			a->json = true;
			break;
		case 'h':
			domains_usage(stdout);
			return CLI_HELP_SHOWN;
		default:
			domains_usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	return CLI_EXIT_OK;
}

static const struct cli_col dom_cols[] = {
	{ "name", 32, false }, { "uuid", 0, false }, { "pid", 0, true },
	{ "nodeset", 16, false }, { "placement", 0, true }, { "source", 0, false },
};

static void print_domains(struct json_object *list)
{
	size_t n = json_object_array_length(list);
	struct cli_table *t;

	if (!n) {
		printf("no domains\n");
		return;
	}
	t = cli_table_new(dom_cols, sizeof(dom_cols) / sizeof(dom_cols[0]));
	for (size_t i = 0; i < n; i++) {
		struct json_object *d = json_object_array_get_idx(list, i);
		int64_t node = cli_json_int(d, "placement", -1);

		cli_table_cell(t, "%s", cli_json_str(d, "name", "?"));
		cli_table_cell(t, "%s", cli_json_str(d, "uuid", "-"));
		cli_table_cell(t, "%lld", (long long)cli_json_int(d, "pid", 0));
		cli_table_cell(t, "%s", cli_json_str(d, "nodeset", "-"));
		if (node >= 0)
			cli_table_cell(t, "%lld", (long long)node);
		else
			cli_table_cell(t, "-");
		cli_table_cell(t, "%s", cli_json_str(d, "source", "-"));
	}
	cli_table_print(t, stdout);
}

static int list(const struct dom_args *a)
{
	struct json_object *reply, *doms;
	int rc = cli_daemon_call("domains", cli_request("domains"), &reply);

	if (rc)
		return rc;
	if (!json_object_object_get_ex(reply, "domains", &doms) ||
	    !json_object_is_type(doms, json_type_array)) {
		cli_error("domains: memmigd's reply has no domain list\n");
		rc = CLI_EXIT_FAIL;
	} else if (a->json) {
		cli_json_print(json_object_get(doms));
	} else {
		print_domains(doms);
	}
	json_object_put(reply);
	return rc;
}

/* register and unregister: the hook's calls, quiet unless they fail. */
static int change(const char *op, const struct dom_args *a)
{
	struct proto_request req = { .op = PROTO_OP_UNREGISTER };
	struct json_object *reply;
	int rc;

	if (!a->name || (!strcmp(op, "register") && !a->pid)) {
		cli_error("domains %s: --name%s required\n", op,
			  strcmp(op, "register") ? " is" : " and --pid are");
		return CLI_EXIT_USAGE;
	}
	if (strlen(a->name) >= sizeof(req.domain) ||
	    (a->uuid && strlen(a->uuid) >= sizeof(req.uuid)) ||
	    (a->nodeset && strlen(a->nodeset) >= sizeof(req.nodeset))) {
		cli_error("domains %s: a name, uuid or nodeset is too long\n", op);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(op, "register")) {
		req.op = PROTO_OP_REGISTER;
		req.pid = (int)a->pid;
		if (a->uuid)
			strcpy(req.uuid, a->uuid);
		if (a->nodeset)
			strcpy(req.nodeset, a->nodeset);
	}
	strcpy(req.domain, a->name);
	rc = cli_daemon_call("domains", proto_request_to_json(&req), &reply);
	json_object_put(reply);
	return rc;
}

static int domains_run(struct memmig_ctx *ctx, int argc, char **argv)
{
	const char *sub = argc > 1 && argv[1][0] != '-' ? argv[1] : "list";
	struct dom_args a;
	int rc;

	(void)ctx;
	if (argc > 1 && argv[1][0] != '-') {
		argv[1] = argv[0];	/* the sub-command's options follow */
		argc--;
		argv++;
	}
	rc = parse(argc, argv, &a);
	if (rc)
		return cli_exit_code(rc);
	if (optind < argc) {
		cli_error("domains: unexpected argument '%s'\n", argv[optind]);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(sub, "list"))
		return list(&a);
	if (!strcmp(sub, "register") || !strcmp(sub, "unregister"))
		return change(sub, &a);
	cli_error("domains: list, register or unregister, not '%s'\n", sub);
	return CLI_EXIT_USAGE;
}

const struct cli_cmd cli_cmd_domains = {
	.name = "domains",
	.summary = "libvirt domains memmigd knows; the hook's register calls",
	.run = domains_run,
	.no_copy = true,
};
