/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Logging through the context's callback; the default one writes stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/core/memmig-private.h"

void memmig_log(struct memmig_ctx *ctx, int priority, const char *file,
		int line, const char *fn, const char *format, ...)
{
	va_list args;

	if (!ctx->log_fn)
		return;
	va_start(args, format);
	ctx->log_fn(ctx, ctx->log_data, priority, file, line, fn, format, args);
	va_end(args);
}

int memmig_log_priority_parse(const char *s)
{
	static const struct {
		const char *name;
		int prio;
	} names[] = {
		{ "err", LOG_ERR },	  { "error", LOG_ERR },
		{ "warning", LOG_WARNING }, { "warn", LOG_WARNING },
		{ "notice", LOG_NOTICE }, { "info", LOG_INFO },
		{ "debug", LOG_DEBUG },
	};
	char *end;
	long v;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i].name))
			return names[i].prio;
	v = strtol(s, &end, 10);
	if (end == s || *end || v < LOG_EMERG || v > LOG_DEBUG)
		return -1;
	return (int)v;
}

void memmig_ctx_set_log_fn(struct memmig_ctx *ctx, memmig_log_fn fn,
			   void *userdata)
{
	if (!ctx)
		return;
	ctx->log_fn = fn;
	ctx->log_data = userdata;
}

void memmig_ctx_set_log_priority(struct memmig_ctx *ctx, int priority)
{
	if (ctx)
		ctx->log_priority = priority;
}

int memmig_ctx_get_log_priority(struct memmig_ctx *ctx)
{
	return ctx ? ctx->log_priority : -EINVAL;
}
