/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The whole-process move (memmig_move_*), which memmig-cli and memmigd
 * both run: bad requests fail before any work, ranges and whole processes
 * move with their bytes intact, cancel leaves the data where it was,
 * progress and report add up, a move of many mappings takes one
 * topology snapshot and no more threads than its workers, and a move
 * finds another's lock held: -EBUSY.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <syslog.h>
#include <grp.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migrate-util.h"

/* Every thread libmemmig starts goes through here. */
static unsigned int threads_started;

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
	__atomic_add_fetch(&threads_started, 1, __ATOMIC_RELAXED);
	return real(th, attr, fn, arg);
}

/* Topology snapshots, from their debug lines ("node 0: ..." per snapshot). */
static unsigned int snapshots;

static void count_snapshots(struct memmig_ctx *c, void *data, int prio, const char *file,
			    int line, const char *fn, const char *format, va_list args)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), format, args);
	if (!strncmp(buf, "node 0: ", 8))
		__atomic_add_fetch(&snapshots, 1, __ATOMIC_RELAXED);
}

static struct memmig_move_opts opts_of(int pid, const struct memmig_range *r, unsigned int n,
				       int node, int strategy)
{
	return (struct memmig_move_opts){
		.sz = sizeof(struct memmig_move_opts), .pid = pid, .ranges = r,
		.nranges = n, .target_node = node, .strategy = strategy, .workers = 2,
	};
}

static int new_move(int pid, const struct memmig_range *r, unsigned int n, int node,
		    int strategy, struct memmig_move **out)
{
	struct memmig_move_opts o = opts_of(pid, r, n, node, strategy);

	return memmig_move_new(ctx, &o, out);
}

/* new() and plan() with the plan's error: the move ended with it. */
static int plan_error(int pid, const struct memmig_range *r, unsigned int n)
{
	struct memmig_move_progress p = { .sz = sizeof(p) };
	struct memmig_move *mv;
	int rc = new_move(pid, r, n, 0, 0, &mv);

	if (rc)
		return rc;
	rc = memmig_move_plan(mv);
	memmig_move_get_progress(mv, &p);
	CU_ASSERT_EQUAL(p.state, rc ? MEMMIG_MOVE_DONE : MEMMIG_MOVE_PLANNED);
	CU_ASSERT_EQUAL(p.result, rc);
	if (rc)
		CU_ASSERT_EQUAL(memmig_move_start(mv), -EBUSY);
	memmig_move_unref(mv);
	return rc;
}

