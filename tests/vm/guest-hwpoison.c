/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * In the multi-node guest (tests/vm/run-vm.sh): one page of an anonymous
 * region is poisoned for real (MADV_HWPOISON: the kernel's memory-failure
 * path, as for a machine check), then the region is migrated to node 2,
 * with the kernel strategy, then with the copy strategy (its guarded
 * copy gets SIGBUS there, and the kernel moves that unit around the
 * page).  The poisoned page must be reported -- a negative errno in the per-errno counts and in a failed range at its
 * address -- and must still be poisoned afterwards (not moved, not
 * zero-filled); every other page must be on node 2 with its bytes intact.
 * Then memmig_copy_mc() on poisoned anonymous and memfd memory (guest-mc.c).
 * Exits 0 pass, 1 fail, 77 skip (no node 2, not root, no CONFIG_MEMORY_FAILURE).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memmig.h>

#include "guest-check.h"
#include "guest-mc.h"

#define PAGE 4096UL
#define NPAGES 64
#define BAD 17		/* the poisoned page */
#define TARGET 2


static long hardware_corrupted_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "HardwareCorrupted: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static uint64_t page_sum(const uint8_t *p)
{
	return guest_csum(p, PAGE);
}

/* The node of each page, straight from the kernel (move_pages query). */
static void where(uint8_t *p, int *status)
{
	void *pages[NPAGES];

	for (int i = 0; i < NPAGES; i++)
		pages[i] = p + i * PAGE;
	if (syscall(SYS_move_pages, 0, NPAGES, pages, NULL, status, 0) < 0)
		for (int i = 0; i < NPAGES; i++)
			status[i] = -errno;
}

/*
 * One page of a 64-page region poisoned, the region migrated to node 2 with
 * strategy: the kernel strategy moves around it, the copy strategy must not
 * read it (SIGBUS) and lets the kernel move that unit.  Returns 0 or 77.
 */
