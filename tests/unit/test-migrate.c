/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The migration engine on real memory: regions of every backing, both
 * strategies, jobs with progress and cancel, injected failures, reserves,
 * other processes and bad input.  Every migration fills its memory with a
 * position-keyed PRNG first and checks the bytes after; where it matters,
 * the page frames (/proc/self/pagemap) say independently of the library
 * which pages were really copied and swapped, and move_pages(2) queries say
 * which were present.
 *
 * The machine may have one NUMA node only: migrations go to node 0, with
 * MEMMIG_MIGRATE_FORCE where the copy strategy must really copy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "memmig.h"
#include "cunit-main.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define UNIT ((uint64_t)MEMMIG_UNIT_SIZE)
#define PAGE 4096ULL
#define NOBODY 65534

static struct memmig_ctx *ctx;
static bool pfn_ok;		/* pagemap gives page frame numbers (root) */
static uint64_t seed_next = 0x243f6a8885a308d3ULL;

/* ------------------------------------------------------------------ */
/* Library log: kept, not printed, so that expected errors stay quiet.  */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_log[512];
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

static unsigned int log_mark(void)
{
	unsigned int n;

	pthread_mutex_lock(&log_lock);
	n = log_count;
	pthread_mutex_unlock(&log_lock);
	return n;
}

static int new_ctx(struct memmig_ctx **out)
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

static void fill(void *p, uint64_t len, uint64_t seed, uint64_t first_word)
{
	uint64_t *w = p;

	for (uint64_t i = 0; i < len / 8; i++)
		w[i] = gen(seed, first_word + i);
}

/* Offset of the first word that differs from the fill, or -1. */
static int64_t first_bad(const void *p, uint64_t len, uint64_t seed,
			 uint64_t first_word)
{
	const uint64_t *w = p;

	for (uint64_t i = 0; i < len / 8; i++)
		if (w[i] != gen(seed, first_word + i))
			return (int64_t)(i * 8);
	return -1;
}

/* Four independent multiply chains: fast, and order dependent. */
static uint64_t csum(const void *p, uint64_t len)
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

static uint64_t new_seed(void)
{
	return seed_next = gen(seed_next, 7);
}

static bool all_zero(const void *p, uint64_t len)
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
static int count_present(const void *addr, uint64_t len, uint64_t *present,
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
static uint64_t *pfns_read(const void *addr, uint64_t len)
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
static uint64_t smaps_anon_huge(const void *addr, uint64_t len, bool *exact)
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

enum kind {
	K_THP,		/* anonymous, MADV_HUGEPAGE */
	K_4K,		/* anonymous, MADV_NOHUGEPAGE */
	K_MEMFD,	/* memfd, MAP_SHARED */
	K_FILE,		/* a file in /var/tmp, MAP_SHARED */
};

static const char *const kind_names[] = { "anon THP", "anon 4K", "memfd", "file" };
static const int kind_backing[] = {
	MEMMIG_BACKING_ANON, MEMMIG_BACKING_ANON, MEMMIG_BACKING_SHMEM,
	MEMMIG_BACKING_FILE,
};

struct mem {
	int kind;
	uint8_t *map;		/* 2 MB aligned */
	uint64_t len;
	uint64_t seed;		/* of the current contents */
	int fd;
	char path[64];
};

static void mem_free(struct mem *m)
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

		fill(buf, n, seed, off / 8);
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
static int mem_new(struct mem *m, int kind, uint64_t len, bool touch)
{
	uint8_t *res, *al;
	int rc = 0;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->kind = kind;
	m->len = len;
	m->seed = new_seed();
	res = mmap(NULL, len + UNIT, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
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
		fill(m->map, len, m->seed, 0);
	if (rc)
		mem_free(m);
	return rc;
}

/* The bytes are the fill of m->seed: 0, or a failure naming the offset. */
static bool mem_intact(const struct mem *m, uint64_t sum, const char *what)
{
	int64_t bad;

	if (csum(m->map, m->len) == sum)
		return true;
	bad = first_bad(m->map, m->len, m->seed, 0);
	CUNIT_FAILF("%s: checksum changed; first bad byte at offset %" PRId64
		    " of %" PRIu64, what, bad, m->len);
	return false;
}

/* Still usable: a new fill reads back. */
static void mem_usable(struct mem *m, const char *what)
{
	m->seed = new_seed();
	fill(m->map, m->len, m->seed, 0);
	if (first_bad(m->map, m->len, m->seed, 0) >= 0)
		CUNIT_FAILF("%s: memory does not read back what was written", what);
}

/* 2 MB-aligned units that [addr, addr + len) touches. */
static uint64_t units_of(uint64_t addr, uint64_t len)
{
	return (addr + len - 1) / UNIT - addr / UNIT + 1;
}

static int region_of(struct memmig_ctx *c, int pid, const void *addr, uint64_t len,
		     int backing, struct memmig_region **out)
{
	struct memmig_region_desc d = {
		.sz = sizeof(d), .pid = pid, .addr = (uintptr_t)addr, .len = len,
		.backing = backing,
	};

	return memmig_region_new(c, &d, out);
}

static struct memmig_migrate_opts opts_of(int strategy, unsigned int flags,
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
static uint64_t moved_ranges(const struct memmig_report *rep, uint64_t addr,
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
static void check_frames(const struct memmig_report *rep, const void *addr, uint64_t len,
			 const uint64_t *before, const char *what)
{
	uint64_t n = len / PAGE, wrong = 0, first = 0, *after;
	bool *moved;

	if (!pfn_ok || !before)
		return;
	after = pfns_read(addr, len);
	moved = calloc(n, sizeof(*moved));
	if (!after || !moved) {
		CUNIT_FAILF("%s: cannot read page frames", what);
		goto out;
	}
	moved_ranges(rep, (uintptr_t)addr, len, moved, what);
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

struct expect {
	int result;
	int strategy;
	uint64_t addr, len;	/* the job's range */
	uint64_t present;	/* pages present before and after */
	uint64_t moved;		/* bytes */
	uint64_t failed;	/* pages */
	uint64_t enoent;	/* pages not present */
};

#define EXPECT_EQ(what, name, got, want)                                       \
	do {                                                                   \
		uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);           \
		if (g_ != w_)                                                  \
			CUNIT_FAILF("%s: %s = %" PRIu64 " (%#" PRIx64          \
				    "), want %" PRIu64 " (%#" PRIx64 ")",      \
				    what, name, g_, g_, w_, w_);               \
		else                                                           \
			CU_PASS(name);                                         \
	} while (0)

static void check_report(const struct memmig_report *rep, const struct expect *e,
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
		  moved_ranges(rep, e->addr, e->len, NULL, what), s.bytes_moved);
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

static int suite_init(void)
{
	struct mem m;

	/* The injection hooks and the log level come from the environment
	 * too: start from a known one. */
	unsetenv("MEMMIG_FAULT");
	unsetenv("MEMMIG_LOG");
	if (new_ctx(&ctx) < 0)
		return 1;
	if (!mem_new(&m, K_4K, 64 * 1024, true)) {
		uint64_t *f = pfns_read(m.map, m.len);

		pfn_ok = f && f[0];
		free(f);
		mem_free(&m);
	}
	return 0;
}

static int suite_cleanup(void)
{
	memmig_ctx_unref(ctx);
	ctx = NULL;
	return 0;
}

/* Every test starts and ends without armed faults. */
static void disarm(void)
{
	memmig_ctx_set_fault(ctx, MEMMIG_FAULT_DEST_ALLOC, 0, ENOMEM, 0);
	memmig_ctx_set_fault(ctx, MEMMIG_FAULT_MOVE_PAGES, 0, ENOMEM, 0);
}

/* ------------------------------------------------------------------ */
/* Migrations to node 0 that must move every byte intact.               */

struct mcase {
	int kind;
	uint64_t maplen;	/* the mapping */
	uint64_t off, len;	/* the region inside it */
	int strategy;
	unsigned int flags, workers;
};

static void run_case(const struct mcase *c)
{
	struct memmig_migrate_opts o = opts_of(c->strategy, c->flags, c->workers);
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
	rc = mem_new(&m, c->kind, c->maplen, true);
	if (rc) {
		CUNIT_FAILF("%s: mapping: %s", what, strerror(-rc));
		return;
	}
	addr = m.map + c->off;
	sum = csum(m.map, m.len);
	CU_ASSERT_EQUAL(count_present(addr, c->len, &present, &on0), 0);
	EXPECT_EQ(what, "present pages before", present, c->len / PAGE);
	EXPECT_EQ(what, "pages on node 0 before", on0, present);
	if (pfn_ok)
		frames = pfns_read(addr, c->len);

	rc = region_of(ctx, 0, addr, c->len, MEMMIG_BACKING_AUTO, &r);
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
	mem_intact(&m, sum, what);
	CU_ASSERT_EQUAL(count_present(addr, c->len, &present2, &on02), 0);
	EXPECT_EQ(what, "present pages after", present2, present);
	EXPECT_EQ(what, "pages on node 0 after", on02, present);
	check_report(rep, &(struct expect){
		.strategy = c->strategy, .addr = (uintptr_t)addr, .len = c->len,
		.present = present, .moved = copies ? c->len : 0,
	}, what);
	/* Copy + force swaps in new frames for every page; the kernel (and
	 * mbind) leave pages that are on the node where they are. */
	check_frames(rep, addr, c->len, frames, what);
	mem_usable(&m, what);
out:
	memmig_report_unref(rep);
	memmig_region_unref(r);
	free(frames);
	mem_free(&m);
}

static void test_copy_thp_64m(void)
{
	run_case(&(struct mcase){ K_THP, 64 * MiB, 0, 64 * MiB, MEMMIG_STRATEGY_COPY,
				  MEMMIG_MIGRATE_FORCE, 0 });
	run_case(&(struct mcase){ K_THP, 64 * MiB, 0, 64 * MiB, MEMMIG_STRATEGY_COPY,
				  MEMMIG_MIGRATE_FORCE, 1 });
}

static void test_copy_thp_1g(void)
{
	run_case(&(struct mcase){ K_THP, GiB, 0, GiB, MEMMIG_STRATEGY_COPY,
				  MEMMIG_MIGRATE_FORCE, 0 });
}

static void test_copy_4k(void)
{
	run_case(&(struct mcase){ K_4K, 64 * MiB, 0, 64 * MiB, MEMMIG_STRATEGY_COPY,
				  MEMMIG_MIGRATE_FORCE, 2 });
}

/* Head and tail units are partial: the neighbours in the same 2 MB must
 * stay as they were (the checksum covers the whole mapping). */
static void test_copy_unaligned(void)
{
	run_case(&(struct mcase){ K_THP, 64 * MiB, 12 * 1024, 64 * MiB - 20 * 1024,
				  MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 0 });
	run_case(&(struct mcase){ K_4K, 64 * MiB, 12 * 1024, 64 * MiB - 20 * 1024,
				  MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 3 });
}

static void test_copy_memfd(void)
{
	run_case(&(struct mcase){ K_MEMFD, 64 * MiB, 0, 64 * MiB, MEMMIG_STRATEGY_COPY,
				  MEMMIG_MIGRATE_FORCE, 0 });
	run_case(&(struct mcase){ K_MEMFD, 256 * MiB, 0, 256 * MiB,
				  MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 0 });
}

static void test_kernel_file(void)
{
	run_case(&(struct mcase){ K_FILE, 64 * MiB, 0, 64 * MiB, MEMMIG_STRATEGY_KERNEL,
				  0, 0 });
}

/* Without force, units already on the target are left alone. */
static void test_copy_noforce(void)
{
	run_case(&(struct mcase){ K_THP, 16 * MiB, 0, 16 * MiB, MEMMIG_STRATEGY_COPY,
				  0, 0 });
}

static void test_kernel_anon_memfd(void)
{
	run_case(&(struct mcase){ K_4K, 16 * MiB, 8192, 16 * MiB - 8192,
				  MEMMIG_STRATEGY_KERNEL, 0, 2 });
	run_case(&(struct mcase){ K_MEMFD, 16 * MiB, 0, 16 * MiB,
				  MEMMIG_STRATEGY_KERNEL, 0, 1 });
}

/* A sub-range of the region: only it moves. */
static void test_copy_subrange(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, 0);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, *frames = NULL;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 32 * MiB, true), 0);
	sum = csum(m.map, m.len);
	frames = pfns_read(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m.map, m.len, MEMMIG_BACKING_ANON, &r), 0);
	o.offset = 6 * MiB + 8192;
	o.len = 12 * MiB;
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	mem_intact(&m, sum, "sub-range");
	check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_COPY, .addr = (uintptr_t)m.map + o.offset,
		.len = o.len, .present = o.len / PAGE, .moved = o.len,
	}, "sub-range");
	/* Frames of the whole region: outside the sub-range nothing changed. */
	check_frames(rep, m.map, m.len, frames, "sub-range");
	/* The offset alone: to the end of the region. */
	o.len = 0;
	o.offset = 30 * MiB;
	memmig_report_unref(rep);
	rep = NULL;
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_COPY, .addr = (uintptr_t)m.map + o.offset,
		.len = 2 * MiB, .present = 512, .moved = 2 * MiB,
	}, "offset to the end");
	mem_intact(&m, sum, "offset to the end");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	free(frames);
	mem_free(&m);
}

