/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * remap-cost: what this host's kernel takes to move LEN of populated,
 * THP-advised anonymous memory aside and back with mremap(2), the two
 * page-table moves a live swap makes, with no userfaultfd and no guest.
 * Tests compare memmig's swap against it, measured in the same run, so
 * that they judge memmig and not the host (an mremap of 1 GiB took 0.3 ms
 * on one host and 3.3 ms on another).  Like a VMM, the process has a
 * second thread, which runs on another CPU now and then: each mremap then
 * flushes that CPU's TLB too, which in a loaded VM cost more than the
 * move itself (a pair of 512 MiB: 13-15 ms against 1.7-2.1 ms alone).
 *   remap-cost LEN_MIB [REPS [PIECES]]   prints the median, in ms
 * PIECES: the pair per piece of LEN / PIECES (in 2 MiB units), as a live
 * switchover in pieces makes them: as many system calls and flushes.
 *   remap-cost --entries LEN_MIB [REPS [PIECES]]
 * the same pair where each piece is first registered with userfaultfd for
 * asynchronous write protection without UFFD_FEATURE_EVENT_REMAP, protected
 * and written page by page (its THPs split, as memmig's tracked writer
 * splits them): the kernel then moves it aside one entry at a time, the
 * move memmig's tracker avoids.  Exit 77 where userfaultfd cannot do it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HUGE (2UL << 20)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The other thread: on a CPU other than main's where there is one,
 * waking every millisecond, as a VMM's threads do. */
static void *ticker(void *arg)
{
	int cpu = *(int *)arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (;;)
		usleep(1000);
	return NULL;
}

static void ticker_start(void)
{
	static int other = -1;
	cpu_set_t set;
	pthread_t th;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int c = 0; c < CPU_SETSIZE && other < 0; c++)
		if (CPU_ISSET(c, &set) && c != sched_getcpu())
			other = c;
	if (other >= 0 && !pthread_create(&th, NULL, ticker, &other))
		usleep(20000);	/* it has run there */
}

/* A 2 MiB-aligned, THP-advised area of len inside a reservation twice
 * its size: the second half is where the memory goes aside. */
static uint8_t *reserve(size_t len, uint8_t **aside)
{
	uint8_t *p = mmap(NULL, 2 * len + HUGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *at;

	if (p == MAP_FAILED)
		return NULL;
	at = (uint8_t *)(((uintptr_t)p + HUGE - 1) & ~(HUGE - 1));
	*aside = at + len;
	return at;
}

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif

/* A userfaultfd for asynchronous write protection, without the remap
 * event; -1 where this kernel or this user cannot have one. */
static int uffd_open(void)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd >= 0 && ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* [p, p + l) registered, protected, and written page by page: each write
 * takes the page's protection off, splitting its THP.  0 or -1. */
static int track_and_split(int uffd, uint8_t *p, size_t l)
{
	struct uffdio_register reg = { .range = { (uintptr_t)p, l },
				       .mode = UFFDIO_REGISTER_MODE_WP };
	struct uffdio_writeprotect wp = { .range = { (uintptr_t)p, l },
					  .mode = UFFDIO_WRITEPROTECT_MODE_WP };

	if (ioctl(uffd, UFFDIO_REGISTER, &reg) || ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
		return -1;
	for (size_t o = 0; o < l; o += 4096)
		p[o] = 0x5a;
	return 0;
}

int main(int argc, char **argv)
{
	bool entries = argc > 1 && !strcmp(argv[1], "--entries");
	size_t len = argc > 1 + entries ? strtoul(argv[1 + entries], NULL, 0) << 20 : 0;
	int reps = argc > 2 + entries ? atoi(argv[2 + entries]) : 5;
	size_t pieces = argc > 3 + entries ? strtoul(argv[3 + entries], NULL, 0) : 1, step;
	uint8_t *at, *aside;
	double t[64];
	int uffd = -1;

	if (!len || reps < 1 || reps > 64 || pieces < 1 || pieces > len / HUGE) {
		fprintf(stderr, "usage: remap-cost [--entries] LEN_MIB [REPS [PIECES]]\n");
		return 2;
	}
	if (entries) {
		uffd = uffd_open();
		if (uffd < 0) {
			fprintf(stderr, "remap-cost: no userfaultfd write protection here (%s)\n",
				strerror(errno));
			return 77;
		}
	}
	at = reserve(len, &aside);
	if (!at) {
		perror("mmap");
		return 1;
	}
	madvise(at, len, MADV_HUGEPAGE);
	memset(at, 0x5a, len);
	ticker_start();
	for (int i = 0; i < reps; i++) {
		step = (len / pieces + HUGE - 1) & ~(HUGE - 1);
		t[i] = 0;
		for (size_t o = 0; o < len; o += step) {
			size_t l = len - o < step ? len - o : step;
			double t0;

			if (uffd >= 0 && track_and_split(uffd, at + o, l)) {
				fprintf(stderr, "remap-cost: userfaultfd: %s\n", strerror(errno));
				return 77;
			}
			t0 = now_ms();
			if (mremap(at + o, l, l, MREMAP_MAYMOVE | MREMAP_FIXED, aside + o) ==
				    MAP_FAILED ||
			    mremap(aside + o, l, l, MREMAP_MAYMOVE | MREMAP_FIXED, at + o) ==
				    MAP_FAILED) {
				perror("mremap");
				return 1;
			}
			t[i] += now_ms() - t0;
		}
	}
	/* The memory came back whole: the test measures the real thing. */
	for (size_t o = 0; o < len; o += 4096)
		if (at[o] != 0x5a) {
			fprintf(stderr, "remap-cost: byte %zu changed\n", o);
			return 1;
		}
	qsort(t, reps, sizeof(t[0]), cmp_double);
	printf("%.3f\n", t[reps / 2]);
	return 0;
}
