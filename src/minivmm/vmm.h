/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * minivmm: a one-vCPU KVM VMM whose guest checks its own RAM, to drive
 * live migrations of guest memory.  Independent of libmemmig: an embedder
 * hands its vm fd, slot, dirty ring and pause/resume to the library.
 *
 * The guest (guest.S) runs in flat 32-bit protected mode without paging.
 * Page 0 holds its code and, at MINIVMM_STATE_OFFSET, the state block;
 * pages 1..npages-1 are data.  In pass P it writes P to the first dword of
 * every 64-byte line of each data page in turn, and the page number to the
 * page's dword 1, checking first that each still holds what pass P-1 left.
 *
 * Without /dev/kvm, a host thread can stand in for the vCPU
 * (MINIVMM_VCPU_THREAD): the same algorithm in C on the same RAM and
 * state block, at the host's native speed, paused and checked the same
 * way, but with no VM: no vm fd, no memslot in KVM, no dirty ring.
 */
#ifndef MINIVMM_VMM_H
#define MINIVMM_VMM_H

/* The guest's ABI, shared with guest.S. */
#define MINIVMM_PAGE		4096
#define MINIVMM_LINE		64
#define MINIVMM_LINES		(MINIVMM_PAGE / MINIVMM_LINE)
#define MINIVMM_PAGENUM_OFFSET	4	/* dword 1 of each data page */
#define MINIVMM_STATE_OFFSET	0x800	/* in page 0, after the code */
#define MINIVMM_STATE_PASS	(MINIVMM_STATE_OFFSET + 0)
#define MINIVMM_STATE_POS	(MINIVMM_STATE_OFFSET + 4)
#define MINIVMM_STATE_ERRORS	(MINIVMM_STATE_OFFSET + 8)
#define MINIVMM_STATE_HALF_EXITS (MINIVMM_STATE_OFFSET + 12)
#define MINIVMM_STATE_MCE_CR4	(MINIVMM_STATE_OFFSET + 16)
#define MINIVMM_STATE_MCES	(MINIVMM_STATE_OFFSET + 20)
#define MINIVMM_STATE_TOUCH	(MINIVMM_STATE_OFFSET + 24)
#define MINIVMM_STATE_STALL_RESET (MINIVMM_STATE_OFFSET + 28)
#define MINIVMM_STATE_STALL_MAX	(MINIVMM_STATE_OFFSET + 32)
#define MINIVMM_STATE_HOT_FIRST	(MINIVMM_STATE_OFFSET + 40)
#define MINIVMM_STATE_HOT_PAGES	(MINIVMM_STATE_OFFSET + 44)
#define MINIVMM_STATE_STALL_FROM (MINIVMM_STATE_OFFSET + 48)
#define MINIVMM_STATE_STALL_END	(MINIVMM_STATE_OFFSET + 56)
/* The hot-set guest's table of writes a page starts at this page. */
#define MINIVMM_HOT_TABLE	1
#define MINIVMM_PORT_PASS	0x10	/* out: a pass ended, eax = its number */
#define MINIVMM_PORT_ERROR	0x11	/* out: a check failed, eax = the page */
#define MINIVMM_PORT_HALF	0x12	/* out: half a page written (with a ring) */
/* The machine-check guest (guest-mce.S). */
#define MINIVMM_PORT_MCE	0x13	/* out: one dword of a #MC report */
#define MINIVMM_PORT_MCE_END	0x14	/* out: the report ends, eax = #MCs
					 * taken */
#define MINIVMM_PORT_EXCEPTION	0x15	/* out: another exception, eax = its
					 * vector */

#ifndef __ASSEMBLER__
#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

