/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Machine checks for guest memory errors, seen from inside a real KVM
 * guest (examples/minivmm/guest-mce.S): memmig_vm_mce_inject() queues #MC
 * through KVM, and the guest's own #MC handler reads MCG_STATUS and the
 * bank's MCi_STATUS, MCi_ADDR and MCi_MISC with RDMSR and reports them by
 * port I/O.  A guest with CR4.MCE clear is shut down by KVM (triple
 * fault), as hardware would.  Exits 77 only without /dev/kvm or without
 * KVM_CAP_MCE.
 *
 * The multi-node tier (tests/vm/run-vm.sh) runs it too, with KVM nested in
 * TCG, under a kernel with CONFIG_MEMORY_FAILURE (MEMMIG_TEST_TIER=1):
 * there a real MADV_HWPOISON of guest RAM makes KVM itself signal the vCPU
 * thread.  On a host it would take a page from the kernel for good: the
 * case runs only in the tier.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../helpers/hwpoison.h"
#include "../unit/cunit-main.h"
#include "minivmm/embed.h"

#define GUEST_MEM	(64 * 1024)
#define TIMEOUT_MS	10000

/* The architecture's bits, as the guest reads them (SDM vol. 3B 16). */
#define MCG_STATUS_RIPV	(1ULL << 0)
#define MCG_STATUS_EIPV	(1ULL << 1)
#define MCG_STATUS_MCIP	(1ULL << 2)
#define MCI_STATUS_VAL	(1ULL << 63)
#define MCI_STATUS_OVER	(1ULL << 62)
#define MCI_STATUS_UC	(1ULL << 61)
#define MCI_STATUS_EN	(1ULL << 60)
#define MCI_STATUS_MISCV (1ULL << 59)
#define MCI_STATUS_ADDRV (1ULL << 58)
#define MCI_STATUS_S	(1ULL << 56)
#define MCI_STATUS_AR	(1ULL << 55)
#define MCI_STATUS_MCACOD 0xffffULL
#define MCI_MISC_PHYS_LSB12 ((2ULL << 6) | 12)
#define MCI_COMMON	(MCI_STATUS_VAL | MCI_STATUS_UC | MCI_STATUS_EN | \
			 MCI_STATUS_MISCV | MCI_STATUS_ADDRV | MCI_STATUS_S)

static struct memmig_ctx *ctx;
static bool in_tier;

struct guest {
	struct minivmm *vmm;
	struct memmig_vm *vm;
};

/* A machine-check guest, registered with memmig; banks: 0 for the
 * default, -1 for none. */
static int guest_up(struct guest *g, int kind, int banks)
{
	struct minivmm_opts o = { .mem = GUEST_MEM, .guest = kind };
	int rc;

	memset(g, 0, sizeof(*g));
	rc = minivmm_create(&o, &g->vmm);
	if (!rc)
		rc = minivmm_embed(ctx, g->vmm, &g->vm);
	if (!rc && banks >= 0)
		rc = minivmm_mce_setup(g->vm, g->vmm);
	if (!rc)
		rc = minivmm_start(g->vmm);
	if (!rc)
		rc = minivmm_wait_pass(g->vmm, 3, TIMEOUT_MS);
	if (rc)
		CUNIT_FAILF("machine-check guest: %s", strerror(-rc));
	return rc;
}

static void guest_down(struct guest *g)
{
	if (g->vmm)
		minivmm_destroy(g->vmm);
	memmig_vm_unref(g->vm);
}

static void print_mce(const char *what, const struct minivmm_mce *m)
{
	printf("\n    %s: bank %u MCG_STATUS 0x%llx MCi_STATUS 0x%016llx "
	       "MCi_ADDR 0x%llx MCi_MISC 0x%llx ", what, m->bank,
	       (unsigned long long)m->mcg_status, (unsigned long long)m->status,
	       (unsigned long long)m->addr, (unsigned long long)m->misc);
}

