/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The live switchover in pieces, through the VMM-without-KVM path (the
 * same switchover as for a KVM guest):
 *  - a range larger than the first piece goes in several pieces, each
 *    under a pause of its own, the first small (nothing timed the swap
 *    yet), the VMM paused once a piece and nowhere else;
 *  - a thread that writes the range without end loses no write, and runs
 *    between every two pauses;
 *  - a resume() that fails between pieces ends the switchover: the pieces
 *    before it stay on the copy, every byte whole;
 *  - a copy that is a file (memfd RAM) goes in one piece;
 *  - on a host whose swap costs ten times the slowest seen
 *    (MEMMIG_SWAP_DELAY), the pieces shrink to what fits the budget,
 *    where one pause would be three times over it;
 *  - a guest rewriting a hot spot faster than its piece converges: the
 *    piece is cut before it, and no write is lost to the cuts;
 *  - each piece's old memory waits aside in a mapping of its own;
 *  - each pause runs at real-time priority where it may, and the caller
 *    has its own scheduling back after (or throughout, if it asks).
 * Without userfaultfd write protection (Linux 6.7) or soft-dirty bits
 * there is no tracking without KVM: skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cunit-main.h"

#define PAGE 4096ULL
#define MiB (1ULL << 20)
#define SLOT 1
/* The first piece of a vm never swapped (live-switch.c's probe). */
#define PROBE (8 * MiB)
#define MAX_PAUSES 4096

static struct memmig_ctx *ctx;

/* A VMM whose one vCPU is a thread that writes the range. */
struct vmm {
	struct memmig_vm *vm;
	uint8_t *ram;
	uint64_t len;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool pause, parked, stop, writing;
	uint64_t hot_lo, hot_hi;	/* pages the writer writes; 0, 0: all */
	pthread_t thread;
	uint64_t *record;	/* the writer's own: what page i last got */
	atomic_ullong writes;
	unsigned int pauses, resumes;
	unsigned int fail_resume;	/* this resume() (1-based) says -EIO */
	uint64_t writes_at[MAX_PAUSES];	/* writes when pause n came */
	uint64_t resumed_at[MAX_PAUSES];	/* writes when resume n came */
	uint64_t pause_ns[MAX_PAUSES];		/* when pause n came */
	uint64_t resume_ns[MAX_PAUSES];		/* when resume n came */
	bool look_aside;	/* at each resume(): */
	bool apart_seen;	/* the first two pieces' old memory apart */
	int sched_want;		/* pause() counts the pauses at this policy */
	unsigned int sched_pauses;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static uint64_t pattern(uint64_t i)
{
	return i * 0x9e3779b97f4a7c15ULL + 12345;
}

/* Writes each page's first word, pass after pass, and parks on a pause. */
static void *writer(void *arg)
{
	struct vmm *v = arg;
	uint64_t lo = v->hot_hi ? v->hot_lo : 0, hi = v->hot_hi ? v->hot_hi : v->len / PAGE;

	for (uint64_t pass = 1;; pass++) {
		for (uint64_t i = lo; i < hi; i++) {
			if (__atomic_load_n(&v->pause, __ATOMIC_ACQUIRE) ||
			    __atomic_load_n(&v->stop, __ATOMIC_ACQUIRE)) {
				pthread_mutex_lock(&v->lock);
				v->parked = true;
				pthread_cond_broadcast(&v->cond);
				while (v->pause && !v->stop)
					pthread_cond_wait(&v->cond, &v->lock);
				v->parked = false;
				pthread_mutex_unlock(&v->lock);
				if (__atomic_load_n(&v->stop, __ATOMIC_ACQUIRE))
					return NULL;
			}
			*(volatile uint64_t *)(v->ram + i * PAGE) = pass << 32 | i;
			v->record[i] = pass << 32 | i;
			atomic_fetch_add_explicit(&v->writes, 1, memory_order_relaxed);
		}
	}
}

static int vmm_pause(void *opaque)
{
	struct vmm *v = opaque;
	struct sched_param param;
	int policy;

	if (!pthread_getschedparam(pthread_self(), &policy, &param) && policy == v->sched_want)
		v->sched_pauses++;
	pthread_mutex_lock(&v->lock);
	v->pause = true;
	while (v->writing && !v->parked)
		pthread_cond_wait(&v->cond, &v->lock);
	if (v->pauses < MAX_PAUSES)
		v->writes_at[v->pauses] = atomic_load(&v->writes);
	if (v->pauses < MAX_PAUSES)
		v->pause_ns[v->pauses] = now_ns();
	v->pauses++;
	pthread_mutex_unlock(&v->lock);
	return 0;
}

/*
 * In /proc/self/maps, a mapping of `first` bytes outside the guest's RAM,
 * then 2 MiB of reserve (---p), then another mapping, all side by side:
 * the first two pieces' old memory, each aside in a mapping of its own.
 */
static bool aside_apart(const struct vmm *v, uint64_t first)
{
	struct { unsigned long long s, e; char perm[8]; } m[3] = { 0 }, now;
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %7s", &now.s, &now.e, now.perm) != 3)
			continue;
		/* The last three mappings. */
		m[0] = m[1];
		m[1] = m[2];
		m[2] = now;
		found = m[0].e - m[0].s == first && !strcmp(m[0].perm, "rw-p") &&
			m[1].s == m[0].e && m[1].e - m[1].s == 2 * MiB &&
			!strcmp(m[1].perm, "---p") &&
			m[2].s == m[1].e && !strcmp(m[2].perm, "rw-p") &&
			(m[2].e <= (uintptr_t)v->ram || m[0].s >= (uintptr_t)v->ram + v->len);
	}
	if (f)
		fclose(f);
	return found;
}

