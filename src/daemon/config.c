/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration file: "key = value" lines with the long options'
 * names, '#' comments and blank lines.  Bounded: a line of 1 KiB at most,
 * 1000 lines at most; anything else is an error that names file and line,
 * since a setting silently ignored is worse than a daemon that does not
 * start.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/memmigd.h"

#define CONFIG_MAX_LINE		1024
#define CONFIG_MAX_LINES	1000

static char *trim(char *s)
{
	char *e;

	s += strspn(s, " \t");
	e = s + strlen(s);
	while (e > s && strchr(" \t\r\n", e[-1]))
		*--e = 0;
	return s;
}

static int config_line(struct memmigd_opts *o, char *line, char *err, size_t errlen)
{
	char *s = trim(line), *eq, *key, *value;

	if (!*s || *s == '#')
		return 0;
	eq = strchr(s, '=');
	if (!eq) {
		snprintf(err, errlen, "expected 'key = value'");
		return -EINVAL;
	}
	*eq = 0;
	key = trim(s);
	value = trim(eq + 1);
	if (!strcmp(key, "config") || !strcmp(key, "foreground")) {
		snprintf(err, errlen, "'%s' is only a command-line option", key);
		return -EINVAL;
	}
	return opts_set(o, key, value, err, errlen);
}

int config_load(struct memmigd_opts *o, const char *path, bool missing_ok,
		char *err, size_t errlen)
{
	char line[CONFIG_MAX_LINE + 2], why[256];
	unsigned int n = 0;
	int rc = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		if (errno == ENOENT && missing_ok)
			return 0;
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		if (++n > CONFIG_MAX_LINES) {
			snprintf(why, sizeof(why), "more than %d lines", CONFIG_MAX_LINES);
			rc = -EFBIG;
		} else if (!strchr(line, '\n') && !feof(f)) {
			snprintf(why, sizeof(why), "line longer than %d bytes", CONFIG_MAX_LINE);
			rc = -EINVAL;
		} else {
			rc = config_line(o, line, why, sizeof(why));
		}
		if (rc)
			snprintf(err, errlen, "%s:%u: %s", path, n, why);
	}
	if (!rc && ferror(f)) {
		rc = -EIO;
		snprintf(err, errlen, "%s: read error", path);
	}
	fclose(f);
	return rc;
}
