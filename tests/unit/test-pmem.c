/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pmem write path: which cache lines the copy flushes, with which
 * instruction, and how many drains it issues.  This program is linked with
 * the library's copy sources (copy.c, policy.c, arch/x86 primitives) but
 * not with arch/x86/flush.c: memmig_arch_flush() and memmig_arch_drain()
 * are replaced here by versions that record each call (and still fence),
 * so the tests see every flush and drain the copy paths make.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "lib/copy/arch/arch.h"
#include "lib/core/memmig-private.h"
#include "lib/copy/copy-private.h"
#include "cunit-main.h"

#define LINE 64
#define BUF_MAX ((8UL << 20) + 4 * LINE)
#define MAX_EVENTS 4096

/* ---- the recording arch functions ---- */

struct event {
	bool drain;
	enum memmig_flush_kind kind;
	uintptr_t addr;
	size_t len;
};

static struct event events[MAX_EVENTS];
static unsigned int nevents;
static bool events_lost;

void memmig_arch_flush(enum memmig_flush_kind kind, const void *addr, size_t len)
{
	/* Like flush.c: a zero-length range or no method flushes nothing. */
	if (!len || kind == MEMMIG_FLUSH_NONE)
		return;
	if (nevents == MAX_EVENTS) {
		events_lost = true;
		return;
	}
	events[nevents++] = (struct event){ false, kind, (uintptr_t)addr, len };
}

void memmig_arch_drain(void)
{
	__asm__ volatile("sfence" ::: "memory");
	if (nevents == MAX_EVENTS) {
		events_lost = true;
		return;
	}
	events[nevents++] = (struct event){ .drain = true };
}

/* ---- fixture ---- */

static struct memmig_ctx ctx;
static uint8_t *src, *dst;
static uint8_t *flushed;	/* per destination line: flushed? */

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int suite_init(void)
{
	memmig_arch_cpu_detect(&ctx.cpu);
	ctx.cpu.sz = sizeof(ctx.cpu);
	ctx.tuning.sz = sizeof(ctx.tuning);
	if (memmig_tuning_default(&ctx.cpu, &ctx.tuning) < 0)
		return 1;
	{
		struct memmig_tuning t = ctx.tuning;

		memmig_ctx_apply_tuning(&ctx, &t);
	}
	for (int p = 0; p < MEMMIG_PRIM_COUNT; p++)
		if (memmig_prim_supported(&ctx.cpu, p))
			ctx.prims_ok |= 1u << p;
	ctx.flush_kind = memmig_flush_kind_for(&ctx.cpu);
	src = map(BUF_MAX);
	dst = map(BUF_MAX);
	flushed = map(BUF_MAX / LINE + 1);
	if (!src || !dst || !flushed)
		return 1;
	for (size_t i = 0; i < BUF_MAX; i++)
		src[i] = (uint8_t)(i * 131 + 7);
	return 0;
}

static int suite_cleanup(void)
{
	munmap(src, BUF_MAX);
	munmap(dst, BUF_MAX);
	munmap(flushed, BUF_MAX / LINE + 1);
	return 0;
}

#define FAIL_CASE(c, fmt, ...)                                                 \
	do {                                                                   \
		if (cunit_report())                                             \
			CUNIT_FAILF("%s len %zu doff %zu flags %#x: " fmt,     \
				    (c)->what, (c)->len, (c)->doff, (c)->flags,\
				    __VA_ARGS__);                              \
	} while (0)

/* ---- one copy and what it did ---- */

enum expect_flush {
	FLUSH_NOTHING,		/* no line flushed */
	FLUSH_PARTIAL,		/* at least the partly written lines, and for
				 * long copies only those (the rest is NT) */
	FLUSH_ALL,		/* every line of the destination */
	FLUSH_ENDS,		/* at least the partly written end lines */
};

struct copy_case {
	const char *what;
	size_t len, doff;
	unsigned int flags;
	enum expect_flush flush;
	unsigned int drains;	/* expected drain count */
};

/* The ways to copy that the cases use. */
enum how { HOW_RUN = -1, HOW_UNITS = -2 };

static int do_copy(int how, uint8_t *d, const uint8_t *s, size_t len,
		   unsigned int flags)
{
	if (how == HOW_RUN)
		return memmig_copy_run(&ctx, d, s, len, flags);
	if (how == HOW_UNITS)
		return memmig_copy_units(&ctx, d, s, len, flags);
	return memmig_copy_with(&ctx, how, d, s, len, flags);
}

/* Marks the lines of each recorded flush; false if one falls outside the
 * destination's lines or uses another instruction than the context's. */
