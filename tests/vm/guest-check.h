/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the guest test programs share: checks that count, and skips. */
#ifndef MEMMIG_GUEST_CHECK_H
#define MEMMIG_GUEST_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* The whole program skips (77), saying why. */
static inline int skip(const char *why)
{
	printf("SKIP: %s\n", why);
	return 77;
}

#endif
