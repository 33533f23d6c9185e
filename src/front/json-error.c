/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * With --json, a command that fails before it has an object of its own to
 * print prints the error object of docs/json.md on stdout, so that a
 * script reads one JSON value whatever happened; the prose stays on
 * stderr and the exit code does not change.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "front/front.h"

static struct {
	bool wanted;		/* the command parsed --json */
	bool printed;		/* it printed a JSON value of its own */
	int err;		/* the first error's errno, 0 if none said */
	char message[512];	/* the first error's words */
} je;

void cli_json_error_errno(int err)
{
	if (!je.err)
		je.err = err < 0 ? -err : err;
}

void cli_json_error_note(const char *format, va_list ap)
{
	size_t n;

	if (je.message[0])
		return;
	vsnprintf(je.message, sizeof(je.message), format, ap);
	n = strlen(je.message);
	while (n && je.message[n - 1] == '\n')
		je.message[--n] = '\0';
}

void cli_json_error_want(void)
{
	je.wanted = true;
}

void cli_json_printed(void)
{
	je.printed = true;
}

/* A usage error may come before getopt reached --json: look for it. */
static bool json_in_argv(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			return true;
	return false;
}

/* The errno an exit code stands for when nothing said one. */
static int default_errno(int rc)
{
	switch (rc) {
	case CLI_EXIT_USAGE:
		return EINVAL;
	case CLI_EXIT_NO_DAEMON:
		return ECONNREFUSED;
	default:
		return EIO;
	}
}

void cli_json_print_error(int err, const char *message, struct json_object *job)
{
	struct json_object *o = proto_reply_error(NULL, err, "%s", message);

	if (job)
		json_object_object_add(o, "job", json_object_get(job));
	cli_json_print(o);
}

int cli_json_error_flush(int rc, int argc, char **argv)
{
	if (rc == CLI_EXIT_OK || je.printed || !(je.wanted || json_in_argv(argc, argv)))
		return rc;
	/* getopt's own complaints ("unrecognized option") bypass cli_error. */
	if (!je.message[0])
		snprintf(je.message, sizeof(je.message), "%s: bad command line "
			 "(memmig-cli %s --help shows the usage)", argv[0], argv[0]);
	cli_json_print_error(je.err ? je.err : default_errno(rc), je.message, NULL);
	return rc;
}
