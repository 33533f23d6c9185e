/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Writes from the kernel's soft-dirty bits (see tier-softdirty.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/mm/proc.h"
#include "lib/mm/smaps.h"
#include "lib/mm/softdirty.h"
#include "lib/tier/tier-softdirty.h"

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

	return rc ? rc : memmig_softdirty_clear(sd->clear_refs);
}

/* One of the process's files, through its pin. */
static int proc_open(const struct tier_softdirty *sd, const char *name, int flags)
{
	return memmig_proc_open(sd->pr->pid, sd->pr->procfd, name, flags);
}

int tier_softdirty_open(const struct tier_proc *pr, struct tier_softdirty **out, char *why,
			size_t len)
{
	struct tier_softdirty *sd = calloc(1, sizeof(*sd));
	int pid = pr->pid, rc = memmig_softdirty_probe();

	if (!sd)
		return -ENOMEM;
	if (rc) {
		snprintf(why, len, "soft-dirty: %s", rc == -ENOENT ?
			 "this kernel keeps no soft-dirty bits (built without CONFIG_MEM_SOFT_DIRTY)" :
			 strerror(-rc));
		free(sd);
		return rc;
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
	struct memmig_vma *v = NULL;
	size_t n = 0;
	bool sd = false;

	if (memmig_vmas_read_at(s->pr->pid, s->pr->procfd, &v, &n))
		return false;
	for (size_t i = 0; i < n; i++)
		if (addr >= v[i].start && addr < v[i].end)
			sd = v[i].softdirty;
	free(v);
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
			/* DAMON marks after this: only soft-dirty's to undo.
			 * The answer carried is soft-dirty's still: a write,
			 * which promotes (tier_unit_promotable()). */
			u[k].hist = (uint8_t)((u[k].hist & ~1u) | ((u[k].hist >> 1) & 1));
			if (u[k].hist & 1)
				continue;
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
			if ((e & MEMMIG_PM_SOFT_DIRTY) && !(e & PM_SWAP)) {
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