static int poison_case(struct memmig_ctx *ctx, int strategy)
{
	struct memmig_region *r;
	struct memmig_report *rep = NULL;
	struct memmig_report_summary s = { .sz = sizeof(s) };
	uint64_t sums[NPAGES];
	int status[NPAGES];
	long hc0, hc1;
	uint8_t *p;
	int rc, found, code;

	printf("== %s strategy\n", strategy == MEMMIG_STRATEGY_COPY ? "copy" : "kernel");
	/* 4 KiB pages: the failure is per page, not per THP. */
	p = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	madvise(p, NPAGES * PAGE, MADV_NOHUGEPAGE);
	for (int i = 0; i < NPAGES; i++) {
		for (size_t k = 0; k < PAGE; k++)
			p[i * PAGE + k] = (uint8_t)(i * 131 + k * 7 + (k >> 8));
		sums[i] = page_sum(p + i * PAGE);
	}
	where(p, status);
	printf("before: page 0 on node %d, page %d on node %d\n", status[0], BAD, status[BAD]);
	if (status[0] == TARGET)
		return skip("the pages were allocated on node 2 already");

	hc0 = hardware_corrupted_kb();
	rc = hwpoison_page(p + BAD * PAGE, &code);
	if (rc == -EINVAL)
		return skip("MADV_HWPOISON: EINVAL (kernel without CONFIG_MEMORY_FAILURE)");
	if (rc) {
		printf("FAIL: madvise(MADV_HWPOISON): %s\n", strerror(-rc));
		return 1;
	}
	hc1 = hardware_corrupted_kb();
	printf("HardwareCorrupted: %ld kB -> %ld kB; SIGBUS at the injection: si_code %d\n",
	       hc0, hc1, code);
	CHECK(hc1 >= hc0 + (long)(PAGE / 1024), "HardwareCorrupted did not grow by a page");
	rc = guest_probe(p + BAD * PAGE);
	CHECK(rc == BUS_MCEERR_AR, "reading the poisoned page before: si_code %d, not "
	      "BUS_MCEERR_AR (%d)", rc, BUS_MCEERR_AR);

	struct memmig_region_desc d = {
		.sz = sizeof(d), .addr = (uintptr_t)p, .len = NPAGES * PAGE,
	};
	rc = memmig_region_new(ctx, &d, &r);
	CHECK(rc == 0, "memmig_region_new: %s", strerror(-rc));
	if (rc)
		return 1;
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = TARGET, .strategy = strategy,
	};
	rc = memmig_migrate(r, &o, &rep);
	printf("memmig_migrate: %d (%s)\n", rc, rc ? strerror(-rc) : "ok");
	CHECK(rep != NULL, "no report");
	if (!rep)
		return 1;
	memmig_report_get_summary(rep, &s);
	printf("report: result %d, bytes moved %llu of %llu, pages failed %llu, "
	       "verified on target %llu\n", s.result,
	       (unsigned long long)s.bytes_moved, (unsigned long long)s.bytes_total,
	       (unsigned long long)s.pages_failed,
	       (unsigned long long)s.pages_verified_on_target);

	/* The poisoned page, counted under a real errno. */
	CHECK(s.pages_failed == 1, "pages_failed %llu, want 1 (the poisoned page)",
	      (unsigned long long)s.pages_failed);
	found = 0;
	for (int i = 0; i < memmig_report_errno_count(rep); i++) {
		uint64_t pages;
		int err;

		memmig_report_get_errno(rep, i, &err, &pages);
		printf("errno %s (%d): %llu pages\n", strerrorname_np(err), err,
		       (unsigned long long)pages);
		CHECK(err > 0 && err != ENOENT, "errno %d counted: not a failure errno", err);
		found += err > 0 && err != ENOENT && pages == 1;
	}
	CHECK(found == 1, "the poisoned page is not counted under one errno");
	found = 0;
	for (int i = 0; i < memmig_report_failed_count(rep); i++) {
		uint64_t addr, len;
		int err;

		memmig_report_get_failed(rep, i, &addr, &len, &err);
		printf("failed range %#llx +%llu: %s\n", (unsigned long long)addr,
		       (unsigned long long)len, strerrorname_np(err));
		found += addr == (uintptr_t)(p + BAD * PAGE) && len == PAGE && err > 0;
	}
	CHECK(found == 1 && memmig_report_failed_count(rep) == 1,
	      "the failed ranges are not exactly the poisoned page");
	CHECK(s.bytes_moved == (NPAGES - 1) * PAGE, "bytes moved %llu, want %lu",
	      (unsigned long long)s.bytes_moved, (NPAGES - 1) * PAGE);
	CHECK(s.pages_verified_on_target == NPAGES - 1, "verified on target %llu, want %d",
	      (unsigned long long)s.pages_verified_on_target, NPAGES - 1);
	CHECK(rc == 0 || rc == s.result, "memmig_migrate %d but report result %d",
	      rc, s.result);

	/* The kernel's view: the others moved with their bytes, the bad one
	 * is still poisoned (not silently replaced by a zero page). */
	where(p, status);
	for (int i = 0; i < NPAGES; i++) {
		if (i == BAD) {
			printf("poisoned page status after: %d\n", status[i]);
			CHECK(status[i] < 0, "the poisoned page is on node %d", status[i]);
			continue;
		}
		CHECK(status[i] == TARGET, "page %d on node %d", i, status[i]);
		CHECK(page_sum(p + i * PAGE) == sums[i], "page %d: bytes changed", i);
	}
	rc = guest_probe(p + BAD * PAGE);
	CHECK(rc == BUS_MCEERR_AR, "reading the poisoned page after: si_code %d, not "
	      "BUS_MCEERR_AR: it was replaced", rc);

	memmig_report_unref(rep);
	memmig_region_unref(r);
	munmap(p, NPAGES * PAGE);
	return 0;
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = guest_on_sigbus, .sa_flags = SA_SIGINFO };
	struct memmig_ctx *ctx;
	struct memmig_topo *topo;
	struct memmig_node_info ni = { .sz = sizeof(ni) };
	int rc;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (geteuid() != 0)
		return skip("MADV_HWPOISON needs root (CAP_SYS_ADMIN)");
	if (memmig_ctx_new(&ctx) < 0)
		return 1;
	if (memmig_topo_new(ctx, &topo) < 0)
		return 1;
	if (memmig_topo_find_node(topo, TARGET, &ni) < 0)
		return skip("no NUMA node 2 with memory (run in the multi-node guest)");
	memmig_topo_unref(topo);
	sigaction(SIGBUS, &sa, NULL);

	rc = poison_case(ctx, MEMMIG_STRATEGY_KERNEL);
	if (!rc)
		rc = poison_case(ctx, MEMMIG_STRATEGY_COPY);
	if (!rc)
		rc = mc_cases(ctx);
	memmig_ctx_unref(ctx);
	if (rc)
		return rc;
	printf("%s\n", fails ? "FAILED" : "ok: poisoned page reported, the rest on node 2 intact");
	return fails ? 1 : 0;
}