static void test_bad(void)
{
	struct memmig_range unmapped = { 0x1000, 0x1000 }, odd = { 0, 100 };
	struct memmig_move *mv = NULL;
	pid_t gone = fork();

	if (!gone)
		_exit(0);
	waitpid(gone, NULL, 0);
	CU_ASSERT_EQUAL(new_move(0, NULL, 0, 0, 0, &mv), -EINVAL);
	CU_ASSERT_EQUAL(new_move(getpid(), NULL, 0, -1, 0, &mv), -ENOENT);
	CU_ASSERT_EQUAL(new_move(getpid(), NULL, 0, 999, 0, &mv), -ENOENT);
	CU_ASSERT_EQUAL(new_move(getpid(), NULL, MEMMIG_MOVE_MAX_RANGES + 1, 0, 0, &mv), -EINVAL);
	CU_ASSERT_EQUAL(new_move(getpid(), NULL, 1, 0, 0, &mv), -EINVAL);
	CU_ASSERT_EQUAL(new_move(getpid(), NULL, 0, 0, 7, &mv), -EINVAL);
	CU_ASSERT_EQUAL(new_move(gone, NULL, 0, 0, 0, &mv), -ESRCH);
	CU_ASSERT_EQUAL(new_move(getppid(), NULL, 0, 0, MEMMIG_STRATEGY_COPY, &mv), -EINVAL);
	CU_ASSERT_PTR_NULL(mv);
	CU_ASSERT_EQUAL(plan_error(getpid(), &unmapped, 1), -EFAULT);
	CU_ASSERT_EQUAL(plan_error(getpid(), &odd, 1), -EINVAL);
	/* Once planned, not again; not waited for before anything started. */
	CU_ASSERT_EQUAL_FATAL(new_move(getpid(), NULL, 0, 0, 0, &mv), 0);
	CU_ASSERT_EQUAL(memmig_move_wait(mv, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_move_plan(mv), 0);
	CU_ASSERT_EQUAL(memmig_move_plan(mv), -EBUSY);
	CU_ASSERT_EQUAL(memmig_move_plan_start(mv), -EBUSY);
	memmig_move_unref(mv);
}

/* Two ranges of this process, with the kernel strategy: every byte moved
 * and counted once. */
static void test_ranges(void)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_move_progress p = { .sz = sizeof(p) };
	struct memmig_report *rep = NULL;
	struct memmig_move *mv;
	struct mem a, b;
	uint64_t sa, sb;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&a, K_THP, 16 * MiB, true), 0);
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&b, K_MEMFD, 8 * MiB, true), 0);
	sa = mt_csum(a.map, a.len);
	sb = mt_csum(b.map, b.len);
	struct memmig_range r[2] = {
		{ (uintptr_t)a.map, a.len }, { (uintptr_t)b.map, b.len },
	};
	CU_ASSERT_EQUAL_FATAL(new_move(getpid(), r, 2, 0, MEMMIG_STRATEGY_KERNEL, &mv), 0);
	CU_ASSERT_EQUAL(memmig_move_plan(mv), 0);
	memmig_move_get_progress(mv, &p);
	EXPECT_EQ("ranges", "state", p.state, MEMMIG_MOVE_PLANNED);
	EXPECT_EQ("ranges", "bytes_total before", p.bytes_total, 24 * MiB);
	EXPECT_EQ("ranges", "regions", p.regions, 2);
	CU_ASSERT_EQUAL(memmig_move_start(mv), 0);
	CU_ASSERT_EQUAL(memmig_move_start(mv), -EBUSY);
	CU_ASSERT_EQUAL(memmig_move_wait(mv, &rep), 0);
	memmig_move_get_progress(mv, &p);
	EXPECT_EQ("ranges", "state", p.state, MEMMIG_MOVE_DONE);
	CU_ASSERT_EQUAL(p.result, 0);
	EXPECT_EQ("ranges", "bytes_done", p.bytes_done, 24 * MiB);
	EXPECT_EQ("ranges", "regions_done", p.regions_done, 2);
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("ranges", "report pid", s.pid, getpid());
	EXPECT_EQ("ranges", "report result", s.result, 0);
	EXPECT_EQ("ranges", "report regions", s.regions, 2);
	EXPECT_EQ("ranges", "report bytes_total", s.bytes_total, 24 * MiB);
	EXPECT_EQ("ranges", "report pages_failed", s.pages_failed, 0);
	EXPECT_EQ("ranges", "report pages_on_target", s.pages_verified_on_target,
		  24 * MiB / PAGE);
	/* The regions' node counts add up to the whole. */
	uint64_t before, after;
	CU_ASSERT_EQUAL(memmig_report_node_pages(rep, 0, &before, &after), 0);
	EXPECT_EQ("ranges", "node 0 pages after", after, 24 * MiB / PAGE);
	memmig_report_unref(rep);
	memmig_move_unref(mv);
	mt_mem_intact(&a, sa, "anonymous range");
	mt_mem_intact(&b, sb, "memfd range");
	mt_mem_free(&a);
	mt_mem_free(&b);
}

/* One range moved with from_nodes: the report's skipped and on-target
 * counts, and the bytes intact. */
static void move_from(struct mem *m, const int *from, unsigned int nfrom,
		      uint64_t *skipped, uint64_t *on_target)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_range r = { (uintptr_t)m->map, m->len };
	struct memmig_move_opts o = opts_of(getpid(), &r, 1, 0, MEMMIG_STRATEGY_AUTO);
	struct memmig_report *rep = NULL;
	struct memmig_move *mv;

	o.from_nodes = from;
	o.nfrom_nodes = nfrom;
	*skipped = *on_target = UINT64_MAX;
	CU_ASSERT_EQUAL_FATAL(memmig_move_new(ctx, &o, &mv), 0);
	CU_ASSERT_EQUAL(memmig_move_start(mv), 0);
	CU_ASSERT_EQUAL(memmig_move_wait(mv, &rep), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("from", "strategy", s.strategy, MEMMIG_STRATEGY_KERNEL);
	EXPECT_EQ("from", "pages_failed", s.pages_failed, 0);
	*skipped = s.pages_skipped;
	*on_target = s.pages_verified_on_target;
	memmig_report_unref(rep);
	memmig_move_unref(mv);
}

