/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Machine checks for guest memory errors: when a page of guest RAM is
 * lost (poisoned source, memory the host could not copy), the VMM tells
 * the guest the way hardware would, with a machine check on a vCPU
 * through KVM, as QEMU does.  The guest's own memory-failure handling
 * then takes the page offline or kills the task that used it.
 *
 * The KVM interface (KVM_X86_SETUP_MCE, KVM_X86_SET_MCE) exists only where
 * the kernel headers define __KVM_HAVE_MCE (x86): that, not the CPU copy
 * code chosen under arch/, decides whether this works, so that a portable
 * build on x86 (--enable-generic-arch) keeps it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lib/live/vm-private.h"

#ifdef __KVM_HAVE_MCE

/* The machine-check architecture (Intel SDM vol. 3B, ch. 16); the
 * kernel keeps these out of its uapi headers. */
#define MSR_IA32_MCG_CAP	0x179
#define MSR_IA32_MCG_EXT_CTL	0x4d0
#define MCG_BANKCNT_MASK	0xffULL
#define MCG_CTL_P		(1ULL << 8)	/* IA32_MCG_CTL present */
#define MCG_SER_P		(1ULL << 24)	/* software error recovery:
						 * the S and AR bits mean
						 * something */
#define MCG_LMCE_P		(1ULL << 27)	/* local machine checks */
#define MCG_EXT_CTL_LMCE_EN	(1ULL << 0)	/* the guest took them */
#define MCG_STATUS_RIPV		(1ULL << 0)	/* the guest may resume */
#define MCG_STATUS_EIPV		(1ULL << 1)	/* rip is where it hit */
#define MCG_STATUS_MCIP		(1ULL << 2)	/* a machine check is in
						 * progress */
#define MCG_STATUS_LMCE		(1ULL << 3)	/* for this CPU only */
#define MCI_STATUS_VAL		(1ULL << 63)
#define MCI_STATUS_UC		(1ULL << 61)	/* uncorrected */
#define MCI_STATUS_EN		(1ULL << 60)	/* reporting enabled */
#define MCI_STATUS_MISCV	(1ULL << 59)
#define MCI_STATUS_ADDRV	(1ULL << 58)
#define MCI_STATUS_S		(1ULL << 56)	/* signalled by #MC */
#define MCI_STATUS_AR		(1ULL << 55)	/* action required */
/* MCA error codes of memory errors: a data load that consumed poison
 * (SRAR), and poison the patrol scrubber found (SRAO). */
#define MCACOD_DATA_LOAD	0x134
#define MCACOD_SCRUB		0xc0
/* MCi_MISC: the address is physical, its low 12 bits are not valid. */
#define MCI_MISC_ADDR_PHYS	(2ULL << 6)
#define MCI_MISC_LSB_PAGE	12ULL

/* QEMU's count: guests expect the memory errors in bank 9. */
#define MCE_BANK		9

static int mce_cap_supported(uint64_t *out)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, KVM_X86_GET_MCE_CAP_SUPPORTED, out) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int memmig_vm_mce_setup(struct memmig_vm *vm, int vcpu_fd, unsigned int banks)
{
	uint64_t supported, cap;
	int max, rc;

	if (!vm || vcpu_fd < 0)
		return -EINVAL;
	if (vm->fd < 0)
		return -EOPNOTSUPP;
	max = ioctl(vm->fd, KVM_CHECK_EXTENSION, KVM_CAP_MCE);
	if (max <= 0)
		return -EOPNOTSUPP;
	if (!banks)
		banks = MEMMIG_VM_MCE_BANKS_DEFAULT;
	if (banks > (unsigned int)max)
		banks = max;
	if (banks > MCG_BANKCNT_MASK)
		banks = MCG_BANKCNT_MASK;
	rc = mce_cap_supported(&supported);
	if (rc < 0)
		return rc;
	cap = banks | (supported & (MCG_CTL_P | MCG_SER_P | MCG_LMCE_P));
	if (ioctl(vcpu_fd, KVM_X86_SETUP_MCE, &cap) < 0) {
		rc = -errno;
		err(vm->ctx, "KVM_X86_SETUP_MCE 0x%llx: %d", (unsigned long long)cap, rc);
		return rc;
	}
	dbg(vm->ctx, "vCPU fd %d: MCG_CAP 0x%llx (KVM offers 0x%llx, %d banks)",
	    vcpu_fd, (unsigned long long)cap, (unsigned long long)supported, max);
	return 0;
}

