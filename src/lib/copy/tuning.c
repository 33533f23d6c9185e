/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Copy thresholds beyond the seed defaults: a calibration file measured on
 * this CPU by "memmig-cli bench copy --calibrate", then the environment.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/copy/arch/arch.h"
#include "lib/copy/copy-private.h"
#include "lib/copy/policy.h"
#include "util/size.h"

/* Thresholds beyond this are typos, not tuning. */
#define TUNING_SIZE_MAX (1ULL << 40)

/* What a key's value is: a size, one kind of primitive, or a name of
 * the descriptor tables' own (desc_names). */
enum key_kind { KIND_SIZE, KIND_NT_PRIM, KIND_VEC_PRIM, KIND_DESC_STORE,
		KIND_DESC_PATH };

static const struct key {
	const char *file_key;
	const char *env;
	enum key_kind kind;
	size_t off;		/* in struct memmig_tuning */
} keys[] = {
	{ "movsb_min", "MEMMIG_COPY_MOVSB_MIN", KIND_SIZE,
	  offsetof(struct memmig_tuning, movsb_min) },
	{ "movsq_min", "MEMMIG_COPY_MOVSQ_MIN", KIND_SIZE,
	  offsetof(struct memmig_tuning, movsq_min) },
	{ "nt_min", "MEMMIG_COPY_NT_MIN", KIND_SIZE,
	  offsetof(struct memmig_tuning, nt_min) },
	{ "nt_prim", "MEMMIG_COPY_NT_PRIM", KIND_NT_PRIM,
	  offsetof(struct memmig_tuning, nt_prim) },
	{ "vec_max", "MEMMIG_COPY_VEC_MAX", KIND_SIZE,
	  offsetof(struct memmig_tuning, vec_max) },
	{ "vec_prim", "MEMMIG_COPY_VEC_PRIM", KIND_VEC_PRIM,
	  offsetof(struct memmig_tuning, vec_prim) },
	{ "nt_cold_min", "MEMMIG_COPY_NT_COLD_MIN", KIND_SIZE,
	  offsetof(struct memmig_tuning, nt_cold_min) },
	{ "vec_wide_min", "MEMMIG_COPY_VEC_WIDE_MIN", KIND_SIZE,
	  offsetof(struct memmig_tuning, vec_wide_min) },
	{ "vec_wide_prim", "MEMMIG_COPY_VEC_WIDE_PRIM", KIND_VEC_PRIM,
	  offsetof(struct memmig_tuning, vec_wide_prim) },
	{ "desc_store", "MEMMIG_DESC_STORE", KIND_DESC_STORE,
	  offsetof(struct memmig_tuning, desc_store) },
	{ "desc_path", "MEMMIG_DESC_PATH", KIND_DESC_PATH,
	  offsetof(struct memmig_tuning, desc_slow) },
	{ "pmem_nt_min", "MEMMIG_COPY_PMEM_NT_MIN", KIND_SIZE,
	  offsetof(struct memmig_tuning, pmem_nt_min) },
	{ "nt_prefetch", "MEMMIG_COPY_NT_PREFETCH", KIND_SIZE,
	  offsetof(struct memmig_tuning, nt_prefetch) },
	{ "desc_probe_min", "MEMMIG_DESC_PROBE_MIN", KIND_SIZE,
	  offsetof(struct memmig_tuning, desc_probe_min) },
	{ "nt_block", "MEMMIG_COPY_NT_BLOCK", KIND_SIZE,
	  offsetof(struct memmig_tuning, nt_block) },
};
#define K_COUNT (sizeof(keys) / sizeof(keys[0]))

static const char *const kind_wants[] = {
	[KIND_SIZE] = "size up to 1T, or never",
	[KIND_NT_PRIM] = "non-temporal primitive name",
	[KIND_VEC_PRIM] = "vector primitive name (sse2, avx2, avx512)",
	[KIND_DESC_STORE] = "descriptor store kind (nt, temporal)",
	[KIND_DESC_PATH] = "descriptor init path (template, slow)",
};

/* The values of the descriptor keys, by kind: enum memmig_desc_store,
 * memmig_tuning.desc_slow. */