/*
 * from_nodes, like migratepages: bad sets fail before any work; with every
 * page on node 0, {0} leaves nothing out and a set without 0 leaves every
 * page where it is, counted as skipped.
 */
static void test_from_nodes(void)
{
	static const int node0[] = { 0 }, others[] = { 1, 2, 1023 }, too_big[] = { 1024 };
	struct memmig_move_opts o = opts_of(getpid(), NULL, 0, 0, MEMMIG_STRATEGY_AUTO);
	uint64_t skipped, on_target, sum;
	struct memmig_move *mv = NULL;
	struct mem m;

	o.from_nodes = too_big;
	o.nfrom_nodes = 1;
	CU_ASSERT_EQUAL(memmig_move_new(ctx, &o, &mv), -EINVAL);
	o.from_nodes = node0;
	o.nfrom_nodes = 0;
	CU_ASSERT_EQUAL(memmig_move_new(ctx, &o, &mv), -EINVAL);
	o.from_nodes = NULL;
	o.nfrom_nodes = 1;
	CU_ASSERT_EQUAL(memmig_move_new(ctx, &o, &mv), -EINVAL);
	o.from_nodes = node0;
	o.strategy = MEMMIG_STRATEGY_COPY;
	CU_ASSERT_EQUAL(memmig_move_new(ctx, &o, &mv), -EINVAL);
	CU_ASSERT_PTR_NULL(mv);

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 8 * MiB, true), 0);
	sum = mt_csum(m.map, m.len);
	move_from(&m, node0, 1, &skipped, &on_target);
	EXPECT_EQ("from {0}", "pages_skipped", skipped, 0);
	EXPECT_EQ("from {0}", "pages on target", on_target, 8 * MiB / PAGE);
	move_from(&m, others, 3, &skipped, &on_target);
	EXPECT_EQ("from {1,2,1023}", "pages_skipped", skipped, 8 * MiB / PAGE);
	EXPECT_EQ("from {1,2,1023}", "pages still on node 0", on_target, 8 * MiB / PAGE);
	mt_mem_intact(&m, sum, "range moved with from_nodes");
	mt_mem_free(&m);
}

/* The report's 4 KiB pages on any node, before or after. */
static uint64_t node_pages(const struct memmig_report *rep, bool before)
{
	uint64_t sum = 0;

	for (int n = 0; n <= memmig_report_max_node(rep); n++) {
		uint64_t b = 0, a = 0;

		memmig_report_node_pages(rep, n, &b, &a);
		sum += before ? b : a;
	}
	return sum;
}

/* Cancelled before it starts: nothing moves, the result says so. */
static void test_cancel_first(void)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_move *mv;
	struct mem a;
	uint64_t sa;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&a, K_THP, 8 * MiB, true), 0);
	sa = mt_csum(a.map, a.len);
	struct memmig_range r = { (uintptr_t)a.map, a.len };
	CU_ASSERT_EQUAL_FATAL(new_move(getpid(), &r, 1, 0, 0, &mv), 0);
	memmig_move_cancel(mv);
	CU_ASSERT_EQUAL(memmig_move_start(mv), 0);
	CU_ASSERT_EQUAL(memmig_move_wait(mv, &rep), -ECANCELED);
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("cancel", "result", s.result, -ECANCELED);
	EXPECT_EQ("cancel", "bytes_moved", s.bytes_moved, 0);
	EXPECT_EQ("cancel", "bytes_total", s.bytes_total, 8 * MiB);
	/* The report still says where the pages are: they were asked. */
	EXPECT_EQ("cancel", "pages before", node_pages(rep, true), 8 * MiB / PAGE);
	EXPECT_EQ("cancel", "pages after", node_pages(rep, false), 8 * MiB / PAGE);
	EXPECT_EQ("cancel", "regions", s.regions, 1);
	memmig_report_unref(rep);
	memmig_move_unref(mv);
	mt_mem_intact(&a, sa, "cancelled");
	mt_mem_free(&a);
}

/*
 * A whole process (one walk of the kernel's) cancelled before it starts:
 * nothing moves, and every region's pages are still reported where they
 * are.  memmig-cli move's SIGTERM during the plan came to this and printed
 * no node at all (guest-move-pid in the 6.1 tier).
 */
