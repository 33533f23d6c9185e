/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The API contract of libmemmig: argument checks of the copy entry points
 * (nothing written when one fails), primitive names, calibration files,
 * environment overrides, sized structs, reference counting and logging.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "memmig.h"
#include "cunit-main.h"

#define BUF 16384
#define FILL 0x3c

static const char *const env_vars[] = {
	"MEMMIG_COPY_MOVSB_MIN", "MEMMIG_COPY_MOVSQ_MIN", "MEMMIG_COPY_NT_MIN",
	"MEMMIG_COPY_NT_PRIM",	 "MEMMIG_CALIBRATION",	  "MEMMIG_LOG",
	"MEMMIG_COPY_VEC_MAX",	 "MEMMIG_COPY_VEC_PRIM",  "MEMMIG_COPY_NT_COLD_MIN",
	"MEMMIG_COPY_VEC_WIDE_MIN", "MEMMIG_COPY_VEC_WIDE_PRIM",
	"MEMMIG_DESC_STORE",	 "MEMMIG_DESC_PATH",
	"MEMMIG_COPY_PMEM_NT_MIN", "MEMMIG_COPY_NT_PREFETCH",
	"MEMMIG_DESC_PROBE_MIN", "MEMMIG_COPY_NT_BLOCK",
};

static struct memmig_ctx *ctx;
static struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
/* The context's tuning without any environment override. */
static struct memmig_tuning base = { .sz = sizeof(base) };
static char tmpdir[PATH_MAX];
static char cpu_line[256];	/* "cpu = ..." as memmig_tuning_save() writes it */
static unsigned char *buf, *snap;

static void unset_env(void)
{
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
}

static void tmp_path(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", tmpdir, name);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -errno : 0;
}

/* Writes a calibration file named name in tmpdir; returns its path. */
static const char *calib(const char *name, const char *text)
{
	static char path[PATH_MAX + 64];

	tmp_path(path, sizeof(path), name);
	CU_ASSERT_EQUAL(write_file(path, text), 0);
	return path;
}

static int suite_init(void)
{
	const char *t = getenv("TMPDIR");
	char path[PATH_MAX + 64], line[256];
	struct memmig_tuning tt;
	FILE *f;

	unset_env();	/* start from a known environment */
	snprintf(tmpdir, sizeof(tmpdir), "%s/memmig-test-api.XXXXXX",
		 t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	if (memmig_ctx_new(&ctx) < 0 || memmig_ctx_get_cpu(ctx, &cpu) < 0 ||
	    memmig_ctx_get_tuning(ctx, &base) < 0)
		return 1;
	buf = malloc(BUF);
	snap = malloc(BUF);
	if (!buf || !snap)
		return 1;
	/* The identity line of this CPU, from a file the library wrote. */
	tt = base;
	tmp_path(path, sizeof(path), "identity");
	if (memmig_tuning_save(ctx, path, &tt) < 0 || !(f = fopen(path, "re")))
		return 1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "cpu", 3) && strchr(line, '='))
			snprintf(cpu_line, sizeof(cpu_line), "%s", line);
	fclose(f);
	unlink(path);
	return cpu_line[0] ? 0 : 1;
}

static int suite_cleanup(void)
{
	static const char *const files[] = {
		"saved", "saved.tmp", "bad", "stale", "nocpu", "partial",
		"comments", "notsaved", "calib", "calib-stale",
	};
	char path[PATH_MAX + 64];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		tmp_path(path, sizeof(path), files[i]);
		unlink(path);
	}
	if (tmpdir[0] && rmdir(tmpdir))
		perror(tmpdir);
	unset_env();
	memmig_ctx_unref(ctx);
	ctx = NULL;
	free(buf);
	free(snap);
	buf = snap = NULL;
	return 0;
}

/* Before each test: a known buffer and a snapshot of it. */
static void test_setup(void)
{
	memset(buf, FILL, BUF);
	for (size_t i = 0; i < BUF / 2; i++)
		buf[i] = (unsigned char)(i * 7 + 1);
	memcpy(snap, buf, BUF);
}

static void test_teardown(void)
{
	unset_env();
}

/* ------------------------------------------------------------------ */
/* Copy entry points.                                                  */

enum { VIA_RUN = MEMMIG_PRIM_COUNT, VIA_UNITS, VIA_COUNT };

static int via_copy(int via, void *dst, const void *src, size_t len,
		    unsigned int flags)
{
	if (via == VIA_RUN)
		return memmig_copy_run(ctx, dst, src, len, flags);
	if (via == VIA_UNITS)
		return memmig_copy_units(ctx, dst, src, len, flags);
	return memmig_copy_with(ctx, via, dst, src, len, flags);
}

static const char *via_name(int via)
{
	return via == VIA_RUN ? "copy_run" :
	       via == VIA_UNITS ? "copy_units" : memmig_prim_name(via);
}

static bool via_ok(int via)
{
	return via >= MEMMIG_PRIM_COUNT || memmig_prim_supported(&cpu, via);
}

