/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Live migration of a running KVM guest's RAM (examples/minivmm): guests
 * that rewrite all of their memory without pause are migrated while they
 * run; once the guest wrote on after a migration, the host checks every
 * page against where the guest is, and the guest checks each page again as
 * it passes.  Zero lost or torn writes, and none seen by the guest.  Exits
 * 77 only without /dev/kvm.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../unit/cunit-main.h"
#include "examples/minivmm/embed.h"

#define MiB (1ULL << 20)

static struct memmig_ctx *ctx;

struct guest {
	struct minivmm *vmm;
	struct memmig_vm *vm;
};

static int guest_up(struct guest *g, uint64_t mem, int backing, uint32_t ring)
{
	struct minivmm_opts o = { .mem = mem, .backing = backing, .dirty_ring = ring };
	int rc;

	memset(g, 0, sizeof(*g));
	rc = minivmm_create(&o, &g->vmm);
	if (!rc)
		rc = minivmm_embed(ctx, g->vmm, &g->vm);
	if (!rc)
		rc = minivmm_start(g->vmm);
	if (!rc)
		rc = minivmm_wait_progress(g->vmm, 10000);
	if (rc)
		CUNIT_FAILF("guest of %llu MiB: %s", (unsigned long long)(mem / MiB),
			    strerror(-rc));
	return rc;
}

static void guest_down(struct guest *g)
{
	memmig_vm_unref(g->vm);
	if (g->vmm)
		minivmm_destroy(g->vmm);
}

/* KVM answers ENOENT for a slot that does not log: logging was restored. */
static void check_logging_off(struct guest *g)
{
	uint64_t bits[64];
	struct kvm_dirty_log log = { .slot = 0, .dirty_bitmap = bits };

	if (ioctl(minivmm_vm_fd(g->vmm), KVM_GET_DIRTY_LOG, &log) == 0 || errno != ENOENT)
		CUNIT_FAILF("dirty logging still on after the migration (errno %d)", errno);
}

static void check_guest_whole(struct guest *g, const char *what)
{
	struct minivmm_check c = { 0 };
	struct minivmm_stats st;
	int rc;

	rc = minivmm_wait_progress(g->vmm, 10000);
	if (!rc)
		rc = minivmm_verify(g->vmm, &c);
	minivmm_get_stats(g->vmm, &st);
	if (rc || c.lost || c.torn || c.guest_errors || st.guest_errors || st.fatal)
		CUNIT_FAILF("%s: guest check rc %d lost %llu torn %llu guest errors %u/%llu "
			    "fatal %d", what, rc, (unsigned long long)c.lost,
			    (unsigned long long)c.torn, c.guest_errors,
			    (unsigned long long)st.guest_errors, st.fatal);
}

/* n live migrations, each checked; returns the worst pause in ms. */
static double migrate_n(struct guest *g, struct memmig_live_opts *o, int n,
			const char *what)
{
	double worst = 0;

	for (int i = 0; i < n; i++) {
		struct minivmm_migration m;
		const struct memmig_live_report *r = &m.rep;
		int rc = minivmm_migrate(g->vm, g->vmm, o, &m);

		if (rc) {
			CUNIT_FAILF("%s #%d: %s", what, i, strerror(-rc));
			return worst;
		}
		printf("  %s #%d: %llu MiB %.1f ms, prepare %.1f ms, %u rounds, pause "
		       "%.3f ms (%llu KiB), %s, pass %u page %u, lost %llu torn %llu\n",
		       what, i, (unsigned long long)(r->bytes / MiB), r->total_s * 1e3,
		       r->prepare_s * 1e3, r->rounds, r->pause_s * 1e3,
		       (unsigned long long)(r->pause_bytes >> 10),
		       memmig_dirty_method_name(r->dirty_method),
		       m.check.pass, m.check.pos,
		       (unsigned long long)m.check.lost, (unsigned long long)m.check.torn);
		if (!minivmm_migration_ok(&m))
			CUNIT_FAILF("%s #%d: verify %d, lost %llu, torn %llu, guest errors "
				    "%llu/%u", what, i, m.verify_rc,
				    (unsigned long long)m.check.lost,
				    (unsigned long long)m.check.torn,
				    (unsigned long long)m.guest_errors, m.check.guest_errors);
		CU_ASSERT(r->rounds >= 1);
		CU_ASSERT(r->bytes_copied >= r->bytes);
		CU_ASSERT(r->pause_s > 0 && r->pause_s < r->total_s);
		if (r->pause_s * 1e3 > worst)
			worst = r->pause_s * 1e3;
	}
	return worst;
}