static pid_t child_with_maps(unsigned int maps, int *go);
static void child_end(pid_t child, int go);

static void test_cancel_first_process(void)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_move *mv = NULL;
	int go;
	pid_t child = child_with_maps(4, &go);

	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_EQUAL_FATAL(new_move(child, NULL, 0, 0, 0, &mv), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_move_plan(mv), 0);
	memmig_move_cancel(mv);
	CU_ASSERT_EQUAL(memmig_move_start(mv), 0);
	CU_ASSERT_EQUAL(memmig_move_wait(mv, &rep), -ECANCELED);
	CU_ASSERT_EQUAL_FATAL(memmig_report_get_summary(rep, &s), 0);
	EXPECT_EQ("cancel process", "bytes_moved", s.bytes_moved, 0);
	CU_ASSERT(s.regions >= 4);
	/* The child's 32 MiB and its two writable 2 MiB mappings at least (the
	 * read-only ones map the zero page, on no node), as many after. */
	CU_ASSERT(node_pages(rep, true) >= 36 * MiB / PAGE);
	EXPECT_EQ("cancel process", "pages after", node_pages(rep, false),
		  node_pages(rep, true));
	printf("\n  %u regions, %llu pages reported where they are ", s.regions,
	       (unsigned long long)node_pages(rep, true));
	memmig_report_unref(rep);
	memmig_move_unref(mv);
	child_end(child, go);
}

/* A child with `maps` separate 2 MiB mappings that checks its own bytes
 * once told to (write to *go). */
static pid_t child_with_maps(unsigned int maps, int *go)
{
	int p_go[2], p_ready[2];
	char c = 0;
	pid_t child;

	if (pipe(p_go) || pipe(p_ready))
		return -1;
	child = fork();
	if (!child) {
		struct mem a;
		uint64_t s;
		uint8_t *m[128];

		if (maps > 128 || mt_mem_new(&a, K_THP, 32 * MiB, true))
			_exit(2);
		s = mt_csum(a.map, a.len);
		/* PROT_READ and PROT_WRITE alternate: no two mappings merge. */
		for (unsigned int i = 0; i < maps; i++) {
			m[i] = mmap(NULL, 2 * MiB, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
			if (m[i] == MAP_FAILED)
				_exit(4);
		}
		if (write(p_ready[1], "r", 1) != 1 || read(p_go[0], &c, 1) != 1)
			_exit(3);
		_exit(mt_csum(a.map, a.len) == s ? 0 : 1);
	}
	close(p_go[0]);
	close(p_ready[1]);
	if (child < 0 || read(p_ready[0], &c, 1) != 1)
		return -1;
	close(p_ready[0]);
	*go = p_go[1];
	return child;
}

static void child_end(pid_t child, int go)
{
	int st;

	CU_ASSERT(write(go, "g", 1) == 1);
	close(go);
	CU_ASSERT_EQUAL(waitpid(child, &st, 0), child);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Another process, every mapping: it checks its own bytes afterwards. */
static void test_child(void)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_move *mv = NULL;
	int go;
	pid_t child = child_with_maps(0, &go);

	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_EQUAL(new_move(child, NULL, 0, 0, 0, &mv), 0);
	if (mv) {
		CU_ASSERT_EQUAL(memmig_move_start(mv), 0);
		CU_ASSERT_EQUAL(memmig_move_wait(mv, &rep), 0);
		memmig_report_get_summary(rep, &s);
		CU_ASSERT(s.regions >= 2);
		CU_ASSERT(s.pages_verified_on_target >= 32 * MiB / PAGE);
		EXPECT_EQ("child", "pages_failed", s.pages_failed, 0);
		EXPECT_EQ("child", "strategy", s.strategy, MEMMIG_STRATEGY_KERNEL);
		memmig_report_unref(rep);
		memmig_move_unref(mv);
	}
	child_end(child, go);
}

/*
 * 40 mappings and more: the move takes one topology snapshot and starts
 * one thread of its own and workers - 1 others, whatever the number of
 * mappings (before: a snapshot per region and per worker, and a job
 * thread and workers per region).
 */
static void test_many_maps(void)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_move *mv = NULL;
	struct memmig_ctx *c;
	unsigned int started;
	int go;
	pid_t child = child_with_maps(40, &go);

	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_EQUAL_FATAL(memmig_ctx_new_flags(&c, MEMMIG_CTX_NO_ENV), 0);
	memmig_ctx_set_log_fn(c, count_snapshots, NULL);
	memmig_ctx_set_log_priority(c, LOG_DEBUG);
	struct memmig_move_opts o = opts_of(child, NULL, 0, 0, 0);
	o.workers = 3;
	CU_ASSERT_EQUAL_FATAL(memmig_move_new(c, &o, &mv), 0);
	snapshots = 0;
	started = __atomic_load_n(&threads_started, __ATOMIC_RELAXED);
	CU_ASSERT_EQUAL(memmig_move_start(mv), 0);
	CU_ASSERT_EQUAL(memmig_move_wait(mv, &rep), 0);
	started = __atomic_load_n(&threads_started, __ATOMIC_RELAXED) - started;
	memmig_report_get_summary(rep, &s);
	CU_ASSERT(s.regions >= 40);
	EXPECT_EQ("many maps", "pages_failed", s.pages_failed, 0);
	EXPECT_EQ("many maps", "topology snapshots", snapshots, 1);
	EXPECT_EQ("many maps", "threads started", started, 3);
	printf("\n  %u regions: %u snapshot(s), %u thread(s) started ", s.regions,
	       snapshots, started);
	memmig_report_unref(rep);
	memmig_move_unref(mv);
	memmig_ctx_unref(c);
	child_end(child, go);
}

