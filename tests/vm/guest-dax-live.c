/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Part of guest-dax: a VMM's guest RAM on and off DAX while it is written.
 * The guest has no KVM, so the "VMM" is memmig_vm without a VM fd: a writer
 * thread stands for the vCPUs and rewrites every page without pause,
 * pause() parks it.  The guest's kernel (6.1) has no userfaultfd WP_ASYNC:
 * the migrations track writes with soft-dirty bits.
 *  - DRAM RAM -> a DAX target (a directory of the fsdax mount, or device
 *    DAX): the copy is mapped MAP_SYNC (or devdax) and swapped in;
 *  - RAM in a MAP_SYNC file -> node 2's DRAM (a new memfd).
 * After each: the writer's every last write is in the memory the slot now
 * has, and where that memory is (the DAX file's inode, or node 2).
 * Then the same with a real KVM guest (examples/minivmm) where the guest
 * kernel gives one (KVM nested in TCG): its RAM live to the DAX target and
 * back to node 2, checked by the guest's own counters and page by page.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memmig.h>

#include "minivmm/embed.h"
#include "guest-check.h"
#include "guest-dax-migrate.h"

#define L_LEN (32UL << 20)
#define L_PAGE 4096UL
#define L_PAGES (L_LEN / L_PAGE)
#define SLOT 1
#define GPA 0x40000000ULL

struct writer {
	uint64_t *ram;			/* the slot's memory, where it is now */
	uint64_t last[L_PAGES];		/* the pass each page was last written in */
	pthread_t tid;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, park, parked;
	uint64_t passes;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	for (uint64_t pass = 1;; pass++) {
		for (size_t p = 0; p < L_PAGES; p++) {
			pthread_mutex_lock(&w->lock);
			while (w->park && !w->stop) {
				w->parked = true;
				pthread_cond_broadcast(&w->cond);
				pthread_cond_wait(&w->cond, &w->lock);
			}
			w->parked = false;
			if (w->stop) {
				pthread_mutex_unlock(&w->lock);
				return NULL;
			}
			pthread_mutex_unlock(&w->lock);
			/* First and last word of the page: a torn page shows. */
			w->ram[p * L_PAGE / 8] = pass << 32 | p;
			w->ram[(p + 1) * L_PAGE / 8 - 1] = pass << 32 | p;
			w->last[p] = pass;
		}
		w->passes = pass;
	}
}

static int w_pause(void *opaque)
{
	struct writer *w = opaque;

	pthread_mutex_lock(&w->lock);
	w->park = true;
	while (!w->parked && !w->stop)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

static int w_resume(void *opaque)
{
	struct writer *w = opaque;

	pthread_mutex_lock(&w->lock);
	w->park = false;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

static void w_moved(void *opaque, uint32_t slot, void *old_hva, void *hva, int fd,
		    uint64_t off)
{
	/* Called paused: the writer goes on in the new memory. */
	((struct writer *)opaque)->ram = hva;
}

/* Pages whose two words are not what the writer wrote last. */
static size_t wrong_pages(const struct writer *w)
{
	size_t bad = 0;

	for (size_t p = 0; p < L_PAGES; p++) {
		uint64_t want = w->last[p] << 32 | p;

		bad += w->ram[p * L_PAGE / 8] != want ||
		       w->ram[(p + 1) * L_PAGE / 8 - 1] != want;
	}
	return bad;
}

static size_t pages_on_node(void *p, int node)
{
	void *pages[L_PAGES];
	int status[L_PAGES];
	size_t n = 0;

	for (size_t i = 0; i < L_PAGES; i++)
		pages[i] = (uint8_t *)p + i * L_PAGE;
	if (syscall(SYS_move_pages, 0, L_PAGES, pages, NULL, status, 0))
		return 0;
	for (size_t i = 0; i < L_PAGES; i++)
		n += status[i] == node;
	return n;
}

/* The slot's memory is DAX (a file on a DAX mount, or device DAX). */
static bool on_dax(struct memmig_ctx *ctx, void *p, uint64_t len)
{
	struct memmig_region_desc d = { .sz = sizeof(d), .addr = (uintptr_t)p, .len = len };
	struct memmig_region *r;

	if (memmig_region_new(ctx, &d, &r))
		return false;
	memmig_region_get_desc(r, &d);
	memmig_region_unref(r);
	return d.backing == MEMMIG_BACKING_DAX;
}

/*
 * One live migration of a RAM slot (fd -1: anonymous) to target_path, or
 * to node when target_path is NULL, under the writer; checks afterwards.
 */
static void live_case(struct memmig_ctx *ctx, const char *what, uint64_t *ram, int fd,
		      const char *target_path, int node)
{
	static struct writer w;
	const struct memmig_vm_ops ops = {
		.sz = sizeof(ops), .pause = w_pause, .resume = w_resume, .slot_moved = w_moved,
	};
	const struct memmig_vm_slot s = {
		.sz = sizeof(s), .slot = SLOT, .gpa = GPA, .hva = ram, .size = L_LEN, .fd = fd,
	};
	struct memmig_live_opts o = {
		.sz = sizeof(o), .slot = SLOT, .target_node = target_path ? -1 : node,
		.target_path = target_path,
		.max_rounds = 3,	/* the writer dirties all of it, always */
	};
	struct memmig_live_report rep = { .sz = sizeof(rep) };
	struct memmig_vm *vm = NULL;
	size_t bad;
	int rc;

	printf("== live, under a writer: %s\n", what);
	memset(&w, 0, sizeof(w));
	w.ram = ram;
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	rc = memmig_vm_new(ctx, -1, &ops, &w, &vm);
	if (!rc)
		rc = memmig_vm_add_slot(vm, &s);
	CHECK(rc == 0, "vm: %s", strerror(-rc));
	if (rc || pthread_create(&w.tid, NULL, writer_main, &w)) {
		memmig_vm_unref(vm);
		return;
	}
	while (!__atomic_load_n(&w.passes, __ATOMIC_RELAXED))
		usleep(1000);
	rc = memmig_vm_migrate(vm, &o, &rep);
	printf("memmig_vm_migrate: %d; tracking %s, %u rounds, pause %.3f ms, %.1f ms, "
	       "writer passes %llu\n", rc, memmig_dirty_method_name(rep.dirty_method),
	       rep.rounds, rep.pause_s * 1e3, rep.total_s * 1e3,
	       (unsigned long long)w.passes);
	CHECK(rc == 0, "%s: %d (%s)", what, rc, strerror(-rc));
	usleep(20000);	/* the writer goes on in the new memory */
	w_pause(&w);
	bad = wrong_pages(&w);
	printf("after: %zu of %lu pages not what the writer wrote last\n", bad, L_PAGES);
	CHECK(bad == 0, "%s: %zu pages lost or torn", what, bad);
	if (!target_path) {
		printf("pages on node %d: %zu of %lu\n", node, pages_on_node(w.ram, node),
		       L_PAGES);
		CHECK(pages_on_node(w.ram, node) == L_PAGES, "not all on node %d", node);
	} else {
		bool dax = on_dax(ctx, w.ram, L_LEN);

		printf("the slot's memory now: %s\n", dax ? "dax" : "not dax");
		CHECK(dax, "%s: not on DAX", what);
	}
	pthread_mutex_lock(&w.lock);
	w.stop = true;
	pthread_cond_broadcast(&w.cond);
	pthread_mutex_unlock(&w.lock);
	pthread_join(w.tid, NULL);
	memmig_vm_unref(vm);
	munmap(w.ram, L_LEN);
}

/* One live migration of the KVM guest's RAM; checks the guest's view. */
static bool kvm_move(struct memmig_vm *vm, struct minivmm *vmm,
		     struct memmig_live_opts *o, const char *what)
{
	struct minivmm_migration m;
	int rc = minivmm_migrate(vm, vmm, o, &m);

	printf("KVM guest %s: %d; %s, %u rounds, pause %.3f ms, %.1f ms, lost %llu "
	       "torn %llu guest errors %llu\n", what, rc,
	       memmig_dirty_method_name(m.rep.dirty_method), m.rep.rounds,
	       m.rep.pause_s * 1e3, m.rep.total_s * 1e3, (unsigned long long)m.check.lost,
	       (unsigned long long)m.check.torn,
	       (unsigned long long)(m.guest_errors + m.check.guest_errors));
	CHECK(rc == 0, "KVM guest %s: %s", what, strerror(-rc));
	CHECK(!rc && minivmm_migration_ok(&m), "KVM guest %s: lost or torn writes", what);
	return rc == 0;
}

/*
 * A KVM guest that rewrites all of its RAM: live to target (DAX), where
 * the slot's memory must be DAX; then to node 2's DRAM, where every page
 * must be.
 */
static void kvm_case(struct memmig_ctx *ctx, const char *target)
{
	struct minivmm_opts vo = { .mem = L_LEN, .backing = MINIVMM_BACKING_ANON };
	struct memmig_live_opts o = {
		.sz = sizeof(o), .target_node = -1, .target_path = target,
		.pause_budget_ns = 250000000,	/* TCG copies at ~0.25 GB/s */
	};
	struct memmig_vm *vm;
	struct minivmm *vmm;
	struct minivmm_slot s;
	int rc;

	printf("== live, a KVM guest: DRAM -> %s -> node 2\n", target);
	rc = minivmm_up(ctx, &vo, &vmm, &vm);
	if (rc == -ENODEV) {
		printf("no /dev/kvm in this guest: the KVM case is not run\n");
		return;
	}
	CHECK(rc == 0, "KVM guest: %s", strerror(-rc));
	if (!rc && kvm_move(vm, vmm, &o, "to DAX")) {
		minivmm_get_slot(vmm, &s);
		CHECK(on_dax(ctx, s.hva, s.size), "KVM guest RAM is not on DAX after the move");
		o.target_path = NULL;
		o.target_node = 2;
		if (kvm_move(vm, vmm, &o, "DAX -> node 2")) {
			minivmm_get_slot(vmm, &s);
			printf("pages on node 2: %zu of %lu\n", pages_on_node(s.hva, 2), L_PAGES);
			CHECK(pages_on_node(s.hva, 2) == L_PAGES, "not all on node 2");
		}
	}
	memmig_vm_unref(vm);
	if (vmm)
		minivmm_destroy(vmm);
}

int dax_live_cases(struct memmig_ctx *ctx, const char *target, const char *dir)
{
	uint64_t *ram;
	char path[256];
	int fd;

	fails = 0;
	/* Device DAX takes the range at its 2 MB alignment. */
	ram = guest_map_2m(L_LEN);
	CHECK(ram != MAP_FAILED, "mmap");
	if (ram != MAP_FAILED)
		live_case(ctx, "DRAM -> DAX", ram, -1, target, -1);
	kvm_case(ctx, target);
	if (!dir)
		return fails;
	/* Guest RAM that lives in a MAP_SYNC file, to node 2. */
	snprintf(path, sizeof(path), "%s/guest-ram.data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && !posix_fallocate(fd, 0, L_LEN), "%s: %s", path, strerror(errno));
	ram = fd < 0 ? MAP_FAILED : mmap(NULL, L_LEN, PROT_READ | PROT_WRITE,
					 MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
	CHECK(ram != MAP_FAILED, "MAP_SYNC: %s", strerror(errno));
	if (ram != MAP_FAILED)
		live_case(ctx, "DAX -> node 2", ram, fd, NULL, 2);
	if (fd >= 0)
		close(fd);
	unlink(path);
	return fails;
}
