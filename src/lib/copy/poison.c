/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Poison markers: a page whose data was lost must fault like the lost
 * memory, never read as zeros.  UFFDIO_POISON (Linux 6.6) installs a
 * page-table marker that raises SIGBUS BUS_MCEERR_AR on access, and that
 * KVM turns into a machine check for a guest.  It needs a userfaultfd
 * registration (MISSING mode) only while it is installed: the marker stays
 * in the page table afterwards, and moves with it under mremap().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/core/memmig-private.h"

/* Linux 6.6 uapi, newer than Debian 12's headers. */
#ifndef UFFD_FEATURE_POISON
#define UFFD_FEATURE_POISON (1 << 14)
#endif
#ifndef UFFDIO_POISON
struct uffdio_poison {
	struct uffdio_range range;
	__u64 mode;
	__s64 updated;
};
#define UFFDIO_POISON _IOWR(UFFDIO, 0x08, struct uffdio_poison)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static int uffd_open_poison(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_POISON };
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);

	if (fd < 0)
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		close(fd);
		return -EOPNOTSUPP; /* EINVAL: a feature this kernel lacks */
	}
	return fd;
}

int memmig_poison_mark(struct memmig_ctx *ctx, void *addr, size_t len)
{
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)addr, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	struct uffdio_poison p = { .range = reg.range };
	long page = sysconf(_SC_PAGESIZE);
	int fd, rc = 0;

	if (!ctx || !len || ((uintptr_t)addr | len) & (page - 1))
		return -EINVAL;
	/* Not mapped (msync's ENOMEM, which writes nothing with MS_ASYNC):
	 * the caller's error, not a kernel that cannot. */
	if (msync(addr, len, MS_ASYNC) < 0 && errno == ENOMEM)
		return -EFAULT;
	fd = uffd_open_poison();
	if (fd < 0) {
		dbg(ctx, "UFFDIO_POISON: %d\n", fd);
		return fd;
	}
	if (ioctl(fd, UFFDIO_REGISTER, &reg) < 0) {
		/* EINVAL: a mapping userfaultfd cannot take (DAX, page cache). */
		rc = errno == EINVAL ? -EOPNOTSUPP : -errno;
		goto out;
	}
	/* The marker goes only where no page is mapped. */
	if (madvise(addr, len, MADV_DONTNEED) < 0 ||
	    ioctl(fd, UFFDIO_POISON, &p) < 0)
		rc = -errno;
	ioctl(fd, UFFDIO_UNREGISTER, &reg.range);
out:
	close(fd);
	if (rc)
		warn(ctx, "cannot mark %p+%#zx poisoned: %d\n", addr, len, rc);
	return rc;
}