static int vmm_resume(void *opaque)
{
	struct vmm *v = opaque;

	/* The first piece is the probe. */
	if (v->look_aside && !v->apart_seen)
		v->apart_seen = aside_apart(v, PROBE);
	pthread_mutex_lock(&v->lock);
	if (v->resumes < MAX_PAUSES)
		v->resumed_at[v->resumes] = atomic_load(&v->writes);
	if (v->resumes < MAX_PAUSES)
		v->resume_ns[v->resumes] = now_ns();
	v->resumes++;
	v->pause = false;
	pthread_cond_broadcast(&v->cond);
	pthread_mutex_unlock(&v->lock);
	return v->resumes == v->fail_resume ? -EIO : 0;
}

/* 2 MiB-aligned, THP-advised anonymous memory, or fd-backed at fd. */
static uint8_t *map_ram(uint64_t len, int fd)
{
	uint8_t *p = mmap(NULL, len + 2 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *at;

	if (p == MAP_FAILED)
		return NULL;
	at = (uint8_t *)(((uintptr_t)p + 2 * MiB - 1) & ~(uintptr_t)(2 * MiB - 1));
	if (mmap(at, len, PROT_READ | PROT_WRITE,
		 MAP_FIXED | (fd >= 0 ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS), fd, 0) ==
	    MAP_FAILED)
		return NULL;
	if (fd < 0)
		madvise(at, len, MADV_HUGEPAGE);
	for (uint64_t i = 0; i < len / 8; i++)
		((uint64_t *)at)[i] = pattern(i);
	return at;
}

static int vmm_up(struct vmm *v, uint64_t len, int fd, bool writing)
{
	const struct memmig_vm_ops ops = {
		.sz = sizeof(ops), .pause = vmm_pause, .resume = vmm_resume,
	};
	const struct memmig_vm_slot s = {
		.sz = sizeof(s), .slot = SLOT, .gpa = 1ULL << 32, .size = len, .fd = fd,
	};
	struct memmig_vm_slot slot = s;
	int rc;

	memset(v, 0, sizeof(*v));
	pthread_mutex_init(&v->lock, NULL);
	pthread_cond_init(&v->cond, NULL);
	v->len = len;
	v->ram = map_ram(len, fd);
	v->record = calloc(len / PAGE, sizeof(uint64_t));
	if (!v->ram || !v->record)
		return -ENOMEM;
	slot.hva = v->ram;
	rc = memmig_vm_new(ctx, -1, &ops, v, &v->vm);
	if (!rc)
		rc = memmig_vm_add_slot(v->vm, &slot);
	v->writing = writing;
	if (!rc && writing)
		rc = -pthread_create(&v->thread, NULL, writer, v);
	return rc;
}

/* Stops the writer; the pages it wrote hold what it recorded, the others
 * and every other word the fill.  Returns the pages that do not. */
static uint64_t vmm_down(struct vmm *v)
{
	uint64_t bad = 0;

	if (v->writing) {
		pthread_mutex_lock(&v->lock);
		v->stop = true;
		pthread_cond_broadcast(&v->cond);
		pthread_mutex_unlock(&v->lock);
		pthread_join(v->thread, NULL);
	}
	for (uint64_t pg = 0; v->ram && pg < v->len / PAGE; pg++) {
		const uint64_t *w = (const uint64_t *)(v->ram + pg * PAGE);
		uint64_t first = v->record && v->record[pg] ? v->record[pg] : pattern(pg * PAGE / 8);

		if (w[0] != first) {
			bad++;
			continue;
		}
		for (uint64_t i = 1; i < PAGE / 8; i++)
			if (w[i] != pattern(pg * PAGE / 8 + i)) {
				bad++;
				break;
			}
	}
	memmig_vm_unref(v->vm);
	if (v->ram)
		munmap(v->ram, v->len);
	free(v->record);
	return bad;
}

static int migrate_flags(struct vmm *v, struct memmig_live_report *rep, unsigned int flags)
{
	const struct memmig_live_opts o = {
		.sz = sizeof(o), .slot = SLOT, .target_node = 0, .flags = flags,
	};

	memset(rep, 0, sizeof(*rep));
	rep->sz = sizeof(*rep);
	return memmig_vm_migrate(v->vm, &o, rep);
}

static int migrate(struct vmm *v, struct memmig_live_report *rep)
{
	return migrate_flags(v, rep, 0);
}

static void test_pieces(void)
{
	const uint64_t len = 64 * MiB;
	struct memmig_live_report rep;
	struct vmm v;

	CU_ASSERT_EQUAL_FATAL(vmm_up(&v, len, -1, false), 0);
	CU_ASSERT_EQUAL(migrate(&v, &rep), 0);
	printf("  (%u pieces of up to %llu MiB, pauses %.3f ms at the longest, "
	       "%.3f ms in all)\n", rep.pauses, (unsigned long long)(rep.piece_bytes / MiB),
	       rep.pause_s * 1e3, rep.pause_total_s * 1e3);
	/* The first piece is the probe: more than one piece. */
	CU_ASSERT(rep.pauses >= 2);
	CU_ASSERT_EQUAL(v.pauses, rep.pauses);
	CU_ASSERT_EQUAL(v.resumes, rep.pauses);
	CU_ASSERT(rep.piece_bytes >= PROBE && rep.piece_bytes < len);
	CU_ASSERT(rep.piece_bytes % (2 * MiB) == 0);
	CU_ASSERT_EQUAL(rep.bytes_switched, len);
	CU_ASSERT(rep.pause_total_s >= rep.pause_s && rep.pause_s > 0);
	CU_ASSERT(rep.swap_total_s >= rep.pause_swap_s && rep.swap_total_s <= rep.pause_total_s);
	CU_ASSERT(rep.switchover_s >= rep.pause_total_s);
	CU_ASSERT(rep.pause_stop_s + rep.pause_harvest_s + rep.pause_copy_s +
		  rep.pause_swap_s <= rep.pause_s);
	CU_ASSERT_EQUAL(vmm_down(&v), 0);
}

static void test_writer(void)
{
	const uint64_t len = 64 * MiB;
	struct memmig_live_report rep;
	unsigned int idle = 0;
	struct vmm v;

	CU_ASSERT_EQUAL_FATAL(vmm_up(&v, len, -1, true), 0);
	while (atomic_load(&v.writes) < len / PAGE)
		usleep(1000);
	CU_ASSERT_EQUAL(migrate(&v, &rep), 0);
	CU_ASSERT(rep.pauses >= 2);
	CU_ASSERT_EQUAL(v.pauses, rep.pauses);
	/*
	 * Between two pauses the guest runs at least as long as the last
	 * pause held it: memmig's promise, in time.  Whether the writer got a
	 * CPU in that time is the scheduler's (a gap without a write came once
	 * in five on a loaded 2-CPU host): counted, not asserted.
	 */
	for (unsigned int i = 1; i < v.pauses && i < MAX_PAUSES; i++) {
		uint64_t held = v.resume_ns[i - 1] - v.pause_ns[i - 1];
		uint64_t ran = v.pause_ns[i] - v.resume_ns[i - 1];

		idle += v.writes_at[i] == v.resumed_at[i - 1];
		if (ran < held)
			CUNIT_FAILF("gap %u: the guest ran %llu ns after a pause of %llu ns", i,
				    (unsigned long long)ran, (unsigned long long)held);
	}
	printf("  (%u pieces; %u of %u gaps without a write; %llu writes)\n", rep.pauses, idle,
	       v.pauses - 1, (unsigned long long)atomic_load(&v.writes));
	CU_ASSERT(atomic_load(&v.writes) > 0);
	CU_ASSERT_EQUAL(vmm_down(&v), 0);
}

static void test_resume_fails_between(void)
{
	const uint64_t len = 64 * MiB;
	struct memmig_live_report rep;
	struct vmm v;

	CU_ASSERT_EQUAL_FATAL(vmm_up(&v, len, -1, true), 0);
	v.fail_resume = 1;
	CU_ASSERT_EQUAL(migrate(&v, &rep), -EIO);
	CU_ASSERT_EQUAL(rep.resume_err, -EIO);
	CU_ASSERT_EQUAL(v.pauses, 1);
	CU_ASSERT_EQUAL(rep.bytes_switched, PROBE);
	CU_ASSERT_EQUAL(vmm_down(&v), 0);
}

static void test_memfd_one_piece(void)
{
	const uint64_t len = 32 * MiB;
	struct memmig_live_report rep;
	struct vmm v;
	int fd = memfd_create("test-live-pieces", MFD_CLOEXEC);

	CU_ASSERT_FATAL(fd >= 0 && ftruncate(fd, len) == 0);
	CU_ASSERT_EQUAL_FATAL(vmm_up(&v, len, fd, true), 0);
	CU_ASSERT_EQUAL(migrate(&v, &rep), 0);
	CU_ASSERT_EQUAL(rep.pauses, 1);
	CU_ASSERT_EQUAL(rep.piece_bytes, len);
	CU_ASSERT_EQUAL(rep.bytes_switched, len);
	CU_ASSERT_EQUAL(vmm_down(&v), 0);
	close(fd);
}

static void test_slow_swap(void)
{
	/* 66 ms a GiB: ten times the Zen 5 host's two mremaps. */
	const double delay_s_per_gib = 66e-3, budget_s = 5e-3;
	const uint64_t len = 256 * MiB;
	struct memmig_ctx *fast = ctx;
	struct memmig_live_report rep;
	struct vmm v;
	int rc;

	setenv("MEMMIG_SWAP_DELAY", "66", 1);
	rc = memmig_ctx_new(&ctx);
	unsetenv("MEMMIG_SWAP_DELAY");
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(vmm_up(&v, len, -1, false), 0);
	CU_ASSERT_EQUAL(migrate(&v, &rep), 0);
	printf("  (%u pieces of up to %llu MiB; pauses %.3f ms at the longest, %.3f ms in all; "
	       "swaps %.3f ms in all)\n", rep.pauses,
	       (unsigned long long)(rep.piece_bytes / MiB), rep.pause_s * 1e3,
	       rep.pause_total_s * 1e3, rep.swap_total_s * 1e3);
	CU_ASSERT(rep.swap_total_s >= delay_s_per_gib * len / (1ULL << 30));
	/* What memmig controls, whatever else runs on the host: every swap
	 * it timed cost at least the delay, so no piece is larger than a
	 * fifth of the budget at that cost (15.5 MiB), and there are as many
	 * pieces.  The pauses themselves are what a quiet host makes of
	 * them: 1.1-1.4 ms where this was written. */
	CU_ASSERT(rep.piece_bytes <= budget_s / 5 / delay_s_per_gib * (1ULL << 30));
	CU_ASSERT(rep.pauses >= len / (budget_s / 5 / delay_s_per_gib * (1ULL << 30)));
	CU_ASSERT_EQUAL(vmm_down(&v), 0);
	memmig_ctx_unref(ctx);
	ctx = fast;
}

/*
 * A guest that rewrites a hot spot without end: its dirty pages often do
 * not fit the pause of the piece they are in, so the piece is cut before
 * them and the rest goes as pieces of its own.  Every write survives the
 * cuts.  How much one pause copies is printed, not asserted: the cut keeps
 * it to what a fifth of the budget copies at the rate the last pauses had
 * (188-448 KiB in most runs here, 5.2-6.9 MiB before the cut), but that
 * rate is a measure of this host (6-14 GB/s here), and what the guest
 * writes between a piece's last harvest and its stop is copied too.
 */
static void test_hot_spot_cut(void)
{
	const uint64_t len = 256 * MiB;
	struct memmig_live_report rep;
	struct vmm v;

	CU_ASSERT_EQUAL_FATAL(vmm_up(&v, len, -1, false), 0);
	v.hot_lo = 48 * MiB / PAGE;
	v.hot_hi = 80 * MiB / PAGE;
	v.writing = true;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&v.thread, NULL, writer, &v), 0);
	while (atomic_load(&v.writes) < 2 * (v.hot_hi - v.hot_lo))
		usleep(1000);
	CU_ASSERT_EQUAL(migrate(&v, &rep), 0);
	printf("  (%u pieces of up to %llu KiB; at most %llu KiB copied in one pause, %llu in "
	       "all; pauses %.3f ms at the longest)\n", rep.pauses,
	       (unsigned long long)(rep.piece_bytes >> 10),
	       (unsigned long long)(rep.pause_bytes_max >> 10),
	       (unsigned long long)(rep.pause_bytes >> 10), rep.pause_s * 1e3);
	CU_ASSERT(rep.pauses >= 2);
	CU_ASSERT_EQUAL(v.pauses, rep.pauses);
	CU_ASSERT_EQUAL(rep.bytes_switched, len);
	CU_ASSERT(rep.pause_bytes_max <= rep.pause_bytes);
	CU_ASSERT_EQUAL(vmm_down(&v), 0);
}

