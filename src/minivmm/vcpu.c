/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The vCPU: its dirty ring, its kvm_run, and its mode: 64-bit long mode
 * for the guest that writes its RAM, flat 32-bit protected mode for the
 * machine-check guests. */
#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "minivmm/vmm-private.h"

/* KVM takes the ring only before the first vCPU exists. */
static int ring_enable(struct minivmm *vmm, uint32_t entries)
{
	struct kvm_enable_cap cap = {
		.args[0] = (uint64_t)entries * sizeof(struct kvm_dirty_gfn),
	};

	if (entries & (entries - 1))
		return -EINVAL;
	/* ACQ_REL: the harvester's flag updates need no full barrier. */
	if (ioctl(vmm->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_DIRTY_LOG_RING_ACQ_REL) > 0)
		cap.cap = KVM_CAP_DIRTY_LOG_RING_ACQ_REL;
	else if (ioctl(vmm->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_DIRTY_LOG_RING) > 0)
		cap.cap = KVM_CAP_DIRTY_LOG_RING;
	else
		return -EOPNOTSUPP;
	return ioctl(vmm->vm_fd, KVM_ENABLE_CAP, &cap) < 0 ? -errno : 0;
}

static void segment_flat(struct kvm_segment *seg, uint16_t selector, uint8_t type)
{
	*seg = (struct kvm_segment){
		.base = 0,
		.limit = 0xffffffff,
		.selector = selector,
		.type = type,
		.present = 1,
		.db = 1,	/* 32-bit */
		.s = 1,		/* code or data */
		.g = 1,		/* limit in pages: 4 GiB */
	};
}

#define CR0_PE		(1ULL << 0)
#define CR0_PG		(1ULL << 31)
#define CR4_PAE		(1ULL << 5)
#define EFER_LME	(1ULL << 8)
#define EFER_LMA	(1ULL << 10)
#define CPUID_MAX	256

/* KVM lets EFER.LME on only when the vCPU's CPUID says long mode: the
 * vCPU gets all that KVM supports. */
static int cpuid_init(struct minivmm *vmm)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + CPUID_MAX * sizeof(c->entries[0]));
	int rc = 0;

	if (!c)
		return -ENOMEM;
	c->nent = CPUID_MAX;
	if (ioctl(vmm->kvm_fd, KVM_GET_SUPPORTED_CPUID, c) < 0 ||
	    ioctl(vmm->vcpu_fd, KVM_SET_CPUID2, c) < 0)
		rc = -errno;
	free(c);
	return rc;
}

/* Paging on, by the identity map of mem.c's tables; a 64-bit code
 * segment. */
static void long_mode(struct minivmm *vmm, struct kvm_sregs *sregs)
{
	sregs->cs.l = 1;
	sregs->cs.db = 0;
	sregs->cr3 = vmm->pt_gpa;
	sregs->cr4 |= CR4_PAE;
	sregs->cr0 |= CR0_PE | CR0_PG;
	sregs->efer |= EFER_LME | EFER_LMA;
}

/* The guest starts at 0 with the page count in rbx. */
static int regs_init(struct minivmm *vmm)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs = {
		.rip = 0,
		.rbx = vmm->npages,
		.rflags = 2,	/* bit 1 is reserved, always set */
	};

	if (ioctl(vmm->vcpu_fd, KVM_GET_SREGS, &sregs) < 0)
		return -errno;
	segment_flat(&sregs.cs, 0x08, 11);	/* code: execute, read, accessed */
	segment_flat(&sregs.ds, 0x10, 3);	/* data: read, write, accessed */
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	sregs.cr0 |= CR0_PE;
	if (vmm->pt)
		long_mode(vmm, &sregs);
	if (ioctl(vmm->vcpu_fd, KVM_SET_SREGS, &sregs) < 0)
		return -errno;
	return ioctl(vmm->vcpu_fd, KVM_SET_REGS, &regs) < 0 ? -errno : 0;
}

int minivmm_vcpu_init(struct minivmm *vmm, uint32_t ring_entries)
{
	long page = sysconf(_SC_PAGESIZE);
	int rc, size;

	if (ring_entries) {
		rc = ring_enable(vmm, ring_entries);
		if (rc < 0)
			return rc;
	}
	vmm->vcpu_fd = ioctl(vmm->vm_fd, KVM_CREATE_VCPU, 0);
	if (vmm->vcpu_fd < 0)
		return -errno;
	size = ioctl(vmm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (size < 0)
		return -errno;
	vmm->run = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			vmm->vcpu_fd, 0);
	if (vmm->run == MAP_FAILED) {
		vmm->run = NULL;
		return -errno;
	}
	vmm->run_size = size;
	if (vmm->pt) {
		rc = cpuid_init(vmm);
		if (rc < 0)
			return rc;
		/* The long-mode guest times its stalls in TSC ticks. */
		rc = ioctl(vmm->vcpu_fd, KVM_GET_TSC_KHZ, 0);
		vmm->tsc_khz = rc > 0 ? (uint32_t)rc : 0;
	}
	if (ring_entries) {
		vmm->ring = mmap(NULL, ring_entries * sizeof(*vmm->ring),
				 PROT_READ | PROT_WRITE, MAP_SHARED, vmm->vcpu_fd,
				 KVM_DIRTY_LOG_PAGE_OFFSET * page);
		if (vmm->ring == MAP_FAILED) {
			vmm->ring = NULL;
			return -errno;
		}
		vmm->ring_entries = ring_entries;
	}
	return regs_init(vmm);
}

void minivmm_vcpu_free(struct minivmm *vmm)
{
	if (vmm->ring)
		munmap(vmm->ring, vmm->ring_entries * sizeof(*vmm->ring));
	if (vmm->run)
		munmap(vmm->run, vmm->run_size);
	if (vmm->vcpu_fd >= 0)
		close(vmm->vcpu_fd);
}
