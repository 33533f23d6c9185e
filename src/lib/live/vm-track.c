/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which pages of a slot the guest writes, with no migration: a live
 * migration's dirty tracking (dirty.c) on the whole slot, harvested on
 * request.  The tracker holds the vm's one live slot while it is on, so
 * that a migration's own tracking (which switches logging off at its end)
 * never runs under it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/live/live-private.h"

struct memmig_vm_track {
	int refcount;
	struct memmig_live *l;
	bool on;
};

int memmig_vm_track_new(struct memmig_vm *vm, uint32_t slot, int dirty_method,
			struct memmig_vm_track **out)
{
	struct memmig_vm_track *t;
	int rc;

	if (!vm || !out)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->refcount = 1;
	rc = memmig_live_new_tracker(vm, slot, dirty_method, &t->l);
	if (rc < 0) {
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int memmig_vm_track_start(struct memmig_vm_track *t)
{
	int rc;

	if (!t)
		return -EINVAL;
	if (t->on)
		return -EALREADY;
	rc = memmig_live_claim_vm(t->l, true);
	if (rc < 0)
		return rc;
	rc = memmig_dirty_start(t->l);
	if (rc < 0) {
		memmig_live_claim_vm(t->l, false);
		return rc;
	}
	/* A migration's first round copies everything; a tracker starts
	 * with nothing written. */
	memset(t->l->dirty, 0, t->l->words * sizeof(uint64_t));
	t->on = true;
	return 0;
}

int memmig_vm_track_read(struct memmig_vm_track *t, uint64_t *bitmap, size_t words,
			 uint64_t *pages)
{
	struct memmig_live *l = t ? t->l : NULL;
	uint64_t n = 0;
	int rc;

	if (!t || !t->on || !bitmap || words < l->words)
		return -EINVAL;
	rc = memmig_dirty_harvest(l, 0, l->npages);
	if (rc < 0)
		return rc;
	for (size_t w = 0; w < l->words; w++) {
		/* KVM_GET_DIRTY_LOG re-protected them as it read: no clear. */
		n += (uint64_t)__builtin_popcountll(l->dirty[w]);
		bitmap[w] |= l->dirty[w];
		l->dirty[w] = 0;
	}
	if (pages)
		*pages = n;
	return 0;
}

int memmig_vm_track_stop(struct memmig_vm_track *t)
{
	if (!t)
		return -EINVAL;
	if (!t->on)
		return 0;
	memmig_dirty_stop(t->l);
	memmig_live_claim_vm(t->l, false);
	t->on = false;
	return 0;
}

int memmig_vm_track_method(const struct memmig_vm_track *t)
{
	return t ? t->l->method : -EINVAL;
}

void memmig_vm_track_unref(struct memmig_vm_track *t)
{
	if (!t || __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	memmig_vm_track_stop(t);
	memmig_live_unref(t->l);
	free(t);
}