/* Waits for the guest's report of #MC number n. */
static int wait_report(struct guest *g, uint64_t n, struct minivmm_mce *out)
{
	struct minivmm_stats st;
	int rc = minivmm_wait_mce(g->vmm, n, TIMEOUT_MS);

	minivmm_get_stats(g->vmm, &st);
	if (rc)
		CUNIT_FAILF("#MC %llu: %s (vCPU: %s)", (unsigned long long)n,
			    strerror(-rc), st.fatal_msg);
	*out = st.last_mce;
	return rc;
}

/* Injects at gpa and waits for the guest's report of #MC number n. */
static int inject_and_wait(struct guest *g, uint64_t gpa, unsigned int flags,
			   uint64_t n, struct minivmm_mce *out)
{
	int rc = minivmm_inject_mce(g->vm, g->vmm, gpa, flags);

	if (rc) {
		CUNIT_FAILF("inject at 0x%llx: %s", (unsigned long long)gpa, strerror(-rc));
		return rc;
	}
	return wait_report(g, n, out);
}

/* The guest goes on after its handler returned. */
static void check_runs_on(struct guest *g)
{
	struct minivmm_stats st;

	minivmm_get_stats(g->vmm, &st);
	CU_ASSERT_EQUAL(minivmm_wait_pass(g->vmm, st.passes + 3, TIMEOUT_MS), 0);
}

/* Action required, then action optional, on one guest: its handler
 * clears MCIP, so the second is taken too. */
static void test_srar_srao(void)
{
	struct minivmm_mce m;
	struct guest g;

	if (guest_up(&g, MINIVMM_GUEST_MCE, 0))
		goto out;
	if (!inject_and_wait(&g, 0x3000, 0, 1, &m)) {
		print_mce("SRAR at 0x3000", &m);
		CU_ASSERT_EQUAL(m.bank, 9);
		CU_ASSERT_EQUAL(m.status & ~MCI_STATUS_MCACOD, MCI_COMMON | MCI_STATUS_AR);
		CU_ASSERT_EQUAL(m.status & MCI_STATUS_MCACOD, 0x134);
		CU_ASSERT_EQUAL(m.addr, 0x3000);
		CU_ASSERT_EQUAL(m.misc, MCI_MISC_PHYS_LSB12);
		CU_ASSERT_EQUAL(m.mcg_status & 7,
				MCG_STATUS_MCIP | MCG_STATUS_RIPV | MCG_STATUS_EIPV);
		check_runs_on(&g);
	}
	/* Not page-aligned: the page is reported. */
	if (!inject_and_wait(&g, 0x5123, MEMMIG_VM_MCE_AO, 2, &m)) {
		print_mce("SRAO at 0x5123", &m);
		CU_ASSERT_EQUAL(m.bank, 9);
		/* No OVER: the handler cleared the bank after the first. */
		CU_ASSERT_EQUAL(m.status & ~MCI_STATUS_MCACOD, MCI_COMMON);
		CU_ASSERT_EQUAL(m.status & MCI_STATUS_MCACOD, 0xc0);
		CU_ASSERT_EQUAL(m.addr, 0x5000);
		CU_ASSERT_EQUAL(m.mcg_status & 7, MCG_STATUS_MCIP | MCG_STATUS_RIPV);
		check_runs_on(&g);
	}
	/* The last page of RAM is RAM. */
	if (!inject_and_wait(&g, GUEST_MEM - 4096, 0, 3, &m))
		CU_ASSERT_EQUAL(m.addr, GUEST_MEM - 4096);
out:
	guest_down(&g);
}

struct setup_banks {
	struct memmig_vm *vm;
	unsigned int banks;
};

static int setup_on_vcpu(void *opaque, int vcpu_fd)
{
	struct setup_banks *s = opaque;

	return memmig_vm_mce_setup(s->vm, vcpu_fd, s->banks);
}