#define EXPECT_RC(via, call, want)                                             \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_ != (want))                                             \
			CUNIT_FAILF("%s: %s = %d, want %d", via_name(via),     \
				    #call, rc_, (want));                       \
		else                                                           \
			CU_PASS(#call);                                        \
	} while (0)

#define EXPECT_UNTOUCHED(via, what)                                            \
	do {                                                                   \
		if (memcmp(buf, snap, BUF))                                    \
			CUNIT_FAILF("%s: %s wrote to the buffer",              \
				    via_name(via), what);                      \
	} while (0)

static void test_len_zero(void)
{
	void *top = (void *)(UINTPTR_MAX - 10);

	for (int v = 0; v < VIA_COUNT; v++) {
		if (!via_ok(v))
			continue;
		EXPECT_RC(v, via_copy(v, NULL, NULL, 0, 0), 0);
		EXPECT_RC(v, via_copy(v, buf, NULL, 0, 0), 0);
		EXPECT_RC(v, via_copy(v, NULL, buf, 0, 0), 0);
		EXPECT_RC(v, via_copy(v, buf, buf, 0, 0), 0);
		EXPECT_RC(v, via_copy(v, top, top, 0, 0), 0);
		EXPECT_RC(v, via_copy(v, NULL, NULL, 0, MEMMIG_COPY_PMEM), 0);
	}
	EXPECT_UNTOUCHED(VIA_RUN, "len 0");
}

static void test_null(void)
{
	static const size_t lens[] = { 1, 64, 4096 };

	for (int v = 0; v < VIA_COUNT; v++) {
		if (!via_ok(v))
			continue;
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			EXPECT_RC(v, via_copy(v, NULL, buf, lens[i], 0), -EINVAL);
			EXPECT_RC(v, via_copy(v, buf + BUF / 2, NULL, lens[i], 0),
				  -EINVAL);
			EXPECT_RC(v, via_copy(v, NULL, NULL, lens[i], 0), -EINVAL);
		}
	}
	EXPECT_UNTOUCHED(VIA_RUN, "NULL src");
	/* No context. */
	CU_ASSERT_EQUAL(memmig_copy_run(NULL, buf + 4096, buf, 64, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_copy_units(NULL, buf + 4096, buf, 64, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_copy_with(NULL, MEMMIG_PRIM_GENERIC, buf + 4096,
					 buf, 64, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_copy_query(NULL, 64, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_copy_flush(NULL, buf, 64), -EINVAL);
	CU_ASSERT_EQUAL(memmig_copy_flush(ctx, NULL, 64), -EINVAL);
	EXPECT_UNTOUCHED(VIA_RUN, "no context");
}

static void test_overlap(void)
{
	static const size_t lens[] = { 1, 2, 64, 256, 3000 };
	static const unsigned int flags[] = { 0, MEMMIG_COPY_NONTEMPORAL,
					      MEMMIG_COPY_PMEM };

	for (int v = 0; v < VIA_COUNT; v++) {
		if (!via_ok(v))
			continue;
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			size_t len = lens[i];
			unsigned char *s = buf + 4096;
			/* dst - src: equal, by one byte either way, by half,
			 * overlapping by only the last or the first byte. */
			const ptrdiff_t shift[] = { 0, 1, -1, (ptrdiff_t)len / 2,
						    -(ptrdiff_t)len / 2,
						    (ptrdiff_t)len - 1,
						    1 - (ptrdiff_t)len };

			for (size_t k = 0; k < sizeof(shift) / sizeof(shift[0]); k++) {
				if ((size_t)(shift[k] < 0 ? -shift[k] : shift[k]) >= len)
					continue;	/* adjacent: see below */
				for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++)
					if (via_copy(v, s + shift[k], s, len,
						     flags[f]) != -EINVAL)
						CUNIT_FAILF("%s: len %zu dst-src %td flags %#x "
							    "not -EINVAL", via_name(v),
							    len, shift[k], flags[f]);
			}
			EXPECT_UNTOUCHED(v, "overlapping copy");

			/* Adjacent buffers do not overlap. */
			EXPECT_RC(v, via_copy(v, s + len, s, len, 0), 0);
			CU_ASSERT_EQUAL(memcmp(s + len, snap + 4096, len), 0);
			EXPECT_RC(v, via_copy(v, s - len, s, len, 0), 0);
			CU_ASSERT_EQUAL(memcmp(s - len, snap + 4096, len), 0);
			memcpy(buf, snap, BUF);
		}
	}
}

static void test_wrap(void)
{
	void *top = (void *)(UINTPTR_MAX - 10);
	void *dst = buf + 4096;

	for (int v = 0; v < VIA_COUNT; v++) {
		if (!via_ok(v))
			continue;
		EXPECT_RC(v, via_copy(v, dst, top, 100, 0), -EOVERFLOW);
		EXPECT_RC(v, via_copy(v, top, buf, 100, 0), -EOVERFLOW);
		EXPECT_RC(v, via_copy(v, dst, buf, SIZE_MAX, 0), -EOVERFLOW);
		EXPECT_RC(v, via_copy(v, dst, buf, SIZE_MAX - 4096, 0),
			  -EOVERFLOW);
		EXPECT_RC(v, via_copy(v, dst, top, 100, MEMMIG_COPY_PMEM),
			  -EOVERFLOW);
		/* The pmem fast path checks lengths as the others do. */
		EXPECT_RC(v, via_copy(v, dst, buf, SIZE_MAX, MEMMIG_COPY_PMEM),
			  -EOVERFLOW);
		EXPECT_RC(v, via_copy(v, dst, buf, SIZE_MAX - 4096, MEMMIG_COPY_PMEM),
			  -EOVERFLOW);
	}
	EXPECT_UNTOUCHED(VIA_RUN, "wrapping copy");
	CU_ASSERT_EQUAL(memmig_copy_flush(ctx, top, 100), -EOVERFLOW);
}

static void test_bad_flags(void)
{
	/* Undefined bits, including the ones the library uses internally. */
	static const unsigned int unknown[] = { 1u << 6, 1u << 12, 1u << 24,
						3u << 24, 1u << 31, ~0u };
	/* Defined bits in combinations that make no sense. */
	static const unsigned int combos[] = {
		MEMMIG_COPY_NONTEMPORAL | MEMMIG_COPY_TEMPORAL,
		MEMMIG_COPY_NOFLUSH,
		MEMMIG_COPY_NOFLUSH | MEMMIG_COPY_NONTEMPORAL,
	};
	void *dst = buf + 4096;

	for (int v = 0; v < VIA_COUNT; v++) {
		if (!via_ok(v))
			continue;
		for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
			EXPECT_RC(v, via_copy(v, dst, buf, 100, unknown[i]), -EINVAL);
			EXPECT_RC(v, via_copy(v, dst, buf, 100,
					      MEMMIG_COPY_PMEM | unknown[i]),
				  -EINVAL);
		}
	}
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		CU_ASSERT_EQUAL(memmig_copy_query(ctx, 100, unknown[i]), -EINVAL);
	for (size_t i = 0; i < sizeof(combos) / sizeof(combos[0]); i++) {
		EXPECT_RC(VIA_RUN, via_copy(VIA_RUN, dst, buf, 100, combos[i]),
			  -EINVAL);
		EXPECT_RC(VIA_UNITS, via_copy(VIA_UNITS, dst, buf, 100, combos[i]),
			  -EINVAL);
		CU_ASSERT_EQUAL(memmig_copy_query(ctx, 100, combos[i]), -EINVAL);
	}
	EXPECT_UNTOUCHED(VIA_RUN, "copy with bad flags");
}

static void test_copy_with_prims(void)
{
	static const int bad[] = { -1, MEMMIG_PRIM_COUNT, MEMMIG_PRIM_COUNT + 1,
				   1000, INT_MIN, INT_MAX };
	void *dst = buf + 4096;
	int lacking = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(memmig_copy_with(ctx, bad[i], dst, buf, 100, 0),
				-EINVAL);
		CU_ASSERT_EQUAL(memmig_prim_supported(&cpu, bad[i]), 0);
	}
	EXPECT_UNTOUCHED(VIA_RUN, "invalid primitive");
	for (int p = 0; p < MEMMIG_PRIM_COUNT; p++) {
		if (memmig_prim_supported(&cpu, p)) {
			memcpy(buf, snap, BUF);
			EXPECT_RC(p, memmig_copy_with(ctx, p, dst, buf, 1000, 0), 0);
			CU_ASSERT_EQUAL(memcmp(dst, snap, 1000), 0);
			continue;
		}
		lacking++;
		memcpy(buf, snap, BUF);
		EXPECT_RC(p, memmig_copy_with(ctx, p, dst, buf, 1000, 0),
			  -EOPNOTSUPP);
		EXPECT_UNTOUCHED(p, "unsupported primitive");
	}
	/* The portable primitive runs everywhere. */
	CU_ASSERT(memmig_prim_supported(&cpu, MEMMIG_PRIM_GENERIC));
	if (!lacking)
		printf("(this CPU runs every primitive: no -EOPNOTSUPP case) ");
}

