/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Telling pages that are not there from pages that cannot move. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/mm/pageflags.h"
#include "lib/mm/proc.h"
#include "memmig.h"

/* /proc/PID/pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst) */
#define PM_EXCLUSIVE (1ULL << 56)	/* page mapped by this process only */
#define PM_SWAP (1ULL << 62)		/* swap entry: swapped, or poisoned */
#define PM_PRESENT (1ULL << 63)

/* Entries read at once: the callers ask pages in address order, most of
 * them neighbours (a unit, a batch); one read a 2 MiB, not one a page. */
#define WINDOW 512

struct proc_files {
	int pid, procfd;
	int pagemap, mem;
	uint64_t first;			/* page index of win[0] */
	size_t nwin;			/* entries read into win */
	uint64_t win[WINDOW];
};

static int proc_open(const struct proc_files *f, const char *what)
{
	return memmig_proc_open(f->pid, f->procfd, what, O_RDONLY);
}

static bool pagemap_entry(struct proc_files *f, uintptr_t addr, uint64_t *e)
{
	uint64_t page = addr / MEMMIG_PAGE_SIZE;

	if (f->pagemap < 0)
		f->pagemap = proc_open(f, "pagemap");
	if (f->pagemap < 0)
		return false;
	if (page < f->first || page >= f->first + f->nwin) {
		ssize_t r = pread(f->pagemap, f->win, sizeof(f->win), (off_t)(page * sizeof(*e)));

		f->first = page;
		f->nwin = r > 0 ? (size_t)r / sizeof(*e) : 0;
		if (!f->nwin)
			return false;
	}
	*e = f->win[page - f->first];
	return true;
}

/* The kernel reads poisoned memory for nobody: EIO, where swap reads fine. */
static bool poisoned(struct proc_files *f, uintptr_t addr)
{
	char b;

	if (f->mem < 0)
		f->mem = proc_open(f, "mem");
	return f->mem >= 0 && pread(f->mem, &b, 1, (off_t)addr) < 0 && errno == EIO;
}

static void proc_close(struct proc_files *f)
{
	if (f->pagemap >= 0)
		close(f->pagemap);
	if (f->mem >= 0)
		close(f->mem);
}

void memmig_pageflags_refine(int pid, int procfd, void *const *pages, size_t n, int *status)
{
	struct proc_files f = { .pid = pid, .procfd = procfd, .pagemap = -1, .mem = -1 };

	for (size_t i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)pages[i];
		uint64_t e;

		if (status[i] != -ENOENT && status[i] != -EFAULT)
			continue;
		if (!pagemap_entry(&f, a, &e))
			break;
		if (status[i] == -ENOENT && (e & PM_SWAP) && poisoned(&f, a))
			status[i] = -EHWPOISON;
		else if (status[i] == -EFAULT && (e & PM_PRESENT) && (e & PM_EXCLUSIVE))
			status[i] = -EBUSY;
	}
	proc_close(&f);
}
