/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The VMM embedding: a VMM registers its KVM VM, its memslots and, when it
 * enabled the dirty ring, each vCPU's ring.  Live migrations (live.c) work
 * on these.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lib/live/live-private.h"

/* First guesses, before a pause was timed: stopping the vCPUs, and the
 * swap, which KVM's unmapping of the range makes slower (0.8-1.1 ms a GiB
 * measured with KVM, 0.35 without). */
#define PAUSE_STOP_GUESS 2e-4
#define SWAP_GUESS_S_PER_GIB_KVM 1.2e-3
#define SWAP_GUESS_S_PER_GIB 0.5e-3

int memmig_vm_new(struct memmig_ctx *ctx, int vm_fd, const struct memmig_vm_ops *ops,
		  void *opaque, struct memmig_vm **out)
{
	struct memmig_vm *vm;
	int rc;

	if (!ctx || vm_fd < -1 || !ops || !out)
		return -EINVAL;
	/* A KVM VM answers KVM_CHECK_EXTENSION; anything else does not. */
	if (vm_fd >= 0 && ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_USER_MEMORY) <= 0)
		return -ENOTTY;
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return -ENOMEM;
	rc = memmig_struct_in(&vm->ops, sizeof(vm->ops), ops);
	if (rc < 0 || !vm->ops.pause || !vm->ops.resume) {
		free(vm);
		return rc < 0 ? rc : -EINVAL;
	}
	vm->refcount = 1;
	vm->ctx = memmig_ctx_ref(ctx);
	vm->fd = vm_fd;
	vm->opaque = opaque;
	vm->pause_stop_s = PAUSE_STOP_GUESS;
	vm->swap_s_per_byte = (vm_fd >= 0 ? SWAP_GUESS_S_PER_GIB_KVM : SWAP_GUESS_S_PER_GIB) /
			      (1ULL << 30);
	vm->harvest_method = -1;
	pthread_mutex_init(&vm->lock, NULL);
	*out = vm;
	return 0;
}

struct memmig_vm *memmig_vm_ref(struct memmig_vm *vm)
{
	if (vm)
		__atomic_add_fetch(&vm->refcount, 1, __ATOMIC_RELAXED);
	return vm;
}

