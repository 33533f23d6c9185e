/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which node a page frame is on: the memory blocks sysfs lists under each
 * node.  With it, the frame numbers of /proc/PID/pagemap (which need
 * CAP_SYS_ADMIN) say where a process's pages are for the price of reading
 * 8 bytes a page, where move_pages(2)'s query looks each address up.  The
 * shared zero pages (4 KiB and huge) are told apart: the kernel answers
 * EFAULT for them, not a node.  Absent pages are left to the kernel's
 * query, whose answer for them differs between versions.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memmig.h"
#include "lib/mm/frames.h"

#define PM_PFN_MASK ((1ULL << 55) - 1)
#define PM_PRESENT (1ULL << 63)
#define HUGE_PAGES (MEMMIG_UNIT_SIZE / MEMMIG_PAGE_SIZE)

struct block {
	uint64_t first, end;	/* frames [first, end) */
	int node;
};

struct memmig_frames {
	struct block *b;	/* sorted by first */
	size_t n;
	uint64_t zero_pfn;	/* 0: none (a kernel that maps its own) */
	uint64_t huge_zero_pfn;	/* head; 0: none */
};

static int cmp_block(const void *a, const void *b)
{
	const struct block *x = a, *y = b;

	return (x->first > y->first) - (x->first < y->first);
}

/* This process's pagemap entry for an address, or 0. */
static uint64_t own_entry(const void *addr)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	uint64_t e = 0;

	if (fd >= 0 && pread(fd, &e, sizeof(e),
			     (off_t)((uintptr_t)addr / MEMMIG_PAGE_SIZE * sizeof(e))) != sizeof(e))
		e = 0;
	if (fd >= 0)
		close(fd);
	return e;
}

/* Whether the kernel flags the frame as a zero page (KPF_ZERO_PAGE): a
 * read fault may map a page of its own, zeroed (no huge zero page). */
static bool is_zero_page(uint64_t pfn)
{
	int fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	uint64_t flags = 0;
	bool ok = fd >= 0 && pread(fd, &flags, sizeof(flags), (off_t)(pfn * sizeof(flags))) ==
				     sizeof(flags);

	if (fd >= 0)
		close(fd);
	return ok && (flags & (1ULL << 24));
}

/*
 * The zero pages, as a read fault maps them here: 4 KiB where huge pages
 * are refused, huge (when the kernel uses one) where they are advised.  A
 * kernel may map a page of its own instead (kpageflags says which).
 * -EPERM when the pagemap shows no frame numbers (no CAP_SYS_ADMIN).
 */
static int find_zero_pages(struct memmig_frames *f)
{
	size_t len = 3 * MEMMIG_UNIT_SIZE;
	char *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	volatile char *h, *small;
	uint64_t e = 0;

	if (p == MAP_FAILED)
		return -ENOMEM;
	h = (volatile char *)(((uintptr_t)p + 2 * MEMMIG_UNIT_SIZE - 1) &
			      ~(uintptr_t)(MEMMIG_UNIT_SIZE - 1));
	small = (volatile char *)p;
	if (!madvise(p, (size_t)((char *)h - p), MADV_NOHUGEPAGE)) {
		(void)small[0];
		e = own_entry((const void *)small);
		if (is_zero_page(e & PM_PFN_MASK))
			f->zero_pfn = e & PM_PFN_MASK;
	}
	if (!madvise((void *)h, MEMMIG_UNIT_SIZE, MADV_HUGEPAGE)) {
		uint64_t pfn;

		(void)h[0];
		pfn = own_entry((const void *)h) & PM_PFN_MASK;
		/* A huge zero page is one aligned run of frames. */
		if (pfn && pfn != f->zero_pfn && pfn % HUGE_PAGES == 0 && is_zero_page(pfn))
			f->huge_zero_pfn = pfn;
	}
	munmap(p, len);
	return (e & PM_PRESENT) && !(e & PM_PFN_MASK) ? -EPERM : e & PM_PRESENT ? 0 : -ENOENT;
}

static int add_block(struct memmig_frames *f, size_t *cap, uint64_t first, uint64_t end,
		     int node)
{
	if (f->n == *cap) {
		struct block *nb = realloc(f->b, (*cap = *cap ? *cap * 2 : 64) * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		f->b = nb;
	}
	f->b[f->n++] = (struct block){ first, end, node };
	return 0;
}

static int read_blocks(struct memmig_frames *f)
{
	unsigned long long bs = 0;
	FILE *s = fopen("/sys/devices/system/memory/block_size_bytes", "re");
	DIR *d = opendir("/sys/devices/system/node");
	struct dirent *e;
	size_t cap = 0;
	int rc = 0;

	if (!s || fscanf(s, "%llx", &bs) != 1 || !bs || !d)
		rc = -ENOENT;
	if (s)
		fclose(s);
	while (!rc && (e = readdir(d))) {
		char path[300];
		unsigned int node;
		DIR *nd;
		struct dirent *m;

		if (sscanf(e->d_name, "node%u", &node) != 1)
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/node/%s", e->d_name);
		nd = opendir(path);
		while (nd && !rc && (m = readdir(nd))) {
			unsigned long long blk;

			if (sscanf(m->d_name, "memory%llu", &blk) == 1)
				rc = add_block(f, &cap, blk * bs / MEMMIG_PAGE_SIZE,
					       (blk + 1) * bs / MEMMIG_PAGE_SIZE, (int)node);
		}
		if (nd)
			closedir(nd);
	}
	if (d)
		closedir(d);
	if (!rc && !f->n)
		rc = -ENOENT;
	if (!rc)
		qsort(f->b, f->n, sizeof(*f->b), cmp_block);
	/* A block under two nodes is no answer: those frames are asked. */
	for (size_t i = 1; !rc && i < f->n; i++)
		if (f->b[i].first < f->b[i - 1].end)
			f->b[i].node = f->b[i - 1].node = -1;
	return rc;
}

int memmig_frames_new(struct memmig_frames **out)
{
	struct memmig_frames *f = calloc(1, sizeof(*f));
	int rc = f ? 0 : -ENOMEM;

	*out = NULL;
	if (!rc)
		rc = find_zero_pages(f);
	if (!rc)
		rc = read_blocks(f);
	if (rc) {
		memmig_frames_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

void memmig_frames_free(struct memmig_frames *f)
{
	if (f) {
		free(f->b);
		free(f);
	}
}

int memmig_frames_status(const struct memmig_frames *f, uint64_t entry, int *status)
{
	uint64_t pfn = entry & PM_PFN_MASK;
	size_t lo = 0, hi = f->n;

	/* Absent: kernels answer ENOENT or EFAULT (6.1, anonymous memory),
	 * and EFAULT where the mapping went away, which the report tells
	 * apart; the kernel says which. */
	if (!(entry & PM_PRESENT) || !pfn)
		return -ENOENT;
	if (pfn == f->zero_pfn ||
	    (f->huge_zero_pfn && pfn >= f->huge_zero_pfn && pfn < f->huge_zero_pfn + HUGE_PAGES)) {
		*status = -EFAULT;
		return 0;
	}
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (pfn < f->b[mid].first)
			hi = mid;
		else if (pfn >= f->b[mid].end)
			lo = mid + 1;
		else if (f->b[mid].node < 0)
			return -ENOENT;
		else {
			*status = f->b[mid].node;
			return 0;
		}
	}
	return -ENOENT;		/* device memory, or a block not listed */
}
