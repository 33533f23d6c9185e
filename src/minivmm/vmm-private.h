/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MINIVMM_VMM_PRIVATE_H
#define MINIVMM_VMM_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "minivmm/vmm.h"

enum minivmm_vcpu_state {
	MINIVMM_VCPU_IDLE,	/* no thread yet */
	MINIVMM_VCPU_RUNNING,	/* may be inside KVM_RUN */
	MINIVMM_VCPU_PARKED,	/* waits for resume, outside KVM_RUN (the
				 * writer: between pages) */
	MINIVMM_VCPU_DEAD,	/* the thread returned */
};

struct minivmm {
	int kind;		/* enum minivmm_vcpu_kind */
	int guest;		/* enum minivmm_guest */
	int kvm_fd, vm_fd, vcpu_fd;
	struct kvm_run *run;
	size_t run_size;
	struct kvm_dirty_gfn *ring;
	uint32_t ring_entries;
	uint32_t npages;

	/* The slot; lock guards it against minivmm_set_slot_memory(). */
	struct minivmm_slot slot;
	/*
	 * Under lock: what minivmm_set_slot_memory() replaced, released by
	 * the resume that lets the vCPU run again (or by destroy): freeing
	 * shmem takes milliseconds, which must not stretch the pause.
	 */
	void *old_hva;		/* NULL: none */
	uint64_t old_size;
	int old_fd;		/* -1: none */
	/* The long-mode guest's page tables, in a memslot of their own at
	 * pt_gpa, out of the RAM that memmig moves; NULL for the 32-bit
	 * guests. */
	uint64_t *pt;
	uint64_t pt_size, pt_gpa;
	uint32_t tsc_khz;	/* the vCPU's TSC rate; 0: unknown */

	minivmm_ring_full_fn ring_full;
	void *ring_full_opaque;
	minivmm_memory_error_fn memory_error;
	void *memory_error_opaque;
	/* vCPU thread only: where the guest was at the last full ring. */
	struct kvm_regs ring_full_regs;
	bool ring_full_seen;

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t parked;	/* state left RUNNING */
	pthread_cond_t wake;	/* pause_depth reached 0, or stop */
	pthread_cond_t pass;	/* a pass ended, or the thread died */
	enum minivmm_vcpu_state state;		/* under lock */
	/* Written under lock, read by the vCPU thread without it between
	 * runs: the run's immediate_exit closes the gap (the writer reads
	 * them between pages, without a kick). */
	atomic_uint pause_depth;
	atomic_bool stop;
	/* Set by the vCPU thread around KVM_RUN: only then is a signal
	 * needed, and elsewhere it could interrupt the ring_full callback. */
	atomic_bool in_run;

	atomic_uint_fast64_t passes, guest_errors, ring_full_exits;
	/* The guest's longest stall (ns), written by the vCPU thread only;
	 * stall_reset asks it to start again (minivmm_stall_mark()). */
	atomic_uint_fast64_t stall_max_ns;
	/* The longest of those that held a park: a pause as the guest saw
	 * it, from its last write before to its first after. */
	atomic_uint_fast64_t stall_park_max_ns;
	/* When the reset was taken, and when the longest stall ended. */
	atomic_uint_fast64_t stall_from_ns, stall_end_ns;
	atomic_bool stall_reset;
	atomic_uint last_error_page;
	int fatal;			/* under lock */
	char fatal_msg[128];		/* under lock */
	uint32_t fatal_exit;		/* under lock */

	/*
	 * minivmm_run_on_vcpu(): one call at a time, under lock.  call_pending
	 * is read by the vCPU thread without it before each KVM_RUN, as
	 * pause_depth is.
	 */
	minivmm_vcpu_fn call_fn;	/* NULL: none */
	void *call_opaque;
	int call_rc;
	uint64_t calls_done;
	atomic_bool call_pending;
	pthread_cond_t called;		/* calls_done moved, or thread died */

	/* The machine-check guest's report: words on the vCPU thread only,
	 * the finished report under lock. */
	uint32_t mce_words[9];
	unsigned int mce_nwords;
	struct minivmm_mce last_mce;
	atomic_uint_fast64_t mces;
};

/* guest.S, guest-mce.S */
extern const uint8_t minivmm_guest_start[], minivmm_guest_end[];
extern const uint8_t minivmm_guest_mce_start[], minivmm_guest_mce_end[];
extern const uint8_t minivmm_guest_hot_start[], minivmm_guest_hot_end[];

/* mem.c */
int minivmm_mem_alloc(struct minivmm *vmm, uint64_t size, int backing);
void minivmm_mem_free(struct minivmm *vmm);
/* The state block in page 0 of the RAM; under lock (the RAM moves). */
static inline struct minivmm_state *minivmm_state_of(struct minivmm *vmm)
{
	return (struct minivmm_state *)((uint8_t *)vmm->slot.hva + MINIVMM_STATE_OFFSET);
}

/* The page tables that identity-map the RAM by 2 MiB pages, registered
 * as KVM memslot MINIVMM_PT_SLOT above the RAM: vmm->pt_gpa is CR3. */
int minivmm_mem_tables(struct minivmm *vmm);
int minivmm_slot_register(struct minivmm *vmm);
/* Under lock: takes what set_slot_memory() replaced, for
 * minivmm_mem_release() to free once the lock is dropped. */
void minivmm_mem_take_old(struct minivmm *vmm, void **hva, uint64_t *size,
			  int *fd);
void minivmm_mem_release(void *hva, uint64_t size, int fd);

/* vcpu.c (KVM) */
int minivmm_vcpu_init(struct minivmm *vmm, uint32_t ring_entries);
void minivmm_vcpu_free(struct minivmm *vmm);

/* run.c (KVM): the vCPU thread's body */
void *minivmm_vcpu_thread(void *arg);

/* sigbus.c: KVM's SIGBUS for poisoned guest RAM.  init installs the
 * handler (once); thread marks the calling thread as vmm's vCPU thread;
 * take returns the memory error the handler caught on it, if any. */
int minivmm_sigbus_init(void);
void minivmm_sigbus_thread(struct minivmm *vmm);
bool minivmm_sigbus_take(void **addr, int *code);

/* writer.c: the host-thread vCPU's body */
void *minivmm_writer_thread(void *arg);

/* pause.c */
int minivmm_kick_init(void);
int minivmm_kick_unblock(void);
void minivmm_kick(struct minivmm *vmm);
/* On the vCPU thread: parks while paused, runs a minivmm_run_on_vcpu()
 * call; false when it must stop. */
bool minivmm_park(struct minivmm *vmm);
/*
 * On the vCPU thread: the guest goes on now, after a stall since from (ns
 * of minivmm_now_ns(); 0: none), which may be the longest; parked: it held
 * a park.  Returns now.  A stall under way when minivmm_stall_reset() was
 * called began before what is measured: it is dropped.
 */
uint64_t minivmm_stall_mark(struct minivmm *vmm, uint64_t from, bool parked);
/* On the vCPU thread, last: marks it dead and wakes its waiters. */
void minivmm_thread_exit(struct minivmm *vmm);
/* Stops and joins the vCPU thread, if started. */
void minivmm_vcpu_stop(struct minivmm *vmm);

/* CLOCK_MONOTONIC in ns: through the vDSO, no system call, where the
 * clock source allows (kvm-clock, TSC; ~25 ns). */
static inline uint64_t minivmm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

#endif /* MINIVMM_VMM_PRIVATE_H */
