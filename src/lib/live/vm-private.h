/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal to the VMM embedding: the vm, its slots, dirty tracking, live
 * migrations. */
#ifndef MEMMIG_VM_PRIVATE_H
#define MEMMIG_VM_PRIVATE_H

#include <linux/kvm.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/core/memmig-private.h"


struct vm_slot {
	struct memmig_vm_slot s;
	bool own_fd;		/* s.fd is memmig's (a destination it made) */
};

struct vm_ring {
	unsigned int vcpu;
	struct kvm_dirty_gfn *gfns;
	uint32_t entries;	/* a power of two */
	uint32_t fetch;		/* next entry to read */
};

struct memmig_vm {
	int refcount;
	struct memmig_ctx *ctx;
	int fd;
	struct memmig_vm_ops ops;
	void *opaque;

	/*
	 * lock guards the slots, the rings and the live migration's pending
	 * bitmap.  It is never held across pause(): a vCPU thread answering
	 * KVM_EXIT_DIRTY_RING_FULL takes it, and pause() waits for that
	 * thread.
	 */
	pthread_mutex_t lock;
	struct vm_slot *slots;
	size_t nslots;
	struct vm_ring *rings;
	size_t nrings;
	struct memmig_live *active;	/* at most one live migration */
	/* What a pause costs beyond its copy and harvest, learnt from the
	 * last ones: they size the next.  The swap grows with the range
	 * (page tables, KVM's mappings): seconds per byte. */
	double pause_stop_s;
	double swap_s_per_byte;
	bool pause_learnt;
	/* The last pauses' harvest, per byte, and the tracking it was for:
	 * pre-copy's harvests share the CPUs with the guest, the pause's
	 * have them to themselves (half the time with userfaultfd). */
	double harvest_s_per_byte;
	int harvest_method;		/* -1: none learnt yet */
	/* The pauses' copy, per byte (0: none timed): scattered last pages
	 * copy slower than pre-copy's stream (1.5 to 3 times here). */
	double copy_s_per_byte;
};

/* Bitmaps of 4 KiB pages, 64 to a word. */
static inline size_t bitmap_words(uint64_t pages)
{
	return (pages + 63) / 64;
}

static inline void bitmap_set(uint64_t *b, uint64_t i)
{
	b[i / 64] |= 1ULL << (i % 64);
}

/* The bits of word w that stand for pages [lo, hi), hi > lo. */
static inline uint64_t bitmap_range_mask(size_t w, uint64_t lo, uint64_t hi)
{
	uint64_t m = ~0ULL;

	if (w == lo / 64)
		m &= ~0ULL << (lo % 64);
	if (w == (hi - 1) / 64 && hi % 64)
		m &= ~0ULL >> (64 - hi % 64);
	return m;
}

/* The slot registered with id, or NULL; under vm->lock. */
struct vm_slot *memmig_vm_slot_find(struct memmig_vm *vm, uint32_t id);
/* Re-registers the slot with KVM with other flags (dirty logging on and
 * off): only the flags change. */
int memmig_vm_slot_set_flags(struct memmig_vm *vm, const struct memmig_vm_slot *s,
			     uint32_t flags);
/* Registers s with KVM as it is: a new slot, or one whose size is 0 to
 * delete it. */
int memmig_vm_slot_register(struct memmig_vm *vm, const struct memmig_vm_slot *s);
/* Drains every ring into the active migration's pending bitmap (entries
 * of other slots and with no migration are dropped), then has KVM
 * re-protect the pages.  Under vm->lock. */
int memmig_vm_rings_harvest(struct memmig_vm *vm);
/* The slot moved to new memory: updates the record and tells the VMM.
 * Takes ownership of fd when own_fd.  Returns memmig's own fd that the
 * slot left, for the caller to close once the guest runs, or -1. */
int memmig_vm_slot_moved(struct memmig_vm *vm, uint32_t id, void *hva, int fd,
			 uint64_t fd_offset, bool own_fd);

#endif
