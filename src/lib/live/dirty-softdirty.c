/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dirty tracking without KVM on kernels before 6.7 (Debian 12's 6.1):
 * the page tables' soft-dirty bits.  Writing "4" to /proc/self/clear_refs
 * clears them and write-protects every page of the process; a write sets
 * the page's bit again, which /proc/self/pagemap shows (bit 55).
 *
 * The kernel cannot read and clear the bits in one step: a write between
 * the pagemap read and the clear would be lost.  So every harvest runs
 * with the VMM's threads stopped (its pause() callback, a few ms for a
 * GiB), except the last one, which the pause covers anyway.  The clear is
 * process-wide: one such migration at a time in a process (-EBUSY for a
 * second), and another user of soft-dirty bits in it would see them
 * cleared.  A kernel without CONFIG_MEM_SOFT_DIRTY accepts the clear and
 * never sets a bit: supported() tries the bits before anyone relies on
 * them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/live/live-private.h"
#include "lib/mm/softdirty.h"

#define SCAN_PAGES 4096	/* pagemap entries read at a time */

/* The process's soft-dirty bits belong to one migration at a time. */
static bool sd_busy;

static bool sd_claim(void)
{
	bool no = false;

	return __atomic_compare_exchange_n(&sd_busy, &no, true, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void sd_release(void)
{
	__atomic_store_n(&sd_busy, false, __ATOMIC_RELEASE);
}

bool memmig_dirty_softdirty_supported(void)
{
	bool works;

	/* Its clear must not cut into a migration that relies on the bits. */
	if (!sd_claim())
		return true;	/* one is running: they work; start() says EBUSY */
	works = !memmig_softdirty_probe();
	sd_release();
	return works;
}

int memmig_dirty_softdirty_start(struct memmig_live *l)
{
	if (!sd_claim())
		return -EBUSY;
	l->softdirty = true;
	l->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (l->pagemap < 0)
		return -errno;
	return memmig_softdirty_clear_self();
}

void memmig_dirty_softdirty_stop(struct memmig_live *l)
{
	if (l->softdirty)
		sd_release();
	l->softdirty = false;
}

/* Reads the bits of the range not switched over into l->dirty, then
 * clears them (all of the process's: no piece can be read alone). Writers
 * stopped. */
static int read_and_clear(struct memmig_live *l)
{
	uint64_t e[SCAN_PAGES], first = (uintptr_t)l->slot.hva / MEMMIG_PAGE_SIZE + l->cur;
	uint64_t npages = memmig_live_end(l) - l->cur;

	for (uint64_t p = 0; p < npages; p += SCAN_PAGES) {
		uint64_t n = npages - p < SCAN_PAGES ? npages - p : SCAN_PAGES;
		ssize_t got = pread(l->pagemap, e, n * sizeof(e[0]),
				    (off_t)((first + p) * sizeof(e[0])));

		if (got != (ssize_t)(n * sizeof(e[0])))
			return got < 0 ? -errno : -EIO;
		for (uint64_t i = 0; i < n; i++)
			if (e[i] & MEMMIG_PM_SOFT_DIRTY)
				bitmap_set(l->dirty, l->cur + p + i);
	}
	return memmig_softdirty_clear_self();
}

int memmig_dirty_softdirty_harvest(struct memmig_live *l)
{
	struct memmig_vm *vm = l->vm;
	struct memmig_sched_was was;
	int rc, rrc = 0;

	if (l->paused)
		return read_and_clear(l);
	memmig_live_sched_raise(l, &was);
	rc = vm->ops.pause(vm->opaque);
	if (rc >= 0) {
		rc = read_and_clear(l);
		rrc = vm->ops.resume(vm->opaque);
	}
	memmig_live_sched_restore(&was);
	return rc ? rc : rrc;
}