void memmig_vm_unref(struct memmig_vm *vm)
{
	if (!vm || __atomic_sub_fetch(&vm->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	for (size_t i = 0; i < vm->nslots; i++)
		if (vm->slots[i].own_fd)
			close(vm->slots[i].s.fd);
	free(vm->slots);
	free(vm->rings);
	pthread_mutex_destroy(&vm->lock);
	memmig_ctx_unref(vm->ctx);
	free(vm);
}

struct vm_slot *memmig_vm_slot_find(struct memmig_vm *vm, uint32_t id)
{
	for (size_t i = 0; i < vm->nslots; i++)
		if (vm->slots[i].s.slot == id)
			return &vm->slots[i];
	return NULL;
}

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static int slot_check(struct memmig_vm *vm, const struct memmig_vm_slot *s)
{
	uintptr_t hva = (uintptr_t)s->hva;

	if (!s->size || s->size % MEMMIG_PAGE_SIZE || s->gpa % MEMMIG_PAGE_SIZE || hva % MEMMIG_PAGE_SIZE ||
	    s->gpa + s->size < s->gpa || hva + s->size < hva)
		return -EINVAL;
	if (s->fd < -1 || (s->fd < 0 && s->fd_offset))
		return -EINVAL;
	for (size_t i = 0; i < vm->nslots; i++) {
		const struct memmig_vm_slot *o = &vm->slots[i].s;

		if (o->slot == s->slot)
			return -EEXIST;
		/* Guest-physical ranges overlap only across address spaces. */
		if ((o->slot >> 16) == (s->slot >> 16) &&
		    ranges_overlap(o->gpa, o->size, s->gpa, s->size))
			return -EINVAL;
		if (ranges_overlap((uintptr_t)o->hva, o->size, hva, s->size))
			return -EINVAL;
	}
	return 0;
}

int memmig_vm_add_slot(struct memmig_vm *vm, const struct memmig_vm_slot *slot)
{
	struct vm_slot e = { 0 }, *n;
	int rc;

	if (!vm || !slot)
		return -EINVAL;
	e.s.fd = -1;
	rc = memmig_struct_in(&e.s, sizeof(e.s), slot);
	if (rc < 0)
		return rc;
	e.s.sz = sizeof(e.s);
	pthread_mutex_lock(&vm->lock);
	rc = slot_check(vm, &e.s);
	if (!rc) {
		n = realloc(vm->slots, (vm->nslots + 1) * sizeof(*n));
		if (n) {
			vm->slots = n;
			vm->slots[vm->nslots++] = e;
		} else {
			rc = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&vm->lock);
	return rc;
}

int memmig_vm_remove_slot(struct memmig_vm *vm, uint32_t id)
{
	struct vm_slot *e;
	int rc = 0;

	if (!vm)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	e = memmig_vm_slot_find(vm, id);
	if (!e)
		rc = -ENOENT;
	else if (vm->active && vm->active->slot.slot == id)
		rc = -EBUSY;
	if (!rc) {
		if (e->own_fd)
			close(e->s.fd);
		*e = vm->slots[--vm->nslots];
	}
	pthread_mutex_unlock(&vm->lock);
	return rc;
}

int memmig_vm_get_slot(struct memmig_vm *vm, uint32_t id, struct memmig_vm_slot *out)
{
	struct vm_slot *e;
	struct memmig_vm_slot s;

	if (!vm || !out)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	e = memmig_vm_slot_find(vm, id);
	if (e)
		s = e->s;
	pthread_mutex_unlock(&vm->lock);
	return e ? memmig_struct_out(out, &s, sizeof(s)) : -ENOENT;
}

int memmig_vm_slot_moved(struct memmig_vm *vm, uint32_t id, void *hva, int fd,
			 uint64_t fd_offset, bool own_fd)
{
	struct vm_slot *e;
	void *old = NULL;
	int old_fd = -1;

	pthread_mutex_lock(&vm->lock);
	e = memmig_vm_slot_find(vm, id);
	if (e) {
		if (e->own_fd && e->s.fd != fd)
			old_fd = e->s.fd;
		old = e->s.hva;
		e->s.hva = hva;
		e->s.fd = fd;
		e->s.fd_offset = fd_offset;
		e->own_fd = own_fd;
	}
	pthread_mutex_unlock(&vm->lock);
	if (e && vm->ops.slot_moved)
		vm->ops.slot_moved(vm->opaque, id, old, hva, fd, fd_offset);
	return old_fd;
}

static int slot_ioctl(struct memmig_vm *vm, const struct memmig_vm_slot *s,
		      uint32_t flags, uint64_t size)
{
	struct kvm_userspace_memory_region r = {
		.slot = s->slot,
		.flags = flags,
		.guest_phys_addr = s->gpa,
		.memory_size = size,
		.userspace_addr = (uintptr_t)s->hva,
	};

	return ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &r) ? -errno : 0;
}

int memmig_vm_slot_set_flags(struct memmig_vm *vm, const struct memmig_vm_slot *s,
			     uint32_t flags)
{
	return slot_ioctl(vm, s, flags, s->size);
}

int memmig_vm_slot_register(struct memmig_vm *vm, const struct memmig_vm_slot *s)
{
	return slot_ioctl(vm, s, s->flags, s->size);
}

int memmig_vm_add_dirty_ring(struct memmig_vm *vm, unsigned int vcpu, void *ring,
			     uint32_t entries)
{
	struct vm_ring *n;
	int rc = 0;

	if (!vm || !ring || !entries || (entries & (entries - 1)))
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	for (size_t i = 0; i < vm->nrings; i++)
		if (vm->rings[i].vcpu == vcpu)
			rc = -EEXIST;
	if (!rc && vm->active)
		rc = -EBUSY;
	if (!rc) {
		n = realloc(vm->rings, (vm->nrings + 1) * sizeof(*n));
		if (n) {
			vm->rings = n;
			vm->rings[vm->nrings++] = (struct vm_ring){
				.vcpu = vcpu, .gfns = ring, .entries = entries,
			};
		} else {
			rc = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&vm->lock);
	return rc;
}

/* Takes one ring's dirty entries; returns how many. */
static uint32_t ring_drain(struct memmig_vm *vm, struct vm_ring *r)
{
	struct memmig_live *l = vm->active;
	uint32_t n = 0;

	for (;;) {
		struct kvm_dirty_gfn *g = &r->gfns[r->fetch & (r->entries - 1)];
		uint32_t flags = __atomic_load_n(&g->flags, __ATOMIC_ACQUIRE);

		if (!(flags & KVM_DIRTY_GFN_F_DIRTY))
			break;
		if (l && g->slot == l->slot.slot && g->offset < l->slot.size / MEMMIG_PAGE_SIZE)
			bitmap_set(l->pending, g->offset);
		/* Handing the entry back: KVM re-protects the page on reset. */
		__atomic_store_n(&g->flags, KVM_DIRTY_GFN_F_RESET, __ATOMIC_RELEASE);
		r->fetch++;
		n++;
	}
	return n;
}

int memmig_vm_rings_harvest(struct memmig_vm *vm)
{
	uint32_t n = 0;

	for (size_t i = 0; i < vm->nrings; i++)
		n += ring_drain(vm, &vm->rings[i]);
	if (n && ioctl(vm->fd, KVM_RESET_DIRTY_RINGS, 0) < 0)
		return -errno;
	return 0;
}

int memmig_vm_dirty_ring_full(struct memmig_vm *vm, unsigned int vcpu)
{
	int rc;

	(void)vcpu;	/* KVM's reset covers every ring: drain them all */
	if (!vm)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	rc = vm->nrings ? memmig_vm_rings_harvest(vm) : -ENXIO;
	pthread_mutex_unlock(&vm->lock);
	return rc;
}

int memmig_vm_mark_dirty(struct memmig_vm *vm, uint64_t gpa, uint64_t len)
{
	struct memmig_live *l;

	if (!vm || gpa + len < gpa)
		return -EINVAL;
	pthread_mutex_lock(&vm->lock);
	l = vm->active;
	if (l && ranges_overlap(gpa, len, l->slot.gpa, l->slot.size)) {
		uint64_t from = (gpa > l->slot.gpa ? gpa : l->slot.gpa) - l->slot.gpa;
		uint64_t to = (gpa + len < l->slot.gpa + l->slot.size ?
			       gpa + len : l->slot.gpa + l->slot.size) - l->slot.gpa;

		for (uint64_t p = from / MEMMIG_PAGE_SIZE; p < (to + MEMMIG_PAGE_SIZE - 1) / MEMMIG_PAGE_SIZE; p++)
			bitmap_set(l->pending, p);
	}
	pthread_mutex_unlock(&vm->lock);
	return 0;
}
