/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The KVM vCPU thread: KVM_RUN and its exits. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "minivmm/vmm-private.h"

/* Records why the vCPU stops, with where the guest was; returns err. */
__attribute__((format(printf, 3, 4)))
static int vcpu_fail(struct minivmm *vmm, int err, const char *fmt, ...)
{
	struct kvm_regs regs;
	char why[96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (ioctl(vmm->vcpu_fd, KVM_GET_REGS, &regs) < 0)
		regs.rip = ~0ULL;
	pthread_mutex_lock(&vmm->lock);
	vmm->fatal = err;
	snprintf(vmm->fatal_msg, sizeof(vmm->fatal_msg), "%s at rip 0x%llx",
		 why, (unsigned long long)regs.rip);
	pthread_mutex_unlock(&vmm->lock);
	return err;
}

/* The machine-check guest's report: the bank, then four MSRs, each as
 * two dwords, low first (guest-mce.S). */
static uint64_t mce_msr(const uint32_t *w)
{
	return (uint64_t)w[1] << 32 | w[0];
}

static int mce_report_end(struct minivmm *vmm, uint32_t count)
{
	const uint32_t *w = vmm->mce_words;
	unsigned int n = vmm->mce_nwords;

	vmm->mce_nwords = 0;
	if (n != 9)
		return vcpu_fail(vmm, -EPROTO, "#MC report of %u dwords", n);
	pthread_mutex_lock(&vmm->lock);
	vmm->last_mce = (struct minivmm_mce){
		.bank = w[0], .mcg_status = mce_msr(w + 1), .status = mce_msr(w + 3),
		.addr = mce_msr(w + 5), .misc = mce_msr(w + 7),
	};
	atomic_store(&vmm->mces, count);
	pthread_cond_broadcast(&vmm->pass);
	pthread_mutex_unlock(&vmm->lock);
	return 0;
}

static int exit_io(struct minivmm *vmm)
{
	struct kvm_run *run = vmm->run;
	uint32_t val;

	if (run->io.direction != KVM_EXIT_IO_OUT || run->io.size != 4 ||
	    run->io.count != 1)
		return vcpu_fail(vmm, -EIO, "unexpected I/O on port 0x%x",
				 run->io.port);
	memcpy(&val, (uint8_t *)run + run->io.data_offset, sizeof(val));
	switch (run->io.port) {
	case MINIVMM_PORT_PASS:
		pthread_mutex_lock(&vmm->lock);
		atomic_store(&vmm->passes, val);
		pthread_cond_broadcast(&vmm->pass);
		pthread_mutex_unlock(&vmm->lock);
		return 0;
	case MINIVMM_PORT_HALF:
		return 0;
	case MINIVMM_PORT_ERROR:
		atomic_store(&vmm->last_error_page, val);
		atomic_fetch_add(&vmm->guest_errors, 1);
		return 0;
	case MINIVMM_PORT_MCE:
		if (vmm->mce_nwords < 9)
			vmm->mce_words[vmm->mce_nwords] = val;
		vmm->mce_nwords++;
		return 0;
	case MINIVMM_PORT_MCE_END:
		return mce_report_end(vmm, val);
	case MINIVMM_PORT_EXCEPTION:
		return vcpu_fail(vmm, -EIO, "guest exception %u", val);
	}
	return vcpu_fail(vmm, -EIO, "out to port 0x%x", run->io.port);
}

/*
 * The guest must run between two full rings, the harvest having emptied
 * the first: the same registers at the next full exit mean it did not.
 * Then the harvest took nothing, or KVM pushed past the ring's reserved
 * entries (it may, where it emulates guest writes in batches) and counts
 * entries that are not there: either way the vCPU would spin here.
 */
static int exit_ring_full(struct minivmm *vmm)
{
	struct kvm_regs regs;
	int rc;

	atomic_fetch_add(&vmm->ring_full_exits, 1);
	if (!vmm->ring_full)
		return vcpu_fail(vmm, -ENOSPC, "dirty ring full, nobody harvests it");
	if (ioctl(vmm->vcpu_fd, KVM_GET_REGS, &regs) < 0)
		return vcpu_fail(vmm, -errno, "KVM_GET_REGS: %s", strerror(errno));
	if (vmm->ring_full_seen && !memcmp(&regs, &vmm->ring_full_regs, sizeof(regs)))
		return vcpu_fail(vmm, -EOVERFLOW,
				 "dirty ring still full after a harvest");
	vmm->ring_full_regs = regs;
	vmm->ring_full_seen = true;
	rc = vmm->ring_full(vmm->ring_full_opaque, 0);
	return rc ? vcpu_fail(vmm, rc < 0 ? rc : -EIO,
			      "dirty ring harvest failed: %d", rc) : 0;
}

/* KVM's SIGBUS for a poisoned page of guest RAM came in (sigbus.c). */
static int memory_error(struct minivmm *vmm, void *addr, int code)
{
	struct minivmm_slot s;
	uintptr_t off;
	uint64_t gpa;
	int rc;

	minivmm_get_slot(vmm, &s);
	off = (uintptr_t)addr - (uintptr_t)s.hva;
	if ((uintptr_t)addr < (uintptr_t)s.hva || off >= s.size)
		return vcpu_fail(vmm, -EFAULT, "memory error at %p, not guest RAM", addr);
	gpa = s.gpa + off;
	if (!vmm->memory_error)
		return vcpu_fail(vmm, -EHWPOISON, "memory error at gpa 0x%llx, not handled",
				 (unsigned long long)gpa);
	rc = vmm->memory_error(vmm->memory_error_opaque, vmm->vcpu_fd, gpa, code);
	return rc ? vcpu_fail(vmm, rc < 0 ? rc : -EIO,
			      "memory error at gpa 0x%llx: handler failed: %d",
			      (unsigned long long)gpa, rc) : 0;
}

/*
 * An MMIO exit inside guest RAM: KVM could not reach that RAM.  Where
 * KVM's instruction emulator runs the guest (as with PVM), a read of a
 * lost page ends here instead of in KVM's SIGBUS: the same memory error.
 * The load gets all-ones, never zeros, and the machine check says why.
 */
static int exit_mmio(struct minivmm *vmm)
{
	struct kvm_run *run = vmm->run;
	struct minivmm_slot s;

	minivmm_get_slot(vmm, &s);
	if (run->mmio.phys_addr < s.gpa || run->mmio.phys_addr - s.gpa >= s.size)
		return vcpu_fail(vmm, -EIO, "MMIO at gpa 0x%llx: no device there",
				 (unsigned long long)run->mmio.phys_addr);
	memset(run->mmio.data, 0xff, sizeof(run->mmio.data));
	return memory_error(vmm, (uint8_t *)s.hva + (run->mmio.phys_addr - s.gpa),
			    BUS_MCEERR_AR);
}

static int exit_handle(struct minivmm *vmm)
{
	struct kvm_run *run = vmm->run;

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		return exit_io(vmm);
	case KVM_EXIT_DIRTY_RING_FULL:
		return exit_ring_full(vmm);
	case KVM_EXIT_MMIO:
		return exit_mmio(vmm);
	case KVM_EXIT_HLT:
		return vcpu_fail(vmm, -EIO, "guest halted");
	case KVM_EXIT_SHUTDOWN:
		return vcpu_fail(vmm, -EIO, "guest shut down (triple fault)");
	case KVM_EXIT_FAIL_ENTRY:
		return vcpu_fail(vmm, -EIO, "entry failed, hardware reason 0x%llx",
				 (unsigned long long)
				 run->fail_entry.hardware_entry_failure_reason);
	case KVM_EXIT_INTERNAL_ERROR:
		return vcpu_fail(vmm, -EIO, "KVM internal error, suberror %u",
				 run->internal.suberror);
	}
	return vcpu_fail(vmm, -EIO, "unexpected exit %u", run->exit_reason);
}

