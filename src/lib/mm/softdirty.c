/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's soft-dirty bits (see softdirty.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/mm/softdirty.h"

#define PAGE 4096

int memmig_softdirty_clear(int clear_refs)
{
	/* "4": soft-dirty bits only; the accessed bits stay the kernel's. */
	return pwrite(clear_refs, "4", 1, 0) == 1 ? 0 : -errno;
}

int memmig_softdirty_clear_self(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return -errno;
	rc = memmig_softdirty_clear(fd);
	close(fd);
	return rc;
}

/* The bit of the page at p: 1, 0, or -errno. */
static int page_bit(int pagemap, const volatile char *p)
{
	uint64_t e;

	if (pread(pagemap, &e, sizeof(e), (off_t)((uintptr_t)p / PAGE * sizeof(e))) != sizeof(e))
		return -errno;
	return !!(e & MEMMIG_PM_SOFT_DIRTY);
}

static int probe_result;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

/* Written, cleared: clean; written again: dirty.  Else the kernel has none. */
static void probe(void)
{
	volatile char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int before, after;

	if (p == MAP_FAILED || pagemap < 0) {
		probe_result = -errno;
	} else {
		p[0] = 1;
		probe_result = memmig_softdirty_clear_self();
		before = probe_result ? 0 : page_bit(pagemap, p);
		p[0] = 2;
		after = probe_result ? 0 : page_bit(pagemap, p);
		if (!probe_result)
			probe_result = before < 0 ? before : after < 0 ? after :
				       !before && after ? 0 : -ENOENT;
	}
	if (pagemap >= 0)
		close(pagemap);
	if (p != MAP_FAILED)
		munmap((void *)p, PAGE);
}

int memmig_softdirty_probe(void)
{
	pthread_once(&probe_once, probe);
	return probe_result;
}
