/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Memory errors on guest RAM.  When the guest touches a poisoned page, KVM
 * sends the vCPU thread SIGBUS with BUS_MCEERR_AR and the page's host
 * address, and KVM_RUN returns EINTR; entering the guest again would only
 * fault again.  The handler notes the address on the vCPU thread; the
 * thread, out of KVM_RUN, turns it into a guest-physical address and hands
 * it to the VMM's memory_error callback, which injects a machine check
 * (embed.c: memmig_vm_mce_inject()).  QEMU does the same.  SIGBUS on any
 * other thread, or of another kind, goes to the handler that was there
 * before, or kills the process as it would have.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>

#include "minivmm/vmm-private.h"

static struct sigaction old_action;
static pthread_once_t installed = PTHREAD_ONCE_INIT;
static int install_rc;

/* The vCPU thread's vmm, and the error it caught (vCPU thread only). */
static __thread struct minivmm *vcpu_vmm;
static __thread volatile sig_atomic_t error_code;
static __thread void *volatile error_addr;

static void chain(int sig, siginfo_t *si, void *uc)
{
	if (old_action.sa_flags & SA_SIGINFO) {
		old_action.sa_sigaction(sig, si, uc);
	} else if (old_action.sa_handler == SIG_IGN) {
		return;
	} else if (old_action.sa_handler != SIG_DFL) {
		old_action.sa_handler(sig);
	} else {
		/* What would have happened without us. */
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

static void sigbus_handler(int sig, siginfo_t *si, void *uc)
{
	if (vcpu_vmm && (si->si_code == BUS_MCEERR_AR || si->si_code == BUS_MCEERR_AO)) {
		error_addr = si->si_addr;
		error_code = si->si_code;
		return;
	}
	chain(sig, si, uc);
}

static void install(void)
{
	struct sigaction sa = {
		.sa_sigaction = sigbus_handler,
		.sa_flags = SA_SIGINFO,
	};

	sigemptyset(&sa.sa_mask);
	install_rc = sigaction(SIGBUS, &sa, &old_action) < 0 ? -errno : 0;
}

int minivmm_sigbus_init(void)
{
	pthread_once(&installed, install);
	return install_rc;
}

void minivmm_sigbus_thread(struct minivmm *vmm)
{
	vcpu_vmm = vmm;
}

bool minivmm_sigbus_take(void **addr, int *code)
{
	int c = error_code;

	if (!c)
		return false;
	*addr = error_addr;
	*code = c;
	error_code = 0;
	return true;
}

static int lost_on_vcpu(void *opaque, int vcpu_fd)
{
	const struct { struct minivmm *vmm; uint64_t gpa; } *l = opaque;

	return l->vmm->memory_error(l->vmm->memory_error_opaque, vcpu_fd, l->gpa,
				    BUS_MCEERR_AO);
}

int minivmm_memory_lost(struct minivmm *vmm, uint64_t gpa)
{
	struct { struct minivmm *vmm; uint64_t gpa; } l = { vmm, gpa };

	if (!vmm->memory_error)
		return -ENOENT;
	return minivmm_run_on_vcpu(vmm, lost_on_vcpu, &l);
}
