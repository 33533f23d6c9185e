/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Dirty tracking of a live migration's slot, three ways:
 *  - LOG: KVM_GET_DIRTY_LOG reads the slot's bitmap and re-protects the
 *    pages in one call.
 *  - LOG_CLEAR: with KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2, reading and
 *    re-protecting are apart: pages are re-protected (KVM_CLEAR_DIRTY_LOG)
 *    just before they are copied, so that a page the guest keeps writing
 *    faults once per copy, not once per round.  With
 *    KVM_DIRTY_LOG_INITIALLY_SET, switching logging on costs nothing: every
 *    page starts dirty and writable.
 *  - RING: the VMM's per-vCPU dirty rings (vm.c drains them).
 * Logging is on for the migration only.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "lib/live/live-private.h"

static int manual_protect(struct memmig_live *l, uint64_t mode)
{
	struct kvm_enable_cap cap = {
		.cap = KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2,
		.args = { mode },
	};

	return ioctl(l->vm->fd, KVM_ENABLE_CAP, &cap) ? -errno : 0;
}

/* Would another slot's logging see its semantics changed under it? */
static bool other_slot_logs(struct memmig_live *l)
{
	bool logs = false;

	pthread_mutex_lock(&l->vm->lock);
	for (size_t i = 0; i < l->vm->nslots; i++) {
		const struct memmig_vm_slot *s = &l->vm->slots[i].s;

		logs |= s->slot != l->slot.slot && (s->flags & KVM_MEM_LOG_DIRTY_PAGES);
	}
	pthread_mutex_unlock(&l->vm->lock);
	return logs;
}

/* The first round copies everything: all of the range is dirty. */
static void all_dirty(struct memmig_live *l)
{
	for (uint64_t p = l->first; p < l->first + l->npages; p++)
		bitmap_set(l->dirty, p);
}

static int kvm_start(struct memmig_live *l)
{
	int caps = ioctl(l->vm->fd, KVM_CHECK_EXTENSION, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2);
	int rc;

	if (l->method == MEMMIG_DIRTY_LOG_CLEAR) {
		if (caps <= 0)
			return -EOPNOTSUPP;
		/* The mode is per VM: the VMM's own GET_DIRTY_LOG on another
		 * slot would stop re-protecting. */
		if (other_slot_logs(l))
			return -EBUSY;
		rc = manual_protect(l, caps & (KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE |
					       KVM_DIRTY_LOG_INITIALLY_SET));
		if (rc < 0)
			return rc;
		l->manual_protect = true;
	}
	rc = memmig_vm_slot_set_flags(l->vm, &l->slot,
				      l->slot.flags | KVM_MEM_LOG_DIRTY_PAGES);
	if (rc < 0)
		return rc;
	l->logging = true;
	return 0;
}

int memmig_dirty_start(struct memmig_live *l)
{
	int rc;

	if (l->slot.flags & KVM_MEM_LOG_DIRTY_PAGES)
		return -EBUSY;	/* the VMM logs it for itself */
	if (l->method == MEMMIG_DIRTY_UFFD_WP)
		rc = memmig_dirty_uffd_start(l);
	else if (l->method == MEMMIG_DIRTY_SOFT_DIRTY)
		rc = memmig_dirty_softdirty_start(l);
	else
		rc = kvm_start(l);
	if (rc < 0) {
		memmig_dirty_stop(l);
		return rc;
	}
	all_dirty(l);
	return 0;
}

/* Only the range's pages not switched over count: logging covers the
 * whole slot. */
static void or_range(struct memmig_live *l, const uint64_t *src)
{
	uint64_t end = memmig_live_end(l);

	for (size_t w = l->cur / 64; l->cur < end && w < bitmap_words(end); w++)
		l->dirty[w] |= src[w] & bitmap_range_mask(w, l->cur, end);
}

int memmig_dirty_harvest(struct memmig_live *l, uint64_t lo, uint64_t hi)
{
	struct memmig_vm *vm = l->vm;
	int rc = 0;

	if (l->method == MEMMIG_DIRTY_UFFD_WP || l->method == MEMMIG_DIRTY_SOFT_DIRTY) {
		rc = l->method == MEMMIG_DIRTY_UFFD_WP ? memmig_dirty_uffd_harvest(l, lo, hi) :
							 memmig_dirty_softdirty_harvest(l);
		if (rc < 0)
			return rc;
	} else if (l->method != MEMMIG_DIRTY_RING) {
		struct kvm_dirty_log log = { .slot = l->slot.slot, .dirty_bitmap = l->log };

		if (ioctl(vm->fd, KVM_GET_DIRTY_LOG, &log))
			return -errno;
		or_range(l, l->log);
	}
	pthread_mutex_lock(&vm->lock);
	if (l->method == MEMMIG_DIRTY_RING)
		rc = memmig_vm_rings_harvest(vm);
	or_range(l, l->pending);
	memset(l->pending, 0, l->words * sizeof(uint64_t));
	pthread_mutex_unlock(&vm->lock);
	return rc;
}

int memmig_dirty_clear(struct memmig_live *l, size_t w, size_t n)
{
	uint64_t pages = l->slot.size / MEMMIG_PAGE_SIZE;
	struct kvm_clear_dirty_log c = {
		.slot = l->slot.slot,
		.first_page = (uint64_t)w * 64,
		.dirty_bitmap = &l->dirty[w],
	};

	if (l->method != MEMMIG_DIRTY_LOG_CLEAR)
		return 0;
	/* KVM wants 64-page multiples, except up to the slot's end. */
	c.num_pages = (uint64_t)n * 64;
	if (c.first_page + c.num_pages > pages)
		c.num_pages = pages - c.first_page;
	return ioctl(l->vm->fd, KVM_CLEAR_DIRTY_LOG, &c) ? -errno : 0;
}

void memmig_dirty_stop(struct memmig_live *l)
{
	int rc;

	memmig_dirty_uffd_stop(l);
	memmig_dirty_softdirty_stop(l);
	if (l->logging) {
		rc = memmig_vm_slot_set_flags(l->vm, &l->slot, l->slot.flags);
		if (rc < 0)
			err(l->vm->ctx, "slot %u: dirty logging stays on: %d\n",
			    l->slot.slot, rc);
		l->logging = false;
	}
	if (l->manual_protect) {
		rc = manual_protect(l, 0);
		if (rc < 0)
			err(l->vm->ctx, "manual dirty-log protection stays on: %d\n", rc);
		l->manual_protect = false;
	}
	/* Entries logged before the flag went off would land in the next
	 * migration: drop them. */
	if (l->method == MEMMIG_DIRTY_RING) {
		pthread_mutex_lock(&l->vm->lock);
		memmig_vm_rings_harvest(l->vm);
		pthread_mutex_unlock(&l->vm->lock);
	}
}
