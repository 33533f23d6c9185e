/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Descriptor tables: the template/NT path, the field-by-field slow path,
 * multi-threaded and lazy (per 1 GiB chunk) initialization must write the
 * same bytes, on random region sizes and offsets, 2 MB multiples or not;
 * every descriptor must hold its offset, node, a clean state, generation 0
 * and the right compound head/tail relation; state changes bump the
 * generation atomically and poison sticks; bad input is refused.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memmig.h"
#include "cunit-main.h"

#define PAGE MEMMIG_DESC_PAGE_SIZE
#define UNIT_PAGES 512UL
#define CHUNK_PAGES ((1UL << 30) / PAGE)
#define MAX_REPORTS 10

static struct memmig_ctx *ctx;
static bool build_forces_slow;

static uint64_t prng_next(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dULL;
}

static struct memmig_desc_table *table_new(uint64_t base, uint64_t pages,
					   unsigned int threads,
					   unsigned int flags)
{
	struct memmig_desc_opts o = {
		.sz = sizeof(o), .base = base, .len = pages * PAGE, .node = 3,
		.threads = threads, .flags = flags,
	};
	struct memmig_desc_table *t = NULL;
	int rc = memmig_desc_table_new(ctx, &o, &t);

	if (rc < 0)
		CUNIT_FAILF("table %#llx+%llu pages, flags %#x: %s",
			    (unsigned long long)base, (unsigned long long)pages,
			    flags, strerror(-rc));
	return t;
}

static int table_path(struct memmig_desc_table *t)
{
	struct memmig_desc_table_info i = { .sz = sizeof(i) };

	CU_ASSERT_EQUAL(memmig_desc_table_get_info(t, &i), 0);
	return i.path;
}

/* An eager table is one array: the first descriptor's address is its start. */
static const struct memmig_desc *table_array(struct memmig_desc_table *t)
{
	const struct memmig_desc *d = NULL;

	CU_ASSERT_EQUAL(memmig_desc_get(t, 0, &d), 0);
	return d;
}

static void assert_same(struct memmig_desc_table *a, struct memmig_desc_table *b,
			const char *what)
{
	uint64_t n = memmig_desc_table_count(a);
	const struct memmig_desc *x = table_array(a), *y = table_array(b);

	CU_ASSERT_EQUAL_FATAL(n, memmig_desc_table_count(b));
	if (memcmp(x, y, n * sizeof(*x)) == 0)
		return;
	for (uint64_t i = 0; i < n; i++)
		if (memcmp(&x[i], &y[i], sizeof(*x))) {
			CUNIT_FAILF("%s: descriptor %llu of %llu differs", what,
				    (unsigned long long)i, (unsigned long long)n);
			return;
		}
}

/* Every descriptor against the definition, not against the other path. */
static void check_relations(struct memmig_desc_table *t, uint64_t base)
{
	uint64_t n = memmig_desc_table_count(t);
	const struct memmig_desc *d = table_array(t);
	unsigned int reports = 0;

	for (uint64_t i = 0; i < n && reports < MAX_REPORTS; i++) {
		uint64_t off = base + i * PAGE;
		uint64_t unit = off & ~(uint64_t)(MEMMIG_UNIT_SIZE - 1);
		uint64_t head = (unit - base) / PAGE;
		bool in_unit = unit >= base && head + UNIT_PAGES <= n;
		const struct memmig_desc *e = &d[i];
		bool ok = e->offset == off && e->node == 3 &&
			  e->state == MEMMIG_DESC_CLEAN && e->generation == 0 &&
			  !e->reserved0 && !e->reserved[0] && !e->reserved[1] &&
			  !e->reserved[2] && !e->reserved[3];

		if (!in_unit)
			ok = ok && e->head == i && e->order == 0 && e->flags == 0;
		else if (i == head)
			ok = ok && e->head == i && e->order == 9 &&
			     e->flags == MEMMIG_DESC_HEAD;
		else
			ok = ok && e->head == head && e->order == 9 &&
			     e->flags == MEMMIG_DESC_TAIL &&
			     d[e->head].flags == MEMMIG_DESC_HEAD;
		if (!ok && reports++ < MAX_REPORTS)
			CUNIT_FAILF("base %#llx: descriptor %llu: offset %#llx head %llu "
				    "flags %#x order %u state %u gen %u",
				    (unsigned long long)base, (unsigned long long)i,
				    (unsigned long long)e->offset,
				    (unsigned long long)e->head, e->flags, e->order,
				    e->state, e->generation);
	}
}

