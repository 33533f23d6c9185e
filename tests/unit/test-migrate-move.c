/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Migrations to node 0 of regions of every backing with both strategies:
 * every byte intact, the page frames and move_pages(2) agree with the
 * report; the kernel strategy on THP and on absent pages; the copy
 * strategy keeps the mapping's attributes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/kernel-page-flags.h>

#include "migrate-util.h"

/* ------------------------------------------------------------------ */
/* Migrations to node 0 that must move every byte intact.               */

static void test_copy_thp_64m(void)
{
	mt_run_case(&(struct mcase){ K_THP, 64 * MiB, 0, 64 * MiB, MEMMIG_STRATEGY_COPY,
				     MEMMIG_MIGRATE_FORCE, 0 });
	mt_run_case(&(struct mcase){ K_THP, 64 * MiB, 0, 64 * MiB, MEMMIG_STRATEGY_COPY,
				     MEMMIG_MIGRATE_FORCE, 1 });
}

static void test_copy_thp_1g(void)
{
	mt_run_case(&(struct mcase){ K_THP, GiB, 0, GiB, MEMMIG_STRATEGY_COPY,
				     MEMMIG_MIGRATE_FORCE, 0 });
}

static void test_copy_4k(void)
{
	mt_run_case(&(struct mcase){ K_4K, 64 * MiB, 0, 64 * MiB, MEMMIG_STRATEGY_COPY,
				     MEMMIG_MIGRATE_FORCE, 2 });
}

/* Head and tail units are partial: the neighbours in the same 2 MB must
 * stay as they were (the checksum covers the whole mapping). */
static void test_copy_unaligned(void)
{
	mt_run_case(&(struct mcase){ K_THP, 64 * MiB, 12 * 1024, 64 * MiB - 20 * 1024,
				     MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 0 });
	mt_run_case(&(struct mcase){ K_4K, 64 * MiB, 12 * 1024, 64 * MiB - 20 * 1024,
				     MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 3 });
}

static void test_copy_memfd(void)
{
	mt_run_case(&(struct mcase){ K_MEMFD, 64 * MiB, 0, 64 * MiB, MEMMIG_STRATEGY_COPY,
				     MEMMIG_MIGRATE_FORCE, 0 });
	mt_run_case(&(struct mcase){ K_MEMFD, 256 * MiB, 0, 256 * MiB,
				     MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 0 });
}

static void test_kernel_file(void)
{
	mt_run_case(&(struct mcase){ K_FILE, 64 * MiB, 0, 64 * MiB, MEMMIG_STRATEGY_KERNEL,
				     0, 0 });
}

/* Without force, units already on the target are left alone. */
static void test_copy_noforce(void)
{
	mt_run_case(&(struct mcase){ K_THP, 16 * MiB, 0, 16 * MiB, MEMMIG_STRATEGY_COPY,
				     0, 0 });
}

static void test_kernel_anon_memfd(void)
{
	mt_run_case(&(struct mcase){ K_4K, 16 * MiB, 8192, 16 * MiB - 8192,
				     MEMMIG_STRATEGY_KERNEL, 0, 2 });
	mt_run_case(&(struct mcase){ K_MEMFD, 16 * MiB, 0, 16 * MiB,
				     MEMMIG_STRATEGY_KERNEL, 0, 1 });
}

/* A sub-range of the region: only it moves. */
static void test_copy_subrange(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 0);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, *frames = NULL;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 32 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
	frames = mt_pfns_read(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, MEMMIG_BACKING_ANON, &r), 0);
	o.offset = 6 * MiB + 8192;
	o.len = 12 * MiB;
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	mt_mem_intact(&m, sum, "sub-range");
	mt_check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_COPY, .addr = (uintptr_t)m.map + o.offset,
		.len = o.len, .present = o.len / PAGE, .moved = o.len,
	}, "sub-range");
	/* Frames of the whole region: outside the sub-range nothing changed. */
	mt_check_frames(rep, m.map, m.len, frames, "sub-range");
	/* The offset alone: to the end of the region. */
	o.len = 0;
	o.offset = 30 * MiB;
	memmig_report_unref(rep);
	rep = NULL;
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	mt_check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_COPY, .addr = (uintptr_t)m.map + o.offset,
		.len = 2 * MiB, .present = 512, .moved = 2 * MiB,
	}, "offset to the end");
	mt_mem_intact(&m, sum, "offset to the end");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	free(frames);
	mt_mem_free(&m);
}