/* Copy + force of memory never touched: zeros, then every page present. */
static void test_copy_untouched(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, 0);
	struct memmig_report *rep = NULL;
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_region *r = NULL;
	uint64_t present, on0;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 16 * MiB, false), 0);
	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("untouched copy", "bytes_moved", s.bytes_moved, m.len);
	EXPECT_EQ("untouched copy", "pages_failed", s.pages_failed, 0);
	EXPECT_EQ("untouched copy", "verified", s.pages_verified_on_target, m.len / PAGE);
	CU_ASSERT_EQUAL(count_present(m.map, m.len, &present, &on0), 0);
	EXPECT_EQ("untouched copy", "present after", present, m.len / PAGE);
	CU_ASSERT(all_zero(m.map, m.len));
	mem_usable(&m, "untouched copy");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mem_free(&m);
}

/* ------------------------------------------------------------------ */
/* The kernel strategy on THP memory, and on pages that are absent.     */

static void test_kernel_thp(void)
{
	static const unsigned int workers[] = { 1, 2 };
	struct mem m;
	uint64_t sum, ahp;
	bool exact;

	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 64 * MiB, true), 0);
	sum = csum(m.map, m.len);
	ahp = smaps_anon_huge(m.map, m.len, &exact);
	printf("\n  AnonHugePages of the 64 MiB region: %" PRIu64 " MiB%s ", ahp >> 20,
	       exact ? "" : " (mapping merged with a neighbour)");
	for (size_t i = 0; i < sizeof(workers) / sizeof(workers[0]); i++) {
		struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_KERNEL, 0, workers[i]);
		struct memmig_report_summary s = { .sz = sizeof(s) };
		struct memmig_report *rep = NULL;
		struct memmig_region *r = NULL;
		char what[64];

		snprintf(what, sizeof(what), "kernel THP, %u workers", workers[i]);
		CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m.map, m.len, 0, &r), 0);
		CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
		mem_intact(&m, sum, what);
		check_report(rep, &(struct expect){
			.strategy = MEMMIG_STRATEGY_KERNEL, .addr = (uintptr_t)m.map,
			.len = m.len, .present = m.len / PAGE,
		}, what);
		CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
		EXPECT_EQ(what, "workers", s.workers, workers[i]);
		if (pfn_ok && exact)
			EXPECT_EQ(what, "units_thp", s.units_thp * UNIT, ahp);
		else if (pfn_ok && ahp)
			CU_ASSERT(s.units_thp > 0);
		if (pfn_ok && ahp == m.len)
			EXPECT_EQ(what, "units_thp", s.units_thp, 32);
		memmig_report_unref(rep);
		memmig_region_unref(r);
	}
	mem_free(&m);
}

/*
 * Every other page written, the others never touched: the units are not
 * all on the node, so move_pages(2) really runs; the absent pages come back
 * ENOENT, which is nothing to move, not a failure.
 */
static int mem_new_half(struct mem *m, uint64_t len, uint64_t *sum)
{
	int rc = mem_new(m, K_4K, len, false);

	*sum = 0;
	for (uint64_t off = 0; !rc && off < len; off += 2 * PAGE) {
		fill(m->map + off, PAGE, m->seed, off / 8);
		*sum = *sum * 31 + csum(m->map + off, PAGE);
	}
	return rc;
}

static bool half_intact(const struct mem *m, uint64_t sum, const char *what)
{
	uint64_t s = 0;

	for (uint64_t off = 0; off < m->len; off += 2 * PAGE)
		s = s * 31 + csum(m->map + off, PAGE);
	for (uint64_t off = PAGE; off < m->len; off += 2 * PAGE)
		if (!all_zero(m->map + off, PAGE)) {
			CUNIT_FAILF("%s: untouched page at %#" PRIx64 " is not zero",
				    what, off);
			return false;
		}
	if (s != sum)
		CUNIT_FAILF("%s: checksum of the written pages changed", what);
	return s == sum;
}

static void test_kernel_half_present(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_KERNEL, 0, 0);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, *frames;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mem_new_half(&m, 64 * MiB, &sum), 0);
	frames = pfns_read(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_KERNEL, .addr = (uintptr_t)m.map,
		.len = m.len, .present = m.len / PAGE / 2, .enoent = m.len / PAGE / 2,
	}, "kernel, half present");
	check_frames(rep, m.map, m.len, frames, "kernel, half present");
	half_intact(&m, sum, "kernel, half present");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	free(frames);
	mem_free(&m);
}

static void test_kernel_untouched(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_KERNEL, 0, 2);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 16 * MiB, false), 0);
	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_KERNEL, .addr = (uintptr_t)m.map,
		.len = m.len, .enoent = m.len / PAGE,
	}, "kernel, untouched");
	CU_ASSERT(all_zero(m.map, m.len));
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mem_free(&m);
}

/*
 * Anonymous memory that was read but never written maps the shared zero
 * page: there is nothing of its own to move, as with absent pages.
 */
static void test_kernel_zero_page(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_4K, 4 * MiB, false), 0);
	CU_ASSERT(all_zero(m.map, m.len));	/* maps the zero page */
	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("zero page", "pages_failed", s.pages_failed, 0);
	EXPECT_EQ("zero page", "failed ranges", memmig_report_failed_count(rep), 0);
	EXPECT_EQ("zero page", "bytes_moved", s.bytes_moved, 0);
	CU_ASSERT(all_zero(m.map, m.len));
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mem_free(&m);
}

/* ------------------------------------------------------------------ */
/* The copy strategy swaps new pages in: the mapping must stay as it was */
/* (protection, THP advice, mlock, fork and dump advice).               */

