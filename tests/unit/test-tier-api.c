/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig_tier_* as a program embedding libmemmig sees it: the options'
 * checks, references, a step on a real child process, the figures and the
 * sz rule of the stats.  On a host of one node the slow node of every
 * tiering here is absent: a step says -ENOENT and moves nothing, after
 * reading the process; with two nodes or more, steps tier the child.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memmig.h"
#include "cunit-main.h"

#define MB (1u << 20)

static struct memmig_ctx *ctx;
static int fast0[] = { 0 }, slow1[] = { 1 };

static struct memmig_tier_opts opts(int pid)
{
	return (struct memmig_tier_opts){
		.sz = sizeof(struct memmig_tier_opts), .pid = pid, .fast_nodes = fast0,
		.nfast = 1, .slow_nodes = slow1, .nslow = 1, .slow_share = 50,
		.interval_ms = 100,
	};
}

/* A child with 16 MiB written, until its pipe closes. */
struct child {
	pid_t pid;
	int hold;
};

#define MPOL_BIND_ 2	/* <numaif.h>'s MPOL_BIND, without libnuma */

static int child_start(struct child *c, bool bind0)
{
	int ready[2], hold[2];
	char b = 0;

	if (pipe(ready) || pipe(hold))
		return -errno;
	c->pid = fork();
	if (c->pid == 0) {
		char *m;

		close(hold[1]);
		close(ready[0]);
		/* Its pages on node 0, the fast one, whatever its CPU. */
		if (bind0)
			syscall(SYS_set_mempolicy, MPOL_BIND_, &(unsigned long){ 1 }, 2);
		m = mmap(NULL, 16 * MB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m != MAP_FAILED)
			memset(m, 1, 16 * MB);
		(void)!write(ready[1], &b, 1);
		(void)!read(hold[0], &b, 1);	/* till the parent closes it */
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	c->hold = hold[1];
	if (c->pid < 0 || read(ready[0], &b, 1) != 1) {
		close(ready[0]);
		return -ECHILD;
	}
	close(ready[0]);
	return 0;
}

static void child_stop(struct child *c)
{
	close(c->hold);
	waitpid(c->pid, NULL, 0);
}

/* Each refusal of the options, with the words that say why. */
static void test_opts_refused(void)
{
	static const int none[] = { 0 }, both[] = { 0, 1 };
	struct {
		struct memmig_tier_opts o;
		const char *why;
	} bad[] = {
		{ opts(0), "give 1 to" },
		{ opts(0), "both fast and slow" },
		{ opts(0), "not both" },
		{ opts(0), "not neither" },
		{ opts(0), "interval 50 ms" },
		{ opts(0), "interval 3600001 ms" },
		{ opts(0), "cold after 9" },
		{ opts(0), "stay 1001" },
		{ opts(0), "flags" },
		{ opts(-2), "pid" },
	};
	char why[160];

	bad[0].o.nslow = 0;
	bad[1].o.slow_nodes = both;
	bad[1].o.nslow = 2;
	bad[2].o.fast_free = 1 << 20;
	bad[3].o.slow_share = 0;
	bad[4].o.interval_ms = 50;
	bad[5].o.interval_ms = MEMMIG_TIER_INTERVAL_MAX_MS + 1;
	bad[6].o.cold_intervals = MEMMIG_TIER_COLD_MAX + 1;
	bad[7].o.min_stay = MEMMIG_TIER_STAY_MAX + 1;
	bad[8].o.flags = 1u << 30;
	(void)none;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct memmig_tier *t = NULL;
		int rc;

		why[0] = '\0';
		bad[i].o.why = why;
		bad[i].o.why_len = sizeof(why);
		/* memmig_tier_check_opts() checks what new does, pid aside. */
		if (i < 9 && memmig_tier_check_opts(ctx, &bad[i].o) != -EINVAL)
			CUNIT_FAILF("case %zu: memmig_tier_check_opts accepted it", i);
		rc = memmig_tier_new(ctx, &bad[i].o, &t);
		if (rc != -EINVAL || t)
			CUNIT_FAILF("case %zu: memmig_tier_new gave %d, not -EINVAL", i, rc);
		else if (!strstr(why, bad[i].why))
			CUNIT_FAILF("case %zu: \"%s\" does not say '%s'", i, why, bad[i].why);
	}
	/* No options, no context, no out. */
	CU_ASSERT_EQUAL(memmig_tier_check_opts(ctx, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_tier_new(NULL, &bad[0].o, &(struct memmig_tier *){ NULL }),
			-EINVAL);
	/* The defaults' 0s are accepted; a stay of 0 is a stay of 0. */
	{
		struct memmig_tier_opts o = opts(0);

		o.interval_ms = o.cold_intervals = o.pause_ms = o.min_stay = 0;
		CU_ASSERT_EQUAL(memmig_tier_check_opts(ctx, &o), 0);
	}
}

static int no_op(void *opaque)
{
	(void)opaque;
	return 0;
}

/*
 * A VMM's own guest: its vm and one of its anonymous slots, from this
 * process (pid 0).  A slot it does not have, a pid, and a file-backed slot
 * (which moves whole, not by units) are refused; the same vm and slot
 * take new options, another slot not.
 */
static void test_vm(void)
{
	const struct memmig_vm_ops ops = { .sz = sizeof(ops), .pause = no_op, .resume = no_op };
	struct memmig_vm_slot anon = { .sz = sizeof(anon), .slot = 3, .gpa = 1ULL << 32,
				       .size = 4 << 20, .fd = -1 };
	struct memmig_vm_slot file = anon;
	struct memmig_tier_stats st = { .sz = sizeof(st) };
	struct memmig_tier_opts o = opts(0);
	struct memmig_tier *t = NULL;
	struct memmig_vm *vm = NULL;
	int fd = memfd_create("test-tier-api", MFD_CLOEXEC), rc;

	anon.hva = mmap(NULL, anon.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	CU_ASSERT_FATAL(anon.hva != MAP_FAILED && fd >= 0 && !ftruncate(fd, (off_t)anon.size));
	file.slot = 5;
	file.gpa = 2ULL << 32;
	file.fd = fd;
	file.hva = mmap(NULL, file.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CU_ASSERT_FATAL(file.hva != MAP_FAILED);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_new(ctx, -1, &ops, NULL, &vm), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_add_slot(vm, &anon), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_add_slot(vm, &file), 0);
	o.vm = vm;
	o.vm_slot = 4;
	CU_ASSERT_EQUAL(memmig_tier_new(ctx, &o, &t), -ENOENT);
	o.vm_slot = 5;
	CU_ASSERT_EQUAL(memmig_tier_new(ctx, &o, &t), -EOPNOTSUPP);
	o.vm_slot = 3;
	o.pid = getpid();
	CU_ASSERT_EQUAL(memmig_tier_new(ctx, &o, &t), -EINVAL);
	o.pid = 0;
	rc = memmig_tier_new(ctx, &o, &t);
	if (rc == -EOPNOTSUPP) {
		printf("\n  no tracking without KVM here (userfaultfd write protection, "
		       "soft-dirty bits)\n");
	} else {
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		CU_ASSERT_EQUAL(memmig_tier_get_stats(t, &st), 0);
		CU_ASSERT_EQUAL(st.sources & MEMMIG_TIER_SRC_DIRTYLOG, MEMMIG_TIER_SRC_DIRTYLOG);
		CU_ASSERT_EQUAL(memmig_tier_set_opts(t, &o), 0);
		o.vm_slot = 5;
		CU_ASSERT_EQUAL(memmig_tier_set_opts(t, &o), -EINVAL);
		/* The tiering tracks the slot: a migration of the vm waits. */
		CU_ASSERT_EQUAL(memmig_vm_migrate(vm, &(struct memmig_live_opts){
				.sz = sizeof(struct memmig_live_opts), .slot = 3,
				.target_node = 0 }, NULL), -EBUSY);
		memmig_tier_unref(t);
	}
	memmig_vm_unref(vm);
	munmap(anon.hva, anon.size);
	munmap(file.hva, file.size);
	close(fd);
}

/* A real process: new, ref, a step, the figures, stop, unref. */
static void test_child(void)
{
	struct memmig_tier_stats st = { .sz = sizeof(st) };
	struct memmig_tier_sample s = { .sz = sizeof(s) };
	struct memmig_tier_opts o;
	struct memmig_tier *t = NULL;
	struct memmig_topo *topo = NULL;
	bool two = false;
	struct child c = { -1, -1 };
	int rc;

	if (!memmig_topo_new(ctx, &topo)) {
		two = memmig_topo_node_count(topo) >= 2;
		memmig_topo_unref(topo);
	}
	CU_ASSERT_EQUAL_FATAL(child_start(&c, two), 0);
	o = opts(c.pid);
	rc = memmig_tier_new(ctx, &o, &t);
	if (rc == -ENOENT) {
		printf("\n  no soft-dirty bits on this kernel: nothing to tier\n");
		child_stop(&c);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	/* Its move lock is held: a second tiering of it is refused. */
	{
		struct memmig_tier *t2 = NULL;

		CU_ASSERT_EQUAL(memmig_tier_new(ctx, &o, &t2), -EBUSY);
	}
	CU_ASSERT_PTR_EQUAL(memmig_tier_ref(t), t);
	memmig_tier_unref(t);	/* the ref's: t still ours */
	CU_ASSERT_EQUAL(memmig_tier_get_stats(t, &st), 0);
	CU_ASSERT_EQUAL(st.intervals, 0);
	CU_ASSERT(st.sources & MEMMIG_TIER_SRC_SOFTDIRTY);
	CU_ASSERT(st.react_s < 0);	/* no change seen yet */
	CU_ASSERT_EQUAL(memmig_tier_get_sample(t, 0, &s), -ENOENT);

	rc = memmig_tier_step(t);
	CU_ASSERT_EQUAL(memmig_tier_get_stats(t, &st), 0);
	CU_ASSERT_EQUAL(st.intervals, 1);
	CU_ASSERT_EQUAL(st.last_error, rc);
	/* The child's 16 MiB were read and sampled, whatever the nodes. */
	CU_ASSERT(st.units >= 8);
	CU_ASSERT(st.bytes_resident >= 16 * MB);
	CU_ASSERT(st.cpu_s > 0);
	CU_ASSERT(st.cpu_pct_per_gib > 0);
	if (!two) {
		/* Node 1 is not there: said, nothing moved. */
		CU_ASSERT_EQUAL(rc, -ENOENT);
		CU_ASSERT_EQUAL(st.promotions + st.demotions, 0);
		CU_ASSERT_EQUAL(st.bounce_pct, 0);
		CU_ASSERT_EQUAL(memmig_tier_get_sample(t, 0, &s), -ENOENT);
	} else {
		/* All on node 0 at first, untouched since: once cold, half of
		 * it goes to node 1. */
		CU_ASSERT_EQUAL(rc, 0);
		CU_ASSERT_EQUAL(memmig_tier_get_sample(t, 0, &s), 0);
		CU_ASSERT_EQUAL(s.interval, 1);
		/* bytes_slow is each interval's stock, taken before its moves:
		 * the interval after the first demotion shows it. */
		for (int i = 0; i < 2 * MEMMIG_TIER_COLD_DEFAULT + 3 && !rc &&
				!(st.demotions && st.bytes_slow); i++) {
			rc = memmig_tier_step(t);
			memmig_tier_get_stats(t, &st);
		}
		CU_ASSERT_EQUAL(rc, 0);
		CU_ASSERT(st.demotions > 0);
		CU_ASSERT(st.bytes_slow > 0);
		CU_ASSERT(st.bounce_pct >= 0 && st.bounce_pct <= 100);
	}
	/* Stopped: no more intervals, the lock let go, figures kept. */
	memmig_tier_stop(t);
	CU_ASSERT_EQUAL(memmig_tier_step(t), -ECANCELED);
	{
		struct memmig_tier *t2 = NULL;

		CU_ASSERT_EQUAL(memmig_tier_new(ctx, &o, &t2), 0);
		memmig_tier_unref(t2);
	}
	CU_ASSERT_EQUAL(memmig_tier_get_stats(t, &st), 0);
	CU_ASSERT(st.intervals >= 1);
	memmig_tier_unref(t);
	child_stop(&c);
}

/* New options from the next interval; a bad one changes nothing. */
static void test_set_opts(void)
{
	struct memmig_tier_opts o = opts(0);
	struct memmig_tier *t = NULL;
	int rc = memmig_tier_new(ctx, &o, &t);

	if (rc == -ENOENT) {
		printf("\n  no soft-dirty bits on this kernel: nothing to tier\n");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	o.slow_share = 0;
	CU_ASSERT_EQUAL(memmig_tier_set_opts(t, &o), -EINVAL);
	o.fast_free = 64 * MB;
	CU_ASSERT_EQUAL(memmig_tier_set_opts(t, &o), 0);
	/* A slow node that is not there: the next step says so, moving
	 * nothing (checked at each step: a node may be taken away). */
	{
		static const int absent[] = { MEMMIG_TIER_MAX_NODES - 1 };
		struct memmig_tier_stats st = { .sz = sizeof(st) };

		o.slow_nodes = absent;
		CU_ASSERT_EQUAL(memmig_tier_set_opts(t, &o), 0);
		CU_ASSERT_EQUAL(memmig_tier_step(t), -ENOENT);
		CU_ASSERT_EQUAL(memmig_tier_get_stats(t, &st), 0);
		CU_ASSERT_EQUAL(st.last_error, -ENOENT);
		CU_ASSERT_EQUAL(st.promoted_bytes + st.demoted_bytes, 0);
	}
	o.vm = (struct memmig_vm *)&o;
	CU_ASSERT_EQUAL(memmig_tier_set_opts(t, &o), -EINVAL);
	memmig_tier_unref(t);
}

/* An older caller's smaller stats and sample: only its sz is written. */
static void test_stats_sz(void)
{
	struct memmig_tier_opts o = opts(0);
	struct memmig_tier *t = NULL;
	int rc = memmig_tier_new(ctx, &o, &t);
	size_t old = offsetof(struct memmig_tier_stats, bounce_pct);
	union {
		struct memmig_tier_stats st;
		unsigned char b[sizeof(struct memmig_tier_stats)];
	} u;

	if (rc == -ENOENT)
		return;
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	memmig_tier_step(t);
	memset(&u, 0x5a, sizeof(u));
	u.st.sz = old;
	CU_ASSERT_EQUAL(memmig_tier_get_stats(t, &u.st), 0);
	CU_ASSERT_EQUAL(u.st.intervals, 1);
	for (size_t i = old; i < sizeof(u); i++)
		if (u.b[i] != 0x5a) {
			CUNIT_FAILF("byte %zu past sz %zu written", i, old);
			break;
		}
	/* Too small to hold a member: refused. */
	u.st.sz = sizeof(size_t) - 1;
	CU_ASSERT_EQUAL(memmig_tier_get_stats(t, &u.st), -EINVAL);
	memmig_tier_unref(t);
}

static CU_TestInfo tests[] = {
	{ "options refused, and why", test_opts_refused },
	{ "a child: new, ref, step, figures, stop", test_child },
	{ "new options", test_set_opts },
	{ "stats of an older sz", test_stats_sz },
	{ "a VMM's own guest: its vm and slot", test_vm },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "memmig_tier", .pTests = tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	int rc = memmig_ctx_new(&ctx);

	if (rc) {
		printf("FAIL: memmig_ctx_new: %s\n", strerror(-rc));
		return 1;
	}
	/* The refusals are the test's: not to stderr. */
	memmig_ctx_set_log_priority(ctx, 0);
	rc = cunit_main(suites);
	memmig_ctx_unref(ctx);
	return rc;
}
