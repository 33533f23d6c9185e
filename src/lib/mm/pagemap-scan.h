/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pagemap's PAGEMAP_SCAN ioctl (Linux 6.7, include/uapi/linux/fs.h),
 * which the build's headers may predate: the live tracker's written pages
 * (lib/live/dirty-uffd.c), the THP probe's PMD mappings
 * (lib/migrate/thp.c).  Older kernels answer -ENOTTY.
 */
#ifndef MEMMIG_PAGEMAP_SCAN_H
#define MEMMIG_PAGEMAP_SCAN_H

#include <stdint.h>
#include <sys/ioctl.h>

#ifndef PAGEMAP_SCAN
#define PAGE_IS_WRITTEN (1 << 1)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_HUGE (1 << 6)	/* PMD-mapped THP, or hugetlbfs */
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

#endif
