/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * minivmm embeds libmemmig: what a VMM writes to hand memmig its VM, and a
 * migrate-then-verify step shared by minivmm, memmig-cli demo and the
 * tests.
 */
#ifndef MINIVMM_EMBED_H
#define MINIVMM_EMBED_H

#include <memmig.h>
#include <stdbool.h>

#include "minivmm/vmm.h"

/* Registers the VM, its slot and its dirty ring (if any) with memmig, and
 * answers memory errors in guest RAM with a machine check
 * (minivmm_set_memory_error(), memmig_vm_mce_inject()). */
int minivmm_embed(struct memmig_ctx *ctx, struct minivmm *vmm,
		  struct memmig_vm **out);

/*
 * Memory errors: gives the vCPU machine-check banks (before it starts, or
 * at any time: on the vCPU thread), and injects a machine check for the
 * page at gpa (flags: MEMMIG_VM_MCE_AO or 0 for action required) on the
 * vCPU thread at its next exit, as KVM wants vCPU ioctls made.  Returns
 * memmig_vm_mce_setup()'s or memmig_vm_mce_inject()'s answer.
 */
int minivmm_mce_setup(struct memmig_vm *vm, struct minivmm *vmm);
int minivmm_inject_mce(struct memmig_vm *vm, struct minivmm *vmm, uint64_t gpa,
		       unsigned int flags);

#define MINIVMM_ROUNDS_MAX 64
struct minivmm_migration {
	struct memmig_live_report rep;
	struct minivmm_check check;	/* once the guest wrote on */
	uint64_t passes_before, passes_after;
	uint64_t guest_errors;		/* new ones, reported by port I/O */
	/* The guest's longest stall from the migration's start to its first
	 * write after it (not the check's own pause), as stall_source says
	 * (minivmm_stats): memmig's pauses and whatever else held it. */
	double stall_max_s;
	double stall_pause_s;	/* the longest of them that held a pause */
	const char *stall_source;
	/* When it began, from the migration's start, and in which of its
	 * steps (minivmm_stall_step()). */
	double stall_at_s;
	/* From the start to the end of memmig_live_prepare(), of
	 * memmig_live_run() (pre-copy, the report's precopy_s, then the
	 * switchover, the old memory's release and the tracking's end), and
	 * of memmig_live_unref(). */
	double prepared_s, ran_s, freed_s;
	int verify_rc;
	/* Its copy rounds (0: the full one), for pictures: the first
	 * MINIVMM_ROUNDS_MAX of rep.rounds. */
	unsigned int nrounds;
	uint64_t round_bytes[MINIVMM_ROUNDS_MAX];
	double round_s[MINIVMM_ROUNDS_MAX];
};

/*
 * One live migration of the guest's RAM (prepare timed on its own); once
 * the guest wrote on, a check of every page.  0 when the
 * migration and the check ran (the counts say whether the data is whole),
 * or the migration's -errno.
 */
int minivmm_migrate(struct memmig_vm *vm, struct minivmm *vmm,
		    const struct memmig_live_opts *opts,
		    struct minivmm_migration *out);
/* Returns once the guest wrote another page: 0 or -ETIMEDOUT. */
int minivmm_wait_progress(struct minivmm *vmm, int timeout_ms);
/*
 * A guest that writes, handed to memmig: minivmm_create(), minivmm_embed(),
 * minivmm_start(), then minivmm_wait_progress() for its first write.  0,
 * or -ENODEV without /dev/kvm (with o->vcpu MINIVMM_VCPU_KVM), or the
 * first error; *vmm and *vm are then whatever was made, for the caller to
 * release.
 */
int minivmm_up(struct memmig_ctx *ctx, const struct minivmm_opts *o,
	       struct minivmm **vmm, struct memmig_vm **vm);
/*
 * minivmm_up() with a KVM guest (enum minivmm_guest: one that writes its
 * RAM) where one can run, else the host-thread one: *thread_why says why it is a thread (NULL: KVM).  A thread when
 * no_kvm, when the tracking asked for follows only a thread's writes
 * (uffd-wp, soft-dirty), or without /dev/kvm.  A dirty ring for MEMMIG_DIRTY_RING.
 */
int minivmm_up_any(struct memmig_ctx *ctx, uint64_t mem, int guest, int dirty_method,
		   bool no_kvm, struct minivmm **vmm, struct memmig_vm **vm,
		   const char **thread_why);
/* Nothing lost, torn or seen wrong by the guest. */
/* The step the longest stall began in: "prepare", "pre-copy",
 * "switchover" (with the release of the old memory after it), "end" (the
 * unref), or "after" (the guest's first writes after the migration). */
const char *minivmm_stall_step(const struct minivmm_migration *m);
int minivmm_migration_ok(const struct minivmm_migration *m);

#endif