/* Guest RAM the VMM registered, in the normal (not SMM) address space. */
static bool gpa_in_ram(struct memmig_vm *vm, uint64_t gpa)
{
	bool found = false;

	pthread_mutex_lock(&vm->lock);
	for (size_t i = 0; i < vm->nslots && !found; i++) {
		const struct memmig_vm_slot *s = &vm->slots[i].s;

		found = !(s->slot >> 16) && gpa >= s->gpa && gpa - s->gpa < s->size;
	}
	pthread_mutex_unlock(&vm->lock);
	return found;
}

/* The vCPU's MCG_CAP and, if the guest may have turned on local machine
 * checks, MCG_EXT_CTL (0 otherwise). */
static int mce_vcpu_state(int vcpu_fd, uint64_t *cap, uint64_t *ext_ctl)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[2];
	} m = {
		.hdr.nmsrs = 2,
		.e = { { .index = MSR_IA32_MCG_CAP }, { .index = MSR_IA32_MCG_EXT_CTL } },
	};
	int n = ioctl(vcpu_fd, KVM_GET_MSRS, &m);

	if (n < 0)
		return -errno;
	if (n < 1)
		return -EIO;
	*cap = m.e[0].data;
	/* KVM stops at the first MSR it does not have: no LMCE then. */
	*ext_ctl = n == 2 && (*cap & MCG_LMCE_P) ? m.e[1].data : 0;
	return 0;
}

int memmig_vm_mce_inject(struct memmig_vm *vm, int vcpu_fd, uint64_t gpa,
			 unsigned int flags)
{
	struct kvm_x86_mce mce = {
		.status = MCI_STATUS_VAL | MCI_STATUS_UC | MCI_STATUS_EN |
			  MCI_STATUS_MISCV | MCI_STATUS_ADDRV | MCI_STATUS_S,
		.mcg_status = MCG_STATUS_MCIP | MCG_STATUS_RIPV,
		.addr = gpa & ~(MEMMIG_PAGE_SIZE - 1),
		.misc = MCI_MISC_ADDR_PHYS | MCI_MISC_LSB_PAGE,
	};
	uint64_t cap = 0, ext_ctl = 0, banks;
	int rc;

	if (!vm || vcpu_fd < 0 || (flags & ~MEMMIG_VM_MCE_AO))
		return -EINVAL;
	if (vm->fd < 0)
		return -EOPNOTSUPP;
	if (!gpa_in_ram(vm, gpa))
		return -EINVAL;
	rc = mce_vcpu_state(vcpu_fd, &cap, &ext_ctl);
	if (rc < 0)
		return rc;
	banks = cap & MCG_BANKCNT_MASK;
	if (!banks)
		return -ENXIO;	/* no memmig_vm_mce_setup() on this vCPU */
	mce.bank = banks > MCE_BANK ? MCE_BANK : banks - 1;
	if (flags & MEMMIG_VM_MCE_AO) {
		/* Found by a scrub: the guest may go on where it was. */
		mce.status |= MCACOD_SCRUB;
	} else {
		/* Consumed by the instruction at rip: it must not resume. */
		mce.status |= MCI_STATUS_AR | MCACOD_DATA_LOAD;
		mce.mcg_status |= MCG_STATUS_EIPV;
	}
	if (ext_ctl & MCG_EXT_CTL_LMCE_EN)
		mce.mcg_status |= MCG_STATUS_LMCE;
	if (ioctl(vcpu_fd, KVM_X86_SET_MCE, &mce) < 0) {
		rc = -errno;
		err(vm->ctx, "KVM_X86_SET_MCE gpa 0x%llx: %d",
		    (unsigned long long)mce.addr, rc);
		return rc;
	}
	info(vm->ctx, "machine check (%s) for gpa 0x%llx in bank %u of vCPU fd %d",
	     flags & MEMMIG_VM_MCE_AO ? "action optional" : "action required",
	     (unsigned long long)mce.addr, mce.bank, vcpu_fd);
	return 0;
}

#else /* !__KVM_HAVE_MCE */

int memmig_vm_mce_setup(struct memmig_vm *vm, int vcpu_fd, unsigned int banks)
{
	(void)banks;
	return !vm || vcpu_fd < 0 ? -EINVAL : -EOPNOTSUPP;
}

int memmig_vm_mce_inject(struct memmig_vm *vm, int vcpu_fd, uint64_t gpa,
			 unsigned int flags)
{
	(void)gpa;
	(void)flags;
	return !vm || vcpu_fd < 0 ? -EINVAL : -EOPNOTSUPP;
}

#endif
