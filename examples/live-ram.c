/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Embedding snippet: live migration of a guest's RAM from inside its VMM
 * (memmig_vm_*, memmig_vm_migrate).  A KVM VMM passes its VM fd and its
 * memslots; this one has no KVM (vm_fd -1): its "vCPU" is a thread of its
 * own writing the RAM, which memmig tracks with userfaultfd write-protect.
 * The two callbacks are what every VMM writes: stop the vCPUs, let them run.
 *   cc live-ram.c $(pkg-config --cflags --libs libmemmig) -lpthread
 *   ./live-ram [NODE]		(default: node 0)
 * Exit: 0 every write kept, 1 a failure, 77 no dirty tracking on this kernel.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <memmig.h>

#define RAM_LEN (64UL << 20)
#define PAGE 4096UL
#define NPAGES (RAM_LEN / PAGE)

struct vmm {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	atomic_bool pause_req;	/* read by the vCPU between pages */
	bool parked, stop;
	uint64_t *ram;		/* changes if memmig moves the slot */
	uint64_t writes[NPAGES];	/* what the vCPU last wrote to each page */
};

/* Parks the vCPU until resumed, as a vCPU leaves KVM_RUN; false: stop.
 * The lock orders its writes before the pause and the RAM's new address
 * after it. */
static bool vcpu_park(struct vmm *v, uint64_t **ram)
{
	bool stop;

	pthread_mutex_lock(&v->lock);
	v->parked = true;
	pthread_cond_broadcast(&v->cond);
	while (atomic_load(&v->pause_req))
		pthread_cond_wait(&v->cond, &v->lock);
	v->parked = false;
	stop = v->stop;
	*ram = v->ram;
	pthread_mutex_unlock(&v->lock);
	return !stop;
}

/* The vCPU: page i holds i and how often it was written. */
static void *vcpu(void *arg)
{
	struct vmm *v = arg;
	uint64_t *ram = v->ram;

	for (uint64_t i = 0;; i = (i + 1) % NPAGES) {
		uint64_t *page;

		if (atomic_load_explicit(&v->pause_req, memory_order_acquire) &&
		    !vcpu_park(v, &ram))
			return NULL;
		page = ram + i * (PAGE / sizeof(uint64_t));
		page[0] = i;
		page[1] = ++v->writes[i];
	}
}

static int vmm_pause(void *opaque)
{
	struct vmm *v = opaque;

	pthread_mutex_lock(&v->lock);
	atomic_store(&v->pause_req, true);
	while (!v->parked)
		pthread_cond_wait(&v->cond, &v->lock);
	pthread_mutex_unlock(&v->lock);
	return 0;
}

static int vmm_resume(void *opaque)
{
	struct vmm *v = opaque;

	pthread_mutex_lock(&v->lock);
	atomic_store(&v->pause_req, false);
	pthread_cond_broadcast(&v->cond);
	pthread_mutex_unlock(&v->lock);
	return 0;
}

/* Called paused: the RAM's new address (the same one after a swap). */
static void vmm_slot_moved(void *opaque, uint32_t slot, void *old_hva,
			   void *hva, int fd, uint64_t fd_offset)
{
	struct vmm *v = opaque;

	(void)slot, (void)old_hva, (void)fd, (void)fd_offset;
	v->ram = hva;
}

static int check_ram(const struct vmm *v)
{
	for (uint64_t i = 0; i < NPAGES; i++) {
		const uint64_t *page = v->ram + i * (PAGE / sizeof(uint64_t));

		if (v->writes[i] && (page[0] != i || page[1] != v->writes[i])) {
			fprintf(stderr, "page %llu: holds %llu/%llu, the vCPU wrote %llu/%llu\n",
				(unsigned long long)i, (unsigned long long)page[0],
				(unsigned long long)page[1], (unsigned long long)i,
				(unsigned long long)v->writes[i]);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct vmm v = {
		.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	};
	const struct memmig_vm_ops ops = {
		.sz = sizeof(ops), .pause = vmm_pause, .resume = vmm_resume,
		.slot_moved = vmm_slot_moved,
	};
	struct memmig_live_opts opts = {
		.sz = sizeof(opts),
		.slot = 0,
		.target_node = argc > 1 ? atoi(argv[1]) : 0,
		.dirty_method = MEMMIG_DIRTY_AUTO,
	};
	struct memmig_live_report rep = { .sz = sizeof(rep) };
	struct memmig_vm_slot slot = { .sz = sizeof(slot), .fd = -1, .size = RAM_LEN };
	struct memmig_ctx *ctx;
	struct memmig_vm *vm;
	pthread_t thread;
	int rc;

	rc = memmig_ctx_new(&ctx);
	if (rc < 0) {
		fprintf(stderr, "memmig_ctx_new: %s\n", strerror(-rc));
		return 1;
	}
	v.ram = mmap(NULL, RAM_LEN, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v.ram == MAP_FAILED)
		return 1;
	slot.hva = v.ram;
	rc = memmig_vm_new(ctx, -1, &ops, &v, &vm);
	if (!rc)
		rc = memmig_vm_add_slot(vm, &slot);
	if (rc < 0) {
		fprintf(stderr, "memmig_vm: %s\n", strerror(-rc));
		return 1;
	}
	if (pthread_create(&thread, NULL, vcpu, &v))
		return 1;
	rc = memmig_vm_migrate(vm, &opts, &rep);
	vmm_pause(&v);		/* the vCPU parks before it is checked */
	if (rc < 0)
		fprintf(stderr, "memmig_vm_migrate: %s\n", strerror(-rc));
	else
		printf("%llu MiB to node %d in %.1f ms with %s: %u rounds, "
		       "%u pauses, the longest %.3f ms\n",
		       (unsigned long long)(rep.bytes >> 20), opts.target_node,
		       rep.total_s * 1e3, memmig_dirty_method_name(rep.dirty_method),
		       rep.rounds, rep.pauses, rep.pause_s * 1e3);
	if (!rc) {
		rc = check_ram(&v);
		printf("every write the vCPU made: %s\n", rc ? "NOT KEPT" : "kept");
	}
	pthread_mutex_lock(&v.lock);
	v.stop = true;
	pthread_mutex_unlock(&v.lock);
	vmm_resume(&v);
	pthread_join(thread, NULL);
	memmig_vm_unref(vm);
	memmig_ctx_unref(ctx);
	/* No way to track this thread's writes on this kernel. */
	if (rc == -EOPNOTSUPP)
		return 77;
	return rc ? 1 : 0;
}
