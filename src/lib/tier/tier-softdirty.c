/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Writes from the kernel's soft-dirty bits (see tier-softdirty.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/tier/tier-softdirty.h"

#define PM_SOFT_DIRTY	(1ULL << 55)	/* Documentation/admin-guide/mm/soft-dirty.rst */
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)

struct tier_softdirty {
	const struct tier_proc *pr;	/* the engine's */
	int pagemap, clear_refs;
	unsigned int vma_resets;	/* mappings found soft-dirty as a whole */
	uint64_t buf[TIER_UNIT / 4096];	/* one unit's entries */
};

static int proc_errno(void)
{
	return errno == ENOENT ? -ESRCH : -errno;
}

static int clear(struct tier_softdirty *sd)
{
	/* clear_refs acts on whatever its process runs now, an exec'd
	 * setuid program too: only while the caller still may. */
	int rc = tier_proc_check(sd->pr);

	if (rc)
		return rc;
	/* "4": soft-dirty bits only; the accessed bits stay the kernel's. */
	if (pwrite(sd->clear_refs, "4", 1, 0) != 1)
		return errno == ESRCH ? -ESRCH : -errno;
	return 0;
}

/*
 * Whether the kernel keeps soft-dirty bits: without CONFIG_MEM_SOFT_DIRTY,
 * clear_refs takes "4" and does nothing, and no bit is ever set.  Asked of
 * a page of our own, written after a clear: once.
 */
static int probe_result = 1;	/* 1: not asked yet */
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe(void)
{
	volatile char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t e = 0;
	int fd;

	probe_result = -errno;
	if (page == MAP_FAILED)
		return;
	page[0] = 1;
	fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		probe_result = write(fd, "4", 1) == 1 ? 0 : -errno;
		close(fd);
	}
	page[0] = 2;
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (!probe_result && fd >= 0 &&
	    pread(fd, &e, sizeof(e), (off_t)((uintptr_t)page / 4096 * sizeof(e))) == sizeof(e))
		probe_result = e & PM_SOFT_DIRTY ? 0 : -ENOENT;
	else if (!probe_result)
		probe_result = -errno;
	if (fd >= 0)
		close(fd);
	munmap((void *)page, 4096);
}

/* One of the process's files, through its pin. */
static int proc_open(const struct tier_softdirty *sd, const char *name, int flags)
{
	return openat(sd->pr->procfd, name, flags | O_CLOEXEC);
}

int tier_softdirty_open(const struct tier_proc *pr, struct tier_softdirty **out, char *why,
			size_t len)
{
	struct tier_softdirty *sd = calloc(1, sizeof(*sd));
	int pid = pr->pid, rc;

	if (!sd)
		return -ENOMEM;
	pthread_once(&probe_once, probe);
	if (probe_result) {
		snprintf(why, len, "soft-dirty: %s", probe_result == -ENOENT ?
			 "this kernel keeps no soft-dirty bits (built without CONFIG_MEM_SOFT_DIRTY)" :
			 strerror(-probe_result));
		free(sd);
		return probe_result;
	}
	sd->pr = pr;
	sd->pagemap = sd->clear_refs = -1;
	rc = tier_proc_check(pr);
	if (rc) {
		snprintf(why, len, "soft-dirty: pid %d: %s", pid, strerror(-rc));
		goto fail;
	}
	sd->pagemap = proc_open(sd, "pagemap", O_RDONLY);
	sd->clear_refs = proc_open(sd, "clear_refs", O_WRONLY);
	if (sd->pagemap < 0 || sd->clear_refs < 0) {
		rc = proc_errno();
		snprintf(why, len, "soft-dirty: cannot open /proc/%d/%s: %m", pid,
			 sd->pagemap < 0 ? "pagemap" : "clear_refs");
		goto fail;
	}
	rc = clear(sd);
	if (rc) {
		snprintf(why, len, "soft-dirty: clearing /proc/%d/clear_refs: %s", pid,
			 strerror(-rc));
		goto fail;
	}
	*out = sd;
	return 0;
fail:
	tier_softdirty_close(sd);
	return rc;
}

