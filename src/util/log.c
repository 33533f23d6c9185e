/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Log lines on stderr, for a terminal or for the journal. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

static const char *prog;
static int max_prio = LOG_DEBUG;
static int journal = -1;	/* read from the environment once */

/*
 * systemd sets JOURNAL_STREAM to "DEV:INO" of the stream it connected to
 * the journal; stderr is that stream only when its own device and inode
 * are those (a service's child with stderr redirected to a file inherits
 * the variable but not the stream).
 */
static bool stderr_is_journal(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	int n = 0;

	if (!v || sscanf(v, "%llu:%llu%n", &dev, &ino, &n) != 2 || v[n] ||
	    fstat(STDERR_FILENO, &st))
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static bool to_journal(void)
{
	int j = __atomic_load_n(&journal, __ATOMIC_RELAXED);

	if (j < 0) {
		j = stderr_is_journal();
		__atomic_store_n(&journal, j, __ATOMIC_RELAXED);
	}
	return j;
}

void util_log_setup(const char *name, int max)
{
	prog = name;
	max_prio = max;
}

void util_vlog(const char *who, int prio, const char *fmt, va_list ap)
{
	static const char *const names[] = {
		"emergency", "alert", "critical", "error", "warning", "notice", "info", "debug",
	};
	char line[1024];
	size_t n;

	if (prio > max_prio)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	/* One fprintf per line: stderr is unbuffered and threads log too. */
	if (to_journal())
		fprintf(stderr, "<%d>%s%s%s\n", prio, who ? who : "", who ? ": " : "", line);
	else
		fprintf(stderr, "%s: %s%s%s: %s\n", prog ? prog : program_invocation_short_name,
			who ? who : "", who ? ": " : "",
			prio >= 0 && prio <= LOG_DEBUG ? names[prio] : "log", line);
}

void util_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	util_vlog(NULL, prio, fmt, ap);
	va_end(ap);
}

void util_log_memmig(struct memmig_ctx *ctx, void *userdata, int prio, const char *file,
		     int line, const char *fn, const char *fmt, va_list ap)
{
	util_vlog("libmemmig", prio, fmt, ap);
}