static void test_query(void)
{
	static const size_t lens[] = { 0, 1, 16, 168, 255, 256, 511, 512, 1024,
				       2047, 2048, 4096, 65536, 1u << 20,
				       2u << 20, 1u << 30, SIZE_MAX };
	static const unsigned int flags[] = {
		0, MEMMIG_COPY_NONTEMPORAL, MEMMIG_COPY_TEMPORAL,
		MEMMIG_COPY_NODRAIN, MEMMIG_COPY_PMEM,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH,
		MEMMIG_COPY_PMEM | MEMMIG_COPY_TEMPORAL,
		MEMMIG_COPY_NONTEMPORAL | MEMMIG_COPY_TEMPORAL,
		MEMMIG_COPY_NOFLUSH, 1u << 9,
	};
	struct memmig_tuning t = { .sz = sizeof(t) }, custom;

	for (int round = 0; round < 2; round++) {
		CU_ASSERT_EQUAL_FATAL(memmig_ctx_get_tuning(ctx, &t), 0);
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
			for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
				size_t len = lens[i];
				int q = memmig_copy_query(ctx, len, flags[f]);
				int p = memmig_policy_choose(&cpu, &t, len, flags[f]);

				if (q != p)
					CUNIT_FAILF("round %d len %zu flags %#x: query %d, "
						    "policy %d", round, len, flags[f], q, p);
				else if (q >= 0 && !memmig_prim_supported(&cpu, q))
					CUNIT_FAILF("len %zu flags %#x: query gives %s, "
						    "which this CPU lacks", len,
						    flags[f], memmig_prim_name(q));
				else
					CU_PASS("query");
			}
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			CU_ASSERT_EQUAL(memmig_copy_query(ctx, lens[i],
							  MEMMIG_COPY_NONTEMPORAL) >= 0 &&
						memmig_prim_is_nt(memmig_copy_query(
							ctx, lens[i], MEMMIG_COPY_NONTEMPORAL)),
					!!(cpu.features & MEMMIG_CPU_SSE2));
			CU_ASSERT_FALSE(memmig_prim_is_nt(
				memmig_copy_query(ctx, lens[i], MEMMIG_COPY_TEMPORAL)));
		}
		/* Then the same with other thresholds in the context. */
		custom = t;
		custom.movsb_min = 300;
		custom.movsq_min = 200;
		custom.nt_min = 70000;
		custom.nt_prim = MEMMIG_PRIM_NT_MOVNTI;
		CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &custom), 0);
	}
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &base), 0);
}

static void test_prim_names(void)
{
	static const char *const bad[] = { "", "bogus", "nt-avx", "nt-avx5120",
					   "movq2", " movq", "generic " };

	for (int p = 0; p < MEMMIG_PRIM_COUNT; p++) {
		const char *name = memmig_prim_name(p);

		CU_ASSERT_PTR_NOT_NULL_FATAL(name);
		CU_ASSERT_EQUAL(memmig_prim_parse(name), p);
		for (int k = 0; k < p; k++)
			CU_ASSERT_STRING_NOT_EQUAL(name, memmig_prim_name(k));
	}
	CU_ASSERT_PTR_NULL(memmig_prim_name(-1));
	CU_ASSERT_PTR_NULL(memmig_prim_name(MEMMIG_PRIM_COUNT));
	CU_ASSERT_EQUAL(memmig_prim_parse(NULL), -EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(memmig_prim_parse(bad[i]), -EINVAL);
}

/* ------------------------------------------------------------------ */
/* Calibration files and the environment.                              */

#define SENTINEL_TUNING                                                        \
	{ .sz = sizeof(struct memmig_tuning), .movsb_min = 11, .movsq_min = 22, \
	  .nt_min = 33, .nt_prim = MEMMIG_PRIM_NT_AVX2, .vec_max = 44,         \
	  .vec_prim = MEMMIG_PRIM_VEC_AVX2, .nt_cold_min = 55,                 \
	  .vec_wide_min = 66, .vec_wide_prim = MEMMIG_PRIM_VEC_AVX512,       \
	  .desc_store = MEMMIG_DESC_STORE_TEMPORAL, .desc_slow = 1,          \
	  .pmem_nt_min = 77, .nt_prefetch = 88, .desc_probe_min = 99,        \
	  .nt_block = 111 }

static bool tuning_eq(const struct memmig_tuning *a,
		      const struct memmig_tuning *b)
{
	return a->movsb_min == b->movsb_min && a->movsq_min == b->movsq_min &&
	       a->nt_min == b->nt_min && a->nt_prim == b->nt_prim &&
	       a->vec_max == b->vec_max && a->vec_prim == b->vec_prim &&
	       a->nt_cold_min == b->nt_cold_min &&
	       a->vec_wide_min == b->vec_wide_min &&
	       a->vec_wide_prim == b->vec_wide_prim &&
	       a->desc_store == b->desc_store && a->desc_slow == b->desc_slow &&
	       a->pmem_nt_min == b->pmem_nt_min &&
	       a->nt_prefetch == b->nt_prefetch &&
	       a->desc_probe_min == b->desc_probe_min &&
	       a->nt_block == b->nt_block;
}

static void test_save_load(void)
{
	struct memmig_tuning t = { .sz = sizeof(t), .movsb_min = 3000,
				   .movsq_min = 700, .nt_min = 12345678,
				   .nt_prim = MEMMIG_PRIM_NT_MOVNTI, .vec_max = 6000,
				   .vec_prim = MEMMIG_PRIM_VEC_SSE2,
				   .nt_cold_min = 1024, .vec_wide_min = 4096,
				   .vec_wide_prim = MEMMIG_PRIM_VEC_AVX2,
				   .pmem_nt_min = 512, .nt_prefetch = 4096,
				   .nt_block = 1024 };
	struct memmig_tuning u = SENTINEL_TUNING;
	char path[PATH_MAX + 64], tmp[PATH_MAX + 64];

	tmp_path(path, sizeof(path), "saved");
	tmp_path(tmp, sizeof(tmp), "saved.tmp");
	CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), 0);
	CU_ASSERT_EQUAL(access(path, R_OK), 0);
	CU_ASSERT_EQUAL(access(tmp, F_OK), -1);	/* no temporary left */
	CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &u), 0);
	CU_ASSERT(tuning_eq(&u, &t));
	CU_ASSERT_EQUAL(u.sz, sizeof(u));

	/* Again over an existing file, with the other NT primitives. */
	for (int p = MEMMIG_PRIM_NT_MOVNTI; p <= MEMMIG_PRIM_NT_AVX512; p++) {
		struct memmig_tuning v = SENTINEL_TUNING;

		t.nt_prim = p;
		t.nt_min += 64;
		CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), 0);
		CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &v), 0);
		CU_ASSERT(tuning_eq(&v, &t));
	}
	/* And the vector primitives. */
	for (int p = MEMMIG_PRIM_VEC_SSE2; p <= MEMMIG_PRIM_VEC_AVX512; p++) {
		struct memmig_tuning v = SENTINEL_TUNING;

		t.vec_prim = p;
		t.vec_wide_prim = p;
		t.vec_max += 16;
		CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), 0);
		CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &v), 0);
		CU_ASSERT(tuning_eq(&v, &t));
	}

	/* The descriptor keys, every combination. */
	for (int k = 0; k < 4; k++) {
		struct memmig_tuning v = SENTINEL_TUNING;

		t.desc_store = k & 1 ? MEMMIG_DESC_STORE_TEMPORAL : MEMMIG_DESC_STORE_NT;
		t.desc_slow = k >> 1;
		CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), 0);
		CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &v), 0);
		CU_ASSERT(tuning_eq(&v, &t));
	}
	t.desc_store = MEMMIG_DESC_STORE_NT;
	t.desc_slow = 0;

	/* "never" round-trips; a size the loader would refuse is not saved. */
	{
		struct memmig_tuning v = SENTINEL_TUNING;

		t.movsq_min = MEMMIG_SIZE_NEVER;
		t.nt_min = MEMMIG_SIZE_NEVER;
		CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), 0);
		CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &v), 0);
		CU_ASSERT(tuning_eq(&v, &t));
		t.nt_min = (1ULL << 40) + 1;
		CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), -EINVAL);
		CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &v), 0);
		CU_ASSERT_EQUAL(v.nt_min, MEMMIG_SIZE_NEVER);
		t.nt_min = 12345678;
	}

	/* A temporal primitive is no NT choice, nor a string one a vector
	 * choice: nothing written. */
	t.nt_prim = MEMMIG_PRIM_REP_MOVSB;
	tmp_path(path, sizeof(path), "notsaved");
	CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), -EINVAL);
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	t.nt_prim = MEMMIG_PRIM_NT_MOVNTI;
	t.vec_prim = MEMMIG_PRIM_MOVQ;
	CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), -EINVAL);
	t.vec_prim = MEMMIG_PRIM_NT_AVX2;
	CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), -EINVAL);
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	t.vec_prim = MEMMIG_PRIM_VEC_SSE2;
	/* Descriptor values the loader would refuse: nothing written. */
	t.desc_store = 2;
	CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), -EINVAL);
	t.desc_store = MEMMIG_DESC_STORE_NT;
	t.desc_slow = 2;
	CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), -EINVAL);
	t.desc_slow = 0;
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	CU_ASSERT_EQUAL(memmig_tuning_save(NULL, path, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_tuning_save(ctx, NULL, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, NULL), -EINVAL);
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
	/* A directory that does not exist. */
	tmp_path(path, sizeof(path), "no/such/dir");
	CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &t), -ENOENT);
}