/* The daemon's way: plan on the move's thread, told by notify, started
 * later, told again at the end. */
static unsigned int notified[MEMMIG_MOVE_DONE + 1];

static void on_notify(struct memmig_move *mv, void *opaque)
{
	struct memmig_move_progress p = { .sz = sizeof(p) };

	CU_ASSERT_PTR_EQUAL(opaque, &notified);
	memmig_move_get_progress(mv, &p);
	__atomic_add_fetch(&notified[p.state], 1, __ATOMIC_RELAXED);
}

static void test_plan_start(void)
{
	struct memmig_move_progress p = { .sz = sizeof(p) };
	struct memmig_move *mv;
	struct mem a;
	uint64_t sa;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&a, K_4K, 8 * MiB, true), 0);
	sa = mt_csum(a.map, a.len);
	struct memmig_range r = { (uintptr_t)a.map, a.len };
	struct memmig_move_opts o = opts_of(getpid(), &r, 1, 0, MEMMIG_STRATEGY_KERNEL);
	o.notify = on_notify;
	o.opaque = &notified;
	CU_ASSERT_EQUAL_FATAL(memmig_move_new(ctx, &o, &mv), 0);
	CU_ASSERT_EQUAL(memmig_move_plan_start(mv), 0);
	CU_ASSERT_EQUAL(memmig_move_wait(mv, NULL), 0);
	memmig_move_get_progress(mv, &p);
	EXPECT_EQ("plan", "state", p.state, MEMMIG_MOVE_PLANNED);
	EXPECT_EQ("plan", "notified planned", notified[MEMMIG_MOVE_PLANNED], 1);
	CU_ASSERT_EQUAL(memmig_move_start(mv), 0);
	CU_ASSERT_EQUAL(memmig_move_wait(mv, NULL), 0);
	EXPECT_EQ("plan", "notified done", notified[MEMMIG_MOVE_DONE], 1);
	memmig_move_get_progress(mv, &p);
	EXPECT_EQ("plan", "bytes_done", p.bytes_done, 8 * MiB);
	memmig_move_unref(mv);
	mt_mem_intact(&a, sa, "planned on its thread");
	mt_mem_free(&a);
}

/* Samples a move's progress from its own thread until the move is done:
 * how often bytes_done or regions_done went down, and the worst drop. */
struct sampler {
	struct memmig_move *mv;
	unsigned int samples, drops;
	uint64_t from, to;		/* the first drop */
	unsigned int regions_at;
};

static void *sample_progress(void *arg)
{
	struct sampler *s = arg;
	struct memmig_move_progress last = { .sz = sizeof(last) };

	for (;;) {
		struct memmig_move_progress p = { .sz = sizeof(p) };

		if (memmig_move_get_progress(s->mv, &p))
			break;
		s->samples++;
		if (p.bytes_done < last.bytes_done || p.regions_done < last.regions_done) {
			if (!s->drops++) {
				s->from = last.bytes_done;
				s->to = p.bytes_done;
				s->regions_at = p.regions_done;
			}
		}
		last = p;
		if (p.state == MEMMIG_MOVE_DONE)
			break;
	}
	return NULL;
}