static struct memmig_live_opts to_node0(int method)
{
	return (struct memmig_live_opts){
		.sz = sizeof(struct memmig_live_opts), .target_node = 0,
		.dirty_method = method,
	};
}

static void run_log(uint64_t mem, int method, const char *what)
{
	struct memmig_live_opts o = to_node0(method);
	struct guest g;
	double worst;

	if (guest_up(&g, mem, MINIVMM_BACKING_ANON, 0) == 0) {
		worst = migrate_n(&g, &o, 5, what);
		printf("  %s: worst pause %.3f ms\n", what, worst);
		check_logging_off(&g);
	}
	guest_down(&g);
}

static void test_256m_log_clear(void)
{
	run_log(256 * MiB, MEMMIG_DIRTY_AUTO, "256M log-clear");
}

static void test_1g_log_clear(void)
{
	run_log(1024 * MiB, MEMMIG_DIRTY_LOG_CLEAR, "1G log-clear");
}

static void test_256m_log(void)
{
	run_log(256 * MiB, MEMMIG_DIRTY_LOG, "256M log");
}

/* A small ring (512 entries; the emulated guest logs ~66 per page) fills
 * in every migration: KVM_EXIT_DIRTY_RING_FULL. */
static void test_ring(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct minivmm_stats st;
	struct guest g;

	if (guest_up(&g, 256 * MiB, MINIVMM_BACKING_ANON, 512) == 0) {
		migrate_n(&g, &o, 5, "256M ring");
		minivmm_get_stats(g.vmm, &st);
		CU_ASSERT(st.ring_full_exits > 0);
		printf("  ring-full exits: %llu\n", (unsigned long long)st.ring_full_exits);
		o.dirty_method = MEMMIG_DIRTY_LOG;	/* KVM refuses the log */
		CU_ASSERT_EQUAL(memmig_vm_migrate(g.vm, &o, NULL), -EOPNOTSUPP);
	}
	guest_down(&g);
}

static void test_1g_ring(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_RING);
	struct guest g;

	if (guest_up(&g, 1024 * MiB, MINIVMM_BACKING_ANON, 65536) == 0)
		migrate_n(&g, &o, 5, "1G ring");
	guest_down(&g);
}

/* fd-backed RAM moves by re-adding the memslot at the copy's address. */
static void test_memfd(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_vm_slot before = { .sz = sizeof(before) }, after = before;
	struct guest g;

	if (guest_up(&g, 128 * MiB, MINIVMM_BACKING_MEMFD, 0) == 0) {
		CU_ASSERT_EQUAL(memmig_vm_get_slot(g.vm, 0, &before), 0);
		migrate_n(&g, &o, 3, "128M memfd");
		CU_ASSERT_EQUAL(memmig_vm_get_slot(g.vm, 0, &after), 0);
		CU_ASSERT(after.hva != before.hva);
		CU_ASSERT(after.fd >= 0);
		o.length = 64 * MiB;	/* a file backs its slot whole */
		CU_ASSERT_EQUAL(memmig_vm_migrate(g.vm, &o, NULL), -EOPNOTSUPP);
		check_logging_off(&g);
	}
	guest_down(&g);
}

/* Anonymous RAM to a file tier, then back to a node from the file. */
static void test_file_tier(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_vm_slot s = { .sz = sizeof(s) };
	char dir[] = "/tmp/memmig-tier.XXXXXX";
	struct guest g;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	if (guest_up(&g, 128 * MiB, MINIVMM_BACKING_ANON, 0) == 0) {
		o.target_node = -1;
		o.target_path = dir;
		migrate_n(&g, &o, 2, "128M to file tier");
		CU_ASSERT_EQUAL(memmig_vm_get_slot(g.vm, 0, &s), 0);
		CU_ASSERT(s.fd >= 0);
		o = to_node0(MEMMIG_DIRTY_AUTO);
		migrate_n(&g, &o, 1, "128M file tier to node 0");
	}
	guest_down(&g);
	rmdir(dir);
}

/* Part of a slot: the rest stays where it is. */
static void test_range(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct guest g;

	o.offset = 64 * MiB + 4096 * 3;
	o.length = 32 * MiB;
	if (guest_up(&g, 128 * MiB, MINIVMM_BACKING_ANON, 0) == 0)
		migrate_n(&g, &o, 3, "32M range of 128M");
	guest_down(&g);
}

struct cancel_run {
	struct memmig_live *live;
	int rc;
};

static void *run_thread(void *arg)
{
	struct cancel_run *c = arg;

	c->rc = memmig_live_run(c->live);
	return NULL;
}

