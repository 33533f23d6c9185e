/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * migrate-util.c - what the test-migrate-* programs share: the library's
 * log kept quiet, seeded fills and checksums, the kernel's view of pages
 * (move_pages(2) queries, /proc/self/pagemap frames), mappings of every
 * backing, report checks, suite set-up and main().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "migrate-util.h"

struct memmig_ctx *ctx;
bool pfn_ok;		/* pagemap gives page frame numbers (root) */
static uint64_t seed_next = 0x243f6a8885a308d3ULL;

/* ------------------------------------------------------------------ */
/* Library log: kept, not printed, so that expected errors stay quiet.  */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
char last_log[512];
static unsigned int log_count;

__attribute__((format(printf, 7, 0))) static void
log_keep(struct memmig_ctx *c, void *userdata, int priority, const char *file,
	 int line, const char *fn, const char *format, va_list args)
{
	pthread_mutex_lock(&log_lock);
	vsnprintf(last_log, sizeof(last_log), format, args);
	last_log[strcspn(last_log, "\n")] = '\0';
	log_count++;
	pthread_mutex_unlock(&log_lock);
}

unsigned int mt_log_mark(void)
{
	unsigned int n;

	pthread_mutex_lock(&log_lock);
	n = log_count;
	pthread_mutex_unlock(&log_lock);
	return n;
}

int mt_new_ctx(struct memmig_ctx **out)
{
	int rc = memmig_ctx_new(out);

	if (!rc)
		memmig_ctx_set_log_fn(*out, log_keep, NULL);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Data: word i of a fill is a function of (seed, i), so any part of it  */
/* can be regenerated to find where a checksum went wrong.              */

static inline uint64_t gen(uint64_t seed, uint64_t i)
{
	uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void mt_fill(void *p, uint64_t len, uint64_t seed, uint64_t first_word)
{
	uint64_t *w = p;

	for (uint64_t i = 0; i < len / 8; i++)
		w[i] = gen(seed, first_word + i);
}

/* Offset of the first word that differs from the fill, or -1. */
int64_t mt_first_bad(const void *p, uint64_t len, uint64_t seed,
		     uint64_t first_word)
{
	const uint64_t *w = p;

	for (uint64_t i = 0; i < len / 8; i++)
		if (w[i] != gen(seed, first_word + i))
			return (int64_t)(i * 8);
	return -1;
}

/* Four independent multiply chains: fast, and order dependent. */
uint64_t mt_csum(const void *p, uint64_t len)
{
	const uint64_t *w = p;
	uint64_t a = 1, b = 2, c = 3, d = 4;
	const uint64_t k = 0x9fb21c651e98df25ULL;

	for (uint64_t i = 0; i + 4 <= len / 8; i += 4) {
		a = (a ^ w[i]) * k;
		b = (b ^ w[i + 1]) * k;
		c = (c ^ w[i + 2]) * k;
		d = (d ^ w[i + 3]) * k;
	}
	return a ^ (b << 1 | b >> 63) ^ (c << 2 | c >> 62) ^ (d << 3 | d >> 61) ^ len;
}

uint64_t mt_new_seed(void)
{
	return seed_next = gen(seed_next, 7);
}

bool mt_all_zero(const void *p, uint64_t len)
{
	const uint64_t *w = p;

	for (uint64_t i = 0; i < len / 8; i++)
		if (w[i])
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* The kernel's view, read here without the library.                    */

static long sys_move_pages(int pid, unsigned long n, void **pages, const int *nodes,
			   int *status, int flags)
{
	return syscall(SYS_move_pages, pid, n, pages, nodes, status, flags);
}

/* Pages of the range that are present (on any node) and on node 0. */
int mt_count_present(const void *addr, uint64_t len, uint64_t *present,
		     uint64_t *on0)
{
	enum { BATCH = 4096 };
	static void *pages[BATCH];
	static int status[BATCH];
	uint64_t n = len / PAGE;

	*present = *on0 = 0;
	for (uint64_t first = 0; first < n; first += BATCH) {
		uint64_t k = n - first < BATCH ? n - first : BATCH;

		for (uint64_t i = 0; i < k; i++)
			pages[i] = (uint8_t *)addr + (first + i) * PAGE;
		if (sys_move_pages(0, k, pages, NULL, status, 0) < 0)
			return -errno;
		for (uint64_t i = 0; i < k; i++) {
			*present += status[i] >= 0;
			*on0 += status[i] == 0;
		}
	}
	return 0;
}

/* The page frame of every page (0: not present); malloc'd, or NULL. */
uint64_t *mt_pfns_read(const void *addr, uint64_t len)
{
	uint64_t n = len / PAGE, *v = malloc(n * sizeof(*v) + 1);
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	off_t off = (off_t)((uintptr_t)addr / PAGE * 8);

	if (fd < 0 || !v || pread(fd, v, n * 8, off) != (ssize_t)(n * 8)) {
		if (fd >= 0)
			close(fd);
		free(v);
		return NULL;
	}
	close(fd);
	for (uint64_t i = 0; i < n; i++)
		v[i] = v[i] >> 63 ? v[i] & ((1ULL << 55) - 1) : 0;
	return v;
}

/* AnonHugePages of the mappings inside [addr, addr + len); *exact is
 * false when a mapping reaches out of the range (merged with a neighbour). */
uint64_t mt_smaps_anon_huge(const void *addr, uint64_t len, bool *exact)
{
	uint64_t lo = (uintptr_t)addr, hi = lo + len, start = 0, end = 0, total = 0;
	bool inside = false;
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "re");

	*exact = true;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			inside = start >= lo && end <= hi;
			if (!inside && start < hi && end > lo)
				*exact = false;
		} else if (inside && sscanf(line, "AnonHugePages: %llu kB", &kb) == 1) {
			total += kb * 1024;
		}
	}
	fclose(f);
	return total;
}