/* The context's descriptor stores and path (memmig_tuning). */
static int set_desc_tuning(int store, int slow)
{
	struct memmig_tuning t = { .sz = sizeof(t) };
	int rc = memmig_ctx_get_tuning(ctx, &t);

	t.desc_store = store;
	t.desc_slow = slow;
	return rc < 0 ? rc : memmig_ctx_set_tuning(ctx, &t);
}

static int table_store(struct memmig_desc_table *t)
{
	struct memmig_desc_table_info i = { .sz = sizeof(i) };

	CU_ASSERT_EQUAL(memmig_desc_table_get_info(t, &i), 0);
	return i.store;
}

static int suite_init(void)
{
	struct memmig_desc_opts o = { .sz = sizeof(o), .len = PAGE, .threads = 1 };
	struct memmig_desc_table_info i = { .sz = sizeof(i) };
	struct memmig_desc_table *t;
	int rc;

	/* The test chooses the paths and stores; a caller's environment or
	 * calibration file must not. */
	unsetenv("MEMMIG_DESC_SLOW");
	unsetenv("MEMMIG_DESC_STORE");
	unsetenv("MEMMIG_DESC_PATH");
	rc = memmig_ctx_new(&ctx);
	if (rc < 0) {
		fprintf(stderr, "memmig_ctx_new: %s\n", strerror(-rc));
		return 1;
	}
	if (set_desc_tuning(MEMMIG_DESC_STORE_NT, 0) < 0)
		return 1;
	if (memmig_desc_table_new(ctx, &o, &t) < 0 ||
	    memmig_desc_table_get_info(t, &i) < 0)
		return 1;
	build_forces_slow = i.path == MEMMIG_DESC_PATH_SLOW;
	if (build_forces_slow)
		printf("\n(debug or sanitizer build: every table takes the slow path)\n");
	memmig_desc_table_unref(t);
	return 0;
}

static int suite_cleanup(void)
{
	memmig_ctx_unref(ctx);
	return 0;
}

static void test_layout(void)
{
	CU_ASSERT_EQUAL(sizeof(struct memmig_desc), 64);
	CU_ASSERT_EQUAL(_Alignof(struct memmig_desc), 64);
	/* set_state updates generation and state as one 8-byte word */
	CU_ASSERT_EQUAL(offsetof(struct memmig_desc, generation) % 8, 0);
	CU_ASSERT_EQUAL(offsetof(struct memmig_desc, state),
			offsetof(struct memmig_desc, generation) + 4);
}

/* Random regions: offsets 2 MB-aligned or not, lengths any page count. */
static void test_paths_identical(void)
{
	uint64_t seed = 0x6465736331ULL;

	for (int k = 0; k < 24; k++) {
		uint64_t base = (prng_next(&seed) % (1ULL << 28)) * PAGE;
		uint64_t pages = 1 + prng_next(&seed) % 20000;
		unsigned int threads = 1 + prng_next(&seed) % 4;
		struct memmig_desc_table *fast, *slow;
		char what[96];

		if (k % 3 == 0)
			base &= ~(uint64_t)(MEMMIG_UNIT_SIZE - 1);
		if (k % 4 == 1)
			pages = (pages / UNIT_PAGES + 1) * UNIT_PAGES;
		fast = table_new(base, pages, threads, 0);
		slow = table_new(base, pages, 1, MEMMIG_DESC_SLOW);
		if (!fast || !slow)
			break;
		if (!build_forces_slow)
			CU_ASSERT_EQUAL(table_path(fast), MEMMIG_DESC_PATH_TEMPLATE);
		CU_ASSERT_EQUAL(table_path(slow), MEMMIG_DESC_PATH_SLOW);
		snprintf(what, sizeof(what), "base %#llx, %llu pages, %u threads",
			 (unsigned long long)base, (unsigned long long)pages, threads);
		assert_same(fast, slow, what);
		check_relations(fast, base);
		memmig_desc_table_unref(fast);
		memmig_desc_table_unref(slow);
	}
}