/*
 * bytes_done is what the move got through: sampled from another thread
 * through a move of 64 mappings and more, it never goes down (before: at
 * each region's end, the finished job was cleared before its bytes were
 * added to the total).
 */
static void test_progress_monotonic(void)
{
	for (unsigned int round = 0; round < 3; round++) {
		struct sampler s = { 0 };
		struct memmig_move_progress p = { .sz = sizeof(p) };
		pthread_t th;
		int go;
		pid_t child = child_with_maps(64, &go);

		CU_ASSERT_FATAL(child > 0);
		CU_ASSERT_EQUAL_FATAL(new_move(child, NULL, 0, 0, 0, &s.mv), 0);
		CU_ASSERT_EQUAL_FATAL(memmig_move_plan(s.mv), 0);
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, sample_progress, &s), 0);
		CU_ASSERT_EQUAL(memmig_move_start(s.mv), 0);
		CU_ASSERT_EQUAL(memmig_move_wait(s.mv, NULL), 0);
		pthread_join(th, NULL);
		memmig_move_get_progress(s.mv, &p);
		CU_ASSERT(p.regions >= 64);
		EXPECT_EQ("progress", "regions_done at the end", p.regions_done, p.regions);
		EXPECT_EQ("progress", "bytes_done at the end", p.bytes_done, p.bytes_total);
		if (s.drops)
			CUNIT_FAILF("round %u: bytes_done went down %u times in %u samples, "
				    "first %" PRIu64 " -> %" PRIu64 " (regions_done %u)",
				    round, s.drops, s.samples, s.from, s.to, s.regions_at);
		memmig_move_unref(s.mv);
		child_end(child, go);
	}
}

/* Kills a process after a delay, from a thread of its own. */
struct killer {
	pid_t pid;
	long delay_ns;
};

static void *kill_later(void *arg)
{
	const struct killer *k = arg;
	struct timespec ts = { k->delay_ns / 1000000000L, k->delay_ns % 1000000000L };

	nanosleep(&ts, NULL);
	kill(k->pid, SIGKILL);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * A process killed while memmig_move_plan() or memmig_move_plan_start()
 * reads it: the plan answers -ESRCH, whichever read noticed (before: -EINVAL
 * and -EIO).  Kills land across the plan's time, from its start to its end,
 * in a child of 128 mappings.
 */
static void test_plan_killed(void)
{
	unsigned int rounds = 48, mid = 0, bad = 0;
	double plan_s;
	int go;
	pid_t child = child_with_maps(128, &go);
	struct memmig_move *mv = NULL;

	/* How long a plan of this child takes. */
	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_EQUAL_FATAL(new_move(child, NULL, 0, 0, 0, &mv), 0);
	plan_s = now_s();
	CU_ASSERT_EQUAL_FATAL(memmig_move_plan(mv), 0);
	plan_s = now_s() - plan_s;
	memmig_move_unref(mv);
	child_end(child, go);
	for (unsigned int i = 0; i < rounds; i++) {
		struct memmig_move_progress p = { .sz = sizeof(p) };
		struct killer k;
		pthread_t th;
		int rc;

		mv = NULL;
		k.pid = child_with_maps(128, &go);
		CU_ASSERT_FATAL(k.pid > 0);
		k.delay_ns = (long)(plan_s * 1e9 * (i % 16) / 16);
		CU_ASSERT_EQUAL_FATAL(new_move(k.pid, NULL, 0, 0, 0, &mv), 0);
		/* At 0 %, dead before the plan starts, whenever the killer
		 * runs: killed here, and waited for (not reaped). */
		if (!k.delay_ns) {
			siginfo_t si;

			kill(k.pid, SIGKILL);
			waitid(P_PID, (id_t)k.pid, &si, WEXITED | WNOWAIT);
		}
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, kill_later, &k), 0);
		if (i % 2) {
			rc = memmig_move_plan(mv);
		} else {
			rc = memmig_move_plan_start(mv);
			memmig_move_wait(mv, NULL);
			memmig_move_get_progress(mv, &p);
			if (!rc)
				rc = p.state == MEMMIG_MOVE_DONE ? p.result : 0;
		}
		pthread_join(th, NULL);
		close(go);
		waitpid(k.pid, NULL, 0);
		if (rc)
			mid++;
		if (!k.delay_ns && rc != -ESRCH)
			CUNIT_FAILF("round %u (%s), dead before the plan: %d, want -ESRCH", i,
				    i % 2 ? "plan" : "plan_start", rc);
		if (rc && rc != -ESRCH) {
			bad++;
			CUNIT_FAILF("round %u (%s, kill at %.0f%% of %.1f ms): %d (%s), "
				    "want -ESRCH", i, i % 2 ? "plan" : "plan_start",
				    100.0 * (i % 16) / 16, plan_s * 1e3, rc, strerror(-rc));
		}
		memmig_move_unref(mv);
	}
	printf("\n  plan %.1f ms: %u of %u kills during the plan, %u not -ESRCH ",
	       plan_s * 1e3, mid, rounds, bad);
	/* Those at 0 % (one round in 16) were dead before it. */
	CU_ASSERT(mid >= rounds / 16);
}