/* Fewer banks than 10: the last one; more than KVM has: clamped. */
static void test_banks(void)
{
	struct setup_banks s = { .banks = 4 };
	struct minivmm_mce m;
	struct guest g;

	if (guest_up(&g, MINIVMM_GUEST_MCE, 0))
		goto out;
	s.vm = g.vm;
	CU_ASSERT_EQUAL_FATAL(minivmm_run_on_vcpu(g.vmm, setup_on_vcpu, &s), 0);
	if (!inject_and_wait(&g, 0x2000, 0, 1, &m)) {
		print_mce("4 banks", &m);
		CU_ASSERT_EQUAL(m.bank, 3);
		CU_ASSERT_EQUAL(m.addr, 0x2000);
	}
	s.banks = 1000;
	CU_ASSERT_EQUAL(minivmm_run_on_vcpu(g.vmm, setup_on_vcpu, &s), 0);
	if (!inject_and_wait(&g, 0x2000, 0, 2, &m))
		CU_ASSERT_EQUAL(m.bank, 9);
out:
	guest_down(&g);
}

/* CR4.MCE clear: KVM turns the machine check into a triple fault. */
static void test_no_cr4_mce(void)
{
	struct minivmm_stats st;
	struct guest g;
	int rc;

	if (guest_up(&g, MINIVMM_GUEST_MCE_NOCR4, -1))
		goto out;
	CU_ASSERT_EQUAL(minivmm_mce_setup(g.vm, g.vmm), 0);
	CU_ASSERT_EQUAL(minivmm_inject_mce(g.vm, g.vmm, 0x3000, 0), 0);
	rc = minivmm_wait_pass(g.vmm, UINT64_MAX, TIMEOUT_MS);
	minivmm_get_stats(g.vmm, &st);
	printf("\n    CR4.MCE clear: vCPU stopped: %s (exit %u) ", st.fatal_msg,
	       st.fatal_exit);
	CU_ASSERT_EQUAL(rc, -EIO);
	CU_ASSERT_EQUAL(st.fatal_exit, KVM_EXIT_SHUTDOWN);
	CU_ASSERT_EQUAL(st.mces, 0);
out:
	guest_down(&g);
}

struct sigbus {
	void *hva;
	int code;
};

/*
 * What KVM does when the guest touches a poisoned page: SIGBUS with
 * BUS_MCEERR_AR and the host address, to the vCPU thread.  The kernel
 * lets a thread queue such a siginfo to itself only: this runs there.
 */
static int send_sigbus(void *opaque, int vcpu_fd)
{
	struct sigbus *b = opaque;
	siginfo_t si = { .si_signo = SIGBUS, .si_code = b->code };

	(void)vcpu_fd;
	si.si_addr = b->hva;
	return syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGBUS, &si) ?
	       -errno : 0;
}

/* minivmm's SIGBUS handler turns KVM's signal into a machine check
 * (embed.c's memory_error callback). */
static void test_sigbus(void)
{
	struct minivmm_slot s;
	struct minivmm_mce m;
	struct guest g;
	struct sigbus b;

	if (guest_up(&g, MINIVMM_GUEST_MCE, 0))
		goto out;
	minivmm_get_slot(g.vmm, &s);
	b = (struct sigbus){ (uint8_t *)s.hva + 0x4010, BUS_MCEERR_AR };
	CU_ASSERT_EQUAL_FATAL(minivmm_run_on_vcpu(g.vmm, send_sigbus, &b), 0);
	if (!wait_report(&g, 1, &m)) {
		print_mce("SIGBUS BUS_MCEERR_AR at hva+0x4010", &m);
		CU_ASSERT_EQUAL(m.addr, 0x4000);
		CU_ASSERT_EQUAL(m.status & MCI_STATUS_AR, MCI_STATUS_AR);
		check_runs_on(&g);
	}
	b = (struct sigbus){ (uint8_t *)s.hva + 0x6000, BUS_MCEERR_AO };
	CU_ASSERT_EQUAL_FATAL(minivmm_run_on_vcpu(g.vmm, send_sigbus, &b), 0);
	if (!wait_report(&g, 2, &m)) {
		print_mce("SIGBUS BUS_MCEERR_AO at hva+0x6000", &m);
		CU_ASSERT_EQUAL(m.addr, 0x6000);
		CU_ASSERT_EQUAL(m.status & (MCI_STATUS_AR | MCI_STATUS_MCACOD), 0xc0);
	}
out:
	guest_down(&g);
}