/*
 * Both template stores write the slow path's bytes, eager and lazy, and
 * the table says which ran; the tuning's desc_slow takes the slow path.
 */
static void test_stores_identical(void)
{
	static const int stores[] = { MEMMIG_DESC_STORE_NT, MEMMIG_DESC_STORE_TEMPORAL };
	uint64_t base = 0x12345000, pages = 5 * UNIT_PAGES + 300;
	struct memmig_desc_table *ref = table_new(base, pages, 1, MEMMIG_DESC_SLOW);
	bool x86 = memmig_test_x86_build();

	CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
	CU_ASSERT_EQUAL(table_store(ref), MEMMIG_DESC_STORE_TEMPORAL);
	for (size_t k = 0; k < 2; k++) {
		struct memmig_desc_table *t;
		const struct memmig_desc *d;

		CU_ASSERT_EQUAL_FATAL(set_desc_tuning(stores[k], 0), 0);
		for (unsigned int threads = 1; threads <= 3; threads += 2) {
			t = table_new(base, pages, threads, 0);
			CU_ASSERT_PTR_NOT_NULL_FATAL(t);
			if (!build_forces_slow) {
				CU_ASSERT_EQUAL(table_path(t), MEMMIG_DESC_PATH_TEMPLATE);
				/* No NT stores in portable C. */
				CU_ASSERT_EQUAL(table_store(t), x86 ? stores[k] :
						MEMMIG_DESC_STORE_TEMPORAL);
			}
			assert_same(t, ref, stores[k] ? "temporal stores" : "NT stores");
			memmig_desc_table_unref(t);
		}
		/* Lazy: the chunk initialized on first use, with these stores. */
		t = table_new(base, pages, 1, MEMMIG_DESC_LAZY);
		CU_ASSERT_PTR_NOT_NULL_FATAL(t);
		CU_ASSERT_EQUAL(memmig_desc_get(t, pages - 1, &d), 0);
		assert_same(t, ref, "lazy");
		if (!build_forces_slow)
			CU_ASSERT_EQUAL(table_store(t), x86 ? stores[k] :
					MEMMIG_DESC_STORE_TEMPORAL);
		memmig_desc_table_unref(t);
	}
	/* The tuning's slow path, whatever the stores. */
	CU_ASSERT_EQUAL(set_desc_tuning(MEMMIG_DESC_STORE_NT, 1), 0);
	{
		struct memmig_desc_table *t = table_new(base, pages, 2, 0);

		CU_ASSERT_PTR_NOT_NULL_FATAL(t);
		CU_ASSERT_EQUAL(table_path(t), MEMMIG_DESC_PATH_SLOW);
		CU_ASSERT_EQUAL(table_store(t), MEMMIG_DESC_STORE_TEMPORAL);
		assert_same(t, ref, "tuned slow path");
		memmig_desc_table_unref(t);
	}
	CU_ASSERT_EQUAL(set_desc_tuning(MEMMIG_DESC_STORE_NT, 0), 0);
	memmig_desc_table_unref(ref);
}

/*
 * A range that probes both stores (desc_probe_min 0: every range) writes
 * the slow path's bytes, its stores changing every few 8 MiB segments in
 * the middle of a unit (an unaligned base), on one thread and on three.
 */
