/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A live migration's destination and its swap.
 *
 * Anonymous guest RAM: the copy is mremapped over the old host address, so
 * that the memslot and the VMM's pointer stay as they are.  The old memory
 * is first moved aside and freed after resume: freeing a GiB of pages
 * would be most of the pause.
 * fd-backed guest RAM (memfd, shmem, files) belongs to its file, which
 * other processes may map: the copy is a new file, and the memslot is
 * deleted and re-added at the copy's address, as QEMU does.
 * A file tier (device DAX, a file or a directory) becomes the backing of
 * the slot: see dest_tier().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/live/live-private.h"
#include "lib/migrate/migrate-private.h"
#include "lib/dax/dax.h"
#include "lib/mm/nodemem.h"

/* Free memory a destination leaves on its node, as the copy strategy. */
#define NODE_MARGIN (64ULL << 20)

static uint64_t range_hva(const struct memmig_live *l)
{
	return (uintptr_t)l->slot.hva + l->first * MEMMIG_PAGE_SIZE;
}

/* Congruent with src modulo 2 MB: 2 MB pieces of the copy line up with the
 * source's huge pages, and mremap moves whole page tables. */
static uint8_t *reserve_congruent(uint64_t len, uint64_t src, int *err)
{
	return memmig_window_congruent(len, src, MEMMIG_UNIT_SIZE, err);
}

/*
 * Where the swap puts the old memory: each piece at its offset, after a
 * 2 MiB hole per piece before it (up to SPARE_HOLES_MAX; past them pieces
 * lie side by side).  A piece moved next to the last would merge with it,
 * and the kernel moves a merged mapping's page tables under its anon_vma
 * (or i_mmap) lock, one take per page table: here a DAMON walk of physical
 * memory (proactive reclaim) held that lock for reading again and again,
 * and such swaps took 1.2-5.1 ms, 26 to 168 sleeps on it, against 0.2-0.3
 * ms and none.  A mapping of its own takes no lock.  The holes are address
 * space only: two mappings a piece.
 */
#define SPARE_HOLES_MAX 4096ULL

static void reserve_spare(struct live_dest *d, uint64_t src, int *err)
{
	uint64_t holes = d->len / MEMMIG_UNIT_SIZE + 2;

	if (holes > SPARE_HOLES_MAX)
		holes = SPARE_HOLES_MAX;
	d->spare_len = d->len + holes * MEMMIG_UNIT_SIZE;
	d->spare = reserve_congruent(d->spare_len, src, err);
	if (!d->spare)
		d->spare_len = 0;
}

/*
 * A file tier, through the DAX target code: device DAX at its alignment,
 * a file on a DAX file system with MAP_SYNC (copies then use pmem stores
 * and the drain is the persistence point), any other file with
 * msync(MS_SYNC) after resume.  A directory gets an unnamed file.
 */
static int dest_tier(struct memmig_live *l, struct live_dest *d, uint64_t src)
{
	struct memmig_dax_target t;
	int rc = memmig_dax_target_open(l->vm->ctx, l->target_path, 0, src, d->len, &t);

	if (rc)
		return rc;
	d->fd = t.fd;
	d->base = t.base;
	d->copy_flags = memmig_dax_target_copy_flags(&t);
	d->msync = t.kind == MEMMIG_DAX_NONE;
	return 0;
}