/* The state block, as the guest writes it. */
struct minivmm_state {
	uint32_t pass;		/* the pass in progress (0: none yet) */
	uint32_t pos;		/* the page being written, stored first */
	uint32_t errors;	/* failed checks, as the guest counts them */
	uint32_t half_exits;	/* set by the VMM: exit each half page */
	uint32_t mce_cr4;	/* set by the VMM: the machine-check guest
				 * sets CR4.MCE */
	uint32_t mces;		/* machine checks the guest took */
	uint32_t touch;		/* set by the VMM: the machine-check guest
				 * reads this guest-physical address once a
				 * pass until a machine check clears it */
	uint32_t stall_reset;	/* set by the VMM: the guest that writes
				 * its RAM zeroes stall_max, and clears it */
	uint64_t stall_max;	/* its longest time from one page to the
				 * next, in TSC ticks */
	uint32_t hot_first;	/* set by the VMM: the hot-set guest's
				 * window, its first data page (0: the first
				 * one) and length (0: all) */
	uint32_t hot_pages;
	uint64_t stall_from;	/* the TSC when the guest took the reset */
	uint64_t stall_end;	/* and when its longest stall ended */
};

enum minivmm_backing {
	MINIVMM_BACKING_ANON,	/* private anonymous, 2 MiB aligned, THP */
	MINIVMM_BACKING_MEMFD,	/* memfd, mapped shared */
};

enum minivmm_vcpu_kind {
	MINIVMM_VCPU_KVM = 0,	/* guest.S on a KVM vCPU */
	MINIVMM_VCPU_THREAD,	/* a host thread writes the RAM; no KVM */
};

enum minivmm_guest {
	MINIVMM_GUEST_MEMCHECK = 0,	/* guest.S: rewrites and checks its RAM */
	MINIVMM_GUEST_MCE,		/* guest-mce.S, CR4.MCE set: takes
					 * machine checks and reports them */
	MINIVMM_GUEST_MCE_NOCR4,	/* the same with CR4.MCE clear: a
					 * machine check shuts it down */
	MINIVMM_GUEST_HOTSET,		/* guest-hot.S: rewrites and checks a
					 * window of its RAM that the VMM
					 * moves (minivmm_set_window()) */
};

/* The guest that writes its RAM runs in 64-bit long mode: its RAM is
 * one slot from GPA 0 (port I/O only, no MMIO, no in-kernel APIC) and its
 * page tables a second one above it.  The machine-check guests run in
 * 32-bit protected mode: their RAM ends below 4 GiB, short of the top
 * 32 MiB where KVM may keep pages of its own (Intel's TSS and identity
 * map; the APIC page). */
#define MINIVMM_MEM_MAX		(64ULL << 30)
#define MINIVMM_KVM_MCE_MEM_MAX	(4064ULL << 20)
/* The page tables' memslot (the RAM is slot 0), far above any RAM and
 * out of the way of slots a VMM adds (tests/kvm adds slot 1 at 1 GiB);
 * 256 GiB is within the 40 address bits of the smallest x86-64 guest. */
#define MINIVMM_PT_SLOT		100
#define MINIVMM_PT_GPA		(256ULL << 30)

struct minivmm_opts {
	uint64_t mem;		/* bytes: 4 KiB multiple, 8 KiB to
				 * MINIVMM_MEM_MAX (the machine-check
				 * guests: MINIVMM_KVM_MCE_MEM_MAX) */
	int backing;		/* enum minivmm_backing */
	uint32_t dirty_ring;	/* entries, a power of two; 0: no ring.
				 * KVM only */
	int vcpu;		/* enum minivmm_vcpu_kind */
	int guest;		/* enum minivmm_guest; the machine-check
				 * guests need a KVM vCPU */
};

/* The one memslot, as registered with KVM (with the host-thread vCPU,
 * as it would be: slot 0 at GPA 0). */
struct minivmm_slot {
	uint32_t slot;
	uint32_t flags;		/* KVM_MEM_* */
	uint64_t gpa;
	void *hva;
	uint64_t size;
	int fd;			/* -1: anonymous */
	uint64_t fd_offset;
};

/* One machine check as the machine-check guest's #MC handler read it. */
struct minivmm_mce {
	uint32_t bank;		/* the first with MCi_STATUS.VAL; ~0: none */
	uint64_t mcg_status;	/* MCG_STATUS */
	uint64_t status, addr, misc;	/* the bank's MCi_STATUS, ADDR, MISC */
};

