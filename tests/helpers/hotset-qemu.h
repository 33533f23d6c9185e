/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hotset's QEMU guest: a real QEMU/KVM guest whose hot set is written by a
 * workload inside it (minivmm's hot-set guest, run by hotset-bios.S as
 * QEMU's firmware), so that tiering is judged on a VMM's process that
 * memmig does not control.  hotset steers the guest's window through its
 * state block in guest RAM, asks where its pages are with move_pages(2)
 * on QEMU's pid, and checks every page with QEMU stopped.
 */
#ifndef HOTSET_QEMU_H
#define HOTSET_QEMU_H

#include <stdint.h>
#include <sys/types.h>

#include "minivmm/vmm.h"

struct hotset_qemu {
	pid_t pid;		/* QEMU's */
	uint64_t hva;		/* the guest's page 0 in QEMU (GPA 2 MiB) */
	uint64_t npages;	/* the guest's, from its page 0 */
	uint32_t data0;		/* its first data page */
	double tsc_hz;		/* the guest's clock of stalls */
	char dir[64];		/* the firmware image and QEMU's monitor */
};

/*
 * Starts QEMU (the binary at path, KVM) with a guest of size_mib MiB that
 * writes all of it until it has done so twice.  0, or -errno with why.
 */
int hotset_qemu_start(struct hotset_qemu *q, const char *path, unsigned long size_mib,
		      char *why, size_t len);
/* The guest's state block. */
int hotset_qemu_state(const struct hotset_qemu *q, struct minivmm_state *st);
/* Its window from its next pass: data pages [first, first + pages). */
int hotset_qemu_window(const struct hotset_qemu *q, uint32_t first, uint32_t pages);
/* Its longest stall counts from now on. */
int hotset_qemu_stall_reset(const struct hotset_qemu *q);
/* QEMU held still (SIGSTOP), every page read and checked, QEMU resumed.
 * With HOTSET_QEMU_LOSE_WRITE in the environment, the last page loses a
 * write first, in the guest's RAM: the test of the check. */
int hotset_qemu_verify(const struct hotset_qemu *q, struct minivmm_check *c);
/* QEMU ended, its files removed. */
void hotset_qemu_stop(struct hotset_qemu *q);

#endif
