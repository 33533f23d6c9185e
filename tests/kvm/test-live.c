/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Live migration of a running KVM guest's RAM (examples/minivmm): guests
 * that rewrite all of their memory without pause are migrated while they
 * run; once the guest wrote on after a migration, the host checks every
 * page against where the guest is, and the guest checks each page again as
 * it passes.  Zero lost or torn writes, and none seen by the guest.  Exits
 * 77 only without /dev/kvm.
 *
 * On a host with /dev/kvm it runs at the host's scale.  The multi-node
 * tier (tests/vm/run-vm.sh) runs it too, in a guest with three NUMA nodes
 * whose KVM is nested in QEMU's TCG (MEMMIG_TEST_TIER=1): guests 8 to 16
 * times smaller and a 200 ms pause budget there, as TCG copies at about
 * 0.25 GB/s; and there it moves guests across real nodes.
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
#include "../helpers/numa-maps.h"
#include "minivmm/embed.h"

#define MiB (1ULL << 20)

static struct memmig_ctx *ctx;

/* Guest sizes, migrations per case and the pause budget. */
struct scale {
	const char *where;
	uint64_t small, mid, big;
	int migrations;
	uint64_t budget_ns;	/* 0: the library's default (5 ms) */
	uint64_t ring_mem;	/* a guest that fills a ring of ring_entries */
	uint32_t ring_entries;	/* between two harvests (the first round) */
};

static struct scale sc = {
	.where = "host", .small = 256 * MiB, .mid = 128 * MiB, .big = 1024 * MiB,
	.migrations = 5, .ring_mem = 256 * MiB, .ring_entries = 512,
};

static const struct scale tier_scale = {
	.where = "multi-node tier (KVM nested in TCG)", .small = 32 * MiB,
	.mid = 32 * MiB, .big = 64 * MiB, .migrations = 2, .budget_ns = 200000000,
	/* KVM's least ring, and a first round long enough (~0.5 s) for the
	 * emulated guest, which writes slowly, to fill it. */
	.ring_mem = 128 * MiB, .ring_entries = 256,
};

struct guest {
	struct minivmm *vmm;
	struct memmig_vm *vm;
};

static int guest_up(struct guest *g, uint64_t mem, int backing, uint32_t ring)
{
	struct minivmm_opts o = { .mem = mem, .backing = backing, .dirty_ring = ring };
	int rc;

	rc = minivmm_up(ctx, &o, &g->vmm, &g->vm);
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
		printf("  %s #%d: %llu MiB %.1f ms, prepare %.1f ms, %u rounds (%s), pause "
		       "%.3f ms (%llu KiB; stop %.3f harvest %.3f copy %.3f swap %.3f), %s, "
		       "pass %u page %u, lost %llu torn %llu\n",
		       what, i, (unsigned long long)(r->bytes / MiB), r->total_s * 1e3,
		       r->prepare_s * 1e3, r->rounds, memmig_live_stop_name(r->stop_reason),
		       r->pause_s * 1e3, (unsigned long long)(r->pause_bytes >> 10),
		       r->pause_stop_s * 1e3, r->pause_harvest_s * 1e3, r->pause_copy_s * 1e3,
		       r->pause_swap_s * 1e3,
		       memmig_dirty_method_name(r->dirty_method),
		       m.check.pass, m.check.pos,
		       (unsigned long long)m.check.lost, (unsigned long long)m.check.torn);
		if (!minivmm_migration_ok(&m))
			CUNIT_FAILF("%s #%d: verify %d, lost %llu, torn %llu, guest errors "
				    "%llu/%u", what, i, m.verify_rc,
				    (unsigned long long)m.check.lost,
				    (unsigned long long)m.check.torn,
				    (unsigned long long)m.guest_errors, m.check.guest_errors);
		CU_ASSERT(r->rounds >= 1 || r->stop_reason == MEMMIG_LIVE_STOP_STREAMED);
		CU_ASSERT(r->bytes_copied >= r->bytes);
		CU_ASSERT(r->pause_s > 0 && r->pause_s < r->total_s);
		if (r->pause_s * 1e3 > worst)
			worst = r->pause_s * 1e3;
	}
	return worst;
}

static struct memmig_live_opts to_node(int node, int method)
{
	return (struct memmig_live_opts){
		.sz = sizeof(struct memmig_live_opts), .target_node = node,
		.dirty_method = method, .pause_budget_ns = sc.budget_ns,
	};
}

