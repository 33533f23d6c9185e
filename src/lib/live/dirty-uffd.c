/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dirty tracking without KVM: memory written by this process's own threads
 * (a VMM's device emulation, a program that embeds memmig without a
 * guest).  userfaultfd write-protects the range in asynchronous mode
 * (UFFD_FEATURE_WP_ASYNC, Linux 6.7): a write just clears the page's
 * protection, nothing waits; PAGEMAP_SCAN then reports the written pages
 * and protects them again in one walk, as KVM_GET_DIRTY_LOG does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/live/live-private.h"

/* Linux 6.7 interfaces, for older headers. */
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef PAGEMAP_SCAN
#define PAGE_IS_WRITTEN (1 << 1)
#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif

#define SCAN_REGIONS 256

static uint64_t range_start(const struct memmig_live *l)
{
	return (uintptr_t)l->slot.hva + l->first * MEMMIG_PAGE_SIZE;
}

bool memmig_dirty_uffd_supported(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED,
	};
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	bool ok = fd >= 0 && !ioctl(fd, UFFDIO_API, &api);

	if (fd >= 0)
		close(fd);
	return ok;
}

int memmig_dirty_uffd_start(struct memmig_live *l)
{
	uint64_t len = l->npages * MEMMIG_PAGE_SIZE;
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED,
	};
	struct uffdio_register reg = {
		.range = { .start = range_start(l), .len = len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp = {
		.range = reg.range,
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};

	l->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (l->uffd < 0)
		return -errno;	/* EPERM: vm.unprivileged_userfaultfd is 0 */
	if (ioctl(l->uffd, UFFDIO_API, &api))
		return errno == EINVAL ? -EOPNOTSUPP : -errno;
	l->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (l->pagemap < 0)
		return -errno;
	if (ioctl(l->uffd, UFFDIO_REGISTER, &reg) || ioctl(l->uffd, UFFDIO_WRITEPROTECT, &wp))
		return -errno;
	return 0;
}

int memmig_dirty_uffd_harvest(struct memmig_live *l)
{
	struct page_region v[SCAN_REGIONS];
	uint64_t base = (uintptr_t)l->slot.hva;
	struct pm_scan_arg a = {
		.size = sizeof(a),
		.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
		.start = range_start(l),
		.end = range_start(l) + l->npages * MEMMIG_PAGE_SIZE,
		.vec = (uintptr_t)v,
		.vec_len = SCAN_REGIONS,
		.category_mask = PAGE_IS_WRITTEN,
		.return_mask = PAGE_IS_WRITTEN,
	};

	while (a.start < a.end) {
		long n = ioctl(l->pagemap, PAGEMAP_SCAN, &a);

		if (n < 0)
			return -errno;
		for (long i = 0; i < n; i++)
			for (uint64_t p = (v[i].start - base) / MEMMIG_PAGE_SIZE;
			     p < (v[i].end - base) / MEMMIG_PAGE_SIZE; p++)
				bitmap_set(l->dirty, p);
		a.start = a.walk_end;
	}
	return 0;
}

void memmig_dirty_uffd_stop(struct memmig_live *l)
{
	/* Closing drops the registration; a page left protected takes one
	 * ordinary write fault. */
	if (l->uffd >= 0)
		close(l->uffd);
	if (l->pagemap >= 0)
		close(l->pagemap);
	l->uffd = l->pagemap = -1;
}