/*
 * Every mapping that overlaps [addr, addr + len) has these permissions
 * ("rw-p"), every VmFlags flag of want and none of nope; *locked gets the
 * Locked bytes, *huge the AnonHugePages bytes.
 */
static void check_vmas(const void *addr, uint64_t len, const char *perms,
		       const char *want, const char *nope, uint64_t *locked,
		       uint64_t *huge, const char *what)
{
	uint64_t lo = (uintptr_t)addr, hi = lo + len, start = 0, s0, e0;
	char line[512], p[8] = "";
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "re");
	unsigned int seen = 0;

	*locked = *huge = 0;
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &s0, &e0, p) == 3 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			start = s0;
			in = s0 < hi && e0 > lo;
			seen += in;
			if (in && strcmp(p, perms))
				CUNIT_FAILF("%s: mapping %#" PRIx64 "-%#" PRIx64 " is %s, want %s",
					    what, s0, e0, p, perms);
		} else if (in && sscanf(line, "Locked: %llu kB", &kb) == 1) {
			*locked += kb * 1024;
		} else if (in && sscanf(line, "AnonHugePages: %llu kB", &kb) == 1) {
			*huge += kb * 1024;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			char fl[4];

			for (const char *w = want; *w; w += w[2] ? 3 : 2) {
				snprintf(fl, sizeof(fl), " %.2s", w);
				if (!strstr(line + 7, fl))
					CUNIT_FAILF("%s: mapping %#" PRIx64 " lacks VmFlags %.2s: %s",
						    what, start, w, line);
			}
			for (const char *w = nope; *w; w += w[2] ? 3 : 2) {
				snprintf(fl, sizeof(fl), " %.2s", w);
				if (strstr(line + 7, fl))
					CUNIT_FAILF("%s: mapping %#" PRIx64 " has VmFlags %.2s: %s",
						    what, start, w, line);
			}
		}
	}
	fclose(f);
	CU_ASSERT(seen > 0);
}

/* True when every mapping over [addr, addr + len) has the VmFlags flag. */
static bool vmas_have(const void *addr, uint64_t len, const char *flag)
{
	uint64_t lo = (uintptr_t)addr, hi = lo + len, s0, e0;
	char line[512], fl[8];
	bool in = false, all = true;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return false;
	snprintf(fl, sizeof(fl), " %s", flag);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " ", &s0, &e0) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = s0 < hi && e0 > lo;
		else if (in && !strncmp(line, "VmFlags:", 8) && !strstr(line + 7, fl))
			all = false;
	}
	fclose(f);
	return all;
}

/* Copy + force of the whole mapping: moved, intact. */
static void copy_all(struct mem *m, uint64_t sum, const char *what)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, 2);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;

	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m->map, m->len, 0, &r), 0);
	EXPECT_EQ(what, "result", (int64_t)memmig_migrate(r, &o, &rep), 0);
	CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ(what, "bytes_moved", s.bytes_moved, m->len);
	mem_intact(m, sum, what);
	memmig_report_unref(rep);
	memmig_region_unref(r);
}

static void test_copy_keeps_mapping(void)
{
	uint64_t sum, locked, huge;
	struct rlimit rl;
	struct mem m;

	/* Read-only stays read-only. */
	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 8 * MiB, true), 0);
	sum = csum(m.map, m.len);
	CU_ASSERT_EQUAL(mprotect(m.map, m.len, PROT_READ), 0);
	copy_all(&m, sum, "read-only");
	check_vmas(m.map, m.len, "r--p", "hg", "wr", &locked, &huge, "read-only");
	mem_free(&m);

	/* MADV_NOHUGEPAGE stays: no THP, no hg. */
	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_4K, 8 * MiB, true), 0);
	sum = csum(m.map, m.len);
	copy_all(&m, sum, "nohugepage");
	check_vmas(m.map, m.len, "rw-p", "nh", "hg", &locked, &huge, "nohugepage");
	EXPECT_EQ("nohugepage", "AnonHugePages", huge, 0);
	mem_free(&m);

	/* mlock stays: every page locked. */
	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 8 * MiB, true), 0);
	sum = csum(m.map, m.len);
	if (geteuid() && (getrlimit(RLIMIT_MEMLOCK, &rl) ||
			  (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 2 * m.len))) {
		/* Source and copy are both locked for a moment. */
		printf("\n  RLIMIT_MEMLOCK below twice the region: mlock not checked ");
	} else if (mlock(m.map, m.len)) {
		printf("\n  mlock: %s: not checked ", strerror(errno));
	} else if (vmas_have(m.map, m.len, "lo")) {
		copy_all(&m, sum, "mlocked");
		check_vmas(m.map, m.len, "rw-p", "lo hg", "", &locked, &huge, "mlocked");
		EXPECT_EQ("mlocked", "Locked", locked, m.len);
		munlock(m.map, m.len);
	} else {
		/* AddressSanitizer makes mlock() a no-op. */
		printf("\n  mlock had no effect: not checked ");
	}
	mem_free(&m);

	/* Fork and dump advice stay. */
	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 8 * MiB, true), 0);
	sum = csum(m.map, m.len);
	CU_ASSERT_EQUAL(madvise(m.map, m.len, MADV_DONTFORK), 0);
	CU_ASSERT_EQUAL(madvise(m.map, m.len, MADV_DONTDUMP), 0);
	copy_all(&m, sum, "dontfork, dontdump");
	check_vmas(m.map, m.len, "rw-p", "dc dd hg", "", &locked, &huge,
		   "dontfork, dontdump");
	mem_free(&m);

	/* Mappings that split a unit keep their own protections. */
	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 8 * MiB, true), 0);
	sum = csum(m.map, m.len);
	CU_ASSERT_EQUAL(mprotect(m.map + MiB, 2 * MiB, PROT_READ), 0);
	copy_all(&m, sum, "split unit");
	check_vmas(m.map, MiB, "rw-p", "hg", "", &locked, &huge, "split unit, head");
	check_vmas(m.map + MiB, 2 * MiB, "r--p", "hg", "", &locked, &huge,
		   "split unit, read-only part");
	check_vmas(m.map + 3 * MiB, 5 * MiB, "rw-p", "hg", "", &locked, &huge,
		   "split unit, tail");
	mem_free(&m);
}

/* Exit bits of the PROT_NONE child. */
enum {
	NONE_COPY_RC = 1 << 0,
	NONE_COPY_MOVED = 1 << 1,
	NONE_KERNEL = 1 << 2,
	NONE_DATA = 1 << 3,
	NONE_SETUP = 1 << 4,
};

static int prot_none_child(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, 1);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	int bad = 0, rc;
	uint64_t sum;
	struct mem m;

	if (mem_new(&m, K_THP, 8 * MiB, true))
		return NONE_SETUP;
	sum = csum(m.map, m.len);
	if (mprotect(m.map, m.len, PROT_NONE) || region_of(ctx, 0, m.map, m.len, 0, &r))
		return NONE_SETUP;
	rc = memmig_migrate(r, &o, &rep);
	if (rc >= 0)
		bad |= NONE_COPY_RC;
	if (rep && (memmig_report_get_summary(rep, &s) || s.bytes_moved))
		bad |= NONE_COPY_MOVED;
	memmig_report_unref(rep);
	rep = NULL;
	o = opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	if (memmig_migrate(r, &o, NULL))
		bad |= NONE_KERNEL;
	memmig_region_unref(r);
	if (mprotect(m.map, m.len, PROT_READ) || csum(m.map, m.len) != sum)
		bad |= NONE_DATA;
	mem_free(&m);
	return bad;
}

/* Memory the process cannot read: the copy strategy must refuse it, not
 * crash on it (in a child, in case it does); the kernel strategy moves it. */
static void test_copy_prot_none(void)
{
	pid_t pid;
	int st = 0;

	fflush(NULL);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid)
		_exit(prot_none_child());
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		CUNIT_FAILF("copy of PROT_NONE memory killed the process with signal %d",
			    WTERMSIG(st));
	else if (WEXITSTATUS(st))
		CUNIT_FAILF("copy of PROT_NONE memory: failures %#x", WEXITSTATUS(st));
	else
		CU_PASS("PROT_NONE");
}

/* ------------------------------------------------------------------ */
/* Jobs: progress, cancel, several at once.                             */

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static struct mem big;		/* 1 GiB THP, shared by the job tests */
static uint64_t big_sum;

static int jobs_init(void)
{
	if (suite_init())
		return 1;
	if (mem_new(&big, K_THP, GiB, true))
		return 1;
	big_sum = csum(big.map, big.len);
	return 0;
}

static int jobs_cleanup(void)
{
	mem_free(&big);
	return suite_cleanup();
}

