/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The context: one refcounted object that owns everything else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/memmig-private.h"
#include "lib/copy/policy.h"
#include "lib/migrate/migrate-private.h"
#include "util/log.h"

/* A bad value: an error, or with MEMMIG_CTX_LENIENT a warning. */
static int ctx_bad(struct memmig_ctx *ctx, unsigned int flags, const char *what, int rc)
{
	if (!(flags & MEMMIG_CTX_LENIENT))
		return rc;
	warn(ctx, "%s ignored (MEMMIG_CTX_LENIENT)\n", what);
	return 0;
}

/* Calibration first, then the environment, so that an override always wins. */
static int ctx_tuning_init(struct memmig_ctx *ctx, unsigned int flags)
{
	const char *path = flags & MEMMIG_CTX_NO_ENV ? NULL : getenv("MEMMIG_CALIBRATION");
	struct memmig_tuning t = { .sz = sizeof(t) };
	int rc;

	memmig_tuning_default(&ctx->cpu, &t);
	if (flags & MEMMIG_CTX_NO_ENV)
		goto apply;
	if (path && *path) {
		rc = memmig_tuning_load(ctx, path, &t);
		if (rc < 0) {
			err(ctx, "MEMMIG_CALIBRATION=%s: %s\n", path,
			    rc == -ESTALE ? "made on another CPU model" :
					    strerror(-rc));
			rc = ctx_bad(ctx, flags, "the calibration file", rc);
			if (rc < 0)
				return rc;
		}
	} else {
		/* The system file is optional and may predate a CPU change. */
		rc = memmig_tuning_load(ctx, memmig_tuning_default_path(), &t);
		if (rc < 0 && rc != -ENOENT)
			warn(ctx, "ignoring %s (%d)\n",
			     memmig_tuning_default_path(), rc);
	}
	rc = memmig_tuning_from_env(ctx, &t);
	if (rc < 0) {
		rc = ctx_bad(ctx, flags, "the MEMMIG_COPY_* environment", rc);
		if (rc < 0)
			return rc;
	}
apply:
	memmig_ctx_apply_tuning(ctx, &t);
	return 0;
}

void memmig_ctx_apply_tuning(struct memmig_ctx *ctx,
			     const struct memmig_tuning *t)
{
	size_t below = t->nt_min;

	ctx->tuning = *t;
	if (t->movsb_min < below && (ctx->cpu.features & (MEMMIG_CPU_ERMS | MEMMIG_CPU_FSRM)))
		below = t->movsb_min;
	if (t->movsq_min < below && (ctx->cpu.features & MEMMIG_CPU_REP_GOOD))
		below = t->movsq_min;
	ctx->small_below = below;
	ctx->small_prim = memmig_policy(&ctx->cpu, t, 0, 0);
}

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
	rc = ctx_tuning_init(ctx, flags);
	if (!rc && !(flags & MEMMIG_CTX_NO_ENV)) {
		rc = memmig_fault_from_env(ctx);
		if (rc < 0)
			rc = ctx_bad(ctx, flags, "MEMMIG_FAULT", rc);
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