static void test_load_errors(void)
{
	static const char *const bad_lines[] = {
		"this line has no equals sign\n",
		"movsb_min = banana\n",
		"movsb_min = -5\n",
		"nt_min =\n",
		"no_such_key = 5\n",
		"nt_prim = movq\n",
		"nt_prim = nt-bogus\n",
		"vec_prim = movsb\n",
		"vec_prim = nt-avx2\n",
		"vec_max = 2T\n",
		"vec_wide_prim = movq\n",
		"nt_cold_min = lots\n",
		"desc_store = nt-avx512\n",
		"desc_store = 1\n",
		"desc_path = fast\n",
		"desc_probe_min = 2T\n",
	};
	struct memmig_tuning u = SENTINEL_TUNING, want = SENTINEL_TUNING;
	char text[512], missing[PATH_MAX + 64];
	const char *path;

	/* Calibrated on another CPU model. */
	path = calib("stale", "cpu = NoSuchVendor 255 255\nmovsb_min = 4096\n"
			      "movsq_min = 512\nnt_min = 1048576\n"
			      "nt_prim = nt-movnti\n");
	CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &u), -ESTALE);
	CU_ASSERT(tuning_eq(&u, &want));
	/* Without saying which CPU: not usable either. */
	path = calib("nocpu", "movsb_min = 4096\n");
	CU_ASSERT(memmig_tuning_load(ctx, path, &u) < 0);
	CU_ASSERT(tuning_eq(&u, &want));

	for (size_t i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
		snprintf(text, sizeof(text), "%smovsb_min = 4096\n%s", cpu_line,
			 bad_lines[i]);
		path = calib("bad", text);
		if (memmig_tuning_load(ctx, path, &u) != -EINVAL)
			CUNIT_FAILF("malformed line \"%.*s\" not -EINVAL",
				    (int)strlen(bad_lines[i]) - 1, bad_lines[i]);
		CU_ASSERT(tuning_eq(&u, &want));
	}
	path = calib("bad", "");
	CU_ASSERT_EQUAL(memmig_tuning_load(NULL, path, &u), -EINVAL);
	CU_ASSERT_EQUAL(memmig_tuning_load(ctx, NULL, &u), -EINVAL);
	CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, NULL), -EINVAL);
	tmp_path(missing, sizeof(missing), "does-not-exist");
	CU_ASSERT_EQUAL(memmig_tuning_load(ctx, missing, &u), -ENOENT);
	CU_ASSERT(tuning_eq(&u, &want));
}

/* Comments, blank lines, spacing; keys not in the file keep their value. */
static void test_load_partial(void)
{
	struct memmig_tuning u = SENTINEL_TUNING;
	char text[512];
	const char *path;

	snprintf(text, sizeof(text),
		 "# calibration\n\n   \n%s\tmovsq_min\t=\t640  \n  # nt_min = 1\n"
		 "nt_min=9999\n",
		 cpu_line);
	path = calib("comments", text);
	CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &u), 0);
	CU_ASSERT_EQUAL(u.movsb_min, 11);
	CU_ASSERT_EQUAL(u.movsq_min, 640);
	CU_ASSERT_EQUAL(u.nt_min, 9999);
	CU_ASSERT_EQUAL(u.nt_prim, MEMMIG_PRIM_NT_AVX2);

	path = calib("partial", cpu_line);
	u = (struct memmig_tuning)SENTINEL_TUNING;
	CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &u), 0);
	CU_ASSERT_EQUAL(u.movsb_min, 11);
	CU_ASSERT_EQUAL(u.nt_min, 33);
}

static int new_ctx(struct memmig_ctx **out)
{
	*out = NULL;
	return memmig_ctx_new(out);
}

