/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memhog: a process that does not link libmemmig, for moving by pid.  It
 * fills anonymous (THP-advised) and memfd memory with pseudo-random data,
 * prints "ready", then keeps counting in a loop.  SIGUSR1 checks every byte
 * against its checksum and prints "verify ok N" or "verify BAD" (N: the
 * loop counter, which shows it kept running); SIGTERM exits 0 if the last
 * check passed.
 *   memhog ANON_MIB MEMFD_MIB [cow]
 * cow: the anonymous memory in 4 KiB pages, shared copy-on-write with a
 * child ("child PID" before "ready", killed when memhog ends) one page in
 * two: memhog writes the even pages again, which gives it copies of its
 * own, and the odd ones stay mapped by both (move_pages(2) moves them
 * only with MPOL_MF_MOVE_ALL).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

struct area {
	uint64_t *p;
	size_t len;
	uint64_t sum;
};

static volatile sig_atomic_t verify_req, stop_req;

static void on_usr1(int s)
{
	verify_req = 1;
}

static void on_term(int s)
{
	stop_req = 1;
}

static uint64_t checksum(const struct area *a)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < a->len / 8; i++)
		h = (h ^ a->p[i]) * 1099511628211ULL;
	return h;
}

static void fill(struct area *a, uint64_t seed)
{
	uint64_t x = seed | 1;

	for (size_t i = 0; i < a->len / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		a->p[i] = x;
	}
	a->sum = checksum(a);
}

static int map_areas(struct area *a, size_t anon, size_t memfd, bool cow)
{
	int fd = memfd_create("memhog", 0);
	uint8_t *p;

	/* 2 MB-aligned, so that the anonymous part can be THPs. */
	p = mmap(NULL, anon + (2 << 20), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || fd < 0 || ftruncate(fd, (off_t)memfd))
		return -1;
	a[0].p = (uint64_t *)(((uintptr_t)p + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
	a[0].len = anon;
	madvise(a[0].p, anon, cow ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
	a[1].p = mmap(NULL, memfd, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	a[1].len = memfd;
	close(fd);
	return a[1].p == MAP_FAILED ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct area a[2];
	volatile uint64_t counter = 0;
	int ok = 1;

	bool cow = argc == 4 && !strcmp(argv[3], "cow");
	pid_t child = 0;

	if (argc != 3 && !cow) {
		fprintf(stderr, "usage: memhog ANON_MIB MEMFD_MIB [cow]\n");
		return 2;
	}
	if (map_areas(a, strtoul(argv[1], NULL, 0) << 20, strtoul(argv[2], NULL, 0) << 20, cow)) {
		perror("memhog: mmap");
		return 1;
	}
	fill(&a[0], 0x1234);
	fill(&a[1], 0x5678);
	signal(SIGUSR1, on_usr1);
	signal(SIGTERM, on_term);
	if (cow) {
		child = fork();
		if (child < 0) {
			perror("memhog: fork");
			return 1;
		}
		if (child == 0) {
			/* Shares the anonymous pages only, until memhog ends. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			munmap(a[1].p, a[1].len);
			for (;;)
				pause();
		}
		for (size_t off = 0; off < a[0].len; off += 2 * 4096) {
			volatile uint64_t *w = &a[0].p[off / 8];

			*w = *w;	/* a write: a copy of memhog's own */
		}
		printf("child %d\n", (int)child);
	}
	printf("anon %p %zu\nmemfd %p %zu\nready\n", (void *)a[0].p, a[0].len,
	       (void *)a[1].p, a[1].len);
	fflush(stdout);
	while (!stop_req) {
		counter++;
		if (verify_req) {
			verify_req = 0;
			ok = checksum(&a[0]) == a[0].sum && checksum(&a[1]) == a[1].sum;
			printf("verify %s %llu\n", ok ? "ok" : "BAD", (unsigned long long)counter);
			fflush(stdout);
		}
		usleep(1000);	/* alive, without taking a CPU from the test */
	}
	if (child > 0)
		kill(child, SIGKILL);
	return ok ? 0 : 1;
}