/*
 * Each piece's old memory goes aside into a mapping of its own.  Next to
 * the last piece's it would merge with it, and the kernel moves a merged
 * mapping's page tables under the reverse map's lock, which reclaim and
 * DAMON take to walk it: swaps of 1.2-5.1 ms where they took 0.2-0.3.
 */
static void test_aside_apart(void)
{
	const uint64_t len = 64 * MiB;
	struct memmig_live_report rep;
	struct vmm v;

	CU_ASSERT_EQUAL_FATAL(vmm_up(&v, len, -1, false), 0);
	v.look_aside = true;
	CU_ASSERT_EQUAL(migrate(&v, &rep), 0);
	CU_ASSERT(rep.pauses >= 2);
	CU_ASSERT(v.apart_seen);
	CU_ASSERT_EQUAL(vmm_down(&v), 0);
}

/*
 * A VMM thread at SCHED_BATCH and nice 3 runs two migrations.  Every
 * pause runs at SCHED_FIFO where the process may have it (at the caller's
 * own where it may not), and the thread has its policy and nice value
 * back after; with MEMMIG_LIVE_KEEP_SCHED every pause runs at its own.
 */
static void *sched_caller(void *arg)
{
	struct vmm *v = arg;
	struct memmig_live_report rep;
	struct sched_param param = { .sched_priority = 1 };
	bool rt = !pthread_setschedparam(pthread_self(), SCHED_FIFO, &param);
	int policy = -1, batch, nice3;

	/* Not _FATAL on this thread: its longjmp() belongs to the test's. */
	param.sched_priority = 0;
	batch = pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
	nice3 = setpriority(PRIO_PROCESS, (id_t)gettid(), 3);
	CU_ASSERT_EQUAL(batch, 0);
	CU_ASSERT_EQUAL(nice3, 0);
	if (batch || nice3)
		return NULL;
	printf("  (real-time priority %s here)\n", rt ? "allowed" : "not allowed");
	v->sched_want = rt ? SCHED_FIFO : SCHED_BATCH;
	CU_ASSERT_EQUAL(migrate(v, &rep), 0);
	CU_ASSERT(rep.pauses >= 2);
	CU_ASSERT_EQUAL(v->sched_pauses, rep.pauses);
	CU_ASSERT_EQUAL(pthread_getschedparam(pthread_self(), &policy, &param), 0);
	CU_ASSERT_EQUAL(policy, SCHED_BATCH);
	CU_ASSERT_EQUAL(getpriority(PRIO_PROCESS, (id_t)gettid()), 3);

	v->sched_want = SCHED_BATCH;
	v->sched_pauses = 0;
	CU_ASSERT_EQUAL(migrate_flags(v, &rep, MEMMIG_LIVE_KEEP_SCHED), 0);
	CU_ASSERT(rep.pauses >= 1);
	CU_ASSERT_EQUAL(v->sched_pauses, rep.pauses);
	return NULL;
}

