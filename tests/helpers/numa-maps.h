/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where this process's pages are, as the kernel's /proc/self/numa_maps says. */
#ifndef MEMMIG_TEST_NUMA_MAPS_H
#define MEMMIG_TEST_NUMA_MAPS_H

#include <stddef.h>
#include <stdint.h>

/*
 * 4 KiB pages of [addr, addr + len) on node, as the kernel's numa_maps
 * counts them: the sum of "N<node>=" over the mappings that start in the
 * range (a swap splits a range into several mappings), in units of the
 * line's kernelpagesize_kB (2048 for hugetlbfs).
 */
uint64_t numa_maps_pages(const void *addr, size_t len, int node);

#endif