static void test_probing_identical(void)
{
	uint64_t base = 0x12345000, pages = 10 * (8UL << 20) / 64 + 3 * UNIT_PAGES + 77;
	struct memmig_desc_table *ref = table_new(base, pages, 1, MEMMIG_DESC_SLOW);
	struct memmig_tuning t = { .sz = sizeof(t) }, saved = { .sz = sizeof(saved) };
	static const int stores[] = { MEMMIG_DESC_STORE_NT, MEMMIG_DESC_STORE_TEMPORAL };

	CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
	CU_ASSERT_EQUAL_FATAL(memmig_ctx_get_tuning(ctx, &saved), 0);
	for (size_t k = 0; k < 2; k++) {
		t = saved;
		t.desc_store = stores[k];
		t.desc_slow = 0;
		t.desc_probe_min = 0;
		CU_ASSERT_EQUAL_FATAL(memmig_ctx_set_tuning(ctx, &t), 0);
		for (unsigned int threads = 1; threads <= 3; threads += 2) {
			struct memmig_desc_table *d = table_new(base, pages, threads, 0);
			char what[64];

			CU_ASSERT_PTR_NOT_NULL_FATAL(d);
			snprintf(what, sizeof(what), "probing from %s, %u thread(s)",
				 stores[k] ? "temporal" : "NT", threads);
			assert_same(d, ref, what);
			/* Reset probes again over what is there. */
			CU_ASSERT_EQUAL(memmig_desc_table_reset(d, threads, 0), 0);
			assert_same(d, ref, what);
			memmig_desc_table_unref(d);
		}
	}
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &saved), 0);
	check_relations(ref, base);
	memmig_desc_table_unref(ref);
}

static void test_threads_identical(void)
{
	/* An unaligned base: units straddle the threads' shares. */
	uint64_t base = 0x12345000, pages = 3 * UNIT_PAGES * 7 + 77;
	struct memmig_desc_table *ref = table_new(base, pages, 1, MEMMIG_DESC_SLOW);
	static const unsigned int threads[] = { 1, 2, 3, 7, 64 };

	for (size_t k = 0; ref && k < sizeof(threads) / sizeof(threads[0]); k++) {
		for (unsigned int slow = 0; slow <= MEMMIG_DESC_SLOW; slow += MEMMIG_DESC_SLOW) {
			struct memmig_desc_table *t = table_new(base, pages, threads[k], slow);
			char what[64];

			if (!t)
				continue;
			snprintf(what, sizeof(what), "%u threads, flags %#x", threads[k], slow);
			assert_same(t, ref, what);
			memmig_desc_table_unref(t);
		}
	}
	if (ref)
		check_relations(ref, base);
	memmig_desc_table_unref(ref);
}

struct getter {
	struct memmig_desc_table *t;
	uint64_t seed;
	int failures;
};

static void *get_random(void *arg)
{
	struct getter *g = arg;
	uint64_t n = memmig_desc_table_count(g->t);

	for (int k = 0; k < 2000; k++) {
		uint64_t i = prng_next(&g->seed) % n;
		const struct memmig_desc *d;

		if (memmig_desc_get(g->t, i, &d) || d->offset != i * PAGE + 0x7000)
			g->failures++;
	}
	return NULL;
}