static const struct desc_name {
	enum key_kind kind;
	int value;
	const char *name;
} desc_names[] = {
	{ KIND_DESC_STORE, MEMMIG_DESC_STORE_NT, "nt" },
	{ KIND_DESC_STORE, MEMMIG_DESC_STORE_TEMPORAL, "temporal" },
	{ KIND_DESC_PATH, 0, "template" },
	{ KIND_DESC_PATH, 1, "slow" },
};
#define D_COUNT (sizeof(desc_names) / sizeof(desc_names[0]))

static const char *desc_name(enum key_kind kind, int value)
{
	for (size_t i = 0; i < D_COUNT; i++)
		if (desc_names[i].kind == kind && desc_names[i].value == value)
			return desc_names[i].name;
	return NULL;
}

static int desc_parse(enum key_kind kind, const char *name)
{
	for (size_t i = 0; i < D_COUNT; i++)
		if (desc_names[i].kind == kind && !strcmp(desc_names[i].name, name))
			return desc_names[i].value;
	return -EINVAL;
}

static size_t *key_size(struct memmig_tuning *t, const struct key *k)
{
	return (size_t *)((char *)t + k->off);
}

static int *key_prim(struct memmig_tuning *t, const struct key *k)
{
	return (int *)((char *)t + k->off);
}

/* Whether an int key's value is one of its kind. */
static bool prim_of_kind(int prim, enum key_kind kind)
{
	if (kind == KIND_NT_PRIM)
		return memmig_policy_is_nt(prim);
	if (kind == KIND_VEC_PRIM)
		return memmig_policy_is_vec(prim);
	return desc_name(kind, prim) != NULL;
}

static const char *int_key_name(enum key_kind kind, int v)
{
	return kind == KIND_NT_PRIM || kind == KIND_VEC_PRIM ?
	       memmig_prim_name(v) : desc_name(kind, v);
}

/* *t read into *n over this CPU's defaults: a caller built before the
 * later fields were added leaves them at what they would be. */
static int tuning_in(struct memmig_ctx *ctx, struct memmig_tuning *n,
		     const struct memmig_tuning *t)
{
	memmig_tuning_default(&ctx->cpu, n);
	return memmig_struct_in(n, sizeof(*n), t);
}