/* Whether the mapping at addr is soft-dirty as a whole (VmFlags "sd"). */
static bool vma_softdirty(const struct tier_softdirty *s, uint64_t addr)
{
	unsigned long long start = 0, end = 0;
	bool found = false, sd = false;
	char *line = NULL;
	size_t cap = 0;
	FILE *f = NULL;
	int fd = proc_open(s, "smaps", O_RDONLY);

	if (fd >= 0 && !(f = fdopen(fd, "r")))
		close(fd);
	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		/* A mapping's first line ("7f00-7f80 rw-p ..."); no field's
		 * name ("AnonHugePages:") reads as two numbers. */
		if (sscanf(line, "%llx-%llx ", &start, &end) == 2)
			continue;
		if (!strncmp(line, "VmFlags:", 8) && addr >= start && addr < end) {
			found = true;
			sd = strstr(line, " sd") != NULL;
		}
	}
	free(line);
	fclose(f);
	return sd;
}

/*
 * The kernel marks a whole mapping soft-dirty when it is new or grows by
 * a merge with a new mapping beside it (a thread's stack mapped next to
 * guest RAM, say): every page then reads as written.  Such a mapping's
 * marks say nothing this interval: its units keep the last interval's.
 * Asked of smaps only when every unit of a mapping was marked.
 */
static void drop_vma_marks(struct tier_softdirty *sd, struct tier_unit *u, size_t n,
			   const uint8_t *seen, int *count)
{
	for (size_t i = 0, j; i < n; i = j) {
		unsigned int present = 0;
		bool all = true;

		/* seen: 1 a present page, 2 marked too. */
		for (j = i; j < n && u[j].vma == u[i].vma; j++) {
			present += seen[j] != 0;
			all &= seen[j] != 1;
		}
		if (!all || present < 2 || !vma_softdirty(sd, u[i].addr))
			continue;
		for (size_t k = i; k < j; k++) {
			if (seen[k] != 2)
				continue;
			/* DAMON marks after this: only soft-dirty's to undo. */
			u[k].hist = (uint8_t)((u[k].hist & ~1u) | ((u[k].hist >> 1) & 1));
			u[k].src &= (uint8_t)~TIER_SRC_SOFTDIRTY;
			(*count)--;
		}
		sd->vma_resets++;
	}
}

int tier_softdirty_mark(struct tier_softdirty *sd, struct tier_unit *units, size_t n)
{
	uint8_t *seen = calloc(n ? n : 1, sizeof(*seen));
	int count = 0, rc = 0;

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < n && !rc; i++) {
		struct tier_unit *u = &units[i];
		size_t pages = u->len / 4096;
		ssize_t got = pread(sd->pagemap, sd->buf, pages * sizeof(uint64_t),
				    (off_t)(u->addr / 4096 * sizeof(uint64_t)));

		if (got < 0) {
			rc = proc_errno();
			break;
		}
		for (size_t j = 0; j < (size_t)got / sizeof(uint64_t); j++) {
			uint64_t e = sd->buf[j];

			if (!(e & PM_PRESENT))
				continue;
			seen[i] = 1;
			/* A swapped page keeps its bit too; it is not hot. */
			if ((e & PM_SOFT_DIRTY) && !(e & PM_SWAP)) {
				u->hist |= 1;
				u->src |= TIER_SRC_SOFTDIRTY;
				seen[i] = 2;
				count++;
				break;
			}
		}
	}
	if (!rc)
		drop_vma_marks(sd, units, n, seen, &count);
	free(seen);
	/* A write between the read and the clear is missed this once: a hot
	 * unit is written again, a cold one is not hot. */
	if (!rc)
		rc = clear(sd);
	return rc ? rc : count;
}

unsigned int tier_softdirty_vma_resets(const struct tier_softdirty *sd)
{
	return sd->vma_resets;
}

void tier_softdirty_close(struct tier_softdirty *sd)
{
	if (!sd)
		return;
	if (sd->pagemap >= 0)
		close(sd->pagemap);
	if (sd->clear_refs >= 0)
		close(sd->clear_refs);
	free(sd);
}
