/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Guest RAM: one memslot at GPA 0, anonymous or memfd-backed; the
 * long-mode guest's page tables in a second one above it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "minivmm/vmm-private.h"

#define HUGE_ALIGN	(2ULL << 20)

/* 2 MiB aligned, so that THP (and a migration's 2 MiB units) cover it
 * whole: reserve a larger span, place the memory in it, trim the rest. */
static void *map_aligned(uint64_t size, int fd)
{
	uint64_t span = size + HUGE_ALIGN;
	uint8_t *p, *at;
	int flags;

	p = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	at = (uint8_t *)(((uintptr_t)p + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1));
	flags = MAP_FIXED | (fd >= 0 ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS);
	if (mmap(at, size, PROT_READ | PROT_WRITE, flags, fd, 0) == MAP_FAILED) {
		munmap(p, span);
		return NULL;
	}
	if (at > p)
		munmap(p, at - p);
	munmap(at + size, p + span - (at + size));
	return at;
}

int minivmm_mem_alloc(struct minivmm *vmm, uint64_t size, int backing)
{
	struct minivmm_slot *s = &vmm->slot;
	int fd = -1, err;

	if (backing == MINIVMM_BACKING_MEMFD) {
		fd = memfd_create("minivmm-ram", MFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, size) < 0)
			goto fail;
	} else if (backing != MINIVMM_BACKING_ANON) {
		return -EINVAL;
	}
	s->hva = map_aligned(size, fd);
	if (!s->hva)
		goto fail;
	/* Best effort: THP may be off, which costs speed, not correctness. */
	if (fd < 0)
		madvise(s->hva, size, MADV_HUGEPAGE);
	/* A real VM's RAM is in use: every page present (zeros, what the
	 * guest expects before pass 1), not the shared zero page a copy would
	 * read from the cache. */
	if (madvise(s->hva, size, MADV_POPULATE_WRITE))
		goto fail_unmap;
	s->slot = 0;
	s->flags = 0;
	s->gpa = 0;
	s->size = size;
	s->fd = fd;
	s->fd_offset = 0;
	return 0;
fail_unmap:
	err = -errno;
	munmap(s->hva, size);
	s->hva = NULL;
	goto out;
fail:
	err = -errno;
out:
	if (fd >= 0)
		close(fd);
	return err;
}

void minivmm_mem_release(void *hva, uint64_t size, int fd)
{
	if (hva)
		munmap(hva, size);
	if (fd >= 0)
		close(fd);
}

void minivmm_mem_take_old(struct minivmm *vmm, void **hva, uint64_t *size,
			  int *fd)
{
	*hva = vmm->old_hva;
	*size = vmm->old_size;
	*fd = vmm->old_fd;
	vmm->old_hva = NULL;
	vmm->old_fd = -1;
}

/* Page-table entry bits. */
#define PTE_PRESENT	(1ULL << 0)
#define PTE_WRITE	(1ULL << 1)
#define PTE_HUGE	(1ULL << 7)	/* in a directory: a 2 MiB page */
#define PT_ENTRIES	512
/* Each directory maps 1 GiB. */
#define PD_SPAN		(1ULL << 30)

/*
 * Page 0 the top level, page 1 the one below it (512 GiB), then one
 * directory per GiB of RAM, each of 2 MiB pages, at MINIVMM_PT_GPA, which
 * the guest never touches.
 */
int minivmm_mem_tables(struct minivmm *vmm)
{
	uint64_t dirs = (vmm->slot.size + PD_SPAN - 1) / PD_SPAN;
	struct kvm_userspace_memory_region r = { .slot = MINIVMM_PT_SLOT };
	uint64_t *pml4, *pdpt;

	if (dirs * PD_SPAN > MINIVMM_PT_GPA)
		return -EINVAL;
	vmm->pt_size = (2 + dirs) * MINIVMM_PAGE;
	vmm->pt_gpa = MINIVMM_PT_GPA;
	vmm->pt = mmap(NULL, vmm->pt_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vmm->pt == MAP_FAILED) {
		vmm->pt = NULL;
		return -errno;
	}
	pml4 = vmm->pt;
	pdpt = vmm->pt + PT_ENTRIES;
	pml4[0] = (vmm->pt_gpa + MINIVMM_PAGE) | PTE_PRESENT | PTE_WRITE;
	for (uint64_t d = 0; d < dirs; d++) {
		uint64_t *pd = vmm->pt + (2 + d) * PT_ENTRIES;

		pdpt[d] = (vmm->pt_gpa + (2 + d) * MINIVMM_PAGE) | PTE_PRESENT | PTE_WRITE;
		for (uint64_t e = 0; e < PT_ENTRIES; e++)
			pd[e] = (d * PD_SPAN + e * HUGE_ALIGN) | PTE_PRESENT | PTE_WRITE |
				PTE_HUGE;
	}
	r.guest_phys_addr = vmm->pt_gpa;
	r.memory_size = vmm->pt_size;
	r.userspace_addr = (uintptr_t)vmm->pt;
	return ioctl(vmm->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0 ? -errno : 0;
}

/* The vCPU thread stopped: nothing uses the memory any more. */
void minivmm_mem_free(struct minivmm *vmm)
{
	struct minivmm_slot *s = &vmm->slot;

	if (vmm->pt)
		munmap(vmm->pt, vmm->pt_size);
	vmm->pt = NULL;

	minivmm_mem_release(vmm->old_hva, vmm->old_size, vmm->old_fd);
	minivmm_mem_release(s->hva, s->size, s->fd);
	vmm->old_hva = NULL;
	vmm->old_fd = -1;
	s->hva = NULL;
	s->fd = -1;
}

int minivmm_slot_register(struct minivmm *vmm)
{
	const struct minivmm_slot *s = &vmm->slot;
	struct kvm_userspace_memory_region r = {
		.slot = s->slot,
		.flags = s->flags,
		.guest_phys_addr = s->gpa,
		.memory_size = s->size,
		.userspace_addr = (uintptr_t)s->hva,
	};

	return ioctl(vmm->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0 ? -errno : 0;
}

/*
 * Only switches: the old mapping and fd wait in old_hva/old_fd for the
 * resume that lets the vCPU run on the new memory, outside the pause.
 * A verify pauses too, so it never sees them freed under it.
 */
int minivmm_set_slot_memory(struct minivmm *vmm, void *hva, int fd,
			    uint64_t fd_offset)
{
	struct minivmm_slot *s = &vmm->slot;
	void *drop_hva = NULL;
	int own = -1, drop_fd = -1;

	if (fd >= 0) {
		own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (own < 0)
			return -errno;
	}
	pthread_mutex_lock(&vmm->lock);
	/*
	 * A re-added memslot left the old mapping to us; an mremap swap
	 * already replaced it in place.  A second move within one pause
	 * frees the first one's leftovers now: nothing can use them (unless
	 * the memory went back where it was).
	 */
	if (hva != s->hva) {
		if (vmm->old_hva != hva)
			drop_hva = vmm->old_hva;
		vmm->old_hva = s->hva;
		vmm->old_size = s->size;
	}
	if (s->fd >= 0) {
		drop_fd = vmm->old_fd;
		vmm->old_fd = s->fd;
	}
	s->hva = hva;
	s->fd = own;
	s->fd_offset = fd_offset;
	pthread_mutex_unlock(&vmm->lock);
	minivmm_mem_release(drop_hva, s->size, drop_fd);
	return 0;
}