static bool mark_flushes(const struct copy_case *c, uintptr_t first_line,
			 size_t nlines)
{
	bool ok = true;

	memset(flushed, 0, nlines);
	for (unsigned int i = 0; i < nevents; i++) {
		const struct event *e = &events[i];
		uintptr_t a, end = e->addr + e->len;

		if (e->drain)
			continue;
		if (e->kind != ctx.flush_kind) {
			FAIL_CASE(c, "flushed with method %d, not %d", e->kind,
				  ctx.flush_kind);
			ok = false;
		}
		for (a = e->addr & ~(uintptr_t)(LINE - 1); a < end; a += LINE) {
			size_t l = (a - first_line) / LINE;

			if (a < first_line || l >= nlines) {
				FAIL_CASE(c, "flushed line %#lx outside the destination",
					  (unsigned long)a);
				return false;
			}
			flushed[l] = 1;
		}
	}
	return ok;
}

static void check_flushed_lines(const struct copy_case *c, uintptr_t d,
				uintptr_t first_line, size_t nlines)
{
	size_t n = 0;
	bool head_partial = d % LINE != 0 || c->len < LINE;
	bool tail_partial = (d + c->len) % LINE != 0;

	for (size_t l = 0; l < nlines; l++)
		n += flushed[l];
	switch (c->flush) {
	case FLUSH_NOTHING:
		if (n)
			FAIL_CASE(c, "%zu lines flushed, want none", n);
		break;
	case FLUSH_ALL:
		if (n != nlines)
			FAIL_CASE(c, "%zu of %zu lines flushed, want all", n, nlines);
		break;
	case FLUSH_PARTIAL:
	case FLUSH_ENDS:
		if ((head_partial && !flushed[0]) ||
		    (tail_partial && !flushed[nlines - 1]))
			FAIL_CASE(c, "a partly written line was not flushed "
				  "(head %d, tail %d)", flushed[0],
				  flushed[nlines - 1]);
		/* Long copies: whole lines go by NT stores, never flushed. */
		if (c->flush == FLUSH_PARTIAL && c->len >= 1024 && n > (size_t)head_partial + tail_partial)
			FAIL_CASE(c, "%zu lines flushed, want only the partial ones", n);
		break;
	}
}

static void check_drains(const struct copy_case *c)
{
	unsigned int drains = 0, last_flush = 0, last_drain = 0;

	for (unsigned int i = 0; i < nevents; i++) {
		if (events[i].drain) {
			drains++;
			last_drain = i + 1;
		} else {
			last_flush = i + 1;
		}
	}
	if (drains != c->drains)
		FAIL_CASE(c, "%u drains, want %u", drains, c->drains);
	/* A flush after the last drain would not be ordered by it. */
	if (drains && last_flush > last_drain)
		FAIL_CASE(c, "a flush comes after the drain (%u > %u)",
			  last_flush, last_drain);
}

static void run_case(int how, const struct copy_case *c)
{
	uint8_t *d = dst + LINE + c->doff;
	const uint8_t *s = src + 3;	/* the source's alignment is irrelevant */
	uintptr_t first_line = (uintptr_t)d & ~(uintptr_t)(LINE - 1);
	size_t nlines = ((uintptr_t)d + c->len - first_line + LINE - 1) / LINE;
	int rc;

	memset(d, 0xa5, c->len);
	nevents = 0;
	events_lost = false;
	rc = do_copy(how, d, s, c->len, c->flags);
	if (rc != 0 || events_lost) {
		FAIL_CASE(c, "returned %d, events lost %d", rc, events_lost);
		return;
	}
	if (memcmp(d, s, c->len))
		FAIL_CASE(c, "%s", "the destination differs from the source");
	if (mark_flushes(c, first_line, nlines))
		check_flushed_lines(c, (uintptr_t)d, first_line, nlines);
	check_drains(c);
	CU_PASS("case");
}

static const size_t doffs[] = { 0, 1, 13, 32, 63 };
#define NDOFFS (sizeof(doffs) / sizeof(doffs[0]))
static const size_t long_lens[] = { 1024, 4096 + 13, 65536 + 3, (1u << 20) + 5 };
#define NLONG (sizeof(long_lens) / sizeof(long_lens[0]))

/* Every length 1..600, then a few long ones, at every offset in doffs. */
static void run_lengths(int how, const char *what, unsigned int flags,
			enum expect_flush flush, unsigned int drains)
{
	struct copy_case c = { .what = what, .flags = flags, .flush = flush,
			       .drains = drains };

	for (size_t k = 0; k < NDOFFS; k++) {
		c.doff = doffs[k];
		for (c.len = 1; c.len <= 600; c.len++)
			run_case(how, &c);
		for (size_t i = 0; i < NLONG; i++) {
			c.len = long_lens[i];
			run_case(how, &c);
		}
	}
}