/* Lazy chunks initialized by racing threads, then the rest by one. */
static void test_lazy_identical(void)
{
	uint64_t base = 0x7000, pages = 2 * CHUNK_PAGES + CHUNK_PAGES / 2 + 333;
	struct memmig_desc_table *lazy = table_new(base, pages, 1, MEMMIG_DESC_LAZY);
	struct memmig_desc_table *ref = table_new(base, pages, 2, MEMMIG_DESC_SLOW);
	struct memmig_desc_table_info i = { .sz = sizeof(i) };
	struct getter g[4];
	pthread_t tid[4];
	const struct memmig_desc *d;

	if (!lazy || !ref)
		goto out;
	CU_ASSERT_EQUAL(memmig_desc_table_get_info(lazy, &i), 0);
	CU_ASSERT_EQUAL(i.chunks, 3);
	CU_ASSERT_EQUAL(i.chunks_ready, 0);
	CU_ASSERT_EQUAL(i.path, MEMMIG_DESC_PATH_NONE);
	for (int k = 0; k < 4; k++) {
		g[k] = (struct getter){ lazy, 0x1234 + k, 0 };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&tid[k], NULL, get_random, &g[k]), 0);
	}
	for (int k = 0; k < 4; k++) {
		pthread_join(tid[k], NULL);
		CU_ASSERT_EQUAL(g[k].failures, 0);
	}
	/* Every chunk through its own first get, then one array to compare. */
	for (uint64_t c = 0; c < pages; c += CHUNK_PAGES)
		CU_ASSERT_EQUAL(memmig_desc_get(lazy, c, &d), 0);
	CU_ASSERT_EQUAL(memmig_desc_table_get_info(lazy, &i), 0);
	CU_ASSERT_EQUAL(i.chunks_ready, 3);
	CU_ASSERT_EQUAL(i.path, build_forces_slow ? MEMMIG_DESC_PATH_SLOW :
						    MEMMIG_DESC_PATH_TEMPLATE);
	assert_same(lazy, ref, "lazy");
	check_relations(lazy, base);
out:
	memmig_desc_table_unref(lazy);
	memmig_desc_table_unref(ref);
}

static void test_lazy_one_chunk(void)
{
	struct memmig_desc_table *t = table_new(0, 3 * CHUNK_PAGES, 1, MEMMIG_DESC_LAZY);
	struct memmig_desc_table_info i = { .sz = sizeof(i) };
	const struct memmig_desc *d;

	if (!t)
		return;
	CU_ASSERT_EQUAL(memmig_desc_get(t, CHUNK_PAGES + 5, &d), 0);
	CU_ASSERT_EQUAL(d->offset, (CHUNK_PAGES + 5) * PAGE);
	CU_ASSERT_EQUAL(d->head, CHUNK_PAGES);
	CU_ASSERT_EQUAL(memmig_desc_table_get_info(t, &i), 0);
	CU_ASSERT_EQUAL(i.chunks_ready, 1);
	/* set_state initializes its chunk too */
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, 3 * CHUNK_PAGES - 1,
					      MEMMIG_DESC_DIRTY, NULL), 0);
	CU_ASSERT_EQUAL(memmig_desc_table_get_info(t, &i), 0);
	CU_ASSERT_EQUAL(i.chunks_ready, 2);
	memmig_desc_table_unref(t);
}

static void test_state(void)
{
	struct memmig_desc_table *t = table_new(MEMMIG_UNIT_SIZE, 1024, 1, 0);
	const struct memmig_desc *d;
	uint32_t gen = 0;

	if (!t)
		return;
	CU_ASSERT_EQUAL(memmig_desc_get(t, 700, &d), 0);
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, 700, MEMMIG_DESC_DIRTY, &gen), 0);
	CU_ASSERT_EQUAL(gen, 1);
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, 700, MEMMIG_DESC_IN_FLIGHT, &gen), 0);
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, 700, MEMMIG_DESC_CLEAN, &gen), 0);
	CU_ASSERT_EQUAL(gen, 3);
	CU_ASSERT_EQUAL(d->state, MEMMIG_DESC_CLEAN);
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, 700, MEMMIG_DESC_POISONED, &gen), 0);
	CU_ASSERT_EQUAL(gen, 4);
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, 700, MEMMIG_DESC_CLEAN, &gen), -EHWPOISON);
	CU_ASSERT_EQUAL(d->state, MEMMIG_DESC_POISONED);
	CU_ASSERT_EQUAL(memmig_desc_get_state(t, 700), MEMMIG_DESC_POISONED);
	CU_ASSERT_EQUAL(memmig_desc_get_state(t, 701), MEMMIG_DESC_CLEAN);
	CU_ASSERT_EQUAL(memmig_desc_get_state(t, 1024), -ERANGE);
	CU_ASSERT_EQUAL(memmig_desc_get_state(NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(d->generation, 4);
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, 700, MEMMIG_DESC_POISONED, NULL), 0);
	CU_ASSERT_EQUAL(d->generation, 5);
	/* Nothing else changed: the neighbours, the head relation. */
	CU_ASSERT_EQUAL(d->head, 512);
	CU_ASSERT_EQUAL(d->offset, MEMMIG_UNIT_SIZE + 700 * PAGE);
	CU_ASSERT_EQUAL(d[1].generation, 0);
	CU_ASSERT_EQUAL(d[-1].generation, 0);
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, 700, MEMMIG_DESC_STATE_COUNT, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, 700, -1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, 1024, MEMMIG_DESC_DIRTY, NULL), -ERANGE);
	/* reset: fresh again */
	CU_ASSERT_EQUAL(memmig_desc_table_reset(t, 2, 0), 0);
	CU_ASSERT_EQUAL(d->state, MEMMIG_DESC_CLEAN);
	CU_ASSERT_EQUAL(d->generation, 0);
	check_relations(t, MEMMIG_UNIT_SIZE);
	memmig_desc_table_unref(t);
}