/* Copy + force of memory never touched: zeros, then every page present. */
static void test_copy_untouched(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 0);
	struct memmig_report *rep = NULL;
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_region *r = NULL;
	uint64_t present, on0;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 16 * MiB, false), 0);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("untouched copy", "bytes_moved", s.bytes_moved, m.len);
	EXPECT_EQ("untouched copy", "pages_failed", s.pages_failed, 0);
	EXPECT_EQ("untouched copy", "verified", s.pages_verified_on_target, m.len / PAGE);
	CU_ASSERT_EQUAL(mt_count_present(m.map, m.len, &present, &on0), 0);
	EXPECT_EQ("untouched copy", "present after", present, m.len / PAGE);
	CU_ASSERT(mt_all_zero(m.map, m.len));
	mt_mem_usable(&m, "untouched copy");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
}

/* ------------------------------------------------------------------ */
/* The kernel strategy on THP memory, and on pages that are absent.     */

static void test_kernel_thp(void)
{
	static const unsigned int workers[] = { 1, 2 };
	struct mem m;
	uint64_t sum, ahp;
	bool exact;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 64 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
	ahp = mt_smaps_anon_huge(m.map, m.len, &exact);
	printf("\n  AnonHugePages of the 64 MiB region: %" PRIu64 " MiB%s ", ahp >> 20,
	       exact ? "" : " (mapping merged with a neighbour)");
	for (size_t i = 0; i < sizeof(workers) / sizeof(workers[0]); i++) {
		struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, workers[i]);
		struct memmig_report_summary s = { .sz = sizeof(s) };
		struct memmig_report *rep = NULL;
		struct memmig_region *r = NULL;
		char what[64];

		snprintf(what, sizeof(what), "kernel THP, %u workers", workers[i]);
		CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
		CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
		mt_mem_intact(&m, sum, what);
		mt_check_report(rep, &(struct expect){
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
	mt_mem_free(&m);
}

/*
 * Whether the unit at addr is mapped by the huge zero page: 1, 0, or -1
 * when kpageflags cannot say.  Asked of the frames, not of use_zero_page:
 * a kernel may say 1 there and still give a read fault a zeroed THP of its
 * own (the AMD Zen 5 host's, booted with pvm_no_zero_page=1).  The huge
 * zero page's frames are flagged KPF_ZERO_PAGE and run on, where 4 KiB
 * zero pages all map one frame.  Needs pfn_ok.
 */
static int huge_zero_page_at(const void *addr)
{
	uint64_t *pfn = mt_pfns_read(addr, 2 * PAGE), flags = 0;
	int fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC), zero = -1;

	if (pfn && pfn[0] && fd >= 0 &&
	    pread(fd, &flags, sizeof(flags), (off_t)(pfn[0] * sizeof(flags))) == sizeof(flags))
		zero = (flags & (1ULL << KPF_ZERO_PAGE)) && pfn[1] == pfn[0] + 1;
	if (fd >= 0)
		close(fd);
	free(pfn);
	return zero;
}

/*
 * THP detection around holes: a THP split by zapping one of its pages, and
 * a unit zapped whole (read again: the huge zero page, a zeroed THP of
 * its own, or 4 KiB zero pages), among THPs.  Each unit counts as a THP
 * exactly when it is one PMD mapping, whichever probe found it
 * (PAGEMAP_SCAN's walk, or the frames and kpageflags): smaps'
 * AnonHugePages, and the huge zero page.
 */
static void test_kernel_thp_holes(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	const char *what = "kernel THP with holes";
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	struct mem m;
	uint64_t sum, ahp;
	bool exact;
	int zero = -1;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 16 * MiB, true), 0);
	CU_ASSERT_EQUAL(madvise(m.map + 2 * UNIT + 5 * PAGE, PAGE, MADV_DONTNEED), 0);
	CU_ASSERT_EQUAL(madvise(m.map + 5 * UNIT, UNIT, MADV_DONTNEED), 0);
	sum = mt_csum(m.map, m.len);	/* the zapped pages read as zeros */
	ahp = mt_smaps_anon_huge(m.map, m.len, &exact);
	if (pfn_ok)
		zero = huge_zero_page_at(m.map + 5 * UNIT);
	printf("\n  AnonHugePages of the 16 MiB region with holes: %" PRIu64 " MiB%s; "
	       "the unit zapped whole read back as %s ", ahp >> 20,
	       exact ? "" : " (mapping merged with a neighbour)",
	       zero > 0 ? "the huge zero page" : !zero ? "pages of its own or 4 KiB zero pages" :
	       "what no page frame or kpageflags tells (units_thp not checked)");
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	mt_mem_intact(&m, sum, what);
	CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ(what, "units_total", s.units_total, 8);
	if (zero >= 0 && exact)
		EXPECT_EQ(what, "units_thp", s.units_thp * UNIT, ahp + (zero ? UNIT : 0));
	/* The split unit is no THP. */
	CU_ASSERT(s.units_thp <= 7);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
}