static struct memmig_live_opts to_node0(int method)
{
	return to_node(0, method);
}

static void run_log(uint64_t mem, int method, const char *what)
{
	struct memmig_live_opts o = to_node0(method);
	struct guest g;
	double worst;

	if (guest_up(&g, mem, MINIVMM_BACKING_ANON, 0) == 0) {
		worst = migrate_n(&g, &o, sc.migrations, what);
		printf("  %s: worst pause %.3f ms\n", what, worst);
		check_logging_off(&g);
	}
	guest_down(&g);
}

static void test_small_log_clear(void)
{
	run_log(sc.small, MEMMIG_DIRTY_AUTO, "small log-clear");
}

static void test_big_log_clear(void)
{
	run_log(sc.big, MEMMIG_DIRTY_LOG_CLEAR, "big log-clear");
}

static void test_small_log(void)
{
	run_log(sc.small, MEMMIG_DIRTY_LOG, "small log");
}

/* The node with the most free memory (node 0 on a one-node host). */
static int roomiest_node(void)
{
	struct memmig_node_info n = { .sz = sizeof(n) };
	struct memmig_topo *topo;
	uint64_t most = 0;
	int best = 0;

	if (memmig_topo_new(ctx, &topo))
		return 0;
	for (int i = 0; i < memmig_topo_node_count(topo); i++)
		if (!memmig_topo_get_node(topo, i, &n) && n.mem_free > most) {
			most = n.mem_free;
			best = n.id;
		}
	memmig_topo_unref(topo);
	return best;
}

/* A small ring fills in every migration: KVM_EXIT_DIRTY_RING_FULL. */
static void test_ring(void)
{
	struct memmig_live_opts o = to_node(roomiest_node(), MEMMIG_DIRTY_AUTO);
	struct minivmm_stats st;
	struct guest g;

	if (guest_up(&g, sc.ring_mem, MINIVMM_BACKING_ANON, sc.ring_entries) == 0) {
		migrate_n(&g, &o, sc.migrations, "ring that fills");
		minivmm_get_stats(g.vmm, &st);
		CU_ASSERT(st.ring_full_exits > 0);
		printf("  ring-full exits: %llu\n", (unsigned long long)st.ring_full_exits);
		o.dirty_method = MEMMIG_DIRTY_LOG;	/* KVM refuses the log */
		CU_ASSERT_EQUAL(memmig_vm_migrate(g.vm, &o, NULL), -EOPNOTSUPP);
	}
	guest_down(&g);
}

static void test_big_ring(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_RING);
	struct guest g;

	if (guest_up(&g, sc.big, MINIVMM_BACKING_ANON, 65536) == 0)
		migrate_n(&g, &o, sc.migrations, "big ring");
	guest_down(&g);
}