static void test_job_progress(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, 0);
	struct memmig_progress p = { .sz = sizeof(p) };
	struct memmig_report *rep = NULL, *rep2 = NULL;
	struct memmig_region *r = NULL;
	struct memmig_job *job = NULL;
	uint64_t last = 0, polls = 0, running = 0;
	bool ok = true;

	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, big.map, big.len, 0, &r), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_job_start(r, &o, &job), 0);
	for (;;) {
		if (memmig_job_get_progress(job, &p)) {
			CU_FAIL("get_progress");
			break;
		}
		polls++;
		if (p.bytes_done < last || p.bytes_done > p.bytes_total ||
		    p.bytes_total != big.len || p.elapsed_s < 0 || p.rate < 0 ||
		    (p.state != MEMMIG_JOB_RUNNING && p.state != MEMMIG_JOB_DONE)) {
			if (ok)
				CUNIT_FAILF("progress: done %" PRIu64 " after %" PRIu64
					    " of %" PRIu64 ", state %d, rate %g",
					    p.bytes_done, last, p.bytes_total, p.state,
					    p.rate);
			ok = false;
		}
		last = p.bytes_done;
		if (p.state == MEMMIG_JOB_DONE)
			break;
		running++;
		CU_ASSERT_EQUAL(p.result, 0);
		sleep_us(2000);
	}
	printf("\n  %" PRIu64 " progress polls, %" PRIu64 " while running ", polls,
	       running);
	CU_ASSERT(ok);
	CU_ASSERT_EQUAL(p.state, MEMMIG_JOB_DONE);
	CU_ASSERT_EQUAL(p.result, 0);
	EXPECT_EQ("job", "bytes_done at the end", p.bytes_done, big.len);
	CU_ASSERT(p.elapsed_s > 0);
	CU_ASSERT_EQUAL(memmig_job_wait(job, &rep), 0);
	/* Waiting again returns the same result and report. */
	CU_ASSERT_EQUAL(memmig_job_wait(job, &rep2), 0);
	CU_ASSERT_PTR_EQUAL(rep, rep2);
	CU_ASSERT_EQUAL(memmig_job_get_progress(job, &p), 0);
	CU_ASSERT(p.state == MEMMIG_JOB_DONE && p.result == 0);
	mem_intact(&big, big_sum, "job");
	check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_COPY, .addr = (uintptr_t)big.map,
		.len = big.len, .present = big.len / PAGE, .moved = big.len,
	}, "job");
	memmig_report_unref(rep);
	memmig_report_unref(rep2);
	memmig_job_unref(job);
	memmig_region_unref(r);
}

/*
 * Cancel once the first unit is done: what moved is exactly the units
 * whose frames changed, the rest stayed, and nothing is lost.
 */
static void test_job_cancel(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, 1);
	struct memmig_region *r = NULL;
	int tries, cancelled = 0;

	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, big.map, big.len, 0, &r), 0);
	for (tries = 0; tries < 5 && !cancelled; tries++) {
		struct memmig_progress p = { .sz = sizeof(p) };
		struct memmig_report_summary s = { .sz = sizeof(s) };
		struct memmig_report *rep = NULL;
		struct memmig_job *job = NULL;
		uint64_t *frames = pfns_read(big.map, big.len), moved;
		int rc;

		CU_ASSERT_EQUAL_FATAL(memmig_job_start(r, &o, &job), 0);
		while (!memmig_job_get_progress(job, &p) && !p.bytes_done &&
		       p.state == MEMMIG_JOB_RUNNING)
			;
		CU_ASSERT_EQUAL(memmig_job_cancel(job), 0);
		rc = memmig_job_wait(job, &rep);
		CU_ASSERT(rc == -ECANCELED || rc == 0);
		CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
		CU_ASSERT_EQUAL(s.result, rc);
		moved = moved_ranges(rep, (uintptr_t)big.map, big.len, NULL, "cancel");
		EXPECT_EQ("cancel", "sum of the moved ranges", moved, s.bytes_moved);
		EXPECT_EQ("cancel", "pages_failed", s.pages_failed, 0);
		EXPECT_EQ("cancel", "verified", s.pages_verified_on_target, big.len / PAGE);
		CU_ASSERT_EQUAL(memmig_job_get_progress(job, &p), 0);
		CU_ASSERT_EQUAL(p.state, MEMMIG_JOB_DONE);
		CU_ASSERT_EQUAL(p.result, rc);
		/* One worker walks in order: one range from the start, of
		 * whole units, and progress counted exactly those. */
		if (s.bytes_moved) {
			uint64_t a = 0, l = 0;

			EXPECT_EQ("cancel", "moved ranges", memmig_report_moved_count(rep), 1);
			memmig_report_get_moved(rep, 0, &a, &l);
			EXPECT_EQ("cancel", "moved from", a, (uintptr_t)big.map);
			CU_ASSERT(l % UNIT == 0);
		}
		EXPECT_EQ("cancel", "bytes_done", p.bytes_done, s.bytes_moved);
		check_frames(rep, big.map, big.len, frames, "cancel");
		mem_intact(&big, big_sum, "cancel");
		if (rc == -ECANCELED) {
			CU_ASSERT(s.bytes_moved < big.len);
			cancelled = s.bytes_moved > 0 && s.bytes_moved < big.len;
		} else {
			EXPECT_EQ("finished before the cancel", "bytes_moved",
				  s.bytes_moved, big.len);
		}
		printf("\n  try %d: %s, %" PRIu64 " MiB moved ", tries + 1,
		       rc ? "cancelled" : "finished", s.bytes_moved >> 20);
		memmig_report_unref(rep);
		memmig_job_unref(job);
		free(frames);
	}
	CU_ASSERT(cancelled);
	memmig_region_unref(r);
}

/* Cancel before the job got to any unit: nothing moves. */
static void test_job_cancel_early(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, 0);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	struct memmig_job *job = NULL;
	int rc;

	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, big.map, big.len, 0, &r), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_job_start(r, &o, &job), 0);
	CU_ASSERT_EQUAL(memmig_job_cancel(job), 0);
	CU_ASSERT_EQUAL(memmig_job_cancel(job), 0);	/* twice is fine */
	rc = memmig_job_wait(job, &rep);
	CU_ASSERT_EQUAL(rc, -ECANCELED);
	CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("early cancel", "sum of the moved ranges",
		  moved_ranges(rep, (uintptr_t)big.map, big.len, NULL, "early cancel"),
		  s.bytes_moved);
	CU_ASSERT(s.bytes_moved < big.len);
	mem_intact(&big, big_sum, "early cancel");
	memmig_report_unref(rep);
	memmig_job_unref(job);
	memmig_region_unref(r);
}

/* Letting go of a running job stops it; the memory is whole. */
static void test_job_unref_running(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, 1);
	struct memmig_progress p = { .sz = sizeof(p) };
	struct memmig_region *r = NULL;
	struct memmig_job *job = NULL;

	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, big.map, big.len, 0, &r), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_job_start(r, &o, &job), 0);
	while (!memmig_job_get_progress(job, &p) && !p.bytes_done &&
	       p.state == MEMMIG_JOB_RUNNING)
		;
	memmig_job_unref(job);
	/* The region outlives the job's reference to it. */
	memmig_region_unref(r);
	mem_intact(&big, big_sum, "unref of a running job");
}