/* Sets one key of *t from text; -EINVAL or -ERANGE leave it unchanged. */
static int tuning_set_key(struct memmig_tuning *t, const struct key *k,
			  const char *val)
{
	size_t v;
	int rc;

	if (k->kind != KIND_SIZE) {
		rc = k->kind == KIND_NT_PRIM || k->kind == KIND_VEC_PRIM ?
		     memmig_prim_parse(val) : desc_parse(k->kind, val);
		if (rc < 0 || !prim_of_kind(rc, k->kind))
			return -EINVAL;
		*key_prim(t, k) = rc;
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
	*key_size(t, k) = v;
	return 0;
}

int memmig_tuning_from_env(struct memmig_ctx *ctx, struct memmig_tuning *t)
{
	struct memmig_tuning n = { .sz = sizeof(n) };
	int rc;

	if (!ctx || tuning_in(ctx, &n, t) < 0)
		return -EINVAL;
	for (size_t k = 0; k < K_COUNT; k++) {
		const char *val = getenv(keys[k].env);

		if (!val)
			continue;
		rc = tuning_set_key(&n, &keys[k], val);
		if (rc < 0) {
			err(ctx, "%s=\"%s\": not a %s\n", keys[k].env, val,
			    kind_wants[keys[k].kind]);
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
			     struct memmig_tuning *t, char *cpu, size_t cpu_len)
{
	char *eq = strchr(line, '='), *key, *val;

	if (!eq) {
		err(ctx, "%s:%u: expected key = value\n", path, lineno);
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(line);
	val = trim(eq + 1);
	if (!strcmp(key, "cpu")) {
		snprintf(cpu, cpu_len, "%s", val);
		return 0;
	}
	for (size_t k = 0; k < K_COUNT; k++) {
		if (strcmp(key, keys[k].file_key))
			continue;
		if (tuning_set_key(t, &keys[k], val) < 0) {
			err(ctx, "%s:%u: bad value for %s\n", path, lineno, key);
			return -EINVAL;
		}
		return 0;
	}
	err(ctx, "%s:%u: unknown key %s\n", path, lineno, key);
	return -EINVAL;
}

/* A file of another CPU is said at prio: an error when the user named
 * it, a warning for the optional system file. */
static int tuning_load(struct memmig_ctx *ctx, const char *path,
		       struct memmig_tuning *t, int prio)
{
	struct memmig_tuning n = { .sz = sizeof(n) };
	char line[256], cpu[64] = "", want[64];
	unsigned int lineno = 0;
	int rc = 0;
	FILE *f;

	if (!ctx || !path || tuning_in(ctx, &n, t) < 0)
		return -EINVAL;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *s = trim(line);

		lineno++;
		if (!*s || *s == '#')
			continue;
		rc = tuning_parse_line(ctx, path, lineno, s, &n, cpu, sizeof(cpu));
		if (rc < 0)
			break;
	}
	fclose(f);
	if (rc < 0)
		return rc;
	cpu_id(&ctx->cpu, want, sizeof(want));
	if (strcmp(cpu, want)) {
		memmig_log_cond(ctx, prio, "calibration file %s was measured on CPU %s, "
				"this is %s: run memmig-cli bench copy --calibrate\n",
				path, *cpu ? cpu : "(none named)", want);
		return -ESTALE;
	}
	return memmig_struct_out(t, &n, sizeof(n));
}

int memmig_tuning_load(struct memmig_ctx *ctx, const char *path,
		       struct memmig_tuning *t)
{
	return tuning_load(ctx, path, t, LOG_ERR);
}

/* What the parser accepts: sizes up to 1T or never, primitives of their
 * kind. */
static bool memmig_tuning_valid(const struct memmig_tuning *t)
{
	struct memmig_tuning c = *t;

	for (size_t k = 0; k < K_COUNT; k++) {
		size_t v;

		if (keys[k].kind != KIND_SIZE) {
			if (!prim_of_kind(*key_prim(&c, &keys[k]), keys[k].kind))
				return false;
			continue;
		}
		v = *key_size(&c, &keys[k]);
		if (v > TUNING_SIZE_MAX && v != MEMMIG_SIZE_NEVER)
			return false;
	}
	return true;
}

static void fprint_key(FILE *f, struct memmig_tuning *t, const struct key *k)
{
	size_t v;

	if (k->kind != KIND_SIZE) {
		fprintf(f, "%s = %s\n", k->file_key, int_key_name(k->kind, *key_prim(t, k)));
		return;
	}
	v = *key_size(t, k);
	if (v == MEMMIG_SIZE_NEVER)
		fprintf(f, "%s = never\n", k->file_key);
	else
		fprintf(f, "%s = %zu\n", k->file_key, v);
}

int memmig_tuning_save(struct memmig_ctx *ctx, const char *path,
		       const struct memmig_tuning *t)
{
	struct memmig_tuning n = { .sz = sizeof(n) };
	char id[64], tmp[PATH_MAX];
	FILE *f;
	int fd, rc;

	if (!ctx || !path || tuning_in(ctx, &n, t) < 0 ||
	    !memmig_tuning_valid(&n))
		return -EINVAL;
	/* Write a temporary file and rename it: a reader never sees half.  Its
	 * name is random and the file new (mkostemp: O_EXCL), so that nothing
	 * planted in the directory beforehand -- a FIFO, a link -- is opened. */
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fchmod(fd, 0644) ? NULL : fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		close(fd);
		unlink(tmp);
		return rc;
	}
	cpu_id(&ctx->cpu, id, sizeof(id));
	fprintf(f, "# memmig copy calibration, written by memmig-cli bench copy --calibrate\n"
		   "cpu = %s\n", id);
	for (size_t k = 0; k < K_COUNT; k++)
		fprint_key(f, &n, &keys[k]);
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
		rc = tuning_load(ctx, path, &t, LOG_ERR);
		if (rc < 0) {
			/* Another CPU's file is said in full already. */
			if (rc != -ESTALE)
				err(ctx, "MEMMIG_CALIBRATION=%s: %s\n", path, strerror(-rc));
			rc = memmig_ctx_bad(ctx, flags, "the calibration file", rc);
			if (rc < 0)
				return rc;
		}
	} else {
		/* The system file is optional and may predate a CPU change. */
		rc = tuning_load(ctx, memmig_tuning_default_path(), &t, LOG_WARNING);
		if (rc < 0 && rc != -ENOENT && rc != -ESTALE)
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