struct minivmm_stats {
	uint64_t passes;	/* the last pass the guest finished */
	uint64_t guest_errors;	/* checks the guest reported failed */
	uint32_t last_error_page;
	uint64_t ring_full_exits;
	int fatal;		/* 0, or why the vCPU stopped: -errno */
	char fatal_msg[128];
	uint32_t fatal_exit;	/* the KVM exit that stopped it, or 0 */
	uint64_t mces;		/* machine checks the guest reported */
	struct minivmm_mce last_mce;
	/* The guest's longest stall since minivmm_stall_reset() (or its
	 * start; 0 until the guest took the reset), as stall_source says:
	 * "writer", the host-thread writer's longest time from one write to
	 * the next by its own clock, whatever held it (a pause, a fault, the
	 * scheduler); "guest", the long-mode KVM guest's own, from one page
	 * to the next by its TSC; "vcpu-parked" (the machine-check guests, or
	 * no TSC rate), the longest time minivmm held the vCPU parked (its
	 * exits and faults are not in it). */
	uint64_t stall_max_ns;
	/* The longest of those that held a pause: memmig's pauses as the
	 * guest saw them. */
	uint64_t stall_pause_max_ns;
	/* When the longest stall began, ns after the reset (0: none yet). */
	uint64_t stall_at_ns;
	const char *stall_source;
};

/* Filled by minivmm_verify(): counts of data pages. */
struct minivmm_check {
	uint32_t pass, pos;	/* the state block at the check */
	uint64_t pages;		/* data pages checked */
	uint64_t lost;		/* a line older than expected, or a wrong
				 * page number */
	uint64_t torn;		/* lines of one pass that disagree */
	uint32_t guest_errors;	/* the state block's count */
};

struct minivmm;

/* Runs on the vCPU thread at KVM_EXIT_DIRTY_RING_FULL: harvests the ring
 * and resets it.  It must not wait for a minivmm_pause() caller, which
 * waits for it.  Nonzero stops the vCPU. */
typedef int (*minivmm_ring_full_fn)(void *opaque, unsigned int vcpu);

/*
 * Creates the VM, its RAM as memslot 0 at GPA 0, the dirty ring if asked
 * and the vCPU, ready to run the guest.  -ENODEV without /dev/kvm.
 * Installs a no-op SIGUSR1 handler (no SA_RESTART): SIGUSR1 kicks the vCPU;
 * and a SIGBUS handler for memory errors on the vCPU thread (see
 * minivmm_set_memory_error()).
 * With opts->vcpu MINIVMM_VCPU_THREAD: only the RAM, laid out the same,
 * and none of that (-EINVAL with a dirty ring).
 */
int minivmm_create(const struct minivmm_opts *opts, struct minivmm **out);
/* Stops the vCPU and frees everything, the slot's memory and fd included. */
void minivmm_destroy(struct minivmm *vmm);

/* -1 with the host-thread vCPU. */
int minivmm_vm_fd(const struct minivmm *vmm);
void minivmm_get_slot(struct minivmm *vmm, struct minivmm_slot *out);
/* The vCPU's ring and its entries, or NULL without one. */
struct kvm_dirty_gfn *minivmm_dirty_ring(const struct minivmm *vmm,
					 uint32_t *entries);
/* Before minivmm_start(). */
void minivmm_set_ring_full(struct minivmm *vmm, minivmm_ring_full_fn fn,
			   void *opaque);

/*
 * A memory error in guest RAM: KVM sent the vCPU thread SIGBUS
 * (BUS_MCEERR_AR: the guest touched a poisoned page; BUS_MCEERR_AO: the
 * kernel found one) and KVM_RUN returned.  minivmm catches the signal on
 * its vCPU thread (SIGBUS elsewhere goes to the handler that was there
 * before) and calls fn there, out of KVM_RUN, with the guest-physical
 * address and the si_code: fn tells the guest, with a machine check.
 * Nonzero stops the vCPU, as does an error with no fn: the guest would
 * only touch the page again.  Before minivmm_start().
 */
typedef int (*minivmm_memory_error_fn)(void *opaque, int vcpu_fd, uint64_t gpa,
				       int code);
void minivmm_set_memory_error(struct minivmm *vmm, minivmm_memory_error_fn fn,
			      void *opaque);

/*
 * Guest RAM the VMM learnt is lost without the guest touching it (a live
 * migration could not read it): the guest hears of the page at gpa as of
 * an action-optional error (BUS_MCEERR_AO) through the memory_error
 * callback, on the vCPU thread.  One page: a second machine check before
 * the guest finished the first would shut it down.  -ENOENT without a
 * callback; the callback's answer otherwise.
 */