static void test_jobs_concurrent(void)
{
	static const struct {
		int kind, strategy;
		unsigned int flags, workers;
	} spec[] = {
		{ K_THP, MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 0 },
		{ K_4K, MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 1 },
		{ K_THP, MEMMIG_STRATEGY_KERNEL, 0, 2 },
		{ K_4K, MEMMIG_STRATEGY_KERNEL, 0, 0 },	/* half present */
	};
	enum { N = sizeof(spec) / sizeof(spec[0]) };
	struct memmig_region *r[N] = { 0 };
	struct memmig_job *job[N] = { 0 };
	uint64_t sum[N], *frames[N] = { 0 };
	struct mem m[N];

	for (int i = 0; i < N; i++) {
		int rc = i == 3 ? mem_new_half(&m[i], 64 * MiB, &sum[i]) :
				  mem_new(&m[i], spec[i].kind, 64 * MiB, true);

		CU_ASSERT_EQUAL_FATAL(rc, 0);
		if (i != 3)
			sum[i] = csum(m[i].map, m[i].len);
		frames[i] = pfns_read(m[i].map, m[i].len);
		CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m[i].map, m[i].len, 0, &r[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		struct memmig_migrate_opts o = opts_of(spec[i].strategy, spec[i].flags,
						       spec[i].workers);

		CU_ASSERT_EQUAL(memmig_job_start(r[i], &o, &job[i]), 0);
	}
	for (int i = 0; i < N; i++) {
		struct memmig_report *rep = NULL;
		char what[32];
		int rc;

		snprintf(what, sizeof(what), "concurrent job %d", i);
		if (!job[i])
			continue;
		rc = memmig_job_wait(job[i], &rep);
		EXPECT_EQ(what, "result", (int64_t)rc, 0);
		check_report(rep, &(struct expect){
			.strategy = spec[i].strategy, .addr = (uintptr_t)m[i].map,
			.len = m[i].len,
			.present = m[i].len / PAGE / (i == 3 ? 2 : 1),
			.enoent = i == 3 ? m[i].len / PAGE / 2 : 0,
			.moved = spec[i].strategy == MEMMIG_STRATEGY_COPY ? m[i].len : 0,
		}, what);
		check_frames(rep, m[i].map, m[i].len, frames[i], what);
		if (i == 3)
			half_intact(&m[i], sum[i], what);
		else
			mem_intact(&m[i], sum[i], what);
		memmig_report_unref(rep);
		memmig_job_unref(job[i]);
	}
	for (int i = 0; i < N; i++) {
		memmig_region_unref(r[i]);
		free(frames[i]);
		mem_free(&m[i]);
	}
}

/* ------------------------------------------------------------------ */
/* Injected failures.                                                   */

/* The failed ranges: each with errno err, in whole units; their pages. */
static uint64_t failed_pages(const struct memmig_report *rep, int err, const char *what)
{
	int n = memmig_report_failed_count(rep);
	uint64_t pages = 0;

	for (int i = 0; i < n; i++) {
		uint64_t a = 0, l = 0;
		int e = 0;

		CU_ASSERT_EQUAL(memmig_report_get_failed(rep, (unsigned int)i, &a, &l, &e), 0);
		if (e != err || a % UNIT || l % UNIT)
			CUNIT_FAILF("%s: failed range %d [%#" PRIx64 ", +%#" PRIx64
				    ") errno %d, want whole units with %d",
				    what, i, a, l, e, err);
		pages += l / PAGE;
	}
	CU_ASSERT_EQUAL(memmig_report_get_failed(rep, (unsigned int)n, NULL, NULL, NULL),
			-EINVAL);
	return pages;
}

/* The errno table agrees with errno_pages() and counts every page once. */
static void check_errno_table(const struct memmig_report *rep, const char *what)
{
	int n = memmig_report_errno_count(rep);

	for (int i = 0; i < n; i++) {
		uint64_t pages = 0;
		int e = 0;

		CU_ASSERT_EQUAL(memmig_report_get_errno(rep, (unsigned int)i, &e, &pages), 0);
		if (e <= 0 || !pages || memmig_report_errno_pages(rep, e) != pages)
			CUNIT_FAILF("%s: errno entry %d: errno %d, %" PRIu64 " pages", what,
				    i, e, pages);
	}
	CU_ASSERT_EQUAL(memmig_report_get_errno(rep, (unsigned int)n, NULL, NULL), -EINVAL);
}

static void dest_alloc_case(unsigned int workers, int sticky)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, workers);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, *frames, fpages;
	char what[64];
	struct mem m;
	int rc;

	snprintf(what, sizeof(what), "dest_alloc 5th%s, %u workers",
		 sticky ? " sticky" : "", workers);
	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 64 * MiB, true), 0);
	sum = csum(m.map, m.len);
	frames = pfns_read(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_DEST_ALLOC, 5, ENOMEM,
					     sticky), 0);
	rc = memmig_migrate(r, &o, &rep);
	disarm();
	EXPECT_EQ(what, "result", (int64_t)rc, (int64_t)-ENOMEM);
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ(what, "summary result", (int64_t)s.result, (int64_t)-ENOMEM);
	/* Four allocations succeeded, and each made one unit move. */
	EXPECT_EQ(what, "bytes_moved", s.bytes_moved, 4 * UNIT);
	EXPECT_EQ(what, "sum of the moved ranges",
		  moved_ranges(rep, (uintptr_t)m.map, m.len, NULL, what), 4 * UNIT);
	fpages = failed_pages(rep, ENOMEM, what);
	EXPECT_EQ(what, "pages_failed", s.pages_failed, fpages);
	EXPECT_EQ(what, "ENOMEM pages", memmig_report_errno_pages(rep, ENOMEM), fpages);
	CU_ASSERT(memmig_report_errno_pages(rep, ENOMEM) > 0);
	check_errno_table(rep, what);
	if (workers == 1) {
		uint64_t a = 0, l = 0;
		int e = 0;

		EXPECT_EQ(what, "moved ranges", memmig_report_moved_count(rep), 1);
		memmig_report_get_moved(rep, 0, &a, &l);
		EXPECT_EQ(what, "moved from", a, (uintptr_t)m.map);
		EXPECT_EQ(what, "moved length", l, 4 * UNIT);
		EXPECT_EQ(what, "failed ranges", memmig_report_failed_count(rep), 1);
		memmig_report_get_failed(rep, 0, &a, &l, &e);
		EXPECT_EQ(what, "failed from", a, (uintptr_t)m.map + 4 * UNIT);
		EXPECT_EQ(what, "failed length", l, UNIT);
		EXPECT_EQ(what, "failed errno", e, ENOMEM);
	} else {
		/* One failed unit per worker at most: both stop there. */
		CU_ASSERT(fpages >= UNIT / PAGE && fpages <= workers * UNIT / PAGE);
	}
	check_frames(rep, m.map, m.len, frames, what);
	mem_intact(&m, sum, what);
	mem_usable(&m, what);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	free(frames);
	mem_free(&m);
}

static void test_fault_dest_alloc(void)
{
	dest_alloc_case(1, 0);
}

static void test_fault_dest_alloc_sticky(void)
{
	dest_alloc_case(1, 1);
	dest_alloc_case(2, 1);
}

/* After a fault fired, the next migration (re-armed or disarmed) works. */
static void test_fault_disarm(void)
{
	run_case(&(struct mcase){ K_THP, 16 * MiB, 0, 16 * MiB, MEMMIG_STRATEGY_COPY,
				  MEMMIG_MIGRATE_FORCE, 0 });
	/* nth beyond the number of units: never fires. */
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_DEST_ALLOC, 100, EIO, 0), 0);
	run_case(&(struct mcase){ K_THP, 16 * MiB, 0, 16 * MiB, MEMMIG_STRATEGY_COPY,
				  MEMMIG_MIGRATE_FORCE, 0 });
	disarm();
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(NULL, 0, 1, ENOMEM, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_COUNT, 1, ENOMEM, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, -1, 1, ENOMEM, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, 0, 1, 0, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, 0, 1, -ENOMEM, 0), -EINVAL);
}

/* The shared path of the copy strategy (mbind) counts allocations too. */
static void test_fault_dest_alloc_memfd(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, 1);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, a = 0, l = 0;
	struct mem m;
	int e = 0;

	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_MEMFD, 32 * MiB, true), 0);
	sum = csum(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_DEST_ALLOC, 3, ENOMEM, 0), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), -ENOMEM);
	disarm();
	check_report(rep, &(struct expect){
		.result = -ENOMEM, .strategy = MEMMIG_STRATEGY_COPY,
		.addr = (uintptr_t)m.map, .len = m.len, .present = m.len / PAGE,
		.failed = UNIT / PAGE,
	}, "memfd dest_alloc");
	EXPECT_EQ("memfd dest_alloc", "failed ranges", memmig_report_failed_count(rep), 1);
	memmig_report_get_failed(rep, 0, &a, &l, &e);
	CU_ASSERT(a == (uintptr_t)m.map + 2 * UNIT && l == UNIT && e == ENOMEM);
	mem_intact(&m, sum, "memfd dest_alloc");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mem_free(&m);
}

/*
 * move_pages(2) failing: on one node only units with pages elsewhere or
 * absent reach the system call, so the region is half present.  One call
 * covers 16 units of 4 KiB pages: the second call fails as a whole.
 */
static void test_fault_move_pages(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, a = 0, l = 0, npages;
	struct mem m;
	int e = 0;

	CU_ASSERT_EQUAL_FATAL(mem_new_half(&m, 64 * MiB, &sum), 0);
	npages = m.len / PAGE;
	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_MOVE_PAGES, 2, ENOMEM, 0), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), -ENOMEM);
	disarm();
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("move_pages ENOMEM", "pages_failed", s.pages_failed, npages / 2);
	EXPECT_EQ("move_pages ENOMEM", "ENOMEM pages",
		  memmig_report_errno_pages(rep, ENOMEM), npages / 2);
	/* The first call ran: its absent pages are ENOENT, not failures. */
	EXPECT_EQ("move_pages ENOMEM", "ENOENT pages",
		  memmig_report_errno_pages(rep, ENOENT), npages / 4);
	EXPECT_EQ("move_pages ENOMEM", "bytes_moved", s.bytes_moved, 0);
	EXPECT_EQ("move_pages ENOMEM", "verified", s.pages_verified_on_target, npages / 2);
	EXPECT_EQ("move_pages ENOMEM", "failed ranges", memmig_report_failed_count(rep), 1);
	memmig_report_get_failed(rep, 0, &a, &l, &e);
	CU_ASSERT(a == (uintptr_t)m.map + m.len / 2 && l == m.len / 2 && e == ENOMEM);
	check_errno_table(rep, "move_pages ENOMEM");
	half_intact(&m, sum, "move_pages ENOMEM");
	memmig_report_unref(rep);
	rep = NULL;

	/* Another errno is fatal at once: the first call, then nothing. */
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_MOVE_PAGES, 1, EIO, 1), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), -EIO);
	disarm();
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("move_pages EIO", "EIO pages", memmig_report_errno_pages(rep, EIO),
		  16 * UNIT / PAGE);
	EXPECT_EQ("move_pages EIO", "pages_failed", s.pages_failed, 16 * UNIT / PAGE);
	EXPECT_EQ("move_pages EIO", "failed ranges", failed_pages(rep, EIO, "EIO"),
		  16 * UNIT / PAGE);
	half_intact(&m, sum, "move_pages EIO");
	memmig_report_unref(rep);
	rep = NULL;

	/* All there already: move_pages is never called, nothing fails. */
	CU_ASSERT_EQUAL(memmig_ctx_set_fault(ctx, MEMMIG_FAULT_MOVE_PAGES, 1, ENOMEM, 1), 0);
	memmig_region_unref(r);
	mem_free(&m);
	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 16 * MiB, true), 0);
	sum = csum(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	disarm();
	CU_ASSERT_EQUAL(memmig_report_errno_pages(rep, ENOMEM), 0);
	mem_intact(&m, sum, "move_pages armed, all on target");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mem_free(&m);
}

/* ------------------------------------------------------------------ */
/* Bad input: the right errno, nothing changed.                         */

static struct mem victim;	/* filled; checked after every failed call */
static uint64_t victim_sum;
static uint64_t *victim_frames;

