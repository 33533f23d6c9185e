/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whether a process is gone: a read of a process that ends under it fails
 * in that read's own words (ENOENT, EINVAL, EIO, an empty or short file),
 * and the library answers -ESRCH for all of them.
 */
#ifndef MEMMIG_PROC_H
#define MEMMIG_PROC_H

#include <stdbool.h>

/* pid ended or is ending (a zombie, or exiting: its memory may be gone). */
bool memmig_proc_gone(int pid);
/* rc, or -ESRCH when it is an error and pid (> 0) is gone. */
int memmig_proc_err(int pid, int rc);

#endif