#define FLIPS 20000

static void *flip(void *arg)
{
	struct memmig_desc_table *t = arg;

	for (int k = 0; k < FLIPS; k++)
		memmig_desc_set_state(t, 9, k % 2 ? MEMMIG_DESC_CLEAN : MEMMIG_DESC_DIRTY, NULL);
	return NULL;
}

/* Two setters on one page lose no generation. */
/*
 * A lazy table may describe far more than this machine's memory: 64 TiB of
 * device (a 1 TiB table) registers, and using its last page costs one
 * 1 GiB chunk's descriptors (16 MiB), not the table.
 */
static void test_lazy_huge_region(void)
{
	const uint64_t pages = (64ULL << 40) / PAGE;
	struct memmig_desc_table_info i = { .sz = sizeof(i) };
	struct memmig_desc_table *t = table_new(0, pages, 1, MEMMIG_DESC_LAZY);
	const struct memmig_desc *d;

	if (!t)
		return;
	CU_ASSERT_EQUAL(memmig_desc_get(t, pages - 1, &d), 0);
	CU_ASSERT_EQUAL(d->offset, (pages - 1) * PAGE);
	CU_ASSERT_EQUAL(memmig_desc_set_state(t, pages - 1, MEMMIG_DESC_POISONED, NULL), 0);
	CU_ASSERT_EQUAL(memmig_desc_table_get_info(t, &i), 0);
	CU_ASSERT_EQUAL(i.chunks, 64 * 1024);
	CU_ASSERT_EQUAL(i.chunks_ready, 1);
	/* Lazy tables stay out of the hugetlb pool (it is the guests'). */
	CU_ASSERT_NOT_EQUAL(i.backing, MEMMIG_DESC_BACKING_HUGETLB);
	memmig_desc_table_unref(t);
}

/* Only device memory gets a table: an anonymous region has none. */
static void test_region_table(void)
{
	struct memmig_region_desc rd = { .sz = sizeof(rd), .len = 4 * PAGE };
	struct memmig_desc_table *t = NULL;
	struct memmig_region *r = NULL;
	void *p = mmap(NULL, rd.len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CU_ASSERT_FATAL(p != MAP_FAILED);
	rd.addr = (uintptr_t)p;
	CU_ASSERT_EQUAL_FATAL(memmig_region_new(ctx, &rd, &r), 0);
	CU_ASSERT_EQUAL(memmig_region_get_table(r, &t), -ENOENT);
	CU_ASSERT_PTR_NULL(t);
	CU_ASSERT_EQUAL(memmig_region_get_table(NULL, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_region_get_table(r, NULL), -EINVAL);
	memmig_region_unref(r);
	munmap(p, rd.len);
}

static void test_state_concurrent(void)
{
	struct memmig_desc_table *t = table_new(0, 16, 1, 0);
	const struct memmig_desc *d;
	pthread_t a, b;

	if (!t)
		return;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&a, NULL, flip, t), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&b, NULL, flip, t), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	CU_ASSERT_EQUAL(memmig_desc_get(t, 9, &d), 0);
	CU_ASSERT_EQUAL(d->generation, 2 * FLIPS);
	memmig_desc_table_unref(t);
}