void *minivmm_vcpu_thread(void *arg)
{
	struct minivmm *vmm = arg;
	int rc = minivmm_kick_unblock(), code;
	void *addr;

	if (rc)
		vcpu_fail(vmm, rc, "cannot unblock the kick signal");
	minivmm_sigbus_thread(vmm);
	while (!rc) {
		/* Before the guest touches the page again. */
		if (minivmm_sigbus_take(&addr, &code)) {
			rc = memory_error(vmm, addr, code);
			continue;
		}
		atomic_store(&vmm->in_run, true);
		if (atomic_load(&vmm->pause_depth) || atomic_load(&vmm->stop) ||
		    atomic_load(&vmm->call_pending)) {
			atomic_store(&vmm->in_run, false);
			if (!minivmm_park(vmm))
				break;
			continue;
		}
		rc = ioctl(vmm->vcpu_fd, KVM_RUN, 0);
		atomic_store(&vmm->in_run, false);
		if (rc < 0)
			rc = errno == EINTR ? 0 :	/* kicked */
			     vcpu_fail(vmm, -errno, "KVM_RUN: %s", strerror(errno));
		else if ((rc = exit_handle(vmm))) {
			pthread_mutex_lock(&vmm->lock);
			vmm->fatal_exit = vmm->run->exit_reason;
			pthread_mutex_unlock(&vmm->lock);
		}
	}
	minivmm_thread_exit(vmm);
	return NULL;
}