static void victim_unchanged(const char *what)
{
	uint64_t *now;

	mem_intact(&victim, victim_sum, what);
	if (!pfn_ok)
		return;
	now = pfns_read(victim.map, victim.len);
	if (!now || memcmp(now, victim_frames, victim.len / PAGE * 8))
		CUNIT_FAILF("%s: page frames changed", what);
	free(now);
}

#define EXPECT_RC(what, call, want)                                            \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_ != (want))                                             \
			CUNIT_FAILF("%s: %s = %d, want %d", what, #call, rc_,  \
				    (want));                                   \
		else                                                           \
			CU_PASS(#call);                                        \
		victim_unchanged(what);                                        \
	} while (0)

static int bad_init(void)
{
	if (suite_init() || mem_new(&victim, K_THP, 8 * MiB, true))
		return 1;
	victim_sum = csum(victim.map, victim.len);
	victim_frames = pfns_read(victim.map, victim.len);
	return 0;
}

static int bad_cleanup(void)
{
	mem_free(&victim);
	free(victim_frames);
	victim_frames = NULL;
	return suite_cleanup();
}

/* A region that must be refused, and out untouched. */
static int region_rc(int pid, uint64_t addr, uint64_t len, int backing)
{
	struct memmig_region_desc d = {
		.sz = sizeof(d), .pid = pid, .addr = addr, .len = len, .backing = backing,
	};
	struct memmig_region *r = (struct memmig_region *)&d;
	int rc = memmig_region_new(ctx, &d, &r);

	if (rc == 0)
		memmig_region_unref(r);
	else if (r != (struct memmig_region *)&d)
		CUNIT_FAILF("region_new(%#" PRIx64 ", %#" PRIx64 ") = %d wrote *out",
			    addr, len, rc);
	return rc;
}

static void test_bad_region_args(void)
{
	uint64_t a = (uintptr_t)victim.map, l = victim.len;
	struct memmig_region_desc d = { .sz = sizeof(d), .addr = a, .len = l };
	struct memmig_region *r;
	unsigned int before = log_mark();

	EXPECT_RC("unaligned addr", region_rc(0, a + 8, l - PAGE, 0), -EINVAL);
	EXPECT_RC("unaligned len", region_rc(0, a, l - 100, 0), -EINVAL);
	EXPECT_RC("len 0", region_rc(0, a, 0, 0), -EINVAL);
	EXPECT_RC("wraps", region_rc(0, UINT64_MAX - PAGE + 1, 2 * PAGE, 0), -EINVAL);
	EXPECT_RC("wraps to 0", region_rc(0, UINT64_MAX - PAGE + 1, PAGE, 0), -EINVAL);
	EXPECT_RC("huge len", region_rc(0, a, UINT64_MAX - PAGE + 1, 0), -EINVAL);
	EXPECT_RC("backing 99", region_rc(0, a, l, 99), -EINVAL);
	EXPECT_RC("backing -1", region_rc(0, a, l, -1), -EINVAL);
	EXPECT_RC("pid -1", region_rc(-1, a, l, 0), -EINVAL);
	EXPECT_RC("declared shmem", region_rc(0, a, l, MEMMIG_BACKING_SHMEM), -EINVAL);
	EXPECT_RC("declared file", region_rc(0, a, l, MEMMIG_BACKING_FILE), -EINVAL);
	EXPECT_RC("declared hugetlb", region_rc(0, a, l, MEMMIG_BACKING_HUGETLB), -EINVAL);
	EXPECT_RC("NULL ctx", memmig_region_new(NULL, &d, &r), -EINVAL);
	EXPECT_RC("NULL desc", memmig_region_new(ctx, NULL, &r), -EINVAL);
	EXPECT_RC("NULL out", memmig_region_new(ctx, &d, NULL), -EINVAL);
	d.sz = 0;
	EXPECT_RC("sz 0", memmig_region_new(ctx, &d, &r), -EINVAL);
	/* And the library said why. */
	CU_ASSERT(log_mark() > before);
	/* The right description is accepted. */
	EXPECT_RC("declared anon", region_rc(0, a, l, MEMMIG_BACKING_ANON), 0);
	EXPECT_RC("own pid", region_rc(getpid(), a, l, 0), 0);
}

static void test_bad_region_mappings(void)
{
	uint8_t *p = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t a = (uintptr_t)p;
	int fd = memfd_create("test-migrate-mixed", MFD_CLOEXEC);

	CU_ASSERT_FATAL(p != MAP_FAILED);
	memset(p, 0x5a, 8 * MiB);
	/* A hole in the middle. */
	CU_ASSERT_EQUAL(munmap(p + 2 * MiB, 2 * MiB), 0);
	EXPECT_RC("hole", region_rc(0, a, 8 * MiB, 0), -EFAULT);
	EXPECT_RC("in the hole", region_rc(0, a + 2 * MiB, PAGE, 0), -EFAULT);
	EXPECT_RC("before the hole", region_rc(0, a, 2 * MiB, 0), 0);
	/* memfd next to anonymous memory. */
	CU_ASSERT_FATAL(fd >= 0 && ftruncate(fd, 2 * MiB) == 0);
	CU_ASSERT_FATAL(mmap(p + 2 * MiB, 2 * MiB, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_FIXED, fd, 0) == p + 2 * MiB);
	EXPECT_RC("anon + memfd", region_rc(0, a, 8 * MiB, 0), -EINVAL);
	EXPECT_RC("anon + memfd, declared anon", region_rc(0, a + MiB, 2 * MiB,
							   MEMMIG_BACKING_ANON), -EINVAL);
	EXPECT_RC("memfd declared anon", region_rc(0, a + 2 * MiB, 2 * MiB,
						   MEMMIG_BACKING_ANON), -EINVAL);
	EXPECT_RC("memfd declared shmem", region_rc(0, a + 2 * MiB, 2 * MiB,
						    MEMMIG_BACKING_SHMEM), 0);
	EXPECT_RC("memfd, auto", region_rc(0, a + 2 * MiB, 2 * MiB, 0), 0);
	close(fd);
	/* Gone altogether. */
	CU_ASSERT_EQUAL(munmap(p, 8 * MiB), 0);
	EXPECT_RC("unmapped", region_rc(0, a, 8 * MiB, 0), -EFAULT);
	EXPECT_RC("unmapped page", region_rc(0, a + 4 * MiB, PAGE, 0), -EFAULT);
	/* Special mappings: the vdso. */
	{
		FILE *f = fopen("/proc/self/maps", "re");
		char line[512];
		uint64_t s, e;

		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "[vdso]") &&
			    sscanf(line, "%" SCNx64 "-%" SCNx64, &s, &e) == 2)
				EXPECT_RC("vdso", region_rc(0, s, e - s, 0), -EINVAL);
		if (f)
			fclose(f);
	}
}

static void test_bad_pid(void)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid)
		_exit(0);
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &st, 0), pid);
	EXPECT_RC("gone pid", region_rc(pid, (uintptr_t)victim.map, victim.len, 0), -ESRCH);
	{
		struct memmig_region **list = NULL;
		unsigned int n = 0;

		EXPECT_RC("list of a gone pid", memmig_region_list_pid(ctx, pid, &list, &n),
			  -ESRCH);
	}
}

static void test_bad_opts(void)
{
	struct memmig_migrate_opts o;
	struct memmig_report *rep;
	struct memmig_region *r = NULL;
	struct memmig_job *job;
	uint64_t l = victim.len;

#define OPTS_RC(what, want, ...)                                                \
	do {                                                                   \
		o = opts_of(MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 0);    \
		__VA_ARGS__;                                                   \
		rep = (struct memmig_report *)&o;                              \
		job = (struct memmig_job *)&o;                                 \
		EXPECT_RC(what, memmig_migrate(r, &o, &rep), want);            \
		CU_ASSERT_PTR_EQUAL(rep, (struct memmig_report *)&o);          \
		EXPECT_RC(what, memmig_job_start(r, &o, &job), want);          \
		CU_ASSERT_PTR_EQUAL(job, (struct memmig_job *)&o);             \
	} while (0)

	CU_ASSERT_EQUAL_FATAL(region_of(ctx, 0, victim.map, victim.len, 0, &r), 0);
	OPTS_RC("node 9999", -ENOENT, o.target_node = 9999);
	OPTS_RC("node -1", -ENOENT, o.target_node = -1);
	OPTS_RC("offset unaligned", -EINVAL, o.offset = 512);
	OPTS_RC("len unaligned", -EINVAL, o.len = PAGE + 8);
	OPTS_RC("offset at the end", -EINVAL, o.offset = l);
	OPTS_RC("offset beyond", -EINVAL, o.offset = l + PAGE);
	OPTS_RC("offset + len beyond", -EINVAL, o.offset = PAGE; o.len = l);
	OPTS_RC("len beyond", -EINVAL, o.len = l + PAGE);
	OPTS_RC("offset huge", -EINVAL, o.offset = UINT64_MAX - PAGE + 1; o.len = 2 * PAGE);
	OPTS_RC("len huge", -EINVAL, o.offset = PAGE; o.len = UINT64_MAX - PAGE + 1);
	OPTS_RC("strategy 3", -EINVAL, o.strategy = 3);
	OPTS_RC("strategy -1", -EINVAL, o.strategy = -1);
	OPTS_RC("flags 2", -EINVAL, o.flags = 2);
	OPTS_RC("flags ~0", -EINVAL, o.flags = ~0u);
	OPTS_RC("sz 0", -EINVAL, o.sz = 0);
	EXPECT_RC("NULL opts", memmig_migrate(r, NULL, NULL), -EINVAL);
	EXPECT_RC("NULL region", memmig_migrate(NULL, &o, NULL), -EINVAL);
	EXPECT_RC("NULL job", memmig_job_start(r, &o, NULL), -EINVAL);
	EXPECT_RC("cancel NULL", memmig_job_cancel(NULL), -EINVAL);
	EXPECT_RC("wait NULL", memmig_job_wait(NULL, NULL), -EINVAL);
	EXPECT_RC("progress NULL", memmig_job_get_progress(NULL, NULL), -EINVAL);
	EXPECT_RC("summary NULL", memmig_report_get_summary(NULL, NULL), -EINVAL);
	memmig_job_unref(NULL);
	memmig_report_unref(NULL);
	memmig_region_unref(NULL);
	memmig_region_list_free(NULL, 0);
	/* A good sub-range after all that, without the report. */
	o = opts_of(MEMMIG_STRATEGY_KERNEL, 0, 0);
	o.offset = l - PAGE;
	EXPECT_RC("last page, kernel", memmig_migrate(r, &o, NULL), 0);
	memmig_region_unref(r);
#undef OPTS_RC
}