/*
 * A page of guest RAM that cannot be read (a poison marker under the guest,
 * as a memory error leaves one) during a live migration: the report names
 * its guest-physical address, its copy still faults (no zeros), and the
 * VMM's poisoned callback tells the guest: an action-optional machine
 * check at that address, which the guest's own handler reads back.
 */
static void test_lost_in_migration(void)
{
	const uint64_t lost = 0x8000;
	struct memmig_live_opts o = { .sz = sizeof(o), .target_node = 0 };
	struct memmig_live_report rep = { .sz = sizeof(rep) };
	struct minivmm_slot s;
	struct minivmm_mce m;
	uint8_t probe[4096];
	struct guest g;
	int rc;

	if (guest_up(&g, MINIVMM_GUEST_MCE, 0))
		goto out;
	minivmm_get_slot(g.vmm, &s);
	rc = memmig_poison_mark(ctx, (uint8_t *)s.hva + lost, 4096);
	if (rc == -EOPNOTSUPP) {
		printf("(no UFFDIO_POISON here: not tested) ");
		goto out;
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	o.slot = s.slot;
	CU_ASSERT_EQUAL(memmig_vm_migrate(g.vm, &o, &rep), 0);
	CU_ASSERT_EQUAL(rep.pages_poisoned, 1);
	CU_ASSERT_EQUAL(rep.poisoned_ranges, 1);
	minivmm_get_slot(g.vmm, &s);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, probe, (uint8_t *)s.hva + lost, 4096, NULL),
			4096);
	if (!wait_report(&g, 1, &m)) {
		print_mce("lost in a live migration, told after resume", &m);
		CU_ASSERT_EQUAL(m.addr, lost);
		CU_ASSERT_EQUAL(m.status & ~MCI_STATUS_MCACOD, MCI_COMMON);
		CU_ASSERT_EQUAL(m.status & MCI_STATUS_MCACOD, 0xc0);
		check_runs_on(&g);
	}
	/* The guest reads the page: KVM finds the marker in the copy and
	 * signals the vCPU thread, which gives the guest an SRAR there. */
	((volatile struct minivmm_state *)((uint8_t *)s.hva + MINIVMM_STATE_OFFSET))->touch =
		(uint32_t)lost;
	if (!wait_report(&g, 2, &m)) {
		print_mce("the guest read it", &m);
		CU_ASSERT_EQUAL(m.addr, lost);
		CU_ASSERT_EQUAL(m.status & ~MCI_STATUS_MCACOD, MCI_COMMON | MCI_STATUS_AR);
		CU_ASSERT_EQUAL(m.status & MCI_STATUS_MCACOD, 0x134);
		check_runs_on(&g);
	}
out:
	guest_down(&g);
}

/*
 * A real memory error: MADV_HWPOISON runs the kernel's memory-failure path
 * on a page of guest RAM, as for a machine check the host took.  When the
 * guest reads the page, KVM finds it poisoned and sends the vCPU thread
 * SIGBUS BUS_MCEERR_AR with its host address (nothing forged here), and
 * the guest gets its action-required machine check at that page.
 */
static void test_real_hwpoison(void)
{
	const uint64_t gpa = 0xa000;
	struct minivmm_slot s;
	struct minivmm_mce m;
	struct guest g;
	int rc, code;

	if (!in_tier) {
		printf("(a real MADV_HWPOISON retires a page of the host's for good: "
		       "the multi-node tier runs this) ");
		return;
	}
	if (guest_up(&g, MINIVMM_GUEST_MCE, 0))
		goto out;
	minivmm_get_slot(g.vmm, &s);
	rc = hwpoison_page((uint8_t *)s.hva + gpa, &code);
	if (rc) {
		CUNIT_FAILF("MADV_HWPOISON on guest RAM: %s (the tier's kernel has "
			    "CONFIG_MEMORY_FAILURE)", strerror(-rc));
		goto out;
	}
	printf("\n    SIGBUS to this thread at the injection: si_code %d ", code);
	((volatile struct minivmm_state *)((uint8_t *)s.hva + MINIVMM_STATE_OFFSET))->touch =
		(uint32_t)gpa;
	if (!wait_report(&g, 1, &m)) {
		print_mce("KVM's own SIGBUS for a poisoned page", &m);
		CU_ASSERT_EQUAL(m.addr, gpa);
		CU_ASSERT_EQUAL(m.status & ~MCI_STATUS_MCACOD, MCI_COMMON | MCI_STATUS_AR);
		CU_ASSERT_EQUAL(m.status & MCI_STATUS_MCACOD, 0x134);
		check_runs_on(&g);
	}
out:
	guest_down(&g);
}

