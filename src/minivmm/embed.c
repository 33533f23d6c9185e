/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Handing minivmm's VM to libmemmig, and one checked migration. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "minivmm/embed.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* memmig moved the guest's RAM (vCPU paused): the VMM follows. */
static void slot_moved(void *opaque, uint32_t slot, void *old_hva, void *hva,
		       int fd, uint64_t fd_offset)
{
	(void)slot;
	(void)old_hva;	/* minivmm unmaps it when hva differs */
	minivmm_set_slot_memory(opaque, hva, fd, fd_offset);
}

static int ring_full(void *opaque, unsigned int vcpu)
{
	return memmig_vm_dirty_ring_full(opaque, vcpu);
}

/*
 * KVM found a poisoned page under the guest (on the vCPU thread, out of
 * KVM_RUN): the guest learns it as from hardware, and its own
 * memory-failure handling takes it from there.
 */
static int memory_error(void *opaque, int vcpu_fd, uint64_t gpa, int code)
{
	return memmig_vm_mce_inject(opaque, vcpu_fd, gpa,
				    code == BUS_MCEERR_AO ? MEMMIG_VM_MCE_AO : 0);
}

/*
 * A live migration could not read guest RAM (after resume): its copy faults
 * there as the old memory did, and the guest is told of the range's first
 * page now, as an action-optional memory error; touching the others later
 * brings their own machine checks (KVM's SIGBUS, memory_error()).
 */
static void poisoned(void *opaque, uint32_t slot, uint64_t gpa, uint64_t len, int err)
{
	(void)slot;
	(void)len;
	(void)err;
	minivmm_memory_lost(opaque, gpa);
}

int minivmm_embed(struct memmig_ctx *ctx, struct minivmm *vmm, struct memmig_vm **out)
{
	struct memmig_vm_ops ops = {
		.sz = sizeof(ops),
		.pause = minivmm_pause,
		.resume = minivmm_resume,
		.slot_moved = slot_moved,
		.poisoned = poisoned,
	};
	struct minivmm_slot s;
	struct memmig_vm_slot ms;
	struct kvm_dirty_gfn *ring;
	uint32_t entries;
	struct memmig_vm *vm;
	int rc;

	rc = memmig_vm_new(ctx, minivmm_vm_fd(vmm), &ops, vmm, &vm);
	if (rc < 0)
		return rc;
	minivmm_get_slot(vmm, &s);
	ms = (struct memmig_vm_slot){
		.sz = sizeof(ms), .slot = s.slot, .flags = s.flags, .gpa = s.gpa,
		.hva = s.hva, .size = s.size, .fd = s.fd, .fd_offset = s.fd_offset,
	};
	rc = memmig_vm_add_slot(vm, &ms);
	ring = minivmm_dirty_ring(vmm, &entries);
	if (!rc && ring) {
		rc = memmig_vm_add_dirty_ring(vm, 0, ring, entries);
		minivmm_set_ring_full(vmm, ring_full, vm);
	}
	if (rc < 0) {
		memmig_vm_unref(vm);
		return rc;
	}
	minivmm_set_memory_error(vmm, memory_error, vm);
	*out = vm;
	return 0;
}

static int mce_setup_on_vcpu(void *opaque, int vcpu_fd)
{
	return memmig_vm_mce_setup(opaque, vcpu_fd, 0);
}

int minivmm_mce_setup(struct memmig_vm *vm, struct minivmm *vmm)
{
	return minivmm_run_on_vcpu(vmm, mce_setup_on_vcpu, vm);
}

struct mce_inject {
	struct memmig_vm *vm;
	uint64_t gpa;
	unsigned int flags;
};

static int mce_inject_on_vcpu(void *opaque, int vcpu_fd)
{
	struct mce_inject *m = opaque;

	return memmig_vm_mce_inject(m->vm, vcpu_fd, m->gpa, m->flags);
}

int minivmm_inject_mce(struct memmig_vm *vm, struct minivmm *vmm, uint64_t gpa,
		       unsigned int flags)
{
	struct mce_inject m = { .vm = vm, .gpa = gpa, .flags = flags };

	return minivmm_run_on_vcpu(vmm, mce_inject_on_vcpu, &m);
}

/* Where the guest is: its pass and the page it writes. */
static uint64_t guest_position(struct minivmm *vmm)
{
	const volatile struct minivmm_state *st;
	struct minivmm_slot s;

	minivmm_get_slot(vmm, &s);
	st = (const volatile struct minivmm_state *)((uint8_t *)s.hva + MINIVMM_STATE_OFFSET);
	return (uint64_t)st->pass << 32 | st->pos;
}

int minivmm_wait_progress(struct minivmm *vmm, int timeout_ms)
{
	uint64_t at = guest_position(vmm);

	for (int waited = 0; guest_position(vmm) == at; waited++) {
		if (waited >= timeout_ms)
			return -ETIMEDOUT;
		usleep(1000);
	}
	return 0;
}

