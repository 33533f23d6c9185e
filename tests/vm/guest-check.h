/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the guest test programs share: checks that count, and skips. */
#ifndef MEMMIG_GUEST_CHECK_H
#define MEMMIG_GUEST_CHECK_H

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../helpers/hwpoison.h"

static int fails;

/* Records a failure with its reason and goes on. */
#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		printf("FAIL: %s:%d: %s: ", __FILE__, __LINE__, #cond);	\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		fails++;						\
	}								\
} while (0)

/* FNV-1a over 64-bit words: a checksum of len bytes (a multiple of 8). */
static inline uint64_t guest_csum(const void *p, size_t len)
{
	const uint64_t *w = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len / 8; i++)
		h = (h ^ w[i]) * 1099511628211ULL;
	return h;
}

/*
 * Anonymous memory at a 2 MB boundary, as a VMM maps guest RAM: THP, and
 * device DAX targets, need it, and the kernel aligns large anonymous
 * mappings itself only from 6.7 on.  The slack stays mapped.
 */
static inline void *guest_map_2m(size_t len)
{
	uint8_t *p = mmap(NULL, len + (2UL << 20), PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return MAP_FAILED;
	return (void *)(((uintptr_t)p + (2UL << 20) - 1) & ~((2UL << 20) - 1));
}

static sigjmp_buf probe_env;
static volatile sig_atomic_t probing;
static volatile int probe_code;

/* The SIGBUS handler for guest_probe(): install it with SA_SIGINFO. */
static inline void guest_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (!probing) {
		/* Someone (the library?) read a page that is gone. */
		static const char msg[] = "FAIL: unexpected SIGBUS outside the probe\n";

		if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
			_exit(2);
		_exit(1);
	}
	probe_code = si->si_code;
	siglongjmp(probe_env, 1);
}

/* Reads one byte under a SIGBUS guard: 0 read, else the si_code. */
static inline int guest_probe(const volatile uint8_t *p)
{
	probe_code = 0;
	probing = 1;
	if (!sigsetjmp(probe_env, 1))
		(void)*p;
	probing = 0;
	return probe_code;
}

/* The whole program skips (77), saying why. */
static inline int skip(const char *why)
{
	printf("SKIP: %s\n", why);
	return 77;
}

#endif