static void test_kernel_half_present(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 0);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t sum, *frames;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new_half(&m, 64 * MiB, &sum), 0);
	frames = mt_pfns_read(m.map, m.len);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	mt_check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_KERNEL, .addr = (uintptr_t)m.map,
		.len = m.len, .present = m.len / PAGE / 2, .enoent = m.len / PAGE / 2,
	}, "kernel, half present");
	mt_check_frames(rep, m.map, m.len, frames, "kernel, half present");
	mt_half_intact(&m, sum, "kernel, half present");
	memmig_report_unref(rep);
	memmig_region_unref(r);
	free(frames);
	mt_mem_free(&m);
}

static void test_kernel_untouched(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 2);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 16 * MiB, false), 0);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	mt_check_report(rep, &(struct expect){
		.strategy = MEMMIG_STRATEGY_KERNEL, .addr = (uintptr_t)m.map,
		.len = m.len, .enoent = m.len / PAGE,
	}, "kernel, untouched");
	CU_ASSERT(mt_all_zero(m.map, m.len));
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
}

/*
 * Anonymous memory that was read but never written maps the shared zero
 * page: there is nothing of its own to move, as with absent pages.
 */
static void test_kernel_zero_page(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	struct mem m;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_4K, 4 * MiB, false), 0);
	CU_ASSERT(mt_all_zero(m.map, m.len));	/* maps the zero page */
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m.map, m.len, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("zero page", "pages_failed", s.pages_failed, 0);
	EXPECT_EQ("zero page", "failed ranges", memmig_report_failed_count(rep), 0);
	EXPECT_EQ("zero page", "bytes_moved", s.bytes_moved, 0);
	CU_ASSERT(mt_all_zero(m.map, m.len));
	memmig_report_unref(rep);
	memmig_region_unref(r);
	mt_mem_free(&m);
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
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 2);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;

	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, m->map, m->len, 0, &r), 0);
	EXPECT_EQ(what, "result", (int64_t)memmig_migrate(r, &o, &rep), 0);
	CU_ASSERT_EQUAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ(what, "bytes_moved", s.bytes_moved, m->len);
	mt_mem_intact(m, sum, what);
	memmig_report_unref(rep);
	memmig_region_unref(r);
}

