/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What memmig-cli status JOB and cancel JOB share: one job of memmigd's,
 * shown as a table row and, once it ended, its report.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

static bool job_ended(struct json_object *job)
{
	const char *state = cli_json_str(job, "state", "?");

	return strcmp(state, "queued") && strcmp(state, "running");
}

/* One op on job id: its reply's job (a new reference), or an exit code. */
static int job_call(const char *cmd, const char *op, long id, struct json_object **job)
{
	struct json_object *req = cli_request(op), *reply;
	int rc;

	json_object_object_add(req, "job", json_object_new_int64(id));
	rc = cli_daemon_call(cmd, req, &reply);
	if (rc)
		return rc;
	json_object_object_get_ex(reply, "job", job);
	json_object_get(*job);
	json_object_put(reply);
	return CLI_EXIT_OK;
}

/*
 * A job that had ended before the cancel (looked at first: memmigd's
 * cancel of an ended job is not an error, and "cancelled" would not say
 * whether this cancel did it) cannot be cancelled: say so, and fail.
 */
static int cancel_ended(long id, struct json_object *job, bool json)
{
	char msg[160];

	snprintf(msg, sizeof(msg), "cancel: job %ld had already ended (%s, %s): "
		 "nothing to cancel", id, cli_json_str(job, "state", "?"),
		 cli_json_str(job, "result", "?"));
	cli_error("%s\n", msg);
	if (json)
		cli_json_print_error(EALREADY, msg, job);
	json_object_put(job);
	return CLI_EXIT_FAIL;
}

static void show(struct json_object *job)
{
	struct json_object *list = json_object_new_array(), *rep;

	json_object_array_add(list, json_object_get(job));
	cli_print_jobs(list);
	json_object_put(list);
	if (json_object_object_get_ex(job, "message", &rep) && rep)
		printf("%s\n", json_object_get_string(rep));
	if (json_object_object_get_ex(job, "report", &rep) &&
	    json_object_is_type(rep, json_type_object))
		cli_print_move_report(rep);
}

/* What a cancel did: a queued job ended at once, a running one stops
 * after the units it copies (memmigd never leaves one half moved). */
static void cancelled(long id, struct json_object *job)
{
	if (!strcmp(cli_json_str(job, "state", "?"), "cancelled"))
		printf("job %ld: cancelled\n", id);
	else
		printf("job %ld: cancel requested; it stops after its current units\n", id);
}

int cli_job_show(const struct job_cmd *jc, int argc, char **argv)
{
	bool cancel = !strcmp(jc->op, "cancel");
	struct json_object *job = NULL;
	char *end;
	bool json;
	long id;
	int rc = cli_parse_json_args(argc, argv, jc->usage, &json, "JOB");

	if (rc)
		return cli_exit_code(rc);
	errno = 0;
	id = strtol(argv[optind], &end, 10);
	if (errno || end == argv[optind] || *end || id < 1) {
		cli_error("%s: JOB: expected a job number, not '%s'\n", jc->name, argv[optind]);
		jc->usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (cancel) {
		rc = job_call(jc->name, "job", id, &job);
		if (rc)
			return rc;
		if (job_ended(job))
			return cancel_ended(id, job, json);
		json_object_put(job);
	}
	rc = job_call(jc->name, jc->op, id, &job);
	if (rc)
		return rc;
	/* It may have ended between the look and the cancel. */
	if (cancel && job_ended(job) && strcmp(cli_json_str(job, "state", "?"), "cancelled"))
		return cancel_ended(id, job, json);
	if (json)
		cli_json_print(json_object_get(job));
	else if (cancel)
		cancelled(id, job);
	else
		show(job);
	json_object_put(job);
	return CLI_EXIT_OK;
}