/* Cancel during pre-copy: the guest stays on its memory, untouched. */
static void test_cancel(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_vm_slot before = { .sz = sizeof(before) }, after = before;
	struct memmig_live_report r = { .sz = sizeof(r) };
	struct cancel_run c = { 0 };
	struct guest g;
	pthread_t t;

	/* The first round copies 1 GiB (tens of ms at the very least): the
	 * cancel lands in it.  The destination is ready before. */
	if (guest_up(&g, 1024 * MiB, MINIVMM_BACKING_ANON, 0) == 0) {
		memmig_vm_get_slot(g.vm, 0, &before);
		CU_ASSERT_EQUAL_FATAL(memmig_live_new(g.vm, &o, &c.live), 0);
		CU_ASSERT_EQUAL_FATAL(memmig_live_prepare(c.live), 0);
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, run_thread, &c), 0);
		usleep(5 * 1000);
		CU_ASSERT_EQUAL(memmig_live_cancel(c.live), 0);
		pthread_join(t, NULL);
		CU_ASSERT_EQUAL(c.rc, -ECANCELED);
		memmig_live_get_report(c.live, &r);
		CU_ASSERT_EQUAL(r.result, -ECANCELED);
		CU_ASSERT_EQUAL(r.pause_s, 0);
		printf("  cancelled in round %u, after %.1f ms\n", r.rounds, r.total_s * 1e3);
		memmig_live_unref(c.live);
		memmig_vm_get_slot(g.vm, 0, &after);
		CU_ASSERT(after.hva == before.hva && after.fd == before.fd);
		check_logging_off(&g);
		check_guest_whole(&g, "after cancel");
		o = to_node0(MEMMIG_DIRTY_AUTO);
		migrate_n(&g, &o, 1, "after cancel");
	}
	guest_down(&g);
}

/* The destination cannot be had: nothing changes. */
static void test_dest_alloc_fails(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_vm_slot before = { .sz = sizeof(before) }, after = before;
	struct memmig_live_report r = { .sz = sizeof(r) };
	struct guest g;

	if (guest_up(&g, 128 * MiB, MINIVMM_BACKING_ANON, 0) == 0) {
		memmig_vm_get_slot(g.vm, 0, &before);
		memmig_ctx_set_fault(ctx, MEMMIG_FAULT_DEST_ALLOC, 1, ENOMEM, 0);
		CU_ASSERT_EQUAL(memmig_vm_migrate(g.vm, &o, &r), -ENOMEM);
		memmig_ctx_set_fault(ctx, MEMMIG_FAULT_DEST_ALLOC, 0, ENOMEM, 0);
		CU_ASSERT_EQUAL(r.result, -ENOMEM);
		CU_ASSERT_EQUAL(r.bytes_copied, 0);
		memmig_vm_get_slot(g.vm, 0, &after);
		CU_ASSERT(after.hva == before.hva);
		check_logging_off(&g);
		check_guest_whole(&g, "after a failed allocation");
		/* A tier whose directory is not there: refused before anything is
		 * touched. */
		o.target_path = "/nonexistent-dir/tier";
		o.target_node = -1;
		CU_ASSERT_EQUAL(memmig_vm_migrate(g.vm, &o, NULL), -ENOENT);
		check_guest_whole(&g, "after a missing tier");
	}
	guest_down(&g);
}