/* As nobody (uid 65534, no groups): what the library answers about a root
 * process, one errno per call, written to the pipe *arg. */
static pid_t target_pid;

static int as_nobody(void *arg)
{
	int fd = *(int *)arg;	/* a pipe for the answers */
	struct memmig_region_desc d = { .sz = sizeof(d), .pid = target_pid };
	struct memmig_region **list = NULL, *r = NULL;
	struct memmig_move *mv = NULL;
	struct memmig_ctx *c = NULL;
	unsigned int n = 0;
	int out[4];
	FILE *f;
	char line[256];
	uint64_t addr = 0;

	/* The first writable mapping of the target, read while still root. */
	snprintf(line, sizeof(line), "/proc/%d/maps", target_pid);
	f = fopen(line, "re");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, " rw-p ") && sscanf(line, "%" SCNx64, &addr) == 1)
			break;
	if (f)
		fclose(f);
	if (!addr || setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	    setresuid(65534, 65534, 65534) || memmig_ctx_new_flags(&c, MEMMIG_CTX_NO_ENV))
		return 2;
	d.addr = addr;
	d.len = 4096;
	out[0] = memmig_region_new(c, &d, &r);
	out[1] = memmig_region_list_pid(c, target_pid, &list, &n);
	out[2] = new_move(target_pid, NULL, 0, 0, 0, &mv);
	if (!out[2]) {
		out[2] = memmig_move_plan(mv);
		memmig_move_unref(mv);
	}
	struct memmig_range rg = { addr, 4096 };
	out[3] = new_move(target_pid, &rg, 1, 0, 0, &mv);
	if (!out[3]) {
		out[3] = memmig_move_plan(mv);
		memmig_move_unref(mv);
	}
	return write(fd, out, sizeof(out)) == sizeof(out) ? 0 : 3;
}

/*
 * Not permitted is -EPERM, as memmig_move_new(3) and memmig_region_new(3)
 * say and memmigd answers (before: -EACCES from the read of the process's
 * mappings).
 */
static void test_not_permitted(void)
{
	static const char *const what[] = {
		"memmig_region_new", "memmig_region_list_pid",
		"memmig_move_plan (every mapping)", "memmig_move_plan (a range)",
	};
	int p[2], go, rcs[4] = { 0 }, st;
	pid_t child;

	if (geteuid()) {
		printf("\n  skipped: needs root to run as nobody ");
		return;
	}
	child = child_with_maps(2, &go);
	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_FATAL(pipe(p) == 0);
	target_pid = child;
	st = cunit_in_child(as_nobody, &p[1]);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		CU_ASSERT(read(p[0], rcs, sizeof(rcs)) == sizeof(rcs));
		for (unsigned int i = 0; i < 4; i++)
			if (rcs[i] != -EPERM)
				CUNIT_FAILF("as nobody, %s of root's pid: %d (%s), want -EPERM",
					    what[i], rcs[i], strerror(-rcs[i]));
	}
	close(p[0]);
	close(p[1]);
	child_end(child, go);
}

/* The last reference dropped while the move runs: it stops after its
 * units and nothing is lost. */
