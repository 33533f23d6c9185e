/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A real memory error on one page, for the tests that run where the kernel
 * has CONFIG_MEMORY_FAILURE (the multi-node tier). */
#ifndef MEMMIG_TEST_HWPOISON_H
#define MEMMIG_TEST_HWPOISON_H

#include <errno.h>
#include <signal.h>
#include <sys/mman.h>

static volatile sig_atomic_t hwpoison_code;

static inline void hwpoison_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	hwpoison_code = si->si_code;
}

/*
 * MADV_HWPOISON of the 4 KiB page at p: the kernel's memory-failure path,
 * as for a machine check.  Kernels differ in whether the caller gets
 * SIGBUS for it at once: 6.12 sends BUS_MCEERR_AR, as for a consumed
 * error; 6.1 does only for DAX pages.  That signal is noted in *code (0:
 * none), not taken as a fault of the test.  0 or -errno (-EINVAL: no
 * CONFIG_MEMORY_FAILURE).
 */
static inline int hwpoison_page(void *p, int *code)
{
	struct sigaction sa = { .sa_sigaction = hwpoison_on_sigbus, .sa_flags = SA_SIGINFO };
	struct sigaction old;
	int rc;

	sigemptyset(&sa.sa_mask);
	hwpoison_code = 0;
	sigaction(SIGBUS, &sa, &old);
	rc = madvise(p, 4096, MADV_HWPOISON) ? -errno : 0;
	sigaction(SIGBUS, &old, NULL);
	if (code)
		*code = hwpoison_code;
	return rc;
}

#endif