/* ------------------------------------------------------------------ */
/* Reserve.                                                             */

static void test_reserve(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_COPY,
					       MEMMIG_MIGRATE_FORCE, 0);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	struct memmig_ctx *c;
	uint64_t sum, *frames;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(new_ctx(&c), 0);
	CU_ASSERT_EQUAL(memmig_ctx_reserved(c, 0), 0);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 9999, 2 * MiB), -ENOENT);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, -1, 2 * MiB), -ENOENT);
	CU_ASSERT_EQUAL(memmig_ctx_reserved(c, 9999), 0);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(NULL, 0, 2 * MiB), -EINVAL);
	CU_ASSERT_EQUAL(memmig_ctx_reserved(NULL, 0), 0);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 0, 64 * MiB), 0);
	EXPECT_EQ("reserve", "reserved", memmig_ctx_reserved(c, 0), 64 * MiB);

	/* 16 whole units take 16 chunks. */
	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 32 * MiB, true), 0);
	sum = csum(m.map, m.len);
	frames = pfns_read(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(region_of(c, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	EXPECT_EQ("reserve", "reserved after 32 MiB", memmig_ctx_reserved(c, 0), 32 * MiB);
	mem_intact(&m, sum, "from the reserve");
	check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_COPY, .addr = (uintptr_t)m.map,
		.len = m.len, .present = m.len / PAGE, .moved = m.len,
	}, "from the reserve");
	check_frames(rep, m.map, m.len, frames, "from the reserve");
	mem_usable(&m, "from the reserve");
	memmig_report_unref(rep);
	rep = NULL;
	memmig_region_unref(r);
	r = NULL;

	/* Partial head and tail units do not take whole chunks. */
	sum = csum(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(region_of(c, 0, m.map + PAGE, 8 * MiB, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	EXPECT_EQ("reserve", "reserved after partial units", memmig_ctx_reserved(c, 0),
		  26 * MiB);
	mem_intact(&m, sum, "partial units from the reserve");
	EXPECT_EQ("reserve", "partial units moved",
		  moved_ranges(rep, (uintptr_t)m.map + PAGE, 8 * MiB, NULL, "partial"),
		  8 * MiB);
	memmig_report_unref(rep);
	rep = NULL;
	memmig_region_unref(r);
	r = NULL;

	/* Calls add up, in whole units; len 0 frees. */
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 0, 1), 0);
	EXPECT_EQ("reserve", "after 1 byte more", memmig_ctx_reserved(c, 0), 28 * MiB);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 0, 0), 0);
	EXPECT_EQ("reserve", "after len 0", memmig_ctx_reserved(c, 0), 0);
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 0, 0), 0);
	/* An impossible size fails and reserves nothing. */
	CU_ASSERT(memmig_ctx_reserve(c, 0, UINT64_MAX) < 0);
	CU_ASSERT(memmig_ctx_reserve(c, 0, UINT64_MAX - 4 * MiB) < 0);
	EXPECT_EQ("reserve", "after impossible sizes", memmig_ctx_reserved(c, 0), 0);

	/* Without a reserve the copy still works. */
	sum = csum(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(region_of(c, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, NULL), 0);
	mem_intact(&m, sum, "reserve freed");
	memmig_region_unref(r);

	/* A context that goes away with a reserve frees it. */
	CU_ASSERT_EQUAL(memmig_ctx_reserve(c, 0, 4 * MiB), 0);
	EXPECT_EQ("reserve", "reserved before unref", memmig_ctx_reserved(c, 0), 4 * MiB);
	memmig_ctx_unref(c);
	free(frames);
	mem_free(&m);
}

/* ------------------------------------------------------------------ */
/* Other processes, region lists, permissions.                          */

struct child {
	pid_t pid;
	int to, from;		/* pipes: command to it, word from it */
};

/*
 * A child that writes the fill of seed into [p, p + len) (its own copy of
 * the pages), says so, and on 'c' checks them: exit 0 if intact.
 */
static int child_start(struct child *c, uint8_t *p, uint64_t len, uint64_t seed)
{
	int down[2], up[2];
	char b;

	if (pipe2(down, O_CLOEXEC) || pipe2(up, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (!c->pid) {
		close(down[1]);
		close(up[0]);
		/* A setuid parent left it undumpable: its owner could not
		 * read its /proc files. */
		prctl(PR_SET_DUMPABLE, 1);
		fill(p, len, seed, 0);
		if (write(up[1], "r", 1) != 1)
			_exit(2);
		if (read(down[0], &b, 1) != 1)
			_exit(3);
		_exit(first_bad(p, len, seed, 0) < 0 ? 0 : 1);
	}
	close(down[0]);
	close(up[1]);
	c->to = down[1];
	c->from = up[0];
	if (read(c->from, &b, 1) != 1)
		return -EIO;
	return 0;
}

/* The child's verdict: its exit status, or -1. */
static int child_finish(struct child *c)
{
	int st = 0;

	if (write(c->to, "c", 1) != 1)
		kill(c->pid, SIGKILL);
	close(c->to);
	close(c->from);
	if (waitpid(c->pid, &st, 0) != c->pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The listed region that covers [addr, addr + len), or NULL. */
static struct memmig_region *list_find(struct memmig_region **list, unsigned int n,
				       const void *addr, uint64_t len, int pid)
{
	uint64_t a = (uintptr_t)addr, prev_end = 0;
	struct memmig_region *found = NULL;

	for (unsigned int i = 0; i < n; i++) {
		struct memmig_region_desc d = { .sz = sizeof(d) };

		CU_ASSERT_EQUAL(memmig_region_get_desc(list[i], &d), 0);
		if (d.pid != pid || !d.len || (d.addr | d.len) % PAGE || d.addr < prev_end ||
		    d.backing < MEMMIG_BACKING_ANON || d.backing > MEMMIG_BACKING_FILE)
			CUNIT_FAILF("listed region %u: pid %d, %#" PRIx64 "+%#" PRIx64
				    ", backing %d", i, d.pid, d.addr, d.len, d.backing);
		prev_end = d.addr + d.len;
		if (d.addr <= a && d.addr + d.len >= a + len) {
			CU_ASSERT_EQUAL(d.backing, MEMMIG_BACKING_ANON);
			found = list[i];
		}
	}
	return found;
}

static void test_list_self(void)
{
	struct memmig_region **list = NULL;
	unsigned int n = 0;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_4K, 8 * MiB, true), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_region_list_pid(ctx, getpid(), &list, &n), 0);
	CU_ASSERT(n > 0);
	CU_ASSERT_PTR_NOT_NULL(list_find(list, n, m.map, m.len, getpid()));
	memmig_region_list_free(list, n);
	list = NULL;
	CU_ASSERT_EQUAL_FATAL(memmig_region_list_pid(ctx, 0, &list, &n), 0);
	CU_ASSERT_PTR_NOT_NULL(list_find(list, n, m.map, m.len, 0));
	memmig_region_list_free(list, n);
	CU_ASSERT_EQUAL(memmig_region_list_pid(ctx, -1, &list, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_region_list_pid(NULL, 0, &list, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_region_list_pid(ctx, 0, NULL, &n), -EINVAL);
	CU_ASSERT_EQUAL(memmig_region_list_pid(ctx, 0, &list, NULL), -EINVAL);
	mem_free(&m);
}

/* Another process: listed, migrated with the kernel strategy (auto picks
 * it), refused for the copy strategy, its data intact. */
static void test_child(void)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_KERNEL, 0, 0);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_region **list = NULL, *found, *r = NULL;
	struct memmig_report *rep = NULL;
	struct child ch = { .pid = -1, .to = -1, .from = -1 };
	unsigned int n = 0;
	struct mem m;

	/* Not touched here: only the child's copy of the pages exists. */
	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_THP, 32 * MiB, false), 0);
	CU_ASSERT_EQUAL_FATAL(child_start(&ch, m.map, m.len, m.seed), 0);

	CU_ASSERT_EQUAL(memmig_region_list_pid(ctx, ch.pid, &list, &n), 0);
	found = list_find(list, n, m.map, m.len, ch.pid);
	CU_ASSERT_PTR_NOT_NULL(found);
	if (found) {
		CU_ASSERT_EQUAL(memmig_migrate(found, &o, &rep), 0);
		CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
		CU_ASSERT_EQUAL(s.result, 0);
		CU_ASSERT_EQUAL(s.pages_failed, 0);
		CU_ASSERT(s.pages_verified_on_target >= m.len / PAGE);
		memmig_report_unref(rep);
		rep = NULL;
	}
	memmig_region_list_free(list, n);

	CU_ASSERT_EQUAL_FATAL(region_of(ctx, ch.pid, m.map, m.len, 0, &r), 0);
	o.strategy = MEMMIG_STRATEGY_COPY;
	o.flags = MEMMIG_MIGRATE_FORCE;
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), -EINVAL);
	CU_ASSERT_PTR_NULL(rep);
	o.strategy = MEMMIG_STRATEGY_AUTO;
	o.flags = 0;
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_KERNEL, .addr = (uintptr_t)m.map,
		.len = m.len, .present = m.len / PAGE,
	}, "child, auto");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	/* The parent never touched its own copy. */
	CU_ASSERT(all_zero(m.map, m.len));
	CU_ASSERT_EQUAL(child_finish(&ch), 0);
	mem_free(&m);
}

