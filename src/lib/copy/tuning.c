/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Copy thresholds beyond the seed defaults: a calibration file measured on
 * this CPU by "memmig-cli bench copy --calibrate", then the environment.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/copy/arch/arch.h"
#include "lib/copy/copy-private.h"
#include "lib/copy/policy.h"
#include "util/size.h"

/* Thresholds beyond this are typos, not tuning. */
#define TUNING_SIZE_MAX (1ULL << 40)

enum key { K_MOVSB_MIN, K_MOVSQ_MIN, K_NT_MIN, K_NT_PRIM, K_COUNT };

static const struct {
	const char *file_key;
	const char *env;
} keys[K_COUNT] = {
	[K_MOVSB_MIN] = { "movsb_min", "MEMMIG_COPY_MOVSB_MIN" },
	[K_MOVSQ_MIN] = { "movsq_min", "MEMMIG_COPY_MOVSQ_MIN" },
	[K_NT_MIN] = { "nt_min", "MEMMIG_COPY_NT_MIN" },
	[K_NT_PRIM] = { "nt_prim", "MEMMIG_COPY_NT_PRIM" },
};

/* Sets one key of *t from text; -EINVAL or -ERANGE leave it unchanged. */
static int tuning_set_key(struct memmig_tuning *t, enum key k, const char *val)
{
	size_t v;
	int rc;

	if (k == K_NT_PRIM) {
		rc = memmig_prim_parse(val);
		if (rc < 0 || !memmig_prim_is_nt(rc))
			return -EINVAL;
		t->nt_prim = rc;
		return 0;
	}
	if (!strcmp(val, "never")) {
		v = MEMMIG_SIZE_NEVER;
	} else {
		rc = util_size_parse(val, &v);
		if (rc < 0)
			return rc;
		if (v > TUNING_SIZE_MAX)
			return -ERANGE;
	}
	if (k == K_MOVSB_MIN)
		t->movsb_min = v;
	else if (k == K_MOVSQ_MIN)
		t->movsq_min = v;
	else
		t->nt_min = v;
	return 0;
}

int memmig_tuning_from_env(struct memmig_ctx *ctx, struct memmig_tuning *t)
{
	struct memmig_tuning n = { .sz = sizeof(n) };
	int rc;

	if (!ctx || memmig_struct_in(&n, sizeof(n), t) < 0)
		return -EINVAL;
	for (int k = 0; k < K_COUNT; k++) {
		const char *val = getenv(keys[k].env);

		if (!val)
			continue;
		rc = tuning_set_key(&n, k, val);
		if (rc < 0) {
			err(ctx, "%s=\"%s\": not a %s\n", keys[k].env, val,
			    k == K_NT_PRIM ? "non-temporal primitive name" :
					     "size up to 1T, or never");
			return -EINVAL;	/* too big (-ERANGE) too */
		}
	}
	return memmig_struct_out(t, &n, sizeof(n));
}