static void test_bad_input(void)
{
	struct memmig_vm_ops ops = { .sz = sizeof(ops), .pause = minivmm_pause,
				     .resume = minivmm_resume };
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_vm_slot s = { .sz = sizeof(s) };
	struct memmig_live *l;
	struct memmig_vm *vm;
	struct guest g;
	int null_fd = open("/dev/null", 0);

	CU_ASSERT_EQUAL(memmig_vm_new(ctx, null_fd, &ops, NULL, &vm), -ENOTTY);
	close(null_fd);
	if (guest_up(&g, 64 * MiB, MINIVMM_BACKING_ANON, 0) != 0) {
		guest_down(&g);
		return;
	}
	o.slot = 7;
	CU_ASSERT_EQUAL(memmig_live_new(g.vm, &o, &l), -ENOENT);
	o = to_node0(MEMMIG_DIRTY_AUTO);
	o.offset = 100;
	CU_ASSERT_EQUAL(memmig_live_new(g.vm, &o, &l), -EINVAL);
	o.offset = 32 * MiB;
	o.length = 64 * MiB;
	CU_ASSERT_EQUAL(memmig_live_new(g.vm, &o, &l), -EINVAL);
	o = to_node0(MEMMIG_DIRTY_AUTO);
	o.target_path = "/tmp";
	CU_ASSERT_EQUAL(memmig_live_new(g.vm, &o, &l), -EINVAL);
	o = to_node0(MEMMIG_DIRTY_AUTO);
	o.target_node = 4000;
	CU_ASSERT_EQUAL(memmig_live_new(g.vm, &o, &l), -ENOENT);
	o = to_node0(MEMMIG_DIRTY_RING);
	CU_ASSERT_EQUAL(memmig_live_new(g.vm, &o, &l), -ENXIO);
	o = to_node0(MEMMIG_DIRTY_AUTO);
	o.flags = 1;
	CU_ASSERT_EQUAL(memmig_live_new(g.vm, &o, &l), -EINVAL);
	o = to_node0(MEMMIG_DIRTY_AUTO);
	o.offset = 32 * MiB;
	o.target_path = "/tmp";	/* a file tier takes a slot whole */
	o.target_node = -1;
	CU_ASSERT_EQUAL(memmig_live_new(g.vm, &o, &l), -EOPNOTSUPP);
	/* Slots: taken ids, overlaps, rings. */
	CU_ASSERT_EQUAL(memmig_vm_get_slot(g.vm, 0, &s), 0);
	CU_ASSERT_EQUAL(memmig_vm_add_slot(g.vm, &s), -EEXIST);
	s.slot = 1;
	CU_ASSERT_EQUAL(memmig_vm_add_slot(g.vm, &s), -EINVAL);
	s.size = 0;
	CU_ASSERT_EQUAL(memmig_vm_add_slot(g.vm, &s), -EINVAL);
	CU_ASSERT_EQUAL(memmig_vm_remove_slot(g.vm, 9), -ENOENT);
	CU_ASSERT_EQUAL(memmig_vm_add_dirty_ring(g.vm, 0, &s, 3), -EINVAL);
	CU_ASSERT_EQUAL(memmig_vm_dirty_ring_full(g.vm, 0), -ENXIO);
	/* One run per migration. */
	o = to_node0(MEMMIG_DIRTY_AUTO);
	CU_ASSERT_EQUAL_FATAL(memmig_live_new(g.vm, &o, &l), 0);
	CU_ASSERT_EQUAL(memmig_live_run(l), 0);
	CU_ASSERT_EQUAL(memmig_live_run(l), -EALREADY);
	CU_ASSERT_EQUAL(memmig_live_prepare(l), -EALREADY);
	memmig_live_unref(l);
	check_guest_whole(&g, "after bad input");
	guest_down(&g);
}

/*
 * The VMM's own writes (device emulation) bypass KVM's dirty log: with
 * memmig_vm_mark_dirty() they are copied again.  A second memslot the
 * guest never touches is written by a host thread during its migration;
 * after it every page must hold the thread's last value.
 */
struct host_writer {
	struct memmig_vm *vm;
	struct minivmm *vmm;
	uint64_t *mem;			/* the slot's memory, as first mapped */
	uint64_t last[512];		/* per page: the last value written */
	uint64_t gpa;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool pause_req, parked, stop;
};

#define HW_PAGES 512