static void test_copy_keeps_mapping(void)
{
	uint64_t sum, locked, huge;
	struct rlimit rl;
	struct mem m;

	/* Read-only stays read-only. */
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 8 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
	CU_ASSERT_EQUAL(mprotect(m.map, m.len, PROT_READ), 0);
	copy_all(&m, sum, "read-only");
	check_vmas(m.map, m.len, "r--p", "hg", "wr", &locked, &huge, "read-only");
	mt_mem_free(&m);

	/* MADV_NOHUGEPAGE stays: no THP, no hg. */
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_4K, 8 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
	copy_all(&m, sum, "nohugepage");
	check_vmas(m.map, m.len, "rw-p", "nh", "hg", &locked, &huge, "nohugepage");
	EXPECT_EQ("nohugepage", "AnonHugePages", huge, 0);
	mt_mem_free(&m);

	/* mlock stays: every page locked. */
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 8 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
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
	mt_mem_free(&m);

	/* Fork and dump advice stay. */
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 8 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
	CU_ASSERT_EQUAL(madvise(m.map, m.len, MADV_DONTFORK), 0);
	CU_ASSERT_EQUAL(madvise(m.map, m.len, MADV_DONTDUMP), 0);
	copy_all(&m, sum, "dontfork, dontdump");
	check_vmas(m.map, m.len, "rw-p", "dc dd hg", "", &locked, &huge,
		   "dontfork, dontdump");
	mt_mem_free(&m);

	/* Mappings that split a unit keep their own protections. */
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 8 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
	CU_ASSERT_EQUAL(mprotect(m.map + MiB, 2 * MiB, PROT_READ), 0);
	copy_all(&m, sum, "split unit");
	check_vmas(m.map, MiB, "rw-p", "hg", "", &locked, &huge, "split unit, head");
	check_vmas(m.map + MiB, 2 * MiB, "r--p", "hg", "", &locked, &huge,
		   "split unit, read-only part");
	check_vmas(m.map + 3 * MiB, 5 * MiB, "rw-p", "hg", "", &locked, &huge,
		   "split unit, tail");
	mt_mem_free(&m);
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
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY,
						  MEMMIG_MIGRATE_FORCE, 1);
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	int bad = 0, rc;
	uint64_t sum;
	struct mem m;

	if (mt_mem_new(&m, K_THP, 8 * MiB, true))
		return NONE_SETUP;
	sum = mt_csum(m.map, m.len);
	if (mprotect(m.map, m.len, PROT_NONE) || mt_region_of(ctx, 0, m.map, m.len, 0, &r))
		return NONE_SETUP;
	rc = memmig_migrate(r, &o, &rep);
	if (rc >= 0)
		bad |= NONE_COPY_RC;
	if (rep && (memmig_report_get_summary(rep, &s) || s.bytes_moved))
		bad |= NONE_COPY_MOVED;
	memmig_report_unref(rep);
	rep = NULL;
	o = mt_opts_of(MEMMIG_STRATEGY_KERNEL, 0, 1);
	if (memmig_migrate(r, &o, NULL))
		bad |= NONE_KERNEL;
	memmig_region_unref(r);
	if (mprotect(m.map, m.len, PROT_READ) || mt_csum(m.map, m.len) != sum)
		bad |= NONE_DATA;
	mt_mem_free(&m);
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
	{ "kernel, THP detection around a split THP and a hole", test_kernel_thp_holes },
	{ "kernel, half the pages present", test_kernel_half_present },
	{ "kernel, never touched: ENOENT, not failed", test_kernel_untouched },
	{ "kernel, zero page: not failed", test_kernel_zero_page },
	{ "copy keeps protection, advice, mlock", test_copy_keeps_mapping },
	{ "copy refuses PROT_NONE memory, no crash", test_copy_prot_none },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	MT_SUITE("migrate to node 0", mt_suite_init, mt_suite_cleanup, move_tests),
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return mt_main(suites);
}