static void test_env_overrides(void)
{
	struct memmig_tuning t = { .sz = sizeof(t) };
	struct memmig_ctx *c;

	setenv("MEMMIG_COPY_MOVSB_MIN", "4K", 1);
	setenv("MEMMIG_COPY_NT_MIN", "1M", 1);
	setenv("MEMMIG_COPY_NT_PRIM", "nt-movnti", 1);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT_EQUAL(t.movsb_min, 4096);
	CU_ASSERT_EQUAL(t.nt_min, 1u << 20);
	CU_ASSERT_EQUAL(t.nt_prim, MEMMIG_PRIM_NT_MOVNTI);
	if (cpu.features & MEMMIG_CPU_SSE2) {
		/* The copies follow: NT from 1 MiB, with movnti. */
		CU_ASSERT_EQUAL(memmig_copy_query(c, 1u << 20, 0),
				MEMMIG_PRIM_NT_MOVNTI);
		CU_ASSERT_FALSE(memmig_prim_is_nt(memmig_copy_query(c, (1u << 20) - 1,
								    0)));
	}
	memmig_ctx_unref(c);

	setenv("MEMMIG_COPY_MOVSQ_MIN", "640", 1);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT_EQUAL(t.movsq_min, 640);
	CU_ASSERT_EQUAL(t.movsb_min, 4096);
	memmig_ctx_unref(c);
	unset_env();

	/* The vector copy and the cold threshold. */
	setenv("MEMMIG_COPY_VEC_MAX", "1K", 1);
	setenv("MEMMIG_COPY_VEC_PRIM", "sse2", 1);
	setenv("MEMMIG_COPY_NT_COLD_MIN", "512", 1);
	setenv("MEMMIG_COPY_VEC_WIDE_MIN", "256", 1);
	setenv("MEMMIG_COPY_VEC_WIDE_PRIM", "sse2", 1);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT_EQUAL(t.vec_max, 1024);
	CU_ASSERT_EQUAL(t.vec_prim, MEMMIG_PRIM_VEC_SSE2);
	CU_ASSERT_EQUAL(t.nt_cold_min, 512);
	CU_ASSERT_EQUAL(t.vec_wide_min, 256);
	CU_ASSERT_EQUAL(t.vec_wide_prim, MEMMIG_PRIM_VEC_SSE2);
	/* Not overridden: as the system's calibration file (or the default)
	 * has it, which need not be the default's 0. */
	CU_ASSERT_EQUAL(t.pmem_nt_min, base.pmem_nt_min);
	if (cpu.features & MEMMIG_CPU_SSE2) {
		CU_ASSERT_EQUAL(memmig_copy_query(c, 1023, 0), MEMMIG_PRIM_VEC_SSE2);
		CU_ASSERT_NOT_EQUAL(memmig_copy_query(c, 1024, 0), MEMMIG_PRIM_VEC_SSE2);
		CU_ASSERT_FALSE(memmig_prim_is_nt(memmig_copy_query(c, 512, 0)));
		CU_ASSERT_TRUE(memmig_prim_is_nt(memmig_copy_query(c, 512,
								   MEMMIG_COPY_COLD)));
		CU_ASSERT_FALSE(memmig_prim_is_nt(memmig_copy_query(c, 511,
								    MEMMIG_COPY_COLD)));
	}
	memmig_ctx_unref(c);
	unset_env();

	/* pmem: temporal stores and flushes below MEMMIG_COPY_PMEM_NT_MIN. */
	setenv("MEMMIG_COPY_PMEM_NT_MIN", "1K", 1);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT_EQUAL(t.pmem_nt_min, 1024);
	if (cpu.features & MEMMIG_CPU_SSE2) {
		CU_ASSERT_FALSE(memmig_prim_is_nt(memmig_copy_query(c, 1023,
								    MEMMIG_COPY_PMEM)));
		CU_ASSERT_TRUE(memmig_prim_is_nt(memmig_copy_query(c, 1024,
								   MEMMIG_COPY_PMEM)));
		/* An NT request is NT whatever the length. */
		CU_ASSERT_TRUE(memmig_prim_is_nt(memmig_copy_query(
			c, 64, MEMMIG_COPY_PMEM | MEMMIG_COPY_NONTEMPORAL)));
	}
	memmig_ctx_unref(c);
	unset_env();
	setenv("MEMMIG_COPY_PMEM_NT_MIN", "lots", 1);
	CU_ASSERT_EQUAL(new_ctx(&c), -EINVAL);
	unset_env();

	/* NT copies prefetching their source ahead, or by blocks, copy what
	 * they did. */
	setenv("MEMMIG_COPY_NT_PREFETCH", "4K", 1);
	setenv("MEMMIG_COPY_NT_BLOCK", "1K", 1);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT_EQUAL(t.nt_prefetch, 4096);
	CU_ASSERT_EQUAL(t.nt_block, 1024);
	{
		static const size_t lens[] = { 64, 4095, 4096 + 256, 8191, 20000, 65536 + 65 };
		unsigned char *s = malloc(70000), *d = malloc(70000);

		CU_ASSERT_FATAL(s && d);
		for (size_t i = 0; i < 70000; i++)
			s[i] = (unsigned char)(i * 7 + 3);
		for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
			for (size_t off = 0; off < 3; off++) {
				memset(d, 0, 70000);
				CU_ASSERT_EQUAL(memmig_copy_run(c, d + off, s + 1, lens[k],
								MEMMIG_COPY_NONTEMPORAL), 0);
				CU_ASSERT_EQUAL(memcmp(d + off, s + 1, lens[k]), 0);
				CU_ASSERT_EQUAL(d[off + lens[k]], 0);
				CU_ASSERT_EQUAL(memmig_copy_run(c, d, s, lens[k],
								MEMMIG_COPY_PMEM), 0);
				CU_ASSERT_EQUAL(memcmp(d, s, lens[k]), 0);
			}
		free(s);
		free(d);
	}
	memmig_ctx_unref(c);
	unset_env();
	setenv("MEMMIG_COPY_VEC_PRIM", "movsb", 1);
	CU_ASSERT_EQUAL(new_ctx(&c), -EINVAL);
	CU_ASSERT_PTR_NULL(c);
	unset_env();

	/* Bad values: the context is not made. */
	setenv("MEMMIG_COPY_NT_MIN", "banana", 1);
	CU_ASSERT_EQUAL(new_ctx(&c), -EINVAL);
	CU_ASSERT_PTR_NULL(c);
	unset_env();
	setenv("MEMMIG_COPY_NT_PRIM", "movq", 1);
	CU_ASSERT_EQUAL(new_ctx(&c), -EINVAL);
	CU_ASSERT_PTR_NULL(c);
	setenv("MEMMIG_COPY_NT_PRIM", "nt-nonsense", 1);
	CU_ASSERT_EQUAL(new_ctx(&c), -EINVAL);
	CU_ASSERT_PTR_NULL(c);
	unset_env();
	setenv("MEMMIG_COPY_MOVSB_MIN", "12Q", 1);
	CU_ASSERT_EQUAL(new_ctx(&c), -EINVAL);
	unset_env();
	/* Too big is a bad value too, as the header says (was -ERANGE). */
	setenv("MEMMIG_COPY_NT_MIN", "2T", 1);
	CU_ASSERT_EQUAL(new_ctx(&c), -EINVAL);
	unset_env();

	/* Back to normal once unset. */
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT(tuning_eq(&t, &base));
	memmig_ctx_unref(c);
}

/*
 * A VMM that must not depend on its environment: MEMMIG_CTX_NO_ENV takes
 * the CPU's thresholds whatever the variables and the calibration file
 * say; MEMMIG_CTX_LENIENT makes the context without the bad values.
 */
