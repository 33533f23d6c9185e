// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * memmigd logs to stderr, one line per message.  Under systemd
 * (JOURNAL_STREAM set) each line starts with "<N>", the syslog priority
 * the journal reads from it; on a terminal it is spelled out instead.
 */
#include <stdio.h>
#include <stdlib.h>

#include "daemon/memmigd.h"

static int max_prio = LOG_LVL_INFO;
static bool journal;

void log_setup(int verbose)
{
	max_prio = verbose ? LOG_LVL_DEBUG : LOG_LVL_INFO;
	journal = getenv("JOURNAL_STREAM") != NULL;
}

static void vlog(int prio, const char *fmt, va_list ap)
{
	static const char *const names[] = {
		[LOG_LVL_ERR] = "error", [LOG_LVL_WARN] = "warning",
		[5] = "notice", [LOG_LVL_INFO] = "info", [LOG_LVL_DEBUG] = "debug",
	};
	char line[1024];

	if (prio > max_prio)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	/* One fprintf per line: stderr is unbuffered and threads log too. */
	if (journal)
		fprintf(stderr, "<%d>%s\n", prio, line);
	else
		fprintf(stderr, "memmigd: %s: %s\n",
			prio >= 0 && prio <= LOG_LVL_DEBUG && names[prio] ? names[prio] : "log", line);
}

void mlog(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(prio, fmt, ap);
	va_end(ap);
}

void log_memmig(struct memmig_ctx *ctx, void *userdata, int priority,
		const char *file, int line, const char *fn, const char *format,
		va_list args)
{
	vlog(priority, format, args);
}
