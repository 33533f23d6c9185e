/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which units are one transparent huge page: the pagemap gives the page
 * frames, /proc/kpageflags says whether the first is a THP head.  Both need
 * privileges (CAP_SYS_ADMIN for frame numbers); without them every unit is
 * treated as 4 KiB pages, which is slower but moves the same memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/migrate/migrate-private.h"
#include "lib/mm/proc.h"

#define PM_PRESENT (1ULL << 63)
#define PM_PFN_MASK ((1ULL << 55) - 1)
#define KPF_COMPOUND_HEAD (1ULL << 15)
#define KPF_HUGE (1ULL << 17)		/* hugetlbfs */
#define KPF_THP (1ULL << 22)

static bool read_u64(int fd, uint64_t index, uint64_t *v)
{
	return pread(fd, v, sizeof(*v), (off_t)(index * sizeof(*v))) == sizeof(*v);
}

/*
 * A PMD-sized folio: the head of a THP or of a 2 MB hugetlbfs page, its 512
 * frames contiguous, aligned and all mapped.  The kernel moves such a folio
 * whole.  Every entry is read (one 4 KiB read, about as cheap as two): a
 * THP split by a partial unmap still has its head and its last page, but a
 * hole (a page zapped, poisoned) that must not take the head's fate.
 */
static bool entries_are_thp(int kflags, const uint64_t *e)
{
	uint64_t first = e[0] & PM_PFN_MASK, flags;

	if (!first || first % MEMMIG_UNIT_PAGES)
		return false;
	for (size_t i = 0; i < MEMMIG_UNIT_PAGES; i++)
		if (!(e[i] & PM_PRESENT) || (e[i] & PM_PFN_MASK) != first + i)
			return false;
	return read_u64(kflags, first, &flags) && (flags & (KPF_THP | KPF_HUGE)) &&
	       (flags & KPF_COMPOUND_HEAD);
}

int memmig_thp_probe_open(struct memmig_ctx *ctx, int pid, int procfd,
			  struct memmig_thp_probe *p)
{
	p->pagemap = memmig_proc_open(pid, procfd, "pagemap", O_RDONLY);
	p->kflags = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	if (p->pagemap < 0 || p->kflags < 0) {
		dbg(ctx, "no THP detection (%s of pid %d): 4 KiB pages everywhere\n",
		    p->pagemap < 0 ? "pagemap" : "/proc/kpageflags", pid);
		memmig_thp_probe_close(p);
		return -ENOENT;
	}
	return 0;
}

void memmig_thp_probe_close(struct memmig_thp_probe *p)
{
	if (p->pagemap >= 0)
		close(p->pagemap);
	if (p->kflags >= 0)
		close(p->kflags);
	p->pagemap = p->kflags = -1;
}

bool memmig_thp_probe_entries(const struct memmig_thp_probe *p, const struct memmig_unit *u,
			      uint64_t *e)
{
	size_t len = u->len / MEMMIG_PAGE_SIZE * sizeof(*e);

	return p->pagemap >= 0 &&
	       pread(p->pagemap, e, len, (off_t)(u->addr / MEMMIG_PAGE_SIZE * sizeof(*e))) ==
		       (ssize_t)len;
}

bool memmig_thp_probe_is_thp(const struct memmig_thp_probe *p, const struct memmig_unit *u,
			     const uint64_t *e)
{
	return u->len == MEMMIG_UNIT_SIZE && !(u->addr % MEMMIG_UNIT_SIZE) &&
	       entries_are_thp(p->kflags, e);
}