/* ------------------------------------------------------------------ */
/* Memory to migrate.                                                   */

static const char *const kind_names[] = { "anon THP", "anon 4K", "memfd", "file" };
static const int kind_backing[] = {
	MEMMIG_BACKING_ANON, MEMMIG_BACKING_ANON, MEMMIG_BACKING_SHMEM,
	MEMMIG_BACKING_FILE,
};

void mt_mem_free(struct mem *m)
{
	if (m->map)
		munmap(m->map, m->len);
	if (m->fd >= 0)
		close(m->fd);
	if (m->path[0])
		unlink(m->path);
	memset(m, 0, sizeof(*m));
	m->fd = -1;
}

/* Writes the file's contents with pwrite(2), before it is mapped. */
static int file_write(int fd, uint64_t len, uint64_t seed)
{
	uint64_t chunk = 4 * MiB;
	uint8_t *buf = malloc(chunk);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (uint64_t off = 0; !rc && off < len; off += chunk) {
		uint64_t n = len - off < chunk ? len - off : chunk;

		mt_fill(buf, n, seed, off / 8);
		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
			rc = -EIO;
	}
	free(buf);
	return rc;
}

/*
 * A 2 MB-aligned mapping of len bytes of the kind, filled with a fresh
 * seed unless touch is false (then not one page is faulted in).
 */