static void test_ctx_flags(void)
{
	struct memmig_tuning t = { .sz = sizeof(t) }, def = { .sz = sizeof(def) };
	char stale[PATH_MAX + 64];
	struct memmig_ctx *c = NULL;

	unset_env();
	memmig_tuning_default(&cpu, &def);	/* no calibration file either */
	CU_ASSERT_EQUAL(memmig_ctx_new_flags(&c, 1u << 7), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_new_flags(NULL, 0), -EINVAL);

	tmp_path(stale, sizeof(stale), "calib-stale-flags");
	CU_ASSERT_EQUAL(write_file(stale, "cpu = NoSuchVendor 255 255\n"
					  "movsb_min = 4096\n"), 0);
	setenv("MEMMIG_CALIBRATION", stale, 1);
	setenv("MEMMIG_COPY_NT_MIN", "banana", 1);
	setenv("MEMMIG_FAULT", "nonsense", 1);
	setenv("MEMMIG_LOG", "debug", 1);
	CU_ASSERT_EQUAL(new_ctx(&c), -ESTALE);

	CU_ASSERT_EQUAL_FATAL(memmig_ctx_new_flags(&c, MEMMIG_CTX_NO_ENV), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT(tuning_eq(&t, &def));
	CU_ASSERT_EQUAL(memmig_ctx_get_log_priority(c), LOG_ERR);
	memmig_ctx_unref(c);

	/* Lenient: each bad value dropped, the good ones kept. */
	setenv("MEMMIG_COPY_MOVSQ_MIN", "640", 1);
	setenv("MEMMIG_LOG", "2", 1);
	CU_ASSERT_EQUAL_FATAL(memmig_ctx_new_flags(&c, MEMMIG_CTX_LENIENT), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	/* The stale file (which stands for the system file) and the bad
	 * variable's whole set dropped: the CPU's own thresholds. */
	CU_ASSERT(tuning_eq(&t, &def));
	CU_ASSERT_EQUAL(memmig_ctx_get_log_priority(c), LOG_CRIT);
	memmig_ctx_unref(c);
	unsetenv("MEMMIG_COPY_NT_MIN");
	CU_ASSERT_EQUAL_FATAL(memmig_ctx_new_flags(&c, MEMMIG_CTX_LENIENT), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT_EQUAL(t.movsq_min, 640);
	memmig_ctx_unref(c);
	unset_env();
	unsetenv("MEMMIG_FAULT");
	unsetenv("MEMMIG_LOG");
	unlink(stale);
}

/* memmig_tuning_from_env() itself: applied over *t, or *t unchanged. */
static void test_tuning_from_env(void)
{
	struct memmig_tuning t = SENTINEL_TUNING, want = SENTINEL_TUNING;

	CU_ASSERT_EQUAL(memmig_tuning_from_env(ctx, &t), 0);
	CU_ASSERT(tuning_eq(&t, &want));
	setenv("MEMMIG_COPY_MOVSQ_MIN", "2K", 1);
	setenv("MEMMIG_COPY_NT_PRIM", "nt-avx512", 1);
	CU_ASSERT_EQUAL(memmig_tuning_from_env(ctx, &t), 0);
	want.movsq_min = 2048;
	want.nt_prim = MEMMIG_PRIM_NT_AVX512;
	CU_ASSERT(tuning_eq(&t, &want));
	setenv("MEMMIG_DESC_STORE", "nt", 1);
	setenv("MEMMIG_DESC_PATH", "template", 1);
	CU_ASSERT_EQUAL(memmig_tuning_from_env(ctx, &t), 0);
	want.desc_store = MEMMIG_DESC_STORE_NT;
	want.desc_slow = 0;
	CU_ASSERT(tuning_eq(&t, &want));
	setenv("MEMMIG_DESC_STORE", "temporal", 1);
	setenv("MEMMIG_DESC_PATH", "slow", 1);
	CU_ASSERT_EQUAL(memmig_tuning_from_env(ctx, &t), 0);
	want.desc_store = MEMMIG_DESC_STORE_TEMPORAL;
	want.desc_slow = 1;
	CU_ASSERT(tuning_eq(&t, &want));
	setenv("MEMMIG_DESC_STORE", "plain", 1);
	CU_ASSERT_EQUAL(memmig_tuning_from_env(ctx, &t), -EINVAL);
	CU_ASSERT(tuning_eq(&t, &want));
	unsetenv("MEMMIG_DESC_STORE");
	unsetenv("MEMMIG_DESC_PATH");
	/* One bad variable among good ones: nothing applied. */
	setenv("MEMMIG_COPY_MOVSB_MIN", "8K", 1);
	setenv("MEMMIG_COPY_NT_MIN", "banana", 1);
	CU_ASSERT_EQUAL(memmig_tuning_from_env(ctx, &t), -EINVAL);
	CU_ASSERT(tuning_eq(&t, &want));
	CU_ASSERT_EQUAL(memmig_tuning_from_env(NULL, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_tuning_from_env(ctx, NULL), -EINVAL);
}

static void test_calibration_env(void)
{
	struct memmig_tuning saved = { .sz = sizeof(saved), .movsb_min = 5000,
				       .movsq_min = 600, .nt_min = 7777777,
				       .nt_prim = MEMMIG_PRIM_NT_MOVNTI, .vec_max = 777,
				       .vec_prim = MEMMIG_PRIM_VEC_SSE2,
				       .nt_cold_min = 8192, .vec_wide_min = 512,
				       .vec_wide_prim = MEMMIG_PRIM_VEC_AVX2 };
	struct memmig_tuning t = { .sz = sizeof(t) };
	char path[PATH_MAX + 64], stale[PATH_MAX + 64];
	struct memmig_ctx *c;

	tmp_path(path, sizeof(path), "calib");
	CU_ASSERT_EQUAL_FATAL(memmig_tuning_save(ctx, path, &saved), 0);
	setenv("MEMMIG_CALIBRATION", path, 1);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT(tuning_eq(&t, &saved));
	memmig_ctx_unref(c);

	/* The environment wins over the file. */
	setenv("MEMMIG_COPY_NT_MIN", "1M", 1);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT_EQUAL(t.nt_min, 1u << 20);
	CU_ASSERT_EQUAL(t.movsb_min, 5000);
	CU_ASSERT_EQUAL(t.movsq_min, 600);
	memmig_ctx_unref(c);
	unsetenv("MEMMIG_COPY_NT_MIN");

	/* A file made on another CPU, asked for explicitly, is an error. */
	tmp_path(stale, sizeof(stale), "calib-stale");
	CU_ASSERT_EQUAL(write_file(stale, "cpu = NoSuchVendor 255 255\n"
					  "movsb_min = 4096\n"), 0);
	setenv("MEMMIG_CALIBRATION", stale, 1);
	CU_ASSERT_EQUAL(new_ctx(&c), -ESTALE);
	CU_ASSERT_PTR_NULL(c);
	unset_env();
}

/* ------------------------------------------------------------------ */
/* Sized structs, reference counting, logging.                         */

static void test_sized_structs(void)
{
	struct {
		struct memmig_tuning t;
		unsigned char newer[32];	/* fields of a later version */
	} big;
	struct memmig_tuning t, cur = { .sz = sizeof(cur) };
	struct memmig_cpu_info c = { .sz = 0 };
	const size_t one = offsetof(struct memmig_tuning, movsq_min);

	/* Too small to hold one field. */
	memset(&t, 0x77, sizeof(t));
	t.sz = 0;
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &t), -EINVAL);
	t.sz = sizeof(size_t);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &t), -EINVAL);
	CU_ASSERT_EQUAL(t.movsb_min, (size_t)0x7777777777777777ULL);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(NULL, &cur), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_get_cpu(ctx, &c), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_get_cpu(ctx, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_get_cpu(NULL, &cpu), -EINVAL);

	/* An older caller that knows movsb_min only. */
	t.sz = one;
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &t), 0);
	CU_ASSERT_EQUAL(t.sz, one);
	CU_ASSERT_EQUAL(t.movsb_min, base.movsb_min);
	CU_ASSERT_EQUAL(t.movsq_min, (size_t)0x7777777777777777ULL);
	CU_ASSERT_EQUAL(t.nt_prim, 0x77777777);

	/* A newer caller: what it knows beyond us is left alone. */
	memset(&big, 0x77, sizeof(big));
	big.t.sz = sizeof(big);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &big.t), 0);
	CU_ASSERT_EQUAL(big.t.sz, sizeof(big));
	CU_ASSERT(tuning_eq(&big.t, &base));
	for (size_t i = 0; i < sizeof(big.newer); i++)
		CU_ASSERT_EQUAL_FATAL(big.newer[i], 0x77);

	/* set: only the fields the caller knows change. */
	t.sz = one;
	t.movsb_min = 12345;
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &t), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &cur), 0);
	CU_ASSERT_EQUAL(cur.movsb_min, 12345);
	CU_ASSERT_EQUAL(cur.movsq_min, base.movsq_min);
	CU_ASSERT_EQUAL(cur.nt_min, base.nt_min);
	CU_ASSERT_EQUAL(cur.nt_prim, base.nt_prim);
	/* A caller built before the vector fields: saving keeps this CPU's
	 * defaults for them, and what it saved loads back. */
	{
		struct memmig_tuning old = base, back = SENTINEL_TUNING;
		struct memmig_tuning def = { .sz = sizeof(def) };
		char path[PATH_MAX + 64];

		CU_ASSERT_EQUAL(memmig_tuning_default(&cpu, &def), 0);
		old.sz = offsetof(struct memmig_tuning, vec_max);
		old.vec_prim = -1;	/* beyond its size: never read */
		tmp_path(path, sizeof(path), "old-size");
		/* Saved: the CPU's defaults for what the caller cannot know. */
		CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &old), 0);
		CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &back), 0);
		CU_ASSERT_EQUAL(back.vec_prim, def.vec_prim);
		CU_ASSERT_EQUAL(back.vec_max, def.vec_max);
		/* Set: the context keeps its own (calibrated, perhaps). */
		CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &old), 0);
		CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &cur), 0);
		CU_ASSERT_EQUAL(cur.vec_prim, base.vec_prim);
		CU_ASSERT_EQUAL(cur.vec_wide_min, base.vec_wide_min);
		unlink(path);
	}
	/* A caller built before the descriptor fields: whatever lies
	 * beyond its size, it saves this CPU's defaults for them (templates,
	 * NT stores), its reads and the environment leave that memory
	 * alone, and a set keeps the context's own. */
	{
		const size_t upto = offsetof(struct memmig_tuning, desc_store);
		struct memmig_tuning old = base, back = SENTINEL_TUNING, ctxs = base;
		struct memmig_tuning def = { .sz = sizeof(def) };
		char path[PATH_MAX + 64];

		CU_ASSERT_EQUAL(memmig_tuning_default(&cpu, &def), 0);
		CU_ASSERT_EQUAL(def.desc_store, MEMMIG_DESC_STORE_NT);
		CU_ASSERT_EQUAL(def.desc_slow, 0);
		/* The context's own are not the defaults, to tell them apart. */
		ctxs.desc_store = MEMMIG_DESC_STORE_TEMPORAL;
		ctxs.desc_slow = 1;
		CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &ctxs), 0);
		old.sz = upto;
		old.desc_store = -1;	/* beyond its size: never read */
		old.desc_slow = 77;
		tmp_path(path, sizeof(path), "old-size-desc");
		CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &old), 0);
		CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &back), 0);
		CU_ASSERT_EQUAL(back.desc_store, def.desc_store);
		CU_ASSERT_EQUAL(back.desc_slow, def.desc_slow);
		CU_ASSERT_EQUAL(back.vec_wide_prim, old.vec_wide_prim);
		/* Reads stop at its size. */
		CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &old), 0);
		CU_ASSERT_EQUAL(old.sz, upto);
		CU_ASSERT_EQUAL(old.desc_store, -1);
		CU_ASSERT_EQUAL(old.desc_slow, 77);
		CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &old), 0);
		CU_ASSERT_EQUAL(old.desc_store, -1);
		setenv("MEMMIG_DESC_STORE", "temporal", 1);
		CU_ASSERT_EQUAL(memmig_tuning_from_env(ctx, &old), 0);
		CU_ASSERT_EQUAL(old.desc_store, -1);
		unsetenv("MEMMIG_DESC_STORE");
		/* Set: the context keeps its own descriptor choice. */
		CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &old), 0);
		CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &cur), 0);
		CU_ASSERT_EQUAL(cur.desc_store, MEMMIG_DESC_STORE_TEMPORAL);
		CU_ASSERT_EQUAL(cur.desc_slow, 1);
		CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &base), 0);
		unlink(path);
	}
	/* A caller built before pmem_nt_min: the same for it. */
	{
		struct memmig_tuning old = base, back = SENTINEL_TUNING;
		struct memmig_tuning def = { .sz = sizeof(def) };
		char path[PATH_MAX + 64];

		CU_ASSERT_EQUAL(memmig_tuning_default(&cpu, &def), 0);
		CU_ASSERT_EQUAL(def.pmem_nt_min, 0);
		CU_ASSERT_EQUAL(def.nt_prefetch, 0);
		old.sz = offsetof(struct memmig_tuning, pmem_nt_min);
		old.nt_prefetch = 4321;
		old.pmem_nt_min = 4321;	/* beyond its size: never read */
		tmp_path(path, sizeof(path), "old-size-pmem");
		CU_ASSERT_EQUAL(memmig_tuning_save(ctx, path, &old), 0);
		CU_ASSERT_EQUAL(memmig_tuning_load(ctx, path, &back), 0);
		CU_ASSERT_EQUAL(back.pmem_nt_min, def.pmem_nt_min);
		CU_ASSERT_EQUAL(back.nt_prefetch, def.nt_prefetch);
		CU_ASSERT_EQUAL(back.vec_wide_min, old.vec_wide_min);
		CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &old), 0);
		CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &cur), 0);
		CU_ASSERT_EQUAL(cur.pmem_nt_min, base.pmem_nt_min);
		CU_ASSERT_EQUAL(cur.nt_prefetch, base.nt_prefetch);
		/* and an older caller reading gets nothing written there */
		old.pmem_nt_min = 4321;
		CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &old), 0);
		CU_ASSERT_EQUAL(old.pmem_nt_min, 4321);
		unlink(path);
	}
	t.sz = 0;
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &base), 0);
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(NULL, &base), -EINVAL);
}

