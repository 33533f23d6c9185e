/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one logging path of memmig's programs and of libmemmig's default
 * logger: one line on stderr, "prog: level: message", or when stderr is
 * the journal (its dev:ino is $JOURNAL_STREAM) "<N>message" with the
 * syslog priority the journal reads and no prefix (the journal stamps
 * it).  Priorities are syslog's (LOG_ERR ... LOG_DEBUG).
 */
#ifndef MEMMIG_UTIL_LOG_H
#define MEMMIG_UTIL_LOG_H

#include <stdarg.h>
#include <syslog.h>

/* The program's name (default: its invocation name) and the most verbose
 * priority written (default: all; libmemmig filters its own). */
void util_log_setup(const char *prog, int max_prio);
/* who: a part that speaks for itself ("libmemmig"), or NULL for the
 * program.  A trailing newline in fmt is the line's own. */
void util_vlog(const char *who, int prio, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
void util_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct memmig_ctx;
/* libmemmig's messages down the same path: its default logger, and what
 * the programs give memmig_ctx_set_log_fn(). */
void util_log_memmig(struct memmig_ctx *ctx, void *userdata, int prio, const char *file,
		     int line, const char *fn, const char *fmt, va_list ap)
	__attribute__((format(printf, 7, 0)));

#endif
