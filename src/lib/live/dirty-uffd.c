/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dirty tracking without KVM: memory written by this process's own threads
 * (a VMM's device emulation, a program that embeds memmig without a
 * guest).  userfaultfd write-protects the range in asynchronous mode
 * (UFFD_FEATURE_WP_ASYNC, Linux 6.7): a write just clears the page's
 * protection, nothing waits; PAGEMAP_SCAN then reports the written pages
 * and protects them again in one walk, as KVM_GET_DIRTY_LOG does.
 *
 * The swap moves each piece of the registered range aside with mremap.
 * Without UFFD_FEATURE_EVENT_REMAP a recent kernel (6.18 here) moves such
 * a range one page-table entry at a time, to clear their protection bits:
 * 4.4 ms a GiB of split THPs, all of it in the pause.  With it, whole page
 * tables move (0.3 ms a GiB), and the mremap waits until the event is
 * read: a thread of ours reads it.  Unregistering the piece first costs
 * the same walk: 0.5-2.9 ms for pieces of 8-80 MiB the writer had split,
 * against 0.2-0.5 ms for the event.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/live/live-private.h"
#include "lib/mm/pagemap-scan.h"

/* Linux 6.7 interfaces, for older headers. */
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#define SCAN_REGIONS 256
/* What the tracker asks of userfaultfd (supported() asks the same). */
#define UFFD_FEATURES (UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED | \
		       UFFD_FEATURE_EVENT_REMAP)

static uint64_t range_start(const struct memmig_live *l)
{
	return (uintptr_t)l->slot.hva + l->first * MEMMIG_PAGE_SIZE;
}

bool memmig_dirty_uffd_supported(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURES,
	};
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	bool ok = fd >= 0 && !ioctl(fd, UFFDIO_API, &api);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Reads (and drops) the tracker's events: the swap's remap waits for it. */
static void *uffd_reader(void *arg)
{
	struct memmig_live *l = arg;
	struct pollfd p[2] = { { .fd = l->uffd, .events = POLLIN },
			       { .fd = l->uffd_quit, .events = POLLIN } };
	struct uffd_msg msg;

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN)
			while (read(l->uffd, &msg, sizeof(msg)) == sizeof(msg))
				;
	}
	return NULL;
}

/* A thread of the tracker's, with every signal blocked: the VMM's signals
 * are for its own threads.  0 or -errno. */
static int quiet_thread(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static int reader_start(struct memmig_live *l)
{
	int rc;

	l->uffd_quit = eventfd(0, EFD_CLOEXEC);
	if (l->uffd_quit < 0)
		return -errno;
	rc = quiet_thread(&l->uffd_reader, uffd_reader, l);
	l->uffd_reader_live = rc == 0;
	/* The swap waits for it, in the pause: on busy CPUs a wakeup at normal
	 * priority waited 2.5 ms for one.  It runs for a read per swap, so a
	 * real-time priority costs nobody; without CAP_SYS_NICE it stays. */
	if (!rc)
		pthread_setschedparam(l->uffd_reader, SCHED_FIFO,
				      &(struct sched_param){ .sched_priority = 1 });
	return rc;
}

int memmig_dirty_uffd_start(struct memmig_live *l)
{
	uint64_t len = l->npages * MEMMIG_PAGE_SIZE;
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURES,
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
	return reader_start(l);
}

/* Scans past this many bytes are split between threads: the walk costs
 * about 0.8 ms a GiB of 4 KiB entries here, and in the pause nothing else
 * runs. */
#define SCAN_SPLIT_MIN (1ULL << 30)
#define SCAN_THREADS_MAX 4

struct scan_piece {
	struct memmig_live *l;
	uint64_t start, end;
	int rc;
	pthread_t th;
	bool live;
};

/* Marks the pages written in [start, end) dirty and protects them again.
 * Pieces start on 2 MiB boundaries: they share no bitmap word. */
static void *scan_piece(void *arg)
{
	struct scan_piece *pc = arg;
	struct memmig_live *l = pc->l;
	struct page_region v[SCAN_REGIONS];
	uint64_t base = (uintptr_t)l->slot.hva;
	struct pm_scan_arg a = {
		.size = sizeof(a),
		.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
		.start = pc->start,
		.end = pc->end,
		.vec = (uintptr_t)v,
		.vec_len = SCAN_REGIONS,
		.category_mask = PAGE_IS_WRITTEN,
		.return_mask = PAGE_IS_WRITTEN,
	};

	while (a.start < a.end) {
		long n = ioctl(l->pagemap, PAGEMAP_SCAN, &a);

		if (n < 0) {
			pc->rc = -errno;
			break;
		}
		for (long i = 0; i < n; i++)
			for (uint64_t p = (v[i].start - base) / MEMMIG_PAGE_SIZE;
			     p < (v[i].end - base) / MEMMIG_PAGE_SIZE; p++)
				bitmap_set(l->dirty, p);
		a.start = a.walk_end;
	}
	return NULL;
}

static unsigned int scan_threads(uint64_t len)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (len < SCAN_SPLIT_MIN || cpus < 2)
		return 1;
	return cpus < SCAN_THREADS_MAX ? (unsigned int)cpus : SCAN_THREADS_MAX;
}

int memmig_dirty_uffd_harvest(struct memmig_live *l, uint64_t lo, uint64_t hi)
{
	uint64_t start = (uintptr_t)l->slot.hva + lo * MEMMIG_PAGE_SIZE;
	uint64_t len = (hi - lo) * MEMMIG_PAGE_SIZE;
	unsigned int n = scan_threads(len);
	struct scan_piece pc[SCAN_THREADS_MAX] = { 0 };
	uint64_t step = (len / n + MEMMIG_UNIT_SIZE - 1) & ~(uint64_t)(MEMMIG_UNIT_SIZE - 1);
	int rc = 0;

	for (unsigned int i = 0; i < n; i++) {
		pc[i].l = l;
		/* From 2 MiB boundaries of the slot: whole bitmap words. */
		pc[i].start = i ? ((uintptr_t)l->slot.hva + ((start - (uintptr_t)l->slot.hva +
							       i * step) & ~(MEMMIG_UNIT_SIZE - 1))) :
				  start;
		pc[i].end = start + len;
		if (i)
			pc[i - 1].end = pc[i].start;
	}
	for (unsigned int i = 1; i < n; i++)
		pc[i].live = pc[i].start < pc[i].end &&
			     !quiet_thread(&pc[i].th, scan_piece, &pc[i]);
	/* A piece whose thread did not start is scanned here. */
	for (unsigned int i = 0; i < n; i++)
		if (!i || !pc[i].live)
			scan_piece(&pc[i]);
	for (unsigned int i = 0; i < n; i++) {
		if (pc[i].live)
			pthread_join(pc[i].th, NULL);
		if (!rc)
			rc = pc[i].rc;
	}
	return rc;
}

void memmig_dirty_uffd_stop(struct memmig_live *l)
{
	if (l->uffd_reader_live) {
		eventfd_write(l->uffd_quit, 1);
		pthread_join(l->uffd_reader, NULL);
		l->uffd_reader_live = false;
	}
	if (l->uffd_quit >= 0)
		close(l->uffd_quit);
	l->uffd_quit = -1;
	/* Closing drops the registration; a page left protected takes one
	 * ordinary write fault. */
	if (l->uffd >= 0)
		close(l->uffd);
	if (l->pagemap >= 0)
		close(l->pagemap);
	l->uffd = l->pagemap = -1;
}