/* A shared destination: a file tier, or a memfd bound to the node. */
static int dest_shared(struct memmig_live *l, struct live_dest *d, uint64_t src)
{
	int rc = 0;

	if (l->target_path) {
		rc = dest_tier(l, d, src);
	} else {
		d->fd = memfd_create("memmig-live", MFD_CLOEXEC);
		if (d->fd < 0)
			return -errno;
		if (ftruncate(d->fd, d->len))
			rc = -errno;
		if (!rc)
			d->base = reserve_congruent(d->len, src, &rc);
		if (!rc && mmap(d->base, d->len, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_FIXED, d->fd, 0) == MAP_FAILED)
			rc = -errno;
		/* The file's policy before its pages: a shared mapping's
		 * mbind binds the memfd, and fallocate allocates by it. */
		if (!rc)
			rc = memmig_bind(d->base, d->len, l->opts.target_node, 0);
		/* Pages now: a full tmpfs says ENOSPC here, not SIGBUS in the
		 * middle of a copy. */
		if (!rc)
			rc = -posix_fallocate(d->fd, 0, d->len);
	}
	if (!rc && !l->whole_slot_swap)
		reserve_spare(d, src, &rc);
	return rc;
}

static int dest_anon(struct memmig_live *l, struct live_dest *d, uint64_t src)
{
	int rc = 0;

	/* The swap puts the copy's mapping in the source's place: it must
	 * be able to carry every attribute the source has. */
	rc = memmig_swap_src_keepable(l->vm->ctx, &d->src, src, d->len);
	if (!rc)
		d->base = reserve_congruent(d->len, src, &rc);
	if (!rc && mmap(d->base, d->len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		rc = -errno;
	/* Charged as the source is (MAP_NORESERVE pieces mapped again). */
	if (!rc)
		rc = memmig_swap_account(&d->src, d->base, src, d->len, false,
					 l->opts.target_node);
	if (!rc)
		rc = memmig_bind(d->base, d->len, l->opts.target_node, 0);
	if (!rc)
		rc = memmig_swap_advise(&d->src, src, d->len, d->base);
	/* The copy gets the source mapping's protection, mlock and advice
	 * now: in the pause there is only the move. */
	if (!rc)
		rc = memmig_swap_attrs(&d->src, d->base, src, d->len);
	if (!rc)
		reserve_spare(d, src, &rc);
	return rc;
}

int memmig_live_dest_prepare(struct memmig_live *l)
{
	struct live_dest *d = &l->dest;
	uint64_t src = range_hva(l);
	int rc;

	*d = (struct live_dest){ .fd = -1, .old_fd = -1, .len = l->npages * MEMMIG_PAGE_SIZE };
	d->shared = l->target_path || l->slot.fd >= 0;
	rc = memmig_fault_hit(l->vm->ctx, MEMMIG_FAULT_DEST_ALLOC);
	if (!rc && !l->target_path &&
	    memmig_node_free(l->opts.target_node) < (long long)(d->len + NODE_MARGIN))
		rc = -ENOMEM;	/* MPOL_BIND past the node's end wakes the OOM killer */
	/* The mappings the swap moves, one mremap each. */
	if (!rc && !l->whole_slot_swap)
		rc = memmig_swap_src_read(&d->src);
	if (!rc)
		rc = d->shared ? dest_shared(l, d, src) : dest_anon(l, d, src);
	if (!rc)
		rc = memmig_populate(d->base, d->len);
	if (rc < 0) {
		err(l->vm->ctx, "slot %u: destination of %llu bytes: %d\n", l->slot.slot,
		    (unsigned long long)d->len, rc);
		memmig_live_dest_release(l);
	}
	return rc;
}

/*
 * The old memory of a piece goes aside, the copy into its place: the old
 * pages are freed after resume, not in the pause.  The pieces come in
 * address order; once the last is in, the slot is the copy's.  A shared
 * copy (a file) replaces a whole slot in one piece (checked at new()).
 */
static int swap_mremap(struct memmig_live *l, uint64_t lo, uint64_t hi)
{
	struct live_dest *d = &l->dest;
	uint64_t off = (lo - l->first) * MEMMIG_PAGE_SIZE, len = (hi - lo) * MEMMIG_PAGE_SIZE;
	uint64_t src = range_hva(l) + off, aside;
	uint64_t holes = d->spare_holes < SPARE_HOLES_MAX ? d->spare_holes : SPARE_HOLES_MAX;
	uint8_t *to = (uint8_t *)d->spare + off + holes * MEMMIG_UNIT_SIZE;
	int rc, undo;

	if (off != d->switched || off + len > d->len ||
	    to + len > (uint8_t *)d->spare + d->spare_len)
		return -EINVAL;
	rc = memmig_swap_move(&d->src, src, (uintptr_t)to, src, len, &aside);
	if (!rc)
		rc = memmig_swap_move(&d->src, (uintptr_t)d->base + off, src, src, len, NULL);
	if (!rc)
		memmig_fault_swap_delay(l->vm->ctx, len);
	if (rc) {
		/* Put back what went aside, and only that: the guest must find
		 * its memory. */
		undo = memmig_swap_move(&d->src, (uintptr_t)to, src, src, aside, NULL);
		if (undo)
			err(l->vm->ctx, "slot %u: the old memory stays at %p: %d\n",
			    l->slot.slot, to, undo);
		return rc;
	}
	d->switched += len;
	d->spare_holes++;
	if (d->switched < d->len)
		return 0;
	d->base = NULL;	/* moved into the slot */
	d->synced_at = (uint8_t *)(uintptr_t)range_hva(l);
	d->old_fd = memmig_vm_slot_moved(l->vm, l->slot.slot, l->slot.hva, d->fd, 0,
					 d->fd >= 0);
	d->fd = -1;	/* the slot's now */
	return 0;
}

/* fd-backed source: the memslot is re-added at the copy's address. */
static int swap_memslot(struct memmig_live *l)
{
	struct live_dest *d = &l->dest;
	struct memmig_vm_slot s = l->slot;
	int rc;

	s.size = 0;
	rc = memmig_vm_slot_register(l->vm, &s);
	if (rc < 0)
		return rc;
	s.size = l->slot.size;
	s.hva = d->base;
	rc = memmig_vm_slot_register(l->vm, &s);
	if (rc < 0) {
		/* Back on the old memory, or the guest has none. */
		int undo = memmig_vm_slot_register(l->vm, &l->slot);

		if (undo)
			err(l->vm->ctx, "slot %u is gone: %d\n", l->slot.slot, undo);
		return rc;
	}
	/* Logging went off with the old slot. */
	l->logging = false;
	d->switched = d->len;
	d->synced_at = d->base;
	d->old_fd = memmig_vm_slot_moved(l->vm, l->slot.slot, d->base, d->fd, 0, true);
	d->base = NULL;
	d->fd = -1;
	return 0;
}

int memmig_live_dest_swap(struct memmig_live *l, uint64_t lo, uint64_t hi)
{
	memmig_copy_drain();	/* NT stores land before the guest reads */
	if (l->whole_slot_swap)
		return lo == l->first && hi == memmig_live_end(l) ? swap_memslot(l) : -EINVAL;
	return swap_mremap(l, lo, hi);
}

int memmig_live_dest_persist(struct memmig_live *l)
{
	struct live_dest *d = &l->dest;

	if (!d->msync || !d->synced_at)
		return 0;
	if (msync(d->synced_at, d->len, MS_SYNC) < 0) {
		int rc = -errno;

		err(l->vm->ctx, "slot %u: msync of the file tier: %d\n", l->slot.slot, rc);
		return rc;
	}
	return 0;
}

void memmig_live_dest_release(struct memmig_live *l)
{
	struct live_dest *d = &l->dest;

	/* The pieces switched in left holes that are no longer ours. */
	if (d->base && d->len > d->switched)
		munmap(d->base + d->switched, d->len - d->switched);
	if (d->spare)
		munmap(d->spare, d->spare_len);
	if (d->fd >= 0)
		close(d->fd);
	/* The file the slot left: its last reference may free its pages. */
	if (d->old_fd >= 0)
		close(d->old_fd);
	memmig_swap_src_free(&d->src);
	*d = (struct live_dest){ .fd = -1, .old_fd = -1 };
}