static void test_unref_running(void)
{
	struct memmig_move *mv;
	struct mem a;
	uint64_t sa;

	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&a, K_THP, 64 * MiB, true), 0);
	sa = mt_csum(a.map, a.len);
	struct memmig_range r = { (uintptr_t)a.map, a.len };
	CU_ASSERT_EQUAL_FATAL(new_move(getpid(), &r, 1, 0, MEMMIG_STRATEGY_KERNEL, &mv), 0);
	CU_ASSERT_EQUAL(memmig_move_start(mv), 0);
	memmig_move_unref(mv);
	mt_mem_intact(&a, sa, "dropped while running");
	mt_mem_free(&a);
}

/* Every mapping of pid with flags, started and waited for: the move's
 * result, its report's summary in *s. */
static int move_whole(pid_t pid, unsigned int flags, struct memmig_report_summary *s)
{
	struct memmig_move_opts o = opts_of(pid, NULL, 0, 0, 0);
	struct memmig_report *rep = NULL;
	struct memmig_move *mv = NULL;
	int rc;

	o.flags = flags;
	rc = memmig_move_new(ctx, &o, &mv);
	if (!rc)
		rc = memmig_move_start(mv);
	if (!rc)
		rc = memmig_move_wait(mv, &rep);
	if (rep)
		memmig_report_get_summary(rep, s);
	memmig_report_unref(rep);
	memmig_move_unref(mv);
	return rc;
}

/*
 * The move lock: held (memmig_move_lock(), as a tiering holds it), a move
 * of the process ends -EBUSY with nothing moved, but the holder's own
 * (MEMMIG_MIGRATE_LOCKED) runs; released, the same move runs.  A second
 * taker is refused while it is held, by pid or through a /proc/PID fd
 * alike.
 */
static void test_move_lock(void)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	int go, lock, dirfd;
	char dir[32];
	pid_t child = child_with_maps(0, &go);

	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_EQUAL(memmig_move_lock(0, -1), -EINVAL);
	lock = memmig_move_lock(child, -1);
	CU_ASSERT_FATAL(lock >= 0);
	snprintf(dir, sizeof(dir), "/proc/%d", (int)child);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CU_ASSERT_EQUAL(memmig_move_lock(child, -1), -EBUSY);
	CU_ASSERT_EQUAL(memmig_move_lock(child, dirfd), -EBUSY);
	CU_ASSERT_EQUAL(move_whole(child, 0, &s), -EBUSY);
	EXPECT_EQ("held", "bytes_moved", s.bytes_moved, 0);
	EXPECT_EQ("held", "result", s.result, -EBUSY);
	/* The holder's own move (MEMMIG_MIGRATE_LOCKED) runs. */
	CU_ASSERT_EQUAL(move_whole(child, MEMMIG_MIGRATE_LOCKED, &s), 0);
	close(lock);
	s = (struct memmig_report_summary){ .sz = sizeof(s) };
	CU_ASSERT_EQUAL(move_whole(child, 0, &s), 0);
	CU_ASSERT(s.pages_verified_on_target >= 32 * MiB / PAGE);
	/* Released by the move's end: free to take again, through the fd. */
	lock = memmig_move_lock(child, dirfd);
	CU_ASSERT(lock >= 0);
	if (lock >= 0)
		close(lock);
	close(dirfd);
	child_end(child, go);
}

static CU_TestInfo tests[] = {
	{ "bad requests fail before any work", test_bad },
	{ "two ranges of this process", test_ranges },
	{ "from_nodes: pages elsewhere left alone", test_from_nodes },
	{ "cancelled before it starts", test_cancel_first },
	{ "a whole process cancelled before it starts: still reported", test_cancel_first_process },
	{ "every mapping of another process", test_child },
	{ "40 mappings: one snapshot, threads by workers", test_many_maps },
	{ "planned on its thread, then started", test_plan_start },
	{ "last reference dropped while running", test_unref_running },
	{ "progress never goes backwards", test_progress_monotonic },
	{ "killed while planned: -ESRCH", test_plan_killed },
	{ "as nobody, root's process: -EPERM", test_not_permitted },
	{ "another move holds the lock: -EBUSY, nothing moved", test_move_lock },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	MT_SUITE("process move", mt_suite_init, mt_suite_cleanup, tests),
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return mt_main(suites);
}