static void *host_writer_run(void *arg)
{
	struct host_writer *w = arg;
	uint64_t seq = 0;

	for (size_t i = 0;; i = (i + 1) % HW_PAGES) {
		pthread_mutex_lock(&w->lock);
		if (w->pause_req) {
			w->parked = true;
			pthread_cond_broadcast(&w->cond);
			while (w->pause_req && !w->stop)
				pthread_cond_wait(&w->cond, &w->lock);
			w->parked = false;
		}
		pthread_mutex_unlock(&w->lock);
		if (__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
			return NULL;
		/* The slot's address stays (mremap swap): write, then say so. */
		w->mem[i * 512] = w->mem[i * 512 + 511] = ++seq;
		w->last[i] = seq;
		memmig_vm_mark_dirty(w->vm, w->gpa + i * 4096, 4096);
	}
}

static int hw_pause(void *opaque)
{
	struct host_writer *w = opaque;

	pthread_mutex_lock(&w->lock);
	w->pause_req = true;
	while (!w->parked)
		pthread_cond_wait(&w->cond, &w->lock);
	/* Device emulation finishing as the pause comes: always after the
	 * pre-copy, so these writes survive only through mark_dirty. */
	for (size_t i = 0; i < HW_PAGES; i += 64) {
		w->mem[i * 512] = w->mem[i * 512 + 511] = w->last[i] = ~(uint64_t)i;
		memmig_vm_mark_dirty(w->vm, w->gpa + i * 4096, 4096);
	}
	pthread_mutex_unlock(&w->lock);
	return minivmm_pause(w->vmm);
}

/* The writer stays parked: its next writes would hide a lost one. */
static int hw_resume(void *opaque)
{
	struct host_writer *w = opaque;

	return minivmm_resume(w->vmm);
}

static void test_mark_dirty(void)
{
	struct memmig_vm_ops ops = { .sz = sizeof(ops), .pause = hw_pause,
				     .resume = hw_resume };
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_live_report r = { .sz = sizeof(r) };
	static struct host_writer w;
	struct memmig_vm_slot s = { .sz = sizeof(s) };
	struct kvm_userspace_memory_region kr;
	uint64_t bad = 0;
	struct guest g;
	pthread_t t;
	void *p;

	if (guest_up(&g, 64 * MiB, MINIVMM_BACKING_ANON, 0) != 0) {
		guest_down(&g);
		return;
	}
	memset(&w, 0, sizeof(w));
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_POPULATE, -1, 0);
	CU_ASSERT_FATAL(p != MAP_FAILED);
	w.mem = p;
	w.vmm = g.vmm;
	w.gpa = 1ULL << 30;	/* past the guest's RAM */
	kr = (struct kvm_userspace_memory_region){
		.slot = 1, .guest_phys_addr = w.gpa, .memory_size = 2 * MiB,
		.userspace_addr = (uintptr_t)p,
	};
	CU_ASSERT_FATAL(ioctl(minivmm_vm_fd(g.vmm), KVM_SET_USER_MEMORY_REGION, &kr) == 0);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_new(ctx, minivmm_vm_fd(g.vmm), &ops, &w, &w.vm), 0);
	s = (struct memmig_vm_slot){ .sz = sizeof(s), .slot = 1, .gpa = w.gpa,
				     .hva = p, .size = 2 * MiB, .fd = -1 };
	CU_ASSERT_EQUAL_FATAL(memmig_vm_add_slot(w.vm, &s), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, host_writer_run, &w), 0);
	usleep(20 * 1000);
	o.slot = 1;
	/* Rounds go on for a while: the writer dirties pages all along. */
	o.pause_budget_ns = 1;
	o.max_rounds = 50;
	CU_ASSERT_EQUAL(memmig_vm_migrate(w.vm, &o, &r), 0);
	pthread_mutex_lock(&w.lock);
	CU_ASSERT(w.parked);
	for (size_t i = 0; i < HW_PAGES; i++)
		bad += w.mem[i * 512] != w.last[i] || w.mem[i * 512 + 511] != w.last[i];
	w.stop = true;
	pthread_cond_broadcast(&w.cond);
	pthread_mutex_unlock(&w.lock);
	pthread_join(t, NULL);
	printf("  host-written slot: %u rounds, %llu bytes copied, %llu in the pause "
	       "(%.3f ms), %llu pages wrong\n", r.rounds,
	       (unsigned long long)r.bytes_copied, (unsigned long long)r.pause_bytes,
	       r.pause_s * 1e3, (unsigned long long)bad);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(r.pause_bytes >= 8 * 4096);
	memmig_vm_unref(w.vm);
	kr.memory_size = 0;
	ioctl(minivmm_vm_fd(g.vmm), KVM_SET_USER_MEMORY_REGION, &kr);
	munmap(p, 2 * MiB);
	check_guest_whole(&g, "after the host-written slot moved");
	guest_down(&g);
}

static int suite_init(void)
{
	return memmig_ctx_new(&ctx) ? -1 : 0;
}

static int suite_clean(void)
{
	memmig_ctx_unref(ctx);
	return 0;
}

int main(void)
{
	static CU_TestInfo tests[] = {
		{ "bad input is refused", test_bad_input },
		{ "256 MiB guest, dirty log + clear, 5 migrations", test_256m_log_clear },
		{ "1 GiB guest, dirty log + clear, 5 migrations", test_1g_log_clear },
		{ "256 MiB guest, dirty log, 5 migrations", test_256m_log },
		{ "256 MiB guest, dirty ring, 5 migrations", test_ring },
		{ "1 GiB guest, dirty ring, 5 migrations", test_1g_ring },
		{ "memfd RAM: memslot re-added", test_memfd },
		{ "file tier and back", test_file_tier },
		{ "a range of a slot", test_range },
		{ "cancel during pre-copy", test_cancel },
		{ "destination allocation fails", test_dest_alloc_fails },
		{ "the VMM's own writes (mark_dirty)", test_mark_dirty },
		CU_TEST_INFO_NULL,
	};
	static CU_SuiteInfo suites[] = {
		{ "live", suite_init, suite_clean, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	if (access("/dev/kvm", R_OK | W_OK))
		return cunit_skip("no usable /dev/kvm on this machine");
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cunit_main(suites);
}
