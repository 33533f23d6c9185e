/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What memmig-cli status JOB and cancel JOB share: one job of memmigd's,
 * shown as a table row and, once it ended, its report.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

int cli_job_show(const struct job_cmd *jc, int argc, char **argv)
{
	struct json_object *req, *reply, *job, *rep, *list;
	bool json;
	long id;
	int rc = cli_parse_json_args(argc, argv, jc->usage, &json, 1);

	if (rc)
		return cli_exit_code(rc);
	if (cli_parse_int(jc->name, argv[optind], 1, INT64_MAX, &id) < 0)
		return CLI_EXIT_USAGE;
	req = cli_request(jc->op);
	json_object_object_add(req, "job", json_object_new_int64(id));
	rc = cli_daemon_call(jc->name, req, &reply);
	if (rc)
		return rc;
	json_object_object_get_ex(reply, "job", &job);
	if (json) {
		cli_json_print(json_object_get(job));
	} else {
		list = json_object_new_array();
		json_object_array_add(list, json_object_get(job));
		cli_print_jobs(list);
		json_object_put(list);
		if (json_object_object_get_ex(job, "message", &rep) && rep)
			printf("%s\n", json_object_get_string(rep));
		if (json_object_object_get_ex(job, "report", &rep) &&
		    json_object_is_type(rep, json_type_object))
			cli_print_move_report(rep);
	}
	json_object_put(reply);
	return CLI_EXIT_OK;
}