int mt_mem_new(struct mem *m, int kind, uint64_t len, bool touch)
{
	uint8_t *res, *al;
	int rc = 0;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->kind = kind;
	m->len = len;
	m->seed = mt_new_seed();
	/* Charged, as a VMM's guest RAM is (the reserve serves only that). */
	res = mmap(NULL, len + UNIT, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		return -errno;
	al = (uint8_t *)(((uintptr_t)res + UNIT - 1) & ~(uintptr_t)(UNIT - 1));
	if (al > res)
		munmap(res, al - res);
	if (res + len + UNIT > al + len)
		munmap(al + len, res + len + UNIT - (al + len));
	m->map = al;
	if (kind == K_THP || kind == K_4K) {
		if (madvise(al, len, kind == K_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
			rc = -errno;
	} else {
		if (kind == K_MEMFD) {
			m->fd = memfd_create("test-migrate", MFD_CLOEXEC);
		} else {
			snprintf(m->path, sizeof(m->path), "/var/tmp/memmig-test-migrate.XXXXXX");
			m->fd = mkstemp(m->path);
			if (m->fd < 0)
				m->path[0] = '\0';
		}
		if (m->fd < 0 || ftruncate(m->fd, (off_t)len))
			rc = -errno;
		if (!rc && kind == K_FILE && touch)
			rc = file_write(m->fd, len, m->seed);
		if (!rc && mmap(al, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
				m->fd, 0) == MAP_FAILED)
			rc = -errno;
	}
	if (!rc && touch && kind != K_FILE)
		mt_fill(m->map, len, m->seed, 0);
	if (rc)
		mt_mem_free(m);
	return rc;
}

/* The bytes are the fill of m->seed: 0, or a failure naming the offset. */
bool mt_mem_intact(const struct mem *m, uint64_t sum, const char *what)
{
	int64_t bad;

	if (mt_csum(m->map, m->len) == sum)
		return true;
	bad = mt_first_bad(m->map, m->len, m->seed, 0);
	CUNIT_FAILF("%s: checksum changed; first bad byte at offset %" PRId64
		    " of %" PRIu64, what, bad, m->len);
	return false;
}

/* Still usable: a new fill reads back. */
void mt_mem_usable(struct mem *m, const char *what)
{
	m->seed = mt_new_seed();
	mt_fill(m->map, m->len, m->seed, 0);
	if (mt_first_bad(m->map, m->len, m->seed, 0) >= 0)
		CUNIT_FAILF("%s: memory does not read back what was written", what);
}

/* 2 MB-aligned units that [addr, addr + len) touches. */
static uint64_t units_of(uint64_t addr, uint64_t len)
{
	return (addr + len - 1) / UNIT - addr / UNIT + 1;
}

int mt_region_of(struct memmig_ctx *c, int pid, const void *addr, uint64_t len,
		 int backing, struct memmig_region **out)
{
	struct memmig_region_desc d = {
		.sz = sizeof(d), .pid = pid, .addr = (uintptr_t)addr, .len = len,
		.backing = backing,
	};

	return memmig_region_new(c, &d, out);
}

struct memmig_migrate_opts mt_opts_of(int strategy, unsigned int flags,
				      unsigned int workers)
{
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = 0, .strategy = strategy,
		.workers = workers, .flags = flags,
	};

	return o;
}

/* ------------------------------------------------------------------ */
/* Report checks.                                                       */

/*
 * The moved ranges are ascending, disjoint, coalesced, page aligned and
 * inside the job's range; returns their total, and whether page i is in
 * one through moved[] (npages entries) when it is not NULL.
 */
uint64_t mt_moved_ranges(const struct memmig_report *rep, uint64_t addr,
			 uint64_t len, bool *moved, const char *what)
{
	int n = memmig_report_moved_count(rep);
	uint64_t total = 0, prev_end = 0;

	if (moved)
		memset(moved, 0, len / PAGE * sizeof(*moved));
	for (int i = 0; i < n; i++) {
		uint64_t a, l;

		if (memmig_report_get_moved(rep, (unsigned int)i, &a, &l)) {
			CUNIT_FAILF("%s: get_moved(%d) failed", what, i);
			continue;
		}
		if (a % PAGE || l % PAGE || !l || a < addr || a + l > addr + len ||
		    (i && a <= prev_end))
			CUNIT_FAILF("%s: moved range %d [%#" PRIx64 ", +%#" PRIx64
				    ") is not an ordered, disjoint, coalesced part of "
				    "[%#" PRIx64 ", +%#" PRIx64 ")",
				    what, i, a, l, addr, len);
		else if (moved)
			for (uint64_t p = (a - addr) / PAGE; p < (a + l - addr) / PAGE; p++)
				moved[p] = true;
		prev_end = a + l;
		total += l;
	}
	CU_ASSERT_EQUAL(memmig_report_get_moved(rep, (unsigned int)n, NULL, NULL), -EINVAL);
	return total;
}

/* Pages whose frame changed are exactly the pages reported moved. */
void mt_check_frames(const struct memmig_report *rep, const void *addr, uint64_t len,
		     const uint64_t *before, const char *what)
{
	uint64_t n = len / PAGE, wrong = 0, first = 0, *after;
	bool *moved;

	if (!pfn_ok || !before)
		return;
	after = mt_pfns_read(addr, len);
	moved = calloc(n, sizeof(*moved));
	if (!after || !moved) {
		CUNIT_FAILF("%s: cannot read page frames", what);
		goto out;
	}
	mt_moved_ranges(rep, (uintptr_t)addr, len, moved, what);
	for (uint64_t i = 0; i < n; i++)
		if ((before[i] != after[i]) != moved[i] && !wrong++)
			first = i;
	if (wrong)
		CUNIT_FAILF("%s: %" PRIu64 " pages disagree between the moved ranges and "
			    "their page frames, the first at offset %#" PRIx64
			    " (frame %#" PRIx64 " -> %#" PRIx64 ", reported %s)",
			    what, wrong, (uint64_t)(first * PAGE), before[first], after[first],
			    moved[first] ? "moved" : "not moved");
	else
		CU_PASS("moved ranges match the page frames");
out:
	free(after);
	free(moved);
}

void mt_check_report(const struct memmig_report *rep, const struct expect *e,
		     const char *what)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	uint64_t before = 0, after = 0;

	if (!rep) {
		CUNIT_FAILF("%s: no report", what);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ(what, "result", (int64_t)s.result, (int64_t)e->result);
	EXPECT_EQ(what, "strategy", s.strategy, e->strategy);
	EXPECT_EQ(what, "target_node", s.target_node, 0);
	EXPECT_EQ(what, "bytes_total", s.bytes_total, e->len);
	EXPECT_EQ(what, "units_total", s.units_total, units_of(e->addr, e->len));
	EXPECT_EQ(what, "bytes_moved", s.bytes_moved, e->moved);
	EXPECT_EQ(what, "pages_failed", s.pages_failed, e->failed);
	EXPECT_EQ(what, "pages_verified_on_target", s.pages_verified_on_target,
		  e->present);
	EXPECT_EQ(what, "ENOENT pages", memmig_report_errno_pages(rep, ENOENT),
		  e->enoent);
	CU_ASSERT(s.units_thp <= s.units_total);
	CU_ASSERT(s.workers >= 1);
	CU_ASSERT(s.total_s >= 0 && s.prepare_s >= 0 && s.copy_s >= 0 && s.gbps >= 0);
	CU_ASSERT_EQUAL(memmig_report_max_node(rep), 0);
	CU_ASSERT_EQUAL(memmig_report_node_pages(rep, 0, &before, &after), 0);
	EXPECT_EQ(what, "node 0 pages before", before, e->present);
	EXPECT_EQ(what, "node 0 pages after", after, e->present);
	EXPECT_EQ(what, "sum of the moved ranges",
		  mt_moved_ranges(rep, e->addr, e->len, NULL, what), s.bytes_moved);
	if (e->moved == e->len && e->len) {
		uint64_t a = 0, l = 0;

		EXPECT_EQ(what, "moved ranges", memmig_report_moved_count(rep), 1);
		memmig_report_get_moved(rep, 0, &a, &l);
		EXPECT_EQ(what, "moved range start", a, e->addr);
		EXPECT_EQ(what, "moved range length", l, e->len);
	}
	if (!e->failed)
		EXPECT_EQ(what, "failed ranges", memmig_report_failed_count(rep), 0);
}

/* ------------------------------------------------------------------ */
/* Suite set-up.                                                        */

int mt_suite_init(void)
{
	struct mem m;

	/* The injection hooks and the log level come from the environment
	 * too: start from a known one. */
	unsetenv("MEMMIG_FAULT");
	unsetenv("MEMMIG_LOG");
	if (mt_new_ctx(&ctx) < 0)
		return 1;
	if (!mt_mem_new(&m, K_4K, 64 * 1024, true)) {
		uint64_t *f = mt_pfns_read(m.map, m.len);

		pfn_ok = f && f[0];
		free(f);
		mt_mem_free(&m);
	}
	return 0;
}

int mt_suite_cleanup(void)
{
	memmig_ctx_unref(ctx);
	ctx = NULL;
	return 0;
}

/* Every test starts and ends without armed faults. */
void mt_disarm(void)
{
	for (int p = 0; p < MEMMIG_FAULT_COUNT; p++)
		memmig_ctx_set_fault(ctx, p, 0, ENOMEM, 0);
}

/* ------------------------------------------------------------------ */
/* Migrations to node 0 that must move every byte intact.               */

void mt_run_case(const struct mcase *c)
{
	struct memmig_migrate_opts o = mt_opts_of(c->strategy, c->flags, c->workers);
	struct memmig_region_desc d = { .sz = sizeof(d) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, present, on0, present2, on02, *frames = NULL;
	bool copies = c->strategy == MEMMIG_STRATEGY_COPY && kind_backing[c->kind] ==
			MEMMIG_BACKING_ANON && (c->flags & MEMMIG_MIGRATE_FORCE);
	uint8_t *addr;
	char what[128];
	struct mem m;
	int rc;

	snprintf(what, sizeof(what), "%s %" PRIu64 " KiB at +%" PRIu64 " KiB, %s%s, "
		 "workers %u", kind_names[c->kind], c->len >> 10, c->off >> 10,
		 c->strategy == MEMMIG_STRATEGY_COPY ? "copy" : "kernel",
		 c->flags & MEMMIG_MIGRATE_FORCE ? "+force" : "", c->workers);
	rc = mt_mem_new(&m, c->kind, c->maplen, true);
	if (rc) {
		CUNIT_FAILF("%s: mapping: %s", what, strerror(-rc));
		return;
	}
	addr = m.map + c->off;
	sum = mt_csum(m.map, m.len);
	CU_ASSERT_EQUAL(mt_count_present(addr, c->len, &present, &on0), 0);
	EXPECT_EQ(what, "present pages before", present, c->len / PAGE);
	EXPECT_EQ(what, "pages on node 0 before", on0, present);
	if (pfn_ok)
		frames = mt_pfns_read(addr, c->len);

	rc = mt_region_of(ctx, 0, addr, c->len, MEMMIG_BACKING_AUTO, &r);
	if (rc) {
		CUNIT_FAILF("%s: region_new: %d (%s)", what, rc, last_log);
		goto out;
	}
	CU_ASSERT_EQUAL(memmig_region_get_desc(r, &d), 0);
	EXPECT_EQ(what, "backing", d.backing, kind_backing[c->kind]);
	CU_ASSERT(d.addr == (uintptr_t)addr && d.len == c->len && d.pid == 0);

	rc = memmig_migrate(r, &o, &rep);
	EXPECT_EQ(what, "migrate result", (int64_t)rc, 0);
	if (rc)
		printf("\n  %s: log: %s\n", what, last_log);
	mt_mem_intact(&m, sum, what);
	CU_ASSERT_EQUAL(mt_count_present(addr, c->len, &present2, &on02), 0);
	EXPECT_EQ(what, "present pages after", present2, present);
	EXPECT_EQ(what, "pages on node 0 after", on02, present);
	mt_check_report(rep, &(struct expect){
		.strategy = c->strategy, .addr = (uintptr_t)addr, .len = c->len,
		.present = present, .moved = copies ? c->len : 0,
	}, what);
	/* Copy + force swaps in new frames for every page; the kernel (and
	 * mbind) leave pages that are on the node where they are. */
	mt_check_frames(rep, addr, c->len, frames, what);
	mt_mem_usable(&m, what);
out:
	memmig_report_unref(rep);
	memmig_region_unref(r);
	free(frames);
	mt_mem_free(&m);
}

void mt_copy_all(struct memmig_ctx *c, struct mem *m, const struct memmig_migrate_opts *o,
		 const char *what)
{
	uint64_t sum = mt_csum(m->map, m->len), *frames = mt_pfns_read(m->map, m->len);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;

	CU_ASSERT_EQUAL_FATAL(mt_region_of(c, 0, m->map, m->len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, o, &rep), 0);
	mt_mem_intact(m, sum, what);
	mt_check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_COPY, .addr = (uintptr_t)m->map,
		.len = m->len, .present = m->len / PAGE, .moved = m->len,
	}, what);
	mt_check_frames(rep, m->map, m->len, frames, what);
	mt_mem_usable(m, what);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	free(frames);
}

/*
 * Every other page written, the others never touched: the units are not
 * all on the node, so move_pages(2) really runs; the absent pages come back
 * ENOENT, which is nothing to move, not a failure.
 */
int mt_mem_new_half(struct mem *m, uint64_t len, uint64_t *sum)
{
	int rc = mt_mem_new(m, K_4K, len, false);

	*sum = 0;
	for (uint64_t off = 0; !rc && off < len; off += 2 * PAGE) {
		mt_fill(m->map + off, PAGE, m->seed, off / 8);
		*sum = *sum * 31 + mt_csum(m->map + off, PAGE);
	}
	return rc;
}

bool mt_half_intact(const struct mem *m, uint64_t sum, const char *what)
{
	uint64_t s = 0;

	for (uint64_t off = 0; off < m->len; off += 2 * PAGE)
		s = s * 31 + mt_csum(m->map + off, PAGE);
	for (uint64_t off = PAGE; off < m->len; off += 2 * PAGE)
		if (!mt_all_zero(m->map + off, PAGE)) {
			CUNIT_FAILF("%s: untouched page at %#" PRIx64 " is not zero",
				    what, off);
			return false;
		}
	if (s != sum)
		CUNIT_FAILF("%s: checksum of the written pages changed", what);
	return s == sum;
}

/* ------------------------------------------------------------------ */
/* main() of every test-migrate-* program.                              */

/*
 * Runs the suites unless there is no node 0 with memory to migrate to
 * (skipped).  A context that cannot be made is a failure.
 */
int mt_main(CU_SuiteInfo *suites)
{
	struct memmig_node_info node = { .sz = sizeof(node) };
	struct memmig_topo *topo;
	struct memmig_ctx *c;
	int rc;

	rc = memmig_ctx_new(&c);
	if (rc < 0) {
		fprintf(stderr, "FAIL: memmig_ctx_new: %s\n", strerror(-rc));
		return 1;
	}
	rc = memmig_topo_new(c, &topo);
	if (!rc) {
		rc = memmig_topo_find_node(topo, 0, &node);
		memmig_topo_unref(topo);
	}
	memmig_ctx_unref(c);
	if (rc < 0)
		return cunit_skip("no NUMA node 0 with memory (a kernel without NUMA?)");
	return cunit_main(suites);
}
