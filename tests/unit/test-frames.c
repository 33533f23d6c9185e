/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The node a page's frame is on (lib/mm/frames.c) against the kernel's own
 * answer, move_pages(2)'s query, page by page: written pages (4 KiB and
 * THP), pages read but never written (the zero pages: EFAULT), pages never
 * touched (the frames leave them to the kernel, whose answer differs
 * between versions), and file pages.  Needs CAP_SYS_ADMIN (frame numbers in
 * the pagemap); skips without it, saying so.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/mm/frames.h"
#include "cunit-main.h"

#define PAGE 4096UL
#define UNIT (2UL << 20)
#define PAGES (4 * UNIT / PAGE)

static struct memmig_frames *frames;

/* Every page of [p, p + n pages): the frames' answer equals the kernel's. */
static void compare(const char *what, uint8_t *p, size_t n)
{
	void **addr = calloc(n, sizeof(*addr));
	int *st = calloc(n, sizeof(*st)), fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t *e = calloc(n, sizeof(*e));
	size_t asked = 0;

	CU_ASSERT_FATAL(addr && st && e && fd >= 0);
	for (size_t i = 0; i < n; i++)
		addr[i] = p + i * PAGE;
	CU_ASSERT_EQUAL_FATAL(pread(fd, e, n * sizeof(*e),
				    (off_t)((uintptr_t)p / PAGE * sizeof(*e))),
			      (ssize_t)(n * sizeof(*e)));
	CU_ASSERT_EQUAL_FATAL(syscall(SYS_move_pages, 0, n, addr, NULL, st, 0), 0);
	for (size_t i = 0; i < n; i++) {
		int mine;

		if (memmig_frames_status(frames, e[i], &mine) < 0)
			continue;	/* the caller asks the kernel: fine */
		asked++;
		if (mine != st[i] && cunit_report())
			CUNIT_FAILF("%s, page %zu: frames say %d, the kernel %d", what, i, mine,
				    st[i]);
	}
	/* Every case here has answers the frames can give. */
	if (!asked)
		CUNIT_FAILF("%s: the frames answered for no page", what);
	close(fd);
	free(addr);
	free(st);
	free(e);
}

static uint8_t *map_aligned(void)
{
	uint8_t *p = mmap(NULL, 4 * UNIT + UNIT, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CU_ASSERT_FATAL(p != MAP_FAILED);
	return (uint8_t *)(((uintptr_t)p + UNIT - 1) & ~(UNIT - 1));
}

static void test_written(void)
{
	uint8_t *p = map_aligned();

	madvise(p, 2 * UNIT, MADV_NOHUGEPAGE);
	madvise(p + 2 * UNIT, 2 * UNIT, MADV_HUGEPAGE);
	memset(p, 1, 4 * UNIT);
	compare("written, 4 KiB and THP", p, PAGES);
}

static void test_read_and_untouched(void)
{
	uint8_t *p = map_aligned();
	volatile uint8_t sum = 0;

	madvise(p, 2 * UNIT, MADV_NOHUGEPAGE);
	madvise(p + 2 * UNIT, 2 * UNIT, MADV_HUGEPAGE);
	/* Read every other page: zero pages (4 KiB, and huge where the
	 * kernel uses one), the rest never touched. */
	for (size_t i = 0; i < PAGES; i += 2)
		sum += p[i * PAGE];
	(void)sum;
	compare("read, never written; never touched", p, PAGES);
}

static void test_file(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	off_t len = lseek(fd, 0, SEEK_END);
	uint8_t *p = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, 0);
	volatile uint8_t sum = 0;
	size_t n = (size_t)len / PAGE;

	CU_ASSERT_FATAL(fd >= 0 && p != MAP_FAILED && n > 0);
	for (size_t i = 0; i < n; i++)
		sum += p[i * PAGE];
	(void)sum;
	compare("file pages", p, n);
	munmap(p, (size_t)len);
	close(fd);
}

static CU_TestInfo tests[] = {
	{ "written pages, 4 KiB and THP", test_written },
	{ "zero pages and untouched pages", test_read_and_untouched },
	{ "file pages", test_file },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "frames against move_pages", .pTests = tests,
	  .pSetUpFunc = cunit_reports_setup, .pTearDownFunc = cunit_reports_teardown },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	int rc = memmig_frames_new(&frames);

	if (rc == -EPERM)
		return cunit_skip("no frame numbers in the pagemap without CAP_SYS_ADMIN");
	if (rc == -ENOENT)
		return cunit_skip("sysfs lists no memory blocks under the nodes");
	if (rc < 0) {
		printf("FAIL: memmig_frames_new: %s\n", strerror(-rc));
		return 1;
	}
	rc = cunit_main(suites);
	memmig_frames_free(frames);
	return rc;
}
