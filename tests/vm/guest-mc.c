/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Part of guest-hwpoison: the machine-check-recoverable copy against real
 * memory errors (MADV_HWPOISON runs the kernel's memory-failure path, and
 * reading the page then raises SIGBUS BUS_MCEERR_AR, as a consumed
 * uncorrected error does):
 *  - anonymous memory with poisoned pages in two 2 MB units: the copy
 *    returns exactly their bytes, reports each as -EHWPOISON at its
 *    offset, copies every other byte and leaves theirs untouched;
 *  - a memfd with a poisoned page: the kernel's read of the file (pread,
 *    its own machine-check-safe copy) answers EIO, reported as -EIO.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <memmig.h>

#include "guest-check.h"
#include "guest-mc.h"

#define MC_PAGE 4096UL
#define MC_LEN (8UL << 20)
#define MC_FILL 0xee

struct bad_seen {
	unsigned int n;
	uint64_t off[4];
	int err[4];
};

static void on_bad(void *opaque, uint64_t off, uint64_t len, int err)
{
	struct bad_seen *b = opaque;

	printf("  lost: offset %#llx +%llu: %s\n", (unsigned long long)off,
	       (unsigned long long)len, strerrorname_np(-err));
	if (b->n < 4) {
		b->off[b->n] = off;
		b->err[b->n] = len == MC_PAGE ? err : 0;
	}
	b->n++;
}

static void fill(uint8_t *p)
{
	for (size_t i = 0; i < MC_LEN; i++)
		p[i] = (uint8_t)(i * 151 + (i >> 12));
}

/* dst holds src's bytes except at the bad pages, which hold MC_FILL. */
static int compare(const uint8_t *dst, const uint8_t *src, const uint64_t *bad, int nbad)
{
	for (size_t pg = 0; pg < MC_LEN / MC_PAGE; pg++) {
		const uint8_t *d = dst + pg * MC_PAGE;
		bool lost = false;

		for (int k = 0; k < nbad; k++)
			lost |= pg * MC_PAGE == bad[k];
		if (lost) {
			for (size_t i = 0; i < MC_PAGE; i++)
				if (d[i] != MC_FILL)
					return -1;
		} else if (memcmp(d, src + pg * MC_PAGE, MC_PAGE)) {
			return -1;
		}
	}
	return 0;
}

static uint8_t *map(int fd)
{
	void *p = mmap(NULL, MC_LEN, PROT_READ | PROT_WRITE,
		       fd < 0 ? MAP_PRIVATE | MAP_ANONYMOUS : MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, MC_LEN, MADV_NOHUGEPAGE);
	return p;
}

static int mc_anon(struct memmig_ctx *ctx)
{
	const uint64_t bad[2] = { 3 * MC_PAGE, (5UL << 20) + 9 * MC_PAGE };
	uint8_t *src = map(-1), *dst = map(-1), *ref = map(-1);
	struct bad_seen b = { 0 };
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .bad = on_bad,
				    .opaque = &b };
	ssize_t left;

	printf("== memmig_copy_mc, anonymous memory, 2 poisoned pages\n");
	if (!src || !dst || !ref)
		return 1;
	fill(src);
	memcpy(ref, src, MC_LEN);
	for (int k = 0; k < 2; k++)
		CHECK(hwpoison_page(src + bad[k], NULL) == 0, "MADV_HWPOISON failed");
	memset(dst, MC_FILL, MC_LEN);
	left = memmig_copy_mc(ctx, dst, src, MC_LEN, &o);
	printf("  not copied: %zd bytes\n", left);
	CHECK(left == 2 * MC_PAGE, "not copied %zd, want %lu", left, 2 * MC_PAGE);
	CHECK(b.n == 2 && b.off[0] == bad[0] && b.off[1] == bad[1],
	      "lost pages reported: %u", b.n);
	CHECK(b.err[0] == -EHWPOISON && b.err[1] == -EHWPOISON,
	      "errors %d %d, want -EHWPOISON", b.err[0], b.err[1]);
	CHECK(compare(dst, ref, bad, 2) == 0, "the copy differs outside the lost pages, "
	      "or a lost page was written");
	munmap(src, MC_LEN);
	munmap(dst, MC_LEN);
	munmap(ref, MC_LEN);
	return 0;
}

static int mc_memfd(struct memmig_ctx *ctx)
{
	const uint64_t bad = (2UL << 20) + 4 * MC_PAGE;
	int fd = memfd_create("guest-mc", MFD_CLOEXEC);
	uint8_t *src, *dst = map(-1);
	struct bad_seen b = { 0 };
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = fd, .bad = on_bad,
				    .opaque = &b };
	ssize_t left;

	printf("== memmig_copy_mc, memfd with a poisoned page, the kernel's read\n");
	if (fd < 0 || ftruncate(fd, MC_LEN) || !(src = map(fd)) || !dst)
		return 1;
	fill(src);
	CHECK(hwpoison_page(src + bad, NULL) == 0, "MADV_HWPOISON failed");
	memset(dst, MC_FILL, MC_LEN);
	left = memmig_copy_mc(ctx, dst, src, MC_LEN, &o);
	printf("  not copied: %zd bytes\n", left);
	CHECK(left == MC_PAGE, "not copied %zd, want %lu", left, MC_PAGE);
	CHECK(b.n == 1 && b.off[0] == bad, "lost pages reported: %u", b.n);
	CHECK(b.err[0] == -EIO, "error %d, want -EIO (the kernel's read)", b.err[0]);
	munmap(src, MC_LEN);
	munmap(dst, MC_LEN);
	close(fd);
	return 0;
}

int mc_cases(struct memmig_ctx *ctx)
{
	int rc = mc_anon(ctx);

	return rc ? rc : mc_memfd(ctx);
}