static const enum memmig_flush_kind kinds[] = {
	MEMMIG_FLUSH_CLWB, MEMMIG_FLUSH_CLFLUSHOPT, MEMMIG_FLUSH_CLFLUSH,
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* NT primitives with pmem: the partly written lines flushed with the
 * context's method, whichever it is, then one drain. */
static void test_nt_pmem(void)
{
	enum memmig_flush_kind saved = ctx.flush_kind;
	int n = 0;

	for (int p = 0; p < MEMMIG_PRIM_COUNT; p++) {
		if (!memmig_prim_is_nt(p) || !(ctx.prims_ok & (1u << p)))
			continue;
		n++;
		for (size_t k = 0; k < NKINDS; k++) {
			ctx.flush_kind = kinds[k];
			run_lengths(p, memmig_prim_name(p), MEMMIG_COPY_PMEM,
				    FLUSH_PARTIAL, 1);
		}
		ctx.flush_kind = saved;
		run_lengths(p, memmig_prim_name(p),
			    MEMMIG_COPY_PMEM | MEMMIG_COPY_NODRAIN, FLUSH_PARTIAL, 0);
		/* NOFLUSH leaves flushing, and so draining, to the caller. */
		run_lengths(p, memmig_prim_name(p),
			    MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH, FLUSH_NOTHING, 0);
		/* Not pmem: NT stores still need their fence, nothing is
		 * flushed. */
		run_lengths(p, memmig_prim_name(p), 0, FLUSH_NOTHING, 1);
		run_lengths(p, memmig_prim_name(p), MEMMIG_COPY_NODRAIN,
			    FLUSH_NOTHING, 0);
	}
	CU_ASSERT(n >= 1);
}

/* Temporal primitives with pmem: every line flushed, then one drain. */
static void test_temporal_pmem(void)
{
	static const int prims[] = { MEMMIG_PRIM_MOVQ, MEMMIG_PRIM_REP_MOVSQ,
				     MEMMIG_PRIM_REP_MOVSB, MEMMIG_PRIM_GENERIC };

	for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++) {
		const char *name = memmig_prim_name(prims[i]);

		run_lengths(prims[i], name, MEMMIG_COPY_PMEM, FLUSH_ALL, 1);
		run_lengths(prims[i], name, MEMMIG_COPY_PMEM | MEMMIG_COPY_NODRAIN,
			    FLUSH_ALL, 0);
		run_lengths(prims[i], name, MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH,
			    FLUSH_NOTHING, 0);
		/* Not pmem: a plain copy, no flush, no fence. */
		run_lengths(prims[i], name, 0, FLUSH_NOTHING, 0);
	}
}

/* The dispatched copy: pmem picks NT stores; pmem with TEMPORAL picks a
 * temporal primitive and so must flush every line. */
static void test_dispatched(void)
{
	run_lengths(HOW_RUN, "copy_run", MEMMIG_COPY_PMEM, FLUSH_PARTIAL, 1);
	run_lengths(HOW_RUN, "copy_run", MEMMIG_COPY_PMEM | MEMMIG_COPY_NONTEMPORAL,
		    FLUSH_PARTIAL, 1);
	run_lengths(HOW_RUN, "copy_run", MEMMIG_COPY_PMEM | MEMMIG_COPY_TEMPORAL,
		    FLUSH_ALL, 1);
	run_lengths(HOW_RUN, "copy_run",
		    MEMMIG_COPY_PMEM | MEMMIG_COPY_TEMPORAL | MEMMIG_COPY_NODRAIN,
		    FLUSH_ALL, 0);
	run_lengths(HOW_RUN, "copy_run", MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH,
		    FLUSH_NOTHING, 0);
	run_lengths(HOW_RUN, "copy_run",
		    MEMMIG_COPY_PMEM | MEMMIG_COPY_TEMPORAL | MEMMIG_COPY_NOFLUSH,
		    FLUSH_NOTHING, 0);
}

/*
 * Unflagged copies go by the choice cached per length range
 * (memmig_ctx_apply_tuning()), not by the policy: it must be the policy's.
 * An NT primitive drains once, a temporal one never, neither flushes.
 */
