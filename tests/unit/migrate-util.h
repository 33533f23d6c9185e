/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * migrate-util.h - what the test-migrate-* programs share.  They test the
 * migration engine on real memory: regions of every backing, both
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
#ifndef MEMMIG_MIGRATE_UTIL_H
#define MEMMIG_MIGRATE_UTIL_H

#include <stdbool.h>
#include <inttypes.h>

#include "memmig.h"
#include "cunit-main.h"

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define UNIT ((uint64_t)MEMMIG_UNIT_SIZE)
#define PAGE 4096ULL

extern struct memmig_ctx *ctx;	/* the suites' context */
extern bool pfn_ok;		/* pagemap gives page frame numbers (root) */
extern char last_log[512];	/* the library's last log line */

/* Library log: kept, not printed, so that expected errors stay quiet. */
unsigned int mt_log_mark(void);
int mt_new_ctx(struct memmig_ctx **out);

/* Data: word i of a fill is a function of (seed, i). */
void mt_fill(void *p, uint64_t len, uint64_t seed, uint64_t first_word);
int64_t mt_first_bad(const void *p, uint64_t len, uint64_t seed, uint64_t first_word);
uint64_t mt_csum(const void *p, uint64_t len);
uint64_t mt_new_seed(void);
bool mt_all_zero(const void *p, uint64_t len);

/* The kernel's view, read without the library. */
int mt_count_present(const void *addr, uint64_t len, uint64_t *present, uint64_t *on0);
uint64_t *mt_pfns_read(const void *addr, uint64_t len);
uint64_t mt_smaps_anon_huge(const void *addr, uint64_t len, bool *exact);

/* Memory to migrate. */
enum kind {
	K_THP,		/* anonymous, MADV_HUGEPAGE */
	K_4K,		/* anonymous, MADV_NOHUGEPAGE */
	K_MEMFD,	/* memfd, MAP_SHARED */
	K_FILE,		/* a file in /var/tmp, MAP_SHARED */
};

struct mem {
	int kind;
	uint8_t *map;		/* 2 MB aligned */
	uint64_t len;
	uint64_t seed;		/* of the current contents */
	int fd;
	char path[64];
};

void mt_mem_free(struct mem *m);
int mt_mem_new(struct mem *m, int kind, uint64_t len, bool touch);
int mt_mem_new_half(struct mem *m, uint64_t len, uint64_t *sum);
bool mt_mem_intact(const struct mem *m, uint64_t sum, const char *what);
bool mt_half_intact(const struct mem *m, uint64_t sum, const char *what);
void mt_mem_usable(struct mem *m, const char *what);
int mt_region_of(struct memmig_ctx *c, int pid, const void *addr, uint64_t len,
		 int backing, struct memmig_region **out);
struct memmig_migrate_opts mt_opts_of(int strategy, unsigned int flags,
				      unsigned int workers);

/* Report checks. */
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

uint64_t mt_moved_ranges(const struct memmig_report *rep, uint64_t addr, uint64_t len,
			 bool *moved, const char *what);
void mt_check_frames(const struct memmig_report *rep, const void *addr, uint64_t len,
		     const uint64_t *before, const char *what);
void mt_check_report(const struct memmig_report *rep, const struct expect *e,
		     const char *what);

/* A copy-strategy migration of all of m with o (FORCE: every page moves)
 * that must succeed: every byte intact, the report whole, new frames, the
 * memory usable after. */
void mt_copy_all(struct memmig_ctx *c, struct mem *m, const struct memmig_migrate_opts *o,
		 const char *what);

/* A migration to node 0 that must move every byte intact. */
struct mcase {
	int kind;
	uint64_t maplen;	/* the mapping */
	uint64_t off, len;	/* the region inside it */
	int strategy;
	unsigned int flags, workers;
};

void mt_run_case(const struct mcase *c);

/* Suite set-up: every test starts and ends without armed faults. */
int mt_suite_init(void);
int mt_suite_cleanup(void);
void mt_disarm(void);

#define MT_SUITE(name, init, cleanup, tests)                                   \
	{ .pName = (name), .pInitFunc = (init), .pCleanupFunc = (cleanup),     \
	  .pSetUpFunc = mt_disarm, .pTearDownFunc = mt_disarm, .pTests = (tests) }

/* main() of a test-migrate-* program. */
int mt_main(CU_SuiteInfo *suites);

#endif
