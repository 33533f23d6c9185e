/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What move_pages(2) does not say: its -ENOENT and -EFAULT each cover pages
 * that are not there and pages that are there but cannot move.  The pagemap
 * (and, for poison, a read through /proc/PID/mem) tells them apart, without
 * privileges.
 */
#ifndef MEMMIG_PAGEFLAGS_H
#define MEMMIG_PAGEFLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Refines the negative entries of status[] for the pages at pages[]:
 *  -ENOENT of a page whose pagemap entry is a swap entry that reads back
 *   with EIO: hardware poison, -EHWPOISON (a swapped-out page reads fine);
 *  -EFAULT of a present page this process maps alone: a real page the
 *   kernel would not hand over now (a NUMA-balancing hint fault pending),
 *   -EBUSY.  The shared zero page, mapped by everyone, stays -EFAULT.
 * What remains -ENOENT or -EFAULT has nothing to move.  The process's
 * files are read through procfd when it is >= 0 (proc.h).
 */
void memmig_pageflags_refine(int pid, int procfd, void *const *pages, size_t n, int *status);

#endif
