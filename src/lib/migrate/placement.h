/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where the pages of a range are: the kernel's move_pages() query. */
#ifndef MEMMIG_PLACEMENT_H
#define MEMMIG_PLACEMENT_H

#include <stdint.h>

#include "memmig.h"

/*
 * status[i] gets the node of the i-th 4 KiB page of [addr, addr + len), or
 * a negative errno (-ENOENT: not present, -EFAULT: not mapped ...).
 * Returns 0, or -errno when the query itself fails (-ESRCH, -EPERM).
 */
int memmig_placement_query(int pid, uint64_t addr, uint64_t len, int *status);
/* The same of a job's range, through the job's pin (memmig_job_move_pages()). */
struct memmig_job;
int memmig_job_placement_query(struct memmig_job *job, uint64_t addr, uint64_t len,
			       int *status);

/* move_pages(2) through the system call (libnuma's wrapper is the same). */
long memmig_sys_move_pages(int pid, unsigned long count, void **pages,
			   const int *nodes, int *status, int flags);

#endif
