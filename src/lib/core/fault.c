/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fault injection, so that failure paths are tested, not hoped for. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/memmig-private.h"

static const char *const point_names[MEMMIG_FAULT_COUNT] = {
	[MEMMIG_FAULT_DEST_ALLOC] = "dest_alloc",
	[MEMMIG_FAULT_MOVE_PAGES] = "move_pages",
	[MEMMIG_FAULT_MOVE_PAGES_AFTER] = "move_pages_after",
	[MEMMIG_FAULT_MOVE_PAGES_BUSY] = "move_pages_busy",
};

static const struct {
	const char *name;
	int err;
} err_names[] = {
	{ "ENOMEM", ENOMEM }, { "EIO", EIO }, { "EBUSY", EBUSY },
	{ "EACCES", EACCES }, { "EFAULT", EFAULT }, { "EAGAIN", EAGAIN },
};

int memmig_ctx_set_fault(struct memmig_ctx *ctx, int point, unsigned int nth,
			 int err, int sticky)
{
	if (!ctx || point < 0 || point >= MEMMIG_FAULT_COUNT || err <= 0)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ctx->faults[point] = (struct memmig_fault){
		.nth = nth, .err = err, .sticky = sticky,
	};
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int memmig_fault_hit(struct memmig_ctx *ctx, int point)
{
	struct memmig_fault *f = &ctx->faults[point];
	int rc = 0;

	/* Unarmed points cost one load, not a lock. */
	if (!__atomic_load_n(&f->nth, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&ctx->lock);
	if (f->nth) {
		f->count++;
		if (f->count == f->nth || (f->sticky && f->count > f->nth))
			rc = -f->err;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (rc)
		dbg(ctx, "injected %s at %s event %u\n", strerror(-rc),
		    point_names[point], f->count);
	return rc;
}

/*
 * MEMMIG_SWAP_DELAY=MS: a live migration's swap costs MS milliseconds more
 * a GiB, spinning as a slow page-table move holds its CPU.  The hosts seen
 * cost 0.3 to 7 ms a GiB; a test shows what a host ten times slower does.
 */
static int swap_delay_from_env(struct memmig_ctx *ctx)
{
	const char *env = getenv("MEMMIG_SWAP_DELAY");
	char *end;
	double ms;

	if (!env || !*env)
		return 0;
	ms = strtod(env, &end);
	if (*end || !(ms >= 0 && ms <= 10000)) {
		err(ctx, "MEMMIG_SWAP_DELAY=\"%s\": expected milliseconds a GiB, 0 to 10000\n",
		    env);
		return -EINVAL;
	}
	ctx->swap_delay_s_per_byte = ms * 1e-3 / (1ULL << 30);
	return 0;
}

void memmig_fault_swap_delay(struct memmig_ctx *ctx, uint64_t len)
{
	double until;

	if (!ctx->swap_delay_s_per_byte)
		return;
	until = memmig_now() + ctx->swap_delay_s_per_byte * len;
	while (memmig_now() < until)
		;
}

/*
 * MEMMIG_MOVE_HOLD=PATH: a whole-process move, once running, waits before
 * its first region for as long as PATH exists (or until it is cancelled):
 * a test holds a job running -- its node's slot taken, the process's next
 * job queued -- for exactly as long as it needs, and lets it go by
 * removing the file.  MEMMIG_PLAN_HOLD=PATH: the same at the end of a
 * move's plan, where memmigd has not yet answered the move's request.
 */
static int hold_from_env(struct memmig_ctx *ctx, const char *name, char *path, size_t len)
{
	const char *env = getenv(name);

	if (!env || !*env)
		return 0;
	if (env[0] != '/' || strlen(env) >= len) {
		err(ctx, "%s=\"%s\": expected an absolute path\n", name, env);
		return -EINVAL;
	}
	strcpy(path, env);
	return 0;
}

void memmig_fault_hold(struct memmig_ctx *ctx, const char *path, bool (*stop)(void *arg),
		       void *arg)
{
	bool said = false;

	while (path[0] && !access(path, F_OK) && !stop(arg)) {
		if (!said)
			dbg(ctx, "move held while %s exists\n", path);
		said = true;
		usleep(10000);
	}
}

/* MEMMIG_FAULT=point:nth:ERRNO[:sticky] */
int memmig_fault_from_env(struct memmig_ctx *ctx)
{
	const char *env = getenv("MEMMIG_FAULT");
	char point[32], errname[16], sticky[16] = "";
	unsigned int nth;
	int p = -1, err = 0;

	if (swap_delay_from_env(ctx) ||
	    hold_from_env(ctx, "MEMMIG_MOVE_HOLD", ctx->move_hold, sizeof(ctx->move_hold)) ||
	    hold_from_env(ctx, "MEMMIG_PLAN_HOLD", ctx->plan_hold, sizeof(ctx->plan_hold)))
		return -EINVAL;
	if (!env || !*env)
		return 0;
	if (sscanf(env, "%31[^:]:%u:%15[^:]:%15s", point, &nth, errname, sticky) < 3)
		goto bad;
	for (int i = 0; i < MEMMIG_FAULT_COUNT; i++)
		if (!strcmp(point, point_names[i]))
			p = i;
	for (size_t i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++)
		if (!strcmp(errname, err_names[i].name))
			err = err_names[i].err;
	if (p < 0 || !err || !nth || (*sticky && strcmp(sticky, "sticky")))
		goto bad;
	return memmig_ctx_set_fault(ctx, p, nth, err, *sticky != '\0');
bad:
	err(ctx, "MEMMIG_FAULT=\"%s\": expected dest_alloc|move_pages|move_pages_after:N:ENOMEM|EIO|"
		 "EBUSY|EACCES|EFAULT|EAGAIN[:sticky]\n", env);
	return -EINVAL;
}