static void test_pause_sched(void)
{
	struct vmm v;
	pthread_t t;

	CU_ASSERT_EQUAL_FATAL(vmm_up(&v, 64 * MiB, -1, false), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, sched_caller, &v), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(vmm_down(&v), 0);
}

/* Is there tracking without KVM here? */
static bool tracking(void)
{
	struct memmig_live_report rep;
	struct vmm v;
	int rc = vmm_up(&v, 2 * MiB, -1, false);

	if (!rc)
		rc = migrate(&v, &rep);
	vmm_down(&v);
	return rc != -EOPNOTSUPP;
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
		{ "a range in pieces, the first a probe", test_pieces },
		{ "a writer between pieces loses nothing and runs", test_writer },
		{ "resume() fails between pieces: they stand", test_resume_fails_between },
		{ "a file copy in one piece", test_memfd_one_piece },
		{ "a swap ten times slower: pieces that fit", test_slow_swap },
		{ "a hot spot cut off its piece loses no write", test_hot_spot_cut },
		{ "each piece's old memory aside on its own", test_aside_apart },
		{ "pauses at real-time priority, the caller's own after", test_pause_sched },
		CU_TEST_INFO_NULL,
	};
	static CU_SuiteInfo suites[] = {
		{ "live pieces", suite_init, suite_clean, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	return cunit_main_if(suites, &ctx, tracking,
			     "no userfaultfd write protection nor soft-dirty bits here");
}