/* Exit bits of the unprivileged child. */
enum {
	NOBODY_SETUID = 1 << 0,
	NOBODY_REGION = 1 << 1,
	NOBODY_LIST = 1 << 2,
	NOBODY_OWN = 1 << 3,
	NOBODY_OWN_MEMFD = 1 << 4,
	NOBODY_CTX = 1 << 5,
	NOBODY_SAME_USER = 1 << 6,
};

/*
 * As nobody: a root process is out of reach; a process of the same user
 * is not; its own memory still moves (move_pages and mbind without
 * MPOL_MF_MOVE_ALL, which needs CAP_SYS_NICE).
 */
static int nobody_child(pid_t root_pid, uint64_t addr, uint64_t len)
{
	struct memmig_migrate_opts o = opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_region **list = NULL, *r = NULL;
	struct memmig_report *rep = NULL;
	struct child ch = { .pid = -1, .to = -1, .from = -1 };
	struct memmig_ctx *c;
	unsigned int n = 0;
	uint64_t sum;
	int bad = 0, rc;
	struct mem m;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) || getuid() != NOBODY)
		return NOBODY_SETUID;
	if (new_ctx(&c))
		return NOBODY_CTX;
	rc = region_of(c, root_pid, (void *)(uintptr_t)addr, len, 0, &r);
	if (rc != -EPERM && rc != -EACCES) {
		fprintf(stderr, "nobody: region of a root process: %d\n", rc);
		bad |= NOBODY_REGION;
	}
	if (!rc)
		memmig_region_unref(r);
	r = NULL;
	rc = memmig_region_list_pid(c, root_pid, &list, &n);
	if (rc != -EPERM && rc != -EACCES) {
		fprintf(stderr, "nobody: list of a root process: %d\n", rc);
		bad |= NOBODY_LIST;
	}
	if (!rc)
		memmig_region_list_free(list, n);

	/* A process of the same user. */
	if (mem_new(&m, K_4K, 4 * MiB, false) ||
	    child_start(&ch, m.map, m.len, m.seed) ||
	    region_of(c, ch.pid, m.map, m.len, 0, &r) ||
	    memmig_migrate(r, &o, &rep) || child_finish(&ch) != 0) {
		fprintf(stderr, "nobody: a process of the same user: %s\n", last_log);
		bad |= NOBODY_SAME_USER;
		if (ch.pid > 0)
			child_finish(&ch);
	}
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mem_free(&m);
	rep = NULL;
	r = NULL;

	if (mem_new_half(&m, 16 * MiB, &sum) || region_of(c, 0, m.map, m.len, 0, &r) ||
	    memmig_migrate(r, &o, &rep) || memmig_report_get_summary(rep, &s) ||
	    s.pages_failed || memmig_report_errno_pages(rep, ENOENT) != m.len / PAGE / 2 ||
	    !half_intact(&m, sum, "nobody")) {
		fprintf(stderr, "nobody: kernel strategy on its own memory: %s\n", last_log);
		bad |= NOBODY_OWN;
	}
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mem_free(&m);
	rep = NULL;
	r = NULL;

	o = opts_of(MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 1);
	if (mem_new(&m, K_MEMFD, 8 * MiB, true) ||
	    (sum = csum(m.map, m.len), region_of(c, 0, m.map, m.len, 0, &r)) ||
	    memmig_migrate(r, &o, &rep) || memmig_report_get_summary(rep, &s) ||
	    s.pages_failed || csum(m.map, m.len) != sum) {
		fprintf(stderr, "nobody: copy strategy on its memfd: %s\n", last_log);
		bad |= NOBODY_OWN_MEMFD;
	}
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mem_free(&m);
	memmig_ctx_unref(c);
	return bad;
}

/* (pid 1 is no target: here not even root may read its maps.) */
static void test_permission(void)
{
	struct child root = { .pid = -1, .to = -1, .from = -1 };
	struct mem m;
	pid_t pid;
	int st = 0;

	CU_ASSERT_EQUAL_FATAL(mem_new(&m, K_4K, 4 * MiB, false), 0);
	CU_ASSERT_EQUAL_FATAL(child_start(&root, m.map, m.len, m.seed), 0);
	fflush(NULL);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid)
		_exit(nobody_child(root.pid, (uintptr_t)m.map, m.len));
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT_EQUAL(child_finish(&root), 0);
	mem_free(&m);
	CU_ASSERT_FATAL(WIFEXITED(st));
	if (WEXITSTATUS(st) == NOBODY_SETUID) {
		printf("\n  skipped: cannot setuid(%d) in a child ", NOBODY);
		return;
	}
	if (WEXITSTATUS(st))
		CUNIT_FAILF("unprivileged child: failures %#x (see stderr)", WEXITSTATUS(st));
	else
		CU_PASS("unprivileged child");
}

/* ------------------------------------------------------------------ */

static CU_TestInfo move_tests[] = {
	{ "copy+force, anon THP 64 MiB", test_copy_thp_64m },
	{ "copy+force, anon THP 1 GiB", test_copy_thp_1g },
	{ "copy+force, anon 4 KiB 64 MiB", test_copy_4k },
	{ "copy+force, partial head and tail units", test_copy_unaligned },
	{ "copy+force, memfd 64 and 256 MiB (mbind)", test_copy_memfd },
	{ "kernel, file 64 MiB", test_kernel_file },
	{ "kernel, anon 4 KiB and memfd", test_kernel_anon_memfd },
	{ "copy without force: nothing to move", test_copy_noforce },
	{ "copy+force of a sub-range", test_copy_subrange },
	{ "copy+force of never touched memory", test_copy_untouched },
	{ "kernel, anon THP: units_thp, 1 and 2 workers", test_kernel_thp },
	{ "kernel, half the pages present", test_kernel_half_present },
	{ "kernel, never touched: ENOENT, not failed", test_kernel_untouched },
	{ "kernel, zero page: not failed", test_kernel_zero_page },
	{ "copy keeps protection, advice, mlock", test_copy_keeps_mapping },
	{ "copy refuses PROT_NONE memory, no crash", test_copy_prot_none },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo job_tests[] = {
	{ "1 GiB job: progress to DONE", test_job_progress },
	{ "cancel after the first unit", test_job_cancel },
	{ "cancel at once", test_job_cancel_early },
	{ "unref of a running job", test_job_unref_running },
	{ "four jobs at once", test_jobs_concurrent },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo fault_tests[] = {
	{ "dest_alloc: 5th allocation fails", test_fault_dest_alloc },
	{ "dest_alloc: sticky, 1 and 2 workers", test_fault_dest_alloc_sticky },
	{ "dest_alloc: memfd (mbind path)", test_fault_dest_alloc_memfd },
	{ "disarmed and unreached faults", test_fault_disarm },
	{ "move_pages: ENOMEM, EIO, not reached", test_fault_move_pages },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo bad_tests[] = {
	{ "region arguments", test_bad_region_args },
	{ "region mappings: holes, mixed, special", test_bad_region_mappings },
	{ "region of a gone pid", test_bad_pid },
	{ "migrate options", test_bad_opts },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo other_tests[] = {
	{ "reserve", test_reserve },
	{ "region list of this process", test_list_self },
	{ "another process", test_child },
	{ "unprivileged: EPERM/EACCES, own memory moves", test_permission },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "migrate to node 0", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pSetUpFunc = disarm,
	  .pTearDownFunc = disarm, .pTests = move_tests },
	{ .pName = "jobs", .pInitFunc = jobs_init, .pCleanupFunc = jobs_cleanup,
	  .pSetUpFunc = disarm, .pTearDownFunc = disarm, .pTests = job_tests },
	{ .pName = "fault injection", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pSetUpFunc = disarm,
	  .pTearDownFunc = disarm, .pTests = fault_tests },
	{ .pName = "bad input", .pInitFunc = bad_init, .pCleanupFunc = bad_cleanup,
	  .pSetUpFunc = disarm, .pTearDownFunc = disarm, .pTests = bad_tests },
	{ .pName = "reserve and processes", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pSetUpFunc = disarm,
	  .pTearDownFunc = disarm, .pTests = other_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	struct memmig_node_info node = { .sz = sizeof(node) };
	struct memmig_topo *topo;
	struct memmig_ctx *c;
	int rc;

	if (memmig_ctx_new(&c) < 0)
		return cunit_skip("no context");
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