static void test_set_tuning(void)
{
	static const int not_nt[] = { MEMMIG_PRIM_MOVQ, MEMMIG_PRIM_REP_MOVSQ,
				      MEMMIG_PRIM_REP_MOVSB, MEMMIG_PRIM_GENERIC,
				      -1, MEMMIG_PRIM_COUNT, 1000 };
	struct memmig_tuning t = base, cur = { .sz = sizeof(cur) };

	for (size_t i = 0; i < sizeof(not_nt) / sizeof(not_nt[0]); i++) {
		t = base;
		t.movsb_min = 999;
		t.nt_prim = not_nt[i];
		CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &t), -EINVAL);
		CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &cur), 0);
		CU_ASSERT(tuning_eq(&cur, &base));	/* nothing applied */
		/* Nor is any of them (nor an NT one) a vector choice. */
		t.nt_prim = base.nt_prim;
		t.vec_prim = not_nt[i];
		CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &t), -EINVAL);
		t.vec_prim = MEMMIG_PRIM_NT_MOVNTI;
		CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &t), -EINVAL);
		CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &cur), 0);
		CU_ASSERT(tuning_eq(&cur, &base));
	}
	t = base;
	t.movsb_min = 999;
	t.movsq_min = 333;
	t.nt_min = 5 << 20;
	t.nt_prim = MEMMIG_PRIM_NT_MOVNTI;
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &t), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(ctx, &cur), 0);
	CU_ASSERT(tuning_eq(&cur, &t));
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &base), 0);
}

