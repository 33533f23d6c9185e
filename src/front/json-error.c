/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * With --json, a command that fails before it has an object of its own to
 * print prints the error object of docs/json.md on stdout, so that a
 * script reads one JSON value whatever happened; the prose stays on
 * stderr and the exit code does not change.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/*
 * getopt's own complaints ("unrecognized option '--x'") go to stderr
 * without cli_error(), from every command's parser: stderr passes through
 * a stream that keeps the first error line's words as the message.
 */
static char line[512];
static size_t line_len;

/* The words of an error line of ours or libmemmig's ("memmig-cli:
 * libmemmig: error: MEMMIG_COPY_NT_MIN=..."), else NULL. */
static const char *error_words(char *l)
{
	size_t n = strlen(program_invocation_short_name);

	if (strncmp(l, program_invocation_short_name, n))
		return NULL;
	l += n;
	if (!strncmp(l, ": error: ", 9))
		return l + 9;
	if (!strncmp(l, ": libmemmig: error: ", 20)) {
		/* "libmemmig: ...", without the "error: " between */
		memmove(l + 13, l + 20, strlen(l + 20) + 1);
		return l + 2;
	}
	return NULL;
}

static ssize_t stderr_write(void *cookie, const char *buf, size_t len)
{
	size_t done = 0;

	(void)cookie;
	while (done < len) {
		ssize_t n = write(STDERR_FILENO, buf + done, len - done);

		if (n < 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)n;
	}
	for (size_t i = 0; i < len; i++) {
		const char *words;

		if (buf[i] == '\r') {	/* a progress bar redrawn: not a line */
			line_len = 0;
			continue;
		}
		if (buf[i] != '\n') {
			if (line_len < sizeof(line) - 1)
				line[line_len++] = buf[i];
			continue;
		}
		line[line_len] = '\0';
		line_len = 0;
		words = error_words(line);
		if (words && !je.message[0])
			snprintf(je.message, sizeof(je.message), "%s", words);
	}
	return (ssize_t)len;
}

void cli_json_error_capture(void)
{
	static const cookie_io_functions_t io = { .write = stderr_write };
	FILE *f = fopencookie(NULL, "w", io);

	if (!f)
		return;	/* the message then says less, nothing worse */
	setvbuf(f, NULL, _IOLBF, 0);
	stderr = f;
}

/* A usage error may come before getopt reached --json: look for it. */
bool cli_json_in_argv(int argc, char **argv)
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
	if (rc == CLI_EXIT_OK || je.printed || !(je.wanted || cli_json_in_argv(argc, argv)))
		return rc;
	if (!je.message[0]) {
		const char *cmd = cli_global.cmd, *sep = cmd ? " " : "";

		/* The program's own name: memmig-bench shares this code. */
		snprintf(je.message, sizeof(je.message), "%s%sbad command line "
			 "(%s %s%s--help shows the usage)", cmd ? cmd : "", cmd ? ": " : "",
			 program_invocation_short_name, cmd ? cmd : "", sep);
	}
	cli_json_print_error(je.err ? je.err : default_errno(rc), je.message, NULL);
	return rc;
}