/* fd-backed RAM moves by re-adding the memslot at the copy's address. */
static void test_memfd(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_vm_slot before = { .sz = sizeof(before) }, after = before;
	struct guest g;

	if (guest_up(&g, sc.mid, MINIVMM_BACKING_MEMFD, 0) == 0) {
		CU_ASSERT_EQUAL(memmig_vm_get_slot(g.vm, 0, &before), 0);
		migrate_n(&g, &o, 1, "mid memfd");
		CU_ASSERT_EQUAL(memmig_vm_get_slot(g.vm, 0, &after), 0);
		CU_ASSERT(after.hva != before.hva);
		CU_ASSERT(after.fd >= 0);
		migrate_n(&g, &o, sc.migrations - 1, "mid memfd again");
		o.length = sc.mid / 2;	/* a file backs its slot whole */
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
	if (guest_up(&g, sc.mid, MINIVMM_BACKING_ANON, 0) == 0) {
		o.target_node = -1;
		o.target_path = dir;
		migrate_n(&g, &o, 2, "mid to file tier");
		CU_ASSERT_EQUAL(memmig_vm_get_slot(g.vm, 0, &s), 0);
		CU_ASSERT(s.fd >= 0);
		o = to_node0(MEMMIG_DIRTY_AUTO);
		migrate_n(&g, &o, 1, "mid file tier to node 0");
	}
	guest_down(&g);
	rmdir(dir);
}

/* Part of a slot: the rest stays where it is. */
static void test_range(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct guest g;

	o.offset = sc.mid / 2 + 4096 * 3;
	o.length = sc.mid / 4;
	if (guest_up(&g, sc.mid, MINIVMM_BACKING_ANON, 0) == 0)
		migrate_n(&g, &o, sc.migrations, "a quarter of mid");
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

	/* The first round copies the big guest (tens of ms at the very
	 * least): the cancel lands in it.  The destination is ready before. */
	if (guest_up(&g, sc.big, MINIVMM_BACKING_ANON, 0) == 0) {
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

/* The largest piece a streamed migration of len bytes may have: a 32nd,
 * down to a 2 MiB boundary of the host address, else one 2 MiB unit. */
static uint64_t stream_piece_max(uint64_t len)
{
	return len / 32 > 2 * MiB ? len / 32 : 2 * MiB;
}

/*
 * Streamed: no pre-copy round; the pieces are copied and switched in turn,
 * each at most a 32nd of the guest, and every page is where the guest
 * wrote it last.
 */
static void test_stream(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct guest g;

	o.flags = MEMMIG_LIVE_STREAM;
	if (guest_up(&g, sc.big, MINIVMM_BACKING_ANON, 0) == 0) {
		for (int i = 0; i < 2; i++) {
			struct minivmm_migration m;
			const struct memmig_live_report *r = &m.rep;
			int rc = minivmm_migrate(g.vm, g.vmm, &o, &m);

			printf("  streamed #%d: %d, %u pauses, pieces up to %llu MiB, the longest "
			       "pause %.3f ms, %llu MiB copied, %.1f ms\n", i, rc, r->pauses,
			       (unsigned long long)(r->piece_bytes / MiB), r->pause_s * 1e3,
			       (unsigned long long)(r->bytes_copied / MiB), r->total_s * 1e3);
			CU_ASSERT_EQUAL_FATAL(rc, 0);
			CU_ASSERT(minivmm_migration_ok(&m));
			CU_ASSERT_EQUAL(r->stop_reason, MEMMIG_LIVE_STOP_STREAMED);
			CU_ASSERT_EQUAL(r->rounds, 0);
			CU_ASSERT_EQUAL(r->converged, 1);
			CU_ASSERT_EQUAL(r->bytes_switched, sc.big);
			CU_ASSERT(r->bytes_copied >= sc.big);
			CU_ASSERT(r->piece_bytes > 0 && r->piece_bytes <= stream_piece_max(sc.big));
			CU_ASSERT(r->pauses >= sc.big / stream_piece_max(sc.big));
		}
		check_logging_off(&g);
	}
	guest_down(&g);
}

/* The VMM's pause and resume, counted: the cancel comes with a resume. */
struct cancel_vmm {
	struct minivmm *vmm;
	struct memmig_live *live;
	unsigned int resumes, cancel_at;
};

static int cv_pause(void *opaque)
{
	return minivmm_pause(((struct cancel_vmm *)opaque)->vmm);
}

static int cv_resume(void *opaque)
{
	struct cancel_vmm *c = opaque;
	int rc = minivmm_resume(c->vmm);

	if (++c->resumes == c->cancel_at)
		memmig_live_cancel(c->live);
	return rc;
}

/*
 * Cancelled after the third piece of a streamed migration: it stops
 * there, those pieces on the copy and the rest on the old memory, every
 * page as the guest wrote it, logging off; a migration after it finishes.
 */
static void test_stream_cancel(void)
{
	struct memmig_vm_ops ops = { .sz = sizeof(ops), .pause = cv_pause, .resume = cv_resume };
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_live_report r = { .sz = sizeof(r) };
	struct memmig_vm_slot s = { .sz = sizeof(s) };
	struct cancel_vmm c = { .cancel_at = 3 };
	struct memmig_vm *vm;
	struct guest g;

	if (guest_up(&g, sc.big, MINIVMM_BACKING_ANON, 0) != 0) {
		guest_down(&g);
		return;
	}
	c.vmm = g.vmm;
	/* A vm of its own, with the counting pause and resume. */
	CU_ASSERT_EQUAL_FATAL(memmig_vm_new(ctx, minivmm_vm_fd(g.vmm), &ops, &c, &vm), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_get_slot(g.vm, 0, &s), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_add_slot(vm, &s), 0);
	o.flags = MEMMIG_LIVE_STREAM;
	CU_ASSERT_EQUAL_FATAL(memmig_live_new(vm, &o, &c.live), 0);
	CU_ASSERT_EQUAL(memmig_live_run(c.live), -ECANCELED);
	memmig_live_get_report(c.live, &r);
	printf("  cancelled after %u pieces: %llu of %llu MiB switched\n", r.pauses,
	       (unsigned long long)(r.bytes_switched / MiB), (unsigned long long)(sc.big / MiB));
	CU_ASSERT_EQUAL(r.result, -ECANCELED);
	CU_ASSERT_EQUAL(r.pauses, 3);
	CU_ASSERT(r.bytes_switched > 0 && r.bytes_switched < sc.big);
	CU_ASSERT_EQUAL(r.bytes_switched % (2 * MiB), 0);
	memmig_live_unref(c.live);
	memmig_vm_unref(vm);
	check_logging_off(&g);
	check_guest_whole(&g, "after a streamed migration cancelled");
	o.flags = 0;
	migrate_n(&g, &o, 1, "after a cancelled stream");
	guest_down(&g);
}

/* The destination cannot be had: nothing changes. */
static void test_dest_alloc_fails(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_vm_slot before = { .sz = sizeof(before) }, after = before;
	struct memmig_live_report r = { .sz = sizeof(r) };
	struct guest g;

	if (guest_up(&g, sc.mid, MINIVMM_BACKING_ANON, 0) == 0) {
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
	o.flags = 1u << 9;
	CU_ASSERT_EQUAL(memmig_live_new(g.vm, &o, &l), -EINVAL);
	/* No pre-copy to refuse. */
	o.flags = MEMMIG_LIVE_STREAM | MEMMIG_LIVE_FAIL_OVER_BUDGET;
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

/* Nodes with memory in the order a guest tours them: the first with CPUs,
 * the CPU-less ones, the other CPU nodes, back to the first.  Not the
 * nodes of CXL memory (test_cxl): QEMU emulates each access there.
 * Returns how many targets (0 on one node). */
static int node_tour(int *targets, int max)
{
	struct memmig_node_info n = { .sz = sizeof(n) };
	struct memmig_topo *topo;
	int first = -1, k = 0, cnt;

	if (memmig_topo_new(ctx, &topo))
		return 0;
	cnt = memmig_topo_node_count(topo);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < cnt && k < max - 1; i++) {
			if (memmig_topo_get_node(topo, i, &n) || (n.flags & MEMMIG_NODE_F_CXL))
				continue;
			if (first < 0 && n.ncpus) {
				first = n.id;
				continue;
			}
			if (n.id != first && (pass == 0) == (n.ncpus == 0))
				targets[k++] = n.id;
		}
	memmig_topo_unref(topo);
	if (first < 0 || !k)
		return 0;
	targets[k++] = first;
	return k;
}

/* One live move of the guest's RAM to a node, then every page of the slot
 * on it in the VMM's /proc/self/numa_maps. */
static void move_and_check(struct guest *g, struct memmig_live_opts *o, int node,
			   const char *name)
{
	struct minivmm_slot s;
	uint64_t on;

	o->target_node = node;
	migrate_n(g, o, 1, name);
	minivmm_get_slot(g->vmm, &s);
	on = numa_maps_pages(s.hva, s.size, node);
	printf("  numa_maps: %llu of %llu pages on node %d\n", (unsigned long long)on,
	       (unsigned long long)(s.size / 4096), node);
	if (on != s.size / 4096)
		CUNIT_FAILF("%s: numa_maps has %llu of %llu pages on node %d", name,
			    (unsigned long long)on, (unsigned long long)(s.size / 4096), node);
}

/*
 * Across real nodes, with each way of tracking: the guest's RAM tours the
 * nodes (0 -> 2 -> 1 -> 0 in the tier), and after each move the VMM's
 * /proc/self/numa_maps has every page of the slot on the target.
 */
static void tour(int method, uint32_t ring, const char *what)
{
	struct memmig_live_opts o = to_node0(method);
	int targets[8], n = node_tour(targets, 8);
	char name[64];
	struct guest g;

	if (n == 0) {
		printf("(one node here: the multi-node tier runs this) ");
		return;
	}
	if (guest_up(&g, sc.small, MINIVMM_BACKING_ANON, ring) == 0) {
		for (int i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "%s to node %d", what, targets[i]);
			move_and_check(&g, &o, targets[i], name);
		}
		if (!ring)	/* with rings KVM has no log to ask */
			check_logging_off(&g);
	}
	guest_down(&g);
}

/*
 * DRAM -> a node of CXL memory -> DRAM, where the host has one (the tier
 * makes one from QEMU's CXL Type-3 device): a small guest, as QEMU 7.2
 * emulates each access to CXL memory and zeroes a destination there at
 * about 0.5 MB/s.  numa_maps checked after each move, the guest's own
 * counters throughout.
 */
static void test_cxl(void)
{
	struct memmig_node_info n = { .sz = sizeof(n) };
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_topo *topo;
	int cxl = -1, home = -1;
	struct guest g;

	if (memmig_topo_new(ctx, &topo))
		return;
	for (int i = 0; i < memmig_topo_node_count(topo); i++)
		if (!memmig_topo_get_node(topo, i, &n) && (n.flags & MEMMIG_NODE_F_CXL))
			cxl = n.id;
		else if (home < 0 && n.ncpus)
			home = n.id;
	memmig_topo_unref(topo);
	if (cxl < 0 || home < 0) {
		printf("(no node of CXL memory here: the multi-node tier makes one) ");
		return;
	}
	/* Copies to and from emulated CXL memory run at about 1 MB/s: within
	 * the tier's 200 ms budget pre-copy would use up its rounds (70 s
	 * back to DRAM), and 5 s still stalled now and then (30 s).  10 s:
	 * what this case checks is placement and bytes. */
	o.pause_budget_ns = 10000000000ULL;
	if (guest_up(&g, 4 * MiB, MINIVMM_BACKING_ANON, 0) == 0) {
		int targets[] = { cxl, home };

		for (int i = 0; i < 2; i++) {
			char name[64];

			snprintf(name, sizeof(name), "4 MiB to node %d%s", targets[i],
				 targets[i] == cxl ? " (CXL)" : "");
			move_and_check(&g, &o, targets[i], name);
		}
	}
	guest_down(&g);
}

static void test_tour_log(void)
{
	tour(MEMMIG_DIRTY_LOG, 0, "log");
}

static void test_tour_log_clear(void)
{
	tour(MEMMIG_DIRTY_LOG_CLEAR, 0, "log-clear");
}

static void test_tour_ring(void)
{
	tour(MEMMIG_DIRTY_RING, 4096, "ring");
}

/* Device emulation that rewrites all of guest RAM all the time (as a
 * device doing DMA would): every page is always dirty. */
struct dirtier {
	struct memmig_vm *vm;
	uint64_t len;
	bool stop;
};

static void *dirtier_run(void *arg)
{
	struct dirtier *d = arg;

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		memmig_vm_mark_dirty(d->vm, 0, d->len);
		usleep(500);	/* a round takes longer: it sees all dirty */
	}
	return NULL;
}

/*
 * A guest whose memory is all dirty, always (the VMM marks all of it
 * dirty), and a budget no machine meets: less than the copy of one 2 MiB
 * unit, the smallest piece, at 100 GB/s.  (At 1 ms, pre-copy converged on
 * a native Zen 3 host: the pieces cut an all-dirty guest into 2 MiB
 * pauses of 0.3 ms.)  Pre-copy ends within the round limit and says why,
 * with the rates.  MEMMIG_LIVE_FAIL_OVER_BUDGET refuses the pauses
 * (-ETIMEDOUT, never paused, the guest whole on its memory); without it
 * the pauses come, over budget, and nothing is lost.
 */
/*
 * Pre-copy stopped because more rounds could not help: the dirty set
 * stopped shrinking, or, where the pause's fixed parts alone (stop,
 * harvest, swap: the host's costs, 2-8 ms in the TCG tier) are over the
 * budget, "overhead".  Which of the two is the host's; the report must
 * say the one its own figures give.
 */
static bool stopped_hopeless(const struct memmig_live_report *r)
{
	double fixed = r->expected_stop_s + r->expected_harvest_s + r->expected_swap_s;

	if (r->stop_reason == MEMMIG_LIVE_STOP_OVERHEAD)
		return fixed > r->pause_budget_s;
	return r->stop_reason == MEMMIG_LIVE_STOP_STALLED;
}

static void test_over_budget(void)
{
	struct memmig_live_opts o = to_node0(MEMMIG_DIRTY_AUTO);
	struct memmig_live_report r = { .sz = sizeof(r) };
	struct dirtier d = { 0 };
	struct guest g;
	pthread_t t;
	int rc;

	o.flags = MEMMIG_LIVE_FAIL_OVER_BUDGET;
	o.pause_budget_ns = 10000;	/* 2 MiB at 100 GB/s take 21 us */
	if (guest_up(&g, sc.small, MINIVMM_BACKING_ANON, 0) != 0) {
		guest_down(&g);
		return;
	}
	d = (struct dirtier){ .vm = g.vm, .len = sc.small };
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, dirtier_run, &d), 0);
	rc = memmig_vm_migrate(g.vm, &o, &r);
	printf("  refused: %d, %u rounds in %.1f ms, stopped %s with %llu bytes dirty, "
	       "dirtied at %.3f GB/s, copied at %.3f GB/s, pause of %.1f ms expected for "
	       "a budget of %.3f ms\n", rc, r.rounds, r.total_s * 1e3,
	       memmig_live_stop_name(r.stop_reason), (unsigned long long)r.stop_dirty_bytes,
	       r.dirty_gbps, r.copy_gbps, r.pause_expected_s * 1e3, r.pause_budget_s * 1e3);
	CU_ASSERT_EQUAL(rc, -ETIMEDOUT);
	CU_ASSERT_EQUAL(r.result, -ETIMEDOUT);
	CU_ASSERT_EQUAL(r.converged, 0);
	CU_ASSERT(stopped_hopeless(&r));
	CU_ASSERT(r.rounds >= 2 && r.rounds <= 31);
	CU_ASSERT_EQUAL(r.stop_dirty_bytes, sc.small);
	CU_ASSERT(r.dirty_gbps > 0 && r.copy_gbps > 0);
	CU_ASSERT(r.pause_expected_s > r.pause_budget_s);
	CU_ASSERT_EQUAL(r.pause_s, 0);
	check_logging_off(&g);
	check_guest_whole(&g, "after a refused pause");
	o.flags = 0;
	rc = memmig_vm_migrate(g.vm, &o, &r);
	printf("  allowed: %d, %u rounds, stopped %s, %u pauses, the longest %.2f ms "
	       "(%llu KiB copied in all)\n", rc, r.rounds, memmig_live_stop_name(r.stop_reason),
	       r.pauses, r.pause_s * 1e3, (unsigned long long)(r.pause_bytes >> 10));
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(stopped_hopeless(&r));
	CU_ASSERT_EQUAL(r.bytes_switched, sc.small);
	CU_ASSERT(r.pause_bytes > 0 && r.pause_bytes <= sc.small);
	CU_ASSERT(r.pause_s > r.pause_budget_s);
	__atomic_store_n(&d.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	check_guest_whole(&g, "after an over-budget pause");
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
		{ "small guest, dirty log + clear", test_small_log_clear },
		{ "big guest, dirty log + clear", test_big_log_clear },
		{ "small guest, dirty log", test_small_log },
		{ "dirty ring that fills", test_ring },
		{ "big guest, dirty ring", test_big_ring },
		{ "node tour, dirty log, numa_maps", test_tour_log },
		{ "node tour, dirty log + clear, numa_maps", test_tour_log_clear },
		{ "node tour, dirty ring, numa_maps", test_tour_ring },
		{ "DRAM -> CXL memory -> DRAM, numa_maps", test_cxl },
		{ "over budget: bounded, reported, refused on request", test_over_budget },
		{ "memfd RAM: memslot re-added", test_memfd },
		{ "file tier and back", test_file_tier },
		{ "a range of a slot", test_range },
		{ "cancel during pre-copy", test_cancel },
		{ "streamed: each piece copied in its turn", test_stream },
		{ "streamed, cancelled between pieces", test_stream_cancel },
		{ "destination allocation fails", test_dest_alloc_fails },
		{ "the VMM's own writes (mark_dirty)", test_mark_dirty },
		CU_TEST_INFO_NULL,
	};
	static CU_SuiteInfo suites[] = {
		{ "live", suite_init, suite_clean, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	const char *tier = getenv("MEMMIG_TEST_TIER");

	if (access("/dev/kvm", R_OK | W_OK))
		return cunit_skip("no usable /dev/kvm on this machine (the multi-node tier "
				  "runs these tests in its guest: make check-vm)");
	if (tier && !strcmp(tier, "1"))
		sc = tier_scale;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("scale: %s: guests of %llu, %llu and %llu MiB, %d migrations a case, "
	       "pause budget %.0f ms%s\n", sc.where, (unsigned long long)(sc.small / MiB),
	       (unsigned long long)(sc.mid / MiB), (unsigned long long)(sc.big / MiB),
	       sc.migrations, sc.budget_ns ? sc.budget_ns / 1e6 : 5.0,
	       sc.budget_ns ? "" : " (the default)");
	return cunit_main(suites);
}
