/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The context: one refcounted object that owns everything else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/memmig-private.h"
#include "lib/copy/copy-private.h"
#include "util/log.h"

int memmig_ctx_new(struct memmig_ctx **out)
{
	return memmig_ctx_new_flags(out, 0);
}

int memmig_ctx_new_flags(struct memmig_ctx **out, unsigned int flags)
{
	struct memmig_ctx *ctx;
	const char *env;
	int rc;

	if (!out || (flags & ~(MEMMIG_CTX_NO_ENV | MEMMIG_CTX_LENIENT)))
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->refcount = 1;
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->log_fn = util_log_memmig;
	ctx->log_priority = LOG_ERR;
	env = flags & MEMMIG_CTX_NO_ENV ? NULL : getenv("MEMMIG_LOG");
	if (env && *env) {
		int prio = memmig_log_priority_parse(env);

		if (prio >= 0)
			ctx->log_priority = prio;
	}

	ctx->cpu.sz = sizeof(ctx->cpu);
	memmig_cpu_detect(&ctx->cpu);
	ctx->flush_kind = memmig_flush_kind_for(&ctx->cpu);
	for (int p = 0; p < MEMMIG_PRIM_COUNT; p++)
		if (memmig_prim_supported(&ctx->cpu, p))
			ctx->prims_ok |= 1u << p;
	rc = memmig_tuning_init(ctx, flags);
	if (!rc && !(flags & MEMMIG_CTX_NO_ENV)) {
		rc = memmig_fault_from_env(ctx);
		if (rc < 0)
			rc = memmig_ctx_bad(ctx, flags, "MEMMIG_FAULT", rc);
	}
	if (rc < 0) {
		pthread_mutex_destroy(&ctx->lock);
		free(ctx);
		return rc;
	}
	dbg(ctx, "cpu %s %u/%u/%u features %#llx llc %zu\n", ctx->cpu.vendor,
	    ctx->cpu.family, ctx->cpu.model, ctx->cpu.stepping,
	    (unsigned long long)ctx->cpu.features, ctx->cpu.llc_size);
	*out = ctx;
	return 0;
}

struct memmig_ctx *memmig_ctx_ref(struct memmig_ctx *ctx)
{
	if (ctx)
		__atomic_add_fetch(&ctx->refcount, 1, __ATOMIC_RELAXED);
	return ctx;
}

void memmig_ctx_unref(struct memmig_ctx *ctx)
{
	if (ctx && __atomic_sub_fetch(&ctx->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
		memmig_reserve_free_all(ctx);
		pthread_mutex_destroy(&ctx->lock);
		free(ctx);
	}
}
