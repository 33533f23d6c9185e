/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which node a page frame is on (frames.c). */
#ifndef MEMMIG_FRAMES_H
#define MEMMIG_FRAMES_H

#include <stdint.h>

struct memmig_frames;

/* The nodes' frame ranges now: 0, -EPERM without CAP_SYS_ADMIN (pagemap
 * shows no frame numbers), -ENOENT when sysfs lists no memory blocks. */
int memmig_frames_new(struct memmig_frames **out);
void memmig_frames_free(struct memmig_frames *f);
/*
 * A pagemap entry of a present page as move_pages(2)'s query would answer
 * for it: a node, or -EFAULT (a zero page), into *status.  Returns 0, or
 * -ENOENT when the frames cannot say (a page not present, a frame of no
 * listed block, or one sysfs puts under two nodes): ask the kernel.
 */
int memmig_frames_status(const struct memmig_frames *f, uint64_t entry, int *status);

#endif