static void test_env_slow(void)
{
	static const struct { const char *value; bool slow; } cases[] = {
		{ "1", true }, { "yes", true }, { "0", false }, { "", false },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct memmig_desc_table_info i = { .sz = sizeof(i) };
		struct memmig_desc_table *t;
		bool slow = cases[k].slow || build_forces_slow;

		setenv("MEMMIG_DESC_SLOW", cases[k].value, 1);
		t = table_new(0, 600, 1, 0);
		unsetenv("MEMMIG_DESC_SLOW");
		if (!t)
			continue;
		CU_ASSERT_EQUAL(memmig_desc_table_get_info(t, &i), 0);
		if (i.path != (slow ? MEMMIG_DESC_PATH_SLOW : MEMMIG_DESC_PATH_TEMPLATE) ||
		    !(i.flags & MEMMIG_DESC_SLOW) != !slow)
			CUNIT_FAILF("MEMMIG_DESC_SLOW=%s: path %d flags %#x",
				    cases[k].value, i.path, i.flags);
		/* a reset without the flag stays on the forced path */
		CU_ASSERT_EQUAL(memmig_desc_table_reset(t, 1, 0), 0);
		CU_ASSERT_EQUAL(table_path(t), slow ? MEMMIG_DESC_PATH_SLOW :
						      MEMMIG_DESC_PATH_TEMPLATE);
		memmig_desc_table_unref(t);
	}
}

static void test_info(void)
{
	struct memmig_desc_table *t = table_new(0x3000, 1000, 2, 0);
	struct memmig_desc_table_info i = { .sz = sizeof(i) };

	if (!t)
		return;
	CU_ASSERT_EQUAL(memmig_desc_table_get_info(t, &i), 0);
	CU_ASSERT_EQUAL(i.count, 1000);
	CU_ASSERT_EQUAL(i.base, 0x3000);
	CU_ASSERT_EQUAL(i.len, 1000 * PAGE);
	CU_ASSERT_EQUAL(i.node, 3);
	CU_ASSERT_EQUAL(i.chunks, 1);
	CU_ASSERT_EQUAL(i.chunks_ready, 1);
	CU_ASSERT(i.table_bytes >= 1000 * 64 && i.table_bytes % MEMMIG_UNIT_SIZE == 0);
	CU_ASSERT(i.backing == MEMMIG_DESC_BACKING_HUGETLB ||
		  i.backing == MEMMIG_DESC_BACKING_THP ||
		  i.backing == MEMMIG_DESC_BACKING_PAGES);
	CU_ASSERT_PTR_EQUAL(memmig_desc_table_ref(t), t);
	memmig_desc_table_unref(t);
	CU_ASSERT_EQUAL(memmig_desc_table_count(t), 1000);
	memmig_desc_table_unref(t);
	CU_ASSERT_EQUAL(memmig_desc_table_count(NULL), 0);
}

static int try_new(uint64_t base, uint64_t len, unsigned int flags, size_t sz)
{
	struct memmig_desc_opts o = { .sz = sz, .base = base, .len = len, .flags = flags };
	struct memmig_desc_table *t = (void *)&o;	/* must stay untouched */
	int rc = memmig_desc_table_new(ctx, &o, &t);

	if (rc == 0)
		memmig_desc_table_unref(t);
	else
		CU_ASSERT_PTR_EQUAL(t, (void *)&o);
	return rc;
}