static void test_refcount(void)
{
	struct memmig_tuning t = { .sz = sizeof(t) };
	struct memmig_ctx *c;

	CU_ASSERT_EQUAL(memmig_ctx_new(NULL), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_PTR_EQUAL(memmig_ctx_ref(c), c);
	CU_ASSERT_PTR_EQUAL(memmig_ctx_ref(c), c);
	memmig_ctx_unref(c);
	memmig_ctx_unref(c);
	/* One reference left: still usable. */
	CU_ASSERT_EQUAL(memmig_ctx_get_tuning(c, &t), 0);
	CU_ASSERT(tuning_eq(&t, &base));
	CU_ASSERT_EQUAL(memmig_copy_run(c, buf + 4096, buf, 100, 0), 0);
	CU_ASSERT_EQUAL(memcmp(buf + 4096, snap, 100), 0);
	memmig_ctx_unref(c);
	CU_ASSERT_PTR_NULL(memmig_ctx_ref(NULL));
	memmig_ctx_unref(NULL);
}

struct log_capture {
	int calls;
	int priority;
	char msg[512];
	const char *fn;
};

__attribute__((format(printf, 7, 0))) static void
capture_log(struct memmig_ctx *c, void *userdata, int priority,
	    const char *file, int line, const char *fn, const char *format,
	    va_list args)
{
	struct log_capture *cap = userdata;

	cap->calls++;
	cap->priority = priority;
	cap->fn = fn;
	vsnprintf(cap->msg, sizeof(cap->msg), format, args);
}

static void test_log(void)
{
	struct log_capture cap = { 0 };
	struct memmig_tuning t = SENTINEL_TUNING;
	struct memmig_ctx *c;
	const char *path;
	char text[512];

	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_log_priority(c), LOG_ERR);	/* default */
	memmig_ctx_set_log_fn(c, capture_log, &cap);
	memmig_ctx_set_log_priority(c, LOG_ERR);
	CU_ASSERT_EQUAL(memmig_ctx_get_log_priority(c), LOG_ERR);

	snprintf(text, sizeof(text), "%sno equals sign here\n", cpu_line);
	path = calib("bad", text);
	CU_ASSERT_EQUAL(memmig_tuning_load(c, path, &t), -EINVAL);
	CU_ASSERT(cap.calls >= 1);
	CU_ASSERT_EQUAL(cap.priority, LOG_ERR);
	CU_ASSERT_PTR_NOT_NULL(strstr(cap.msg, path));
	CU_ASSERT_PTR_NOT_NULL(cap.fn);

	/* The variable that is wrong is named. */
	cap.calls = 0;
	setenv("MEMMIG_COPY_NT_PRIM", "movq", 1);
	CU_ASSERT_EQUAL(memmig_tuning_from_env(c, &t), -EINVAL);
	CU_ASSERT_EQUAL(cap.calls, 1);
	CU_ASSERT_EQUAL(cap.priority, LOG_ERR);
	CU_ASSERT_PTR_NOT_NULL(strstr(cap.msg, "MEMMIG_COPY_NT_PRIM"));
	unsetenv("MEMMIG_COPY_NT_PRIM");

	/* Below the threshold: nothing is logged. */
	cap.calls = 0;
	memmig_ctx_set_log_priority(c, LOG_CRIT);
	CU_ASSERT_EQUAL(memmig_ctx_get_log_priority(c), LOG_CRIT);
	CU_ASSERT_EQUAL(memmig_tuning_load(c, path, &t), -EINVAL);
	CU_ASSERT_EQUAL(cap.calls, 0);
	memmig_ctx_unref(c);

	/* No context: nothing set, nothing read, no crash. */
	memmig_ctx_set_log_fn(NULL, NULL, NULL);
	memmig_ctx_set_log_priority(NULL, LOG_DEBUG);
	CU_ASSERT_EQUAL(memmig_ctx_get_log_priority(NULL), -EINVAL);

	/* $MEMMIG_LOG sets the initial priority, by name or number. */
	setenv("MEMMIG_LOG", "debug", 1);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_log_priority(c), LOG_DEBUG);
	memmig_ctx_unref(c);
	setenv("MEMMIG_LOG", "warning", 1);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_log_priority(c), LOG_WARNING);
	memmig_ctx_unref(c);
	setenv("MEMMIG_LOG", "6", 1);
	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_get_log_priority(c), LOG_INFO);
	memmig_ctx_unref(c);
	unsetenv("MEMMIG_LOG");
}

static CU_TestInfo copy_tests[] = {
	{ "len 0 succeeds whatever the pointers", test_len_zero },
	{ "NULL buffers or context: -EINVAL", test_null },
	{ "overlapping buffers: -EINVAL, nothing written", test_overlap },
	{ "address space wrap: -EOVERFLOW", test_wrap },
	{ "unknown flags and bad combinations: -EINVAL", test_bad_flags },
	{ "copy_with: invalid and unsupported primitives", test_copy_with_prims },
	{ "copy_query agrees with policy_choose", test_query },
	{ "primitive names round-trip", test_prim_names },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo tuning_tests[] = {
	{ "save and load round-trip", test_save_load },
	{ "load: stale, malformed, missing", test_load_errors },
	{ "load: comments, spacing, partial files", test_load_partial },
	{ "environment overrides in ctx_new", test_env_overrides },
	{ "tuning_from_env", test_tuning_from_env },
	{ "ctx_new_flags: NO_ENV and LENIENT", test_ctx_flags },
	{ "MEMMIG_CALIBRATION in ctx_new", test_calibration_env },
	CU_TEST_INFO_NULL,
};

/* A live report's pause in parts, and which part of a pause over budget
 * ran furthest over its expectation. */
static void test_live_pause_parts(void)
{
	struct memmig_live_report r = {
		.sz = sizeof(r), .pause_budget_s = 5e-3, .pause_s = 4e-3,
		.pause_stop_s = 1e-4, .pause_harvest_s = 1e-3, .pause_copy_s = 2e-3,
		.pause_swap_s = 9e-4, .expected_stop_s = 1e-4, .expected_harvest_s = 5e-4,
		.expected_copy_s = 2.2e-3, .expected_swap_s = 1e-3,
	};
	const char *names[] = { "stop", "harvest", "copy", "swap" }, *name;
	double took, expected;
	unsigned int i;

	for (i = 0; !memmig_live_pause_part(&r, i, &name, &took, &expected); i++) {
		CU_ASSERT_STRING_EQUAL(name, names[i]);
		CU_ASSERT(took > 0 && expected > 0);
	}
	CU_ASSERT_EQUAL(i, 4);
	CU_ASSERT_EQUAL(memmig_live_pause_part(&r, 4, NULL, NULL, NULL), -ENOENT);
	CU_ASSERT_EQUAL(memmig_live_pause_part(NULL, 0, NULL, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_live_pause_part(&r, 2, NULL, &took, &expected), 0);
	CU_ASSERT_DOUBLE_EQUAL(took, 2e-3, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(expected, 2.2e-3, 1e-12);
	/* Within budget: nothing to name. */
	CU_ASSERT_PTR_NULL(memmig_live_report_overrun(&r, NULL, NULL));
	CU_ASSERT_PTR_NULL(memmig_live_report_overrun(NULL, NULL, NULL));
	/* Over it: the harvest ran 0.5 ms over, the copy 0.8 ms (then the
	 * copy is named). */
	r.pause_s = 6e-3;
	r.pause_copy_s = 3e-3;
	CU_ASSERT_STRING_EQUAL(memmig_live_report_overrun(&r, &took, &expected), "copy");
	CU_ASSERT_DOUBLE_EQUAL(took, 3e-3, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(expected, 2.2e-3, 1e-12);
	r.pause_copy_s = 2e-3;
	CU_ASSERT_STRING_EQUAL(memmig_live_report_overrun(&r, NULL, NULL), "harvest");
}

static CU_TestInfo ctx_tests[] = {
	{ "sized structs", test_sized_structs },
	{ "set_tuning rejects a non-NT nt_prim", test_set_tuning },
	{ "ref and unref", test_refcount },
	{ "log callback and priority", test_log },
	{ "live pause parts and overrun", test_live_pause_parts },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "copy entry points", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pSetUpFunc = test_setup,
	  .pTearDownFunc = test_teardown, .pTests = copy_tests },
	{ .pName = "tuning", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pSetUpFunc = test_setup,
	  .pTearDownFunc = test_teardown, .pTests = tuning_tests },
	{ .pName = "context", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pSetUpFunc = test_setup,
	  .pTearDownFunc = test_teardown, .pTests = ctx_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