int minivmm_memory_lost(struct minivmm *vmm, uint64_t gpa);

/* Starts the vCPU thread (or the host thread that stands in for it). */
int minivmm_start(struct minivmm *vmm);
/*
 * Returns once the vCPU is parked outside KVM_RUN (the host thread:
 * between two pages); calls nest, from any thread but the vCPU's.  opaque
 * is the struct minivmm: both fit memmig_vm_ops.pause and .resume.  The
 * resume that lets the vCPU run again frees, after waking it, the memory
 * a minivmm_set_slot_memory() replaced.
 */
int minivmm_pause(void *opaque);
int minivmm_resume(void *opaque);
/* Waits until the guest has finished pass `pass`: 0, -ETIMEDOUT, or -EIO
 * when the vCPU stopped. */
int minivmm_wait_pass(struct minivmm *vmm, uint64_t pass, int timeout_ms);
/* The same for the machine-check guest's count of reported #MCs. */
int minivmm_wait_mce(struct minivmm *vmm, uint64_t mces, int timeout_ms);

/*
 * Runs fn(opaque, vcpu_fd) on the vCPU thread at its next safe point, out
 * of KVM_RUN, and returns what fn returned: what vCPU ioctls that must not
 * race the vCPU need (a machine-check injection).  The vCPU thread does
 * not park for it: it runs on right after.  From the vCPU thread itself
 * (an exit handler), or before minivmm_start() or after the vCPU stopped,
 * fn runs at once on the caller's thread.  -EOPNOTSUPP with the
 * host-thread vCPU.
 */
typedef int (*minivmm_vcpu_fn)(void *opaque, int vcpu_fd);
int minivmm_run_on_vcpu(struct minivmm *vmm, minivmm_vcpu_fn fn, void *opaque);
void minivmm_get_stats(struct minivmm *vmm, struct minivmm_stats *out);
/* The guest's longest stall counts again from now: the one under way is
 * left out (see minivmm_stats). */
void minivmm_stall_reset(struct minivmm *vmm);

/*
 * The guest's RAM moved, the guest paused: its address (the same one
 * after an mremap swap; a new one after the memslot was re-added) and
 * backing fd (-1: anonymous; else dup()ed).  The VMM owns the new mapping
 * from then on.  It only switches to it: the old mapping (where the
 * address changed) is unmapped and the old fd closed by the
 * minivmm_resume() that ends the pause, once the vCPU runs again -- so
 * that freeing them does not lengthen the pause -- or by destroy.
 */
int minivmm_set_slot_memory(struct minivmm *vmm, void *hva, int fd,
			    uint64_t fd_offset);

/*
 * The hot-set guest's window: data pages [first, first + pages) (data page
 * 0 is the first after its table; the window wraps; pages 0: all), from
 * its next pass.  The data pages' count and the first one's page number
 * in *ndata and *data0 when not NULL.  -EINVAL for the other guests.
 */
int minivmm_set_window(struct minivmm *vmm, uint32_t first, uint32_t pages);
void minivmm_data_pages(const struct minivmm *vmm, uint32_t *data0, uint32_t *ndata);

/*
 * The hot-set guest for another VMM (a QEMU guest's firmware): its code,
 * page 0's first *len bytes, to run in long mode from virtual address 0
 * with the page count in rbx; and the first data page of a guest of
 * npages pages (the table's pages come before it).
 */
const void *minivmm_guest_hot_code(size_t *len);
uint32_t minivmm_hot_data0(uint64_t npages);

/*
 * Pauses the guest, checks every data page against the state block, then
 * resumes it.  Not while a migration swaps the memory.  0 with the counts
 * in *out; -EPROTO when the state block itself is corrupt.
 */
int minivmm_verify(struct minivmm *vmm, struct minivmm_check *out);
/* The same check of the hot-set guest's RAM (npages pages from its page 0)
 * that another VMM holds still and reads. */
int minivmm_verify_hot_ram(const uint8_t *ram, uint64_t npages, struct minivmm_check *out);

#endif /* __ASSEMBLER__ */
#endif /* MINIVMM_VMM_H */
