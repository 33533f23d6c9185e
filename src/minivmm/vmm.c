/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The VM: creation, teardown, and what an embedder may read of it. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "minivmm/vmm-private.h"

/* Below the 32-bit MMIO hole, where PCs keep their low RAM. */

static int sync_init(struct minivmm *vmm)
{
	pthread_condattr_t attr;
	int rc;

	rc = pthread_condattr_init(&attr);
	if (!rc)
		rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(&vmm->pass, &attr);
	pthread_condattr_destroy(&attr);
	if (rc)
		return -rc;
	pthread_mutex_init(&vmm->lock, NULL);
	pthread_cond_init(&vmm->parked, NULL);
	pthread_cond_init(&vmm->wake, NULL);
	pthread_cond_init(&vmm->called, NULL);
	return 0;
}

static int kvm_open(struct minivmm *vmm)
{
	vmm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vmm->kvm_fd < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	if (ioctl(vmm->kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		return -ENOTSUP;
	vmm->vm_fd = ioctl(vmm->kvm_fd, KVM_CREATE_VM, 0);
	return vmm->vm_fd < 0 ? -errno : 0;
}

/* The ring needs the guest's half-page exits: see guest.S.  The
 * host-thread vCPU does not run the code, but keeps page 0's layout. */
static void guest_load(struct minivmm *vmm, int guest, bool half_exits)
{
	struct minivmm_state *st = (struct minivmm_state *)
		((uint8_t *)vmm->slot.hva + MINIVMM_STATE_OFFSET);

	if (guest == MINIVMM_GUEST_MEMCHECK)
		memcpy(vmm->slot.hva, minivmm_guest_start,
		       minivmm_guest_end - minivmm_guest_start);
	else if (guest == MINIVMM_GUEST_HOTSET)
		memcpy(vmm->slot.hva, minivmm_guest_hot_start,
		       minivmm_guest_hot_end - minivmm_guest_hot_start);
	else
		memcpy(vmm->slot.hva, minivmm_guest_mce_start,
		       minivmm_guest_mce_end - minivmm_guest_mce_start);
	st->half_exits = half_exits;
	st->mce_cr4 = guest == MINIVMM_GUEST_MCE;
}

/* The guests that write their RAM run in long mode (and have a host-thread
 * twin); the machine-check guests in 32-bit protected mode. */
static bool long_mode_guest(int guest)
{
	return guest == MINIVMM_GUEST_MEMCHECK || guest == MINIVMM_GUEST_HOTSET;
}

int minivmm_create(const struct minivmm_opts *opts, struct minivmm **out)
{
	struct minivmm *vmm;
	int rc;

	if (!opts || !out || opts->mem % MINIVMM_PAGE ||
	    opts->mem < (opts->guest == MINIVMM_GUEST_HOTSET ? 3 : 2) * MINIVMM_PAGE ||
	    opts->mem > (!long_mode_guest(opts->guest) ? MINIVMM_KVM_MCE_MEM_MAX :
			 MINIVMM_MEM_MAX) ||
	    (opts->vcpu != MINIVMM_VCPU_KVM && opts->vcpu != MINIVMM_VCPU_THREAD) ||
	    (opts->vcpu == MINIVMM_VCPU_THREAD && opts->dirty_ring) ||
	    opts->guest < MINIVMM_GUEST_MEMCHECK || opts->guest > MINIVMM_GUEST_HOTSET ||
	    (opts->vcpu == MINIVMM_VCPU_THREAD && !long_mode_guest(opts->guest)))
		return -EINVAL;
	vmm = calloc(1, sizeof(*vmm));
	if (!vmm)
		return -ENOMEM;
	vmm->kind = opts->vcpu;
	vmm->guest = opts->guest;
	vmm->kvm_fd = vmm->vm_fd = vmm->vcpu_fd = vmm->slot.fd = vmm->old_fd = -1;
	vmm->npages = opts->mem / MINIVMM_PAGE;
	rc = sync_init(vmm);
	if (rc < 0) {
		free(vmm);
		return rc;
	}
	/* The host-thread vCPU has the same RAM, without a VM. */
	if (vmm->kind == MINIVMM_VCPU_THREAD) {
		rc = minivmm_mem_alloc(vmm, opts->mem, opts->backing);
		if (!rc)
			guest_load(vmm, opts->guest, false);
	} else {
		rc = minivmm_kick_init();
		if (!rc)
			rc = minivmm_sigbus_init();
		if (!rc)
			rc = kvm_open(vmm);
		if (!rc)
			rc = minivmm_mem_alloc(vmm, opts->mem, opts->backing);
		if (!rc) {
			guest_load(vmm, opts->guest, opts->dirty_ring);
			rc = minivmm_slot_register(vmm);
		}
		if (!rc && long_mode_guest(opts->guest))
			rc = minivmm_mem_tables(vmm);
		if (!rc)
			rc = minivmm_vcpu_init(vmm, opts->dirty_ring);
	}
	if (rc < 0) {
		minivmm_destroy(vmm);
		return rc;
	}
	*out = vmm;
	return 0;
}

void minivmm_destroy(struct minivmm *vmm)
{
	if (!vmm)
		return;
	minivmm_vcpu_stop(vmm);
	minivmm_vcpu_free(vmm);
	if (vmm->vm_fd >= 0)
		close(vmm->vm_fd);
	if (vmm->kvm_fd >= 0)
		close(vmm->kvm_fd);
	/* After the VM: KVM stops using the memory with it. */
	minivmm_mem_free(vmm);
	pthread_cond_destroy(&vmm->pass);
	pthread_cond_destroy(&vmm->parked);
	pthread_cond_destroy(&vmm->wake);
	pthread_cond_destroy(&vmm->called);
	pthread_mutex_destroy(&vmm->lock);
	free(vmm);
}

int minivmm_vm_fd(const struct minivmm *vmm)
{
	return vmm->vm_fd;
}

void minivmm_get_slot(struct minivmm *vmm, struct minivmm_slot *out)
{
	pthread_mutex_lock(&vmm->lock);
	*out = vmm->slot;
	pthread_mutex_unlock(&vmm->lock);
}

struct kvm_dirty_gfn *minivmm_dirty_ring(const struct minivmm *vmm,
					 uint32_t *entries)
{
	if (entries)
		*entries = vmm->ring_entries;
	return vmm->ring;
}

void minivmm_set_ring_full(struct minivmm *vmm, minivmm_ring_full_fn fn,
			   void *opaque)
{
	vmm->ring_full = fn;
	vmm->ring_full_opaque = opaque;
}

void minivmm_set_memory_error(struct minivmm *vmm, minivmm_memory_error_fn fn,
			      void *opaque)
{
	vmm->memory_error = fn;
	vmm->memory_error_opaque = opaque;
}

/* When the longest stall (max) that ended at end began, from from; 0
 * for none, or for one that began before from (as the reset came). */
static uint64_t stall_at(uint64_t end, uint64_t from, uint64_t max)
{
	return max && end - max > from ? end - max - from : 0;
}

void minivmm_get_stats(struct minivmm *vmm, struct minivmm_stats *out)
{
	/* A reset the guest has not taken yet: nothing since it. */
	bool reset = atomic_load(&vmm->stall_reset);
	uint64_t max = atomic_load(&vmm->stall_max_ns), end = atomic_load(&vmm->stall_end_ns);
	uint64_t from = atomic_load(&vmm->stall_from_ns);

	*out = (struct minivmm_stats){
		.passes = atomic_load(&vmm->passes),
		.guest_errors = atomic_load(&vmm->guest_errors),
		.last_error_page = atomic_load(&vmm->last_error_page),
		.ring_full_exits = atomic_load(&vmm->ring_full_exits),
		.stall_max_ns = reset ? 0 : max,
		.stall_pause_max_ns = reset ? 0 : atomic_load(&vmm->stall_park_max_ns),
		.stall_at_ns = reset ? 0 : stall_at(end, from, max),
		.stall_source = vmm->kind == MINIVMM_VCPU_THREAD ? "writer" : "vcpu-parked",
	};
	pthread_mutex_lock(&vmm->lock);
	if (vmm->tsc_khz) {
		const struct minivmm_state *st = minivmm_state_of(vmm);
		bool taken = !__atomic_load_n(&st->stall_reset, __ATOMIC_ACQUIRE);

		max = __atomic_load_n(&st->stall_max, __ATOMIC_RELAXED);
		end = __atomic_load_n(&st->stall_end, __ATOMIC_RELAXED);
		from = __atomic_load_n(&st->stall_from, __ATOMIC_RELAXED);
		out->stall_max_ns = taken ? max * 1000000 / vmm->tsc_khz : 0;
		out->stall_at_ns = taken ? stall_at(end, from, max) * 1000000 / vmm->tsc_khz : 0;
		out->stall_source = "guest";
	}
	out->fatal = vmm->fatal;
	memcpy(out->fatal_msg, vmm->fatal_msg, sizeof(out->fatal_msg));
	out->fatal_exit = vmm->fatal_exit;
	out->mces = atomic_load(&vmm->mces);
	out->last_mce = vmm->last_mce;
	pthread_mutex_unlock(&vmm->lock);
}

uint32_t minivmm_hot_data0(uint64_t npages)
{
	/* guest-hot.S's layout: page 0, its table, then the data. */
	return MINIVMM_HOT_TABLE + (uint32_t)((npages * 4 + MINIVMM_PAGE - 1) / MINIVMM_PAGE);
}

const void *minivmm_guest_hot_code(size_t *len)
{
	*len = (size_t)(minivmm_guest_hot_end - minivmm_guest_hot_start);
	return minivmm_guest_hot_start;
}

void minivmm_data_pages(const struct minivmm *vmm, uint32_t *data0, uint32_t *ndata)
{
	uint32_t first = vmm->guest != MINIVMM_GUEST_HOTSET ? 1 : minivmm_hot_data0(vmm->npages);

	if (data0)
		*data0 = first;
	if (ndata)
		*ndata = vmm->npages - first;
}

int minivmm_set_window(struct minivmm *vmm, uint32_t first, uint32_t pages)
{
	struct minivmm_state *st;

	if (vmm->guest != MINIVMM_GUEST_HOTSET)
		return -EINVAL;
	pthread_mutex_lock(&vmm->lock);
	st = (struct minivmm_state *)((uint8_t *)vmm->slot.hva + MINIVMM_STATE_OFFSET);
	/* One store each; the guest reads both at its next pass. */
	__atomic_store_n(&st->hot_first, first, __ATOMIC_RELAXED);
	__atomic_store_n(&st->hot_pages, pages, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&vmm->lock);
	return 0;
}
