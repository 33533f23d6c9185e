/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the guest test programs share: checks that count, and skips. */
#ifndef MEMMIG_GUEST_CHECK_H
#define MEMMIG_GUEST_CHECK_H

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

/* The whole program skips (77), saying why. */
static inline int skip(const char *why)
{
	printf("SKIP: %s\n", why);
	return 77;
}

#endif