/* The guest must go on writing on its new memory within this. */
#define PROGRESS_TIMEOUT_MS 10000

int minivmm_up(struct memmig_ctx *ctx, const struct minivmm_opts *o,
	       struct minivmm **vmm, struct memmig_vm **vm)
{
	int rc;

	*vmm = NULL;
	*vm = NULL;
	rc = minivmm_create(o, vmm);
	if (!rc)
		rc = minivmm_embed(ctx, *vmm, vm);
	if (!rc)
		rc = minivmm_start(*vmm);
	if (!rc)
		rc = minivmm_wait_progress(*vmm, PROGRESS_TIMEOUT_MS);
	return rc;
}

/* The methods that track a host thread's writes: KVM's bypass the page
 * tables. */
static bool dirty_without_kvm(int method)
{
	return method == MEMMIG_DIRTY_UFFD_WP || method == MEMMIG_DIRTY_SOFT_DIRTY;
}

int minivmm_up_any(struct memmig_ctx *ctx, uint64_t mem, int guest, int dirty_method,
		   bool no_kvm, struct minivmm **vmm, struct memmig_vm **vm,
		   const char **thread_why)
{
	struct minivmm_opts o = {
		.mem = mem,
		.backing = MINIVMM_BACKING_ANON,
		.dirty_ring = dirty_method == MEMMIG_DIRTY_RING ? 4096 : 0,
		.guest = guest,
	};
	int rc = -ENODEV;

	*thread_why = no_kvm ? "--no-kvm" :
		      dirty_without_kvm(dirty_method) ? "the tracking follows a host thread" :
							NULL;
	if (!*thread_why)
		rc = minivmm_up(ctx, &o, vmm, vm);
	if (rc != -ENODEV)
		return rc;
	if (!*thread_why)
		*thread_why = "no usable /dev/kvm";
	memmig_vm_unref(*vm);
	if (*vmm)
		minivmm_destroy(*vmm);
	o.vcpu = MINIVMM_VCPU_THREAD;
	o.dirty_ring = 0;
	return minivmm_up(ctx, &o, vmm, vm);
}

int minivmm_migrate(struct memmig_vm *vm, struct minivmm *vmm,
		    const struct memmig_live_opts *opts, struct minivmm_migration *out)
{
	struct memmig_live *live;
	struct minivmm_stats st;
	uint64_t errors;
	double t0;
	int rc;

	memset(out, 0, sizeof(*out));
	out->rep.sz = sizeof(out->rep);
	minivmm_get_stats(vmm, &st);
	out->passes_before = st.passes;
	errors = st.guest_errors;
	minivmm_stall_reset(vmm);
	t0 = now_s();
	rc = memmig_live_new(vm, opts, &live);
	if (rc < 0)
		return rc;
	rc = memmig_live_prepare(live);
	out->prepared_s = now_s() - t0;
	if (!rc)
		rc = memmig_live_run(live);
	out->ran_s = now_s() - t0;
	memmig_live_get_report(live, &out->rep);
	while (out->nrounds < MINIVMM_ROUNDS_MAX &&
	       !memmig_live_get_round(live, out->nrounds, &out->round_bytes[out->nrounds],
				      &out->round_s[out->nrounds]))
		out->nrounds++;
	memmig_live_unref(live);
	out->freed_s = now_s() - t0;
	if (rc < 0)
		return rc;
	/*
	 * The guest writes on: once it moved on, every page is checked
	 * against where it is (a write lost in the move shows as an old
	 * value), and the guest checks each page again as it passes.
	 */
	out->verify_rc = minivmm_wait_progress(vmm, PROGRESS_TIMEOUT_MS);
	minivmm_get_stats(vmm, &st);
	out->stall_max_s = st.stall_max_ns * 1e-9;
	out->stall_pause_s = st.stall_pause_max_ns * 1e-9;
	out->stall_source = st.stall_source;
	out->stall_at_s = st.stall_at_ns * 1e-9;
	if (!out->verify_rc)
		out->verify_rc = minivmm_verify(vmm, &out->check);
	minivmm_get_stats(vmm, &st);
	out->passes_after = st.passes;
	out->guest_errors = st.guest_errors - errors;
	return 0;
}

const char *minivmm_stall_step(const struct minivmm_migration *m)
{
	double at = m->stall_at_s;

	if (at < m->prepared_s)
		return "prepare";
	if (at < m->prepared_s + m->rep.precopy_s)
		return "pre-copy";
	if (at < m->ran_s)
		return "switchover";
	return at < m->freed_s ? "end" : "after";
}

int minivmm_migration_ok(const struct minivmm_migration *m)
{
	return !m->rep.result && !m->verify_rc && !m->check.lost && !m->check.torn &&
	       !m->check.guest_errors && !m->guest_errors;
}