/* Only guest RAM the VMM registered; only known flags. */
static void test_bad_input(void)
{
	struct memmig_vm_ops ops = {
		.sz = sizeof(ops), .pause = minivmm_pause, .resume = minivmm_resume,
	};
	struct memmig_vm *novm;
	struct guest g;

	if (guest_up(&g, MINIVMM_GUEST_MCE, 0))
		goto out;
	CU_ASSERT_EQUAL(minivmm_inject_mce(g.vm, g.vmm, GUEST_MEM, 0), -EINVAL);
	CU_ASSERT_EQUAL(minivmm_inject_mce(g.vm, g.vmm, 1ULL << 40, 0), -EINVAL);
	CU_ASSERT_EQUAL(minivmm_inject_mce(g.vm, g.vmm, ~0ULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(minivmm_inject_mce(g.vm, g.vmm, 0x3000, 1u << 7), -EINVAL);
	CU_ASSERT_EQUAL(memmig_vm_mce_inject(g.vm, -1, 0x3000, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_vm_mce_inject(NULL, 0, 0x3000, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_vm_mce_setup(g.vm, -1, 0), -EINVAL);
	/* Without KVM there is nothing to inject into. */
	CU_ASSERT_EQUAL_FATAL(memmig_vm_new(ctx, -1, &ops, NULL, &novm), 0);
	CU_ASSERT_EQUAL(memmig_vm_mce_setup(novm, 0, 0), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(memmig_vm_mce_inject(novm, 0, 0, 0), -EOPNOTSUPP);
	memmig_vm_unref(novm);
	/* Nothing reached the guest. */
	check_runs_on(&g);
	{
		struct minivmm_stats st;

		minivmm_get_stats(g.vmm, &st);
		CU_ASSERT_EQUAL(st.mces, 0);
	}
out:
	guest_down(&g);
}

static CU_TestInfo tests[] = {
	{ "SRAR then SRAO, read back by the guest", test_srar_srao },
	{ "bank count: fewest, clamped", test_banks },
	{ "CR4.MCE clear: triple fault", test_no_cr4_mce },
	{ "KVM's SIGBUS on the vCPU thread becomes #MC", test_sigbus },
	{ "a real MADV_HWPOISON: KVM's own SIGBUS becomes #MC", test_real_hwpoison },
	{ "a page lost in a live migration: told to the guest", test_lost_in_migration },
	{ "bad gpa, flags and vm", test_bad_input },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "kvm-mce", NULL, NULL, NULL, NULL, tests },
	CU_SUITE_INFO_NULL,
};

/* Why this machine cannot run the test, or NULL. */
static const char *skip_reason(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC), cap;

	if (fd < 0)
		return "no /dev/kvm";
#ifdef KVM_CAP_MCE
	cap = ioctl(fd, KVM_CHECK_EXTENSION, KVM_CAP_MCE);
#else
	cap = 0;
#endif
	close(fd);
	return cap > 0 ? NULL : "KVM has no KVM_CAP_MCE (machine-check injection)";
}

int main(void)
{
	const char *why = skip_reason(), *tier = getenv("MEMMIG_TEST_TIER");
	int rc;

	if (why)
		return cunit_skip(why);
	in_tier = tier && !strcmp(tier, "1");
	if (memmig_ctx_new(&ctx) < 0)
		return CUNIT_EXIT_ERROR;
	rc = cunit_main(suites);
	memmig_ctx_unref(ctx);
	return rc;
}