static void test_bad_input(void)
{
	struct memmig_desc_opts o = { .sz = sizeof(o), .len = PAGE };
	struct memmig_desc_table *t;
	const struct memmig_desc *d;
	struct memmig_desc_table_info i = { .sz = sizeof(i) };

	memmig_ctx_set_log_priority(ctx, 0);	/* expected errors */
	CU_ASSERT_EQUAL(memmig_desc_table_new(NULL, &o, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_desc_table_new(ctx, NULL, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_desc_table_new(ctx, &o, NULL), -EINVAL);
	CU_ASSERT_EQUAL(try_new(0, 0, 0, sizeof(o)), -EINVAL);
	CU_ASSERT_EQUAL(try_new(0, PAGE + 1, 0, sizeof(o)), -EINVAL);
	CU_ASSERT_EQUAL(try_new(100, PAGE, 0, sizeof(o)), -EINVAL);
	CU_ASSERT_EQUAL(try_new(0, PAGE, 1u << 7, sizeof(o)), -EINVAL);
	CU_ASSERT_EQUAL(try_new(UINT64_MAX - PAGE + 1, PAGE, 0, sizeof(o)), -EINVAL);
	CU_ASSERT_EQUAL(try_new(UINT64_MAX & ~(PAGE - 1), 2 * PAGE, 0, sizeof(o)), -EINVAL);
	CU_ASSERT_EQUAL(try_new(0, 1ULL << 62, 0, sizeof(o)), -ENOMEM);
	CU_ASSERT_EQUAL(try_new(0, PAGE, 0, 4), -EINVAL);
	/* an older caller's smaller struct: the rest takes the defaults */
	CU_ASSERT_EQUAL(try_new(0, PAGE, 0, offsetof(struct memmig_desc_opts, threads)), 0);
	memmig_ctx_set_log_priority(ctx, 3);

	CU_ASSERT_EQUAL_FATAL(memmig_desc_table_new(ctx, &o, &t), 0);
	CU_ASSERT_EQUAL(memmig_desc_get(NULL, 0, &d), -EINVAL);
	CU_ASSERT_EQUAL(memmig_desc_get(t, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_desc_get(t, 1, &d), -ERANGE);
	CU_ASSERT_EQUAL(memmig_desc_get(t, UINT64_MAX, &d), -ERANGE);
	CU_ASSERT_EQUAL(memmig_desc_set_state(NULL, 0, MEMMIG_DESC_DIRTY, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_desc_table_reset(NULL, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_desc_table_reset(t, 1, MEMMIG_DESC_LAZY), -EINVAL);
	CU_ASSERT_EQUAL(memmig_desc_table_get_info(NULL, &i), -EINVAL);
	CU_ASSERT_EQUAL(memmig_desc_table_get_info(t, NULL), -EINVAL);
	memmig_desc_table_unref(t);
	memmig_desc_table_unref(NULL);
	CU_ASSERT_PTR_NULL(memmig_desc_table_ref(NULL));
}

static CU_TestInfo desc_tests[] = {
	{ "regions: only device memory has a table", test_region_table },
	{ "lazy: a 64 TiB region on this machine", test_lazy_huge_region },
	{ "descriptor layout: 64 bytes, line-aligned", test_layout },
	{ "template and slow paths identical, random regions", test_paths_identical },
	{ "NT and temporal stores identical, tuned slow path", test_stores_identical },
	{ "1..64 threads identical to one", test_threads_identical },
	{ "stores probed while writing: identical bytes", test_probing_identical },
	{ "lazy chunks from racing threads identical", test_lazy_identical },
	{ "lazy: only the chunk used is initialized", test_lazy_one_chunk },
	{ "state changes, generation, sticky poison, reset", test_state },
	{ "concurrent state changes lose no generation", test_state_concurrent },
	{ "MEMMIG_DESC_SLOW forces the slow path", test_env_slow },
	{ "table info, ref and count", test_info },
	{ "bad input", test_bad_input },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "desc", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pTests = desc_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