/* The identity a calibration belongs to. */
static void cpu_id(const struct memmig_cpu_info *cpu, char *buf, size_t len)
{
	snprintf(buf, len, "%s %u %u", cpu->vendor[0] ? cpu->vendor : "unknown",
		 cpu->family, cpu->model);
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
			 e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static int tuning_parse_line(struct memmig_ctx *ctx, const char *path,
			     unsigned int lineno, char *line,
			     struct memmig_tuning *t, bool *cpu_ok)
{
	char *eq = strchr(line, '='), *key, *val, want[64];

	if (!eq) {
		err(ctx, "%s:%u: expected key = value\n", path, lineno);
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(line);
	val = trim(eq + 1);
	if (!strcmp(key, "cpu")) {
		cpu_id(&ctx->cpu, want, sizeof(want));
		*cpu_ok = !strcmp(val, want);
		return 0;
	}
	for (int k = 0; k < K_COUNT; k++) {
		if (strcmp(key, keys[k].file_key))
			continue;
		if (tuning_set_key(t, k, val) < 0) {
			err(ctx, "%s:%u: bad value for %s\n", path, lineno, key);
			return -EINVAL;
		}
		return 0;
	}
	err(ctx, "%s:%u: unknown key %s\n", path, lineno, key);
	return -EINVAL;
}

int memmig_tuning_load(struct memmig_ctx *ctx, const char *path,
		       struct memmig_tuning *t)
{
	struct memmig_tuning n = { .sz = sizeof(n) };
	char line[256];
	unsigned int lineno = 0;
	bool cpu_ok = false;
	int rc = 0;
	FILE *f;

	if (!ctx || !path || memmig_struct_in(&n, sizeof(n), t) < 0)
		return -EINVAL;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *s = trim(line);

		lineno++;
		if (!*s || *s == '#')
			continue;
		rc = tuning_parse_line(ctx, path, lineno, s, &n, &cpu_ok);
		if (rc < 0)
			break;
	}
	fclose(f);
	if (rc < 0)
		return rc;
	if (!cpu_ok) {
		warn(ctx, "%s: calibrated on another CPU model\n", path);
		return -ESTALE;
	}
	return memmig_struct_out(t, &n, sizeof(n));
}

static void fprint_size(FILE *f, const char *key, size_t v)
{
	if (v == MEMMIG_SIZE_NEVER)
		fprintf(f, "%s = never\n", key);
	else
		fprintf(f, "%s = %zu\n", key, v);
}

/* What the parser accepts: sizes up to 1T or never, an NT primitive. */
static bool memmig_tuning_valid(const struct memmig_tuning *t)
{
	const size_t v[] = { t->movsb_min, t->movsq_min, t->nt_min };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] > TUNING_SIZE_MAX && v[i] != MEMMIG_SIZE_NEVER)
			return false;
	return memmig_prim_is_nt(t->nt_prim);
}

int memmig_tuning_save(struct memmig_ctx *ctx, const char *path,
		       const struct memmig_tuning *t)
{
	struct memmig_tuning n = { .sz = sizeof(n) };
	char id[64], tmp[PATH_MAX];
	FILE *f;
	int rc;

	if (!ctx || !path || memmig_struct_in(&n, sizeof(n), t) < 0 ||
	    !memmig_tuning_valid(&n))
		return -EINVAL;
	/* Write a temporary file and rename it: a reader never sees half. */
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	cpu_id(&ctx->cpu, id, sizeof(id));
	fprintf(f, "# memmig copy calibration, written by memmig-cli bench copy --calibrate\n"
		   "cpu = %s\n", id);
	fprint_size(f, keys[K_MOVSB_MIN].file_key, n.movsb_min);
	fprint_size(f, keys[K_MOVSQ_MIN].file_key, n.movsq_min);
	fprint_size(f, keys[K_NT_MIN].file_key, n.nt_min);
	fprintf(f, "%s = %s\n", keys[K_NT_PRIM].file_key, memmig_prim_name(n.nt_prim));
	rc = ferror(f) ? -EIO : 0;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

const char *memmig_tuning_default_path(void)
{
	return MEMMIG_CALIBRATION_PATH;
}

int memmig_ctx_get_tuning(struct memmig_ctx *ctx, struct memmig_tuning *out)
{
	if (!ctx)
		return -EINVAL;
	return memmig_struct_out(out, &ctx->tuning, sizeof(ctx->tuning));
}

int memmig_ctx_set_tuning(struct memmig_ctx *ctx, const struct memmig_tuning *t)
{
	struct memmig_tuning n;

	if (!ctx)
		return -EINVAL;
	n = ctx->tuning;
	if (memmig_struct_in(&n, sizeof(n), t) < 0 || !memmig_tuning_valid(&n))
		return -EINVAL;
	memmig_ctx_apply_tuning(ctx, &n);
	return 0;
}

/* Calibration first, then the environment, so that an override always wins. */
int memmig_tuning_init(struct memmig_ctx *ctx, unsigned int flags)
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
			rc = memmig_ctx_bad(ctx, flags, "the calibration file", rc);
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
		rc = memmig_ctx_bad(ctx, flags, "the MEMMIG_COPY_* environment", rc);
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