static void test_unflagged_by_len(void)
{
	static const size_t at[][5] = {
		/* vec_max, vec_wide_min, movsb_min, movsq_min, nt_min */
		{ 4096, 1024, 2048, 512, 1 << 20 },
		{ MEMMIG_SIZE_NEVER, MEMMIG_SIZE_NEVER, 2048, 1536, 256 << 10 },
		{ 0, MEMMIG_SIZE_NEVER, 256, 100, 8192 },
		{ 300, 200, 100, 50, 700 },
		{ 64, 64, 64, 64, 64 },
	};
	const struct memmig_tuning saved = ctx.tuning;
	struct copy_case c = { .what = "copy_run unflagged", .flush = FLUSH_NOTHING };

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		struct memmig_tuning t = saved;

		t.vec_max = at[i][0];
		t.vec_wide_min = at[i][1];
		t.vec_wide_prim = memmig_prim_supported(&ctx.cpu, MEMMIG_PRIM_VEC_AVX2) ?
					  MEMMIG_PRIM_VEC_AVX2 : MEMMIG_PRIM_VEC_SSE2;
		t.movsb_min = at[i][2];
		t.movsq_min = at[i][3];
		t.nt_min = at[i][4];
		memmig_ctx_apply_tuning(&ctx, &t);
		for (size_t k = 0; k < 5; k++) {
			for (size_t d = 0; d < 3; d++) {
				if (at[i][k] == MEMMIG_SIZE_NEVER || at[i][k] + d < 1 ||
				    at[i][k] + d > BUF_MAX - 4 * LINE)
					continue;
				c.len = at[i][k] + d - 1;
				if (!c.len)
					continue;
				c.drains = memmig_prim_is_nt(memmig_policy_choose(
						   &ctx.cpu, &t, c.len, 0)) ? 1 : 0;
				run_case(HOW_RUN, &c);
			}
		}
		for (c.len = 1; c.len <= BUF_MAX - 4 * LINE; c.len *= 3) {
			c.drains = memmig_prim_is_nt(memmig_policy_choose(&ctx.cpu, &t,
									  c.len, 0)) ? 1 : 0;
			run_case(HOW_RUN, &c);
		}
	}
	memmig_ctx_apply_tuning(&ctx, &saved);
}

/* Batched units: one drain for the batch, after every flush. */
static void test_units(void)
{
	static const size_t lens[] = { MEMMIG_UNIT_SIZE, 3 * MEMMIG_UNIT_SIZE + 13 };
	struct copy_case c = { .what = "copy_units" };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (size_t k = 0; k < NDOFFS; k++) {
			c.len = lens[i];
			c.doff = doffs[k];
			c.flags = MEMMIG_COPY_PMEM;
			/* Unit boundaries inside a misaligned batch are
			 * partly written lines too: check the batch's ends. */
			c.flush = c.doff ? FLUSH_ENDS : FLUSH_PARTIAL;
			c.drains = 1;
			run_case(HOW_UNITS, &c);
			c.flags = MEMMIG_COPY_PMEM | MEMMIG_COPY_TEMPORAL;
			c.flush = FLUSH_ALL;
			run_case(HOW_UNITS, &c);
			c.flags = MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH;
			c.flush = FLUSH_NOTHING;
			c.drains = 0;
			run_case(HOW_UNITS, &c);
		}
	}
}

/* clwb keeps the line cached, so it wins; clflushopt next; clflush last. */
static void test_flush_choice(void)
{
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };

	cpu.features = MEMMIG_CPU_CLFLUSH | MEMMIG_CPU_CLFLUSHOPT | MEMMIG_CPU_CLWB;
	CU_ASSERT_EQUAL(memmig_flush_kind_for(&cpu), MEMMIG_FLUSH_CLWB);
	cpu.features = MEMMIG_CPU_CLFLUSH | MEMMIG_CPU_CLWB;
	CU_ASSERT_EQUAL(memmig_flush_kind_for(&cpu), MEMMIG_FLUSH_CLWB);
	cpu.features = MEMMIG_CPU_CLFLUSH | MEMMIG_CPU_CLFLUSHOPT;
	CU_ASSERT_EQUAL(memmig_flush_kind_for(&cpu), MEMMIG_FLUSH_CLFLUSHOPT);
	cpu.features = MEMMIG_CPU_CLFLUSH;
	CU_ASSERT_EQUAL(memmig_flush_kind_for(&cpu), MEMMIG_FLUSH_CLFLUSH);
	cpu.features = 0;
	CU_ASSERT_EQUAL(memmig_flush_kind_for(&cpu), MEMMIG_FLUSH_NONE);
}

static CU_TestInfo pmem_tests[] = {
	{ "NT primitives flush partial lines, drain once", test_nt_pmem },
	{ "temporal primitives flush every line", test_temporal_pmem },
	{ "copy_run with pmem, temporal, noflush", test_dispatched },
	{ "copy_units drains once per batch", test_units },
	{ "unflagged copy_run: the cached choice is the policy's", test_unflagged_by_len },
	{ "flush instruction: clwb > clflushopt > clflush", test_flush_choice },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "pmem", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pSetUpFunc = cunit_reports_setup,
	  .pTearDownFunc = cunit_reports_teardown, .pTests = pmem_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
