/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The machine-check-recoverable copy against real SIGBUS:
 *  - BUS_ADRERR: a file mapped in the middle of a 64 MiB source, then
 *    truncated under its mapping;
 *  - BUS_MCEERR_AR: poison markers (UFFDIO_POISON) on a shared memfd
 *    mapping, where the kernel's read of the file still succeeds;
 * and the handler chain: the application's SIGBUS handler, installed
 * before or after memmig's guard, still gets the faults that are not
 * memmig's, and the default action still kills.  Then the signal setups of
 * real VMMs: SIGBUS blocked (QEMU's threads) and read from a signalfd, a
 * memory error reported at its page's address, and an application handler
 * that leaves a copy with siglongjmp.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cunit-main.h"

#define PAGE 4096UL
#define MiB (1UL << 20)
#define SRC_LEN (64 * MiB)
#define WIN_OFF (30 * MiB + 3 * PAGE)	/* the file window: not 2 MB aligned */
#define WIN_LEN (4 * MiB)
#define WIN_KEEP (MiB + 2 * PAGE)	/* what truncation leaves of the file */
#define HOLE_OFF (WIN_OFF + WIN_KEEP)
#define HOLE_LEN (WIN_LEN - WIN_KEEP)
#define DST_FILL 0xee

static struct memmig_ctx *ctx;

static uint8_t pattern(size_t off)
{
	return (uint8_t)(off * 131 + (off >> 12) * 7 + 1);
}

static void fill(uint8_t *p, size_t len, size_t base)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(base + i);
}

/* Offsets of the first byte in [from, to) that is not the pattern. */
static size_t find_bad(const uint8_t *p, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (p[i] != pattern(i))
			return i;
	return SIZE_MAX;
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The 64 MiB source with a 4 MiB file window, truncated to WIN_KEEP. */
struct holed {
	uint8_t *src, *dst;
	int fd;
};

static int holed_make(struct holed *h)
{
	h->src = map_anon(SRC_LEN);
	h->dst = map_anon(SRC_LEN);
	h->fd = memfd_create("mcsafe-window", MFD_CLOEXEC);
	if (!h->src || !h->dst || h->fd < 0 || ftruncate(h->fd, WIN_LEN) < 0 ||
	    mmap(h->src + WIN_OFF, WIN_LEN, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, h->fd, 0) == MAP_FAILED)
		return -1;
	fill(h->src, SRC_LEN, 0);
	memset(h->dst, DST_FILL, SRC_LEN);
	return ftruncate(h->fd, WIN_KEEP);
}

static void holed_free(struct holed *h)
{
	munmap(h->src, SRC_LEN);
	munmap(h->dst, SRC_LEN);
	close(h->fd);
}

/* What the bad-page callback saw: contiguous ranges, coalesced. */
struct bad_log {
	pthread_mutex_t lock;
	uint64_t off, len, calls;
	int err;
	bool gap;		/* a range did not follow the previous one */
};

static void on_bad(void *opaque, uint64_t off, uint64_t len, int err)
{
	struct bad_log *b = opaque;

	pthread_mutex_lock(&b->lock);
	if (!b->calls)
		b->off = off;
	else if (b->off + b->len != off)
		b->gap = true;
	if (b->calls && b->err != err)
		b->gap = true;
	b->len += len;
	b->err = err;
	b->calls++;
	pthread_mutex_unlock(&b->lock);
}

static void check_holed_copy(struct holed *h, ssize_t left, const struct bad_log *b)
{
	size_t bad;

	if (left != (ssize_t)HOLE_LEN)
		CUNIT_FAILF("not copied: %zd, want %lu", left, HOLE_LEN);
	CU_ASSERT_EQUAL(b->off, HOLE_OFF);
	CU_ASSERT_EQUAL(b->len, HOLE_LEN);
	CU_ASSERT_EQUAL(b->calls, HOLE_LEN / PAGE);
	CU_ASSERT_EQUAL(b->err, -EFAULT);
	CU_ASSERT_FALSE(b->gap);
	bad = find_bad(h->dst, 0, HOLE_OFF);
	if (bad != SIZE_MAX)
		CUNIT_FAILF("before the hole: byte %#zx differs", bad);
	bad = find_bad(h->dst, HOLE_OFF + HOLE_LEN, SRC_LEN);
	if (bad != SIZE_MAX)
		CUNIT_FAILF("after the hole: byte %#zx differs", bad);
	/* Nothing was made up for the hole: not zeros, not anything. */
	for (size_t i = HOLE_OFF; i < HOLE_OFF + HOLE_LEN; i++)
		if (h->dst[i] != DST_FILL) {
			CUNIT_FAILF("hole byte %#zx written: %#x", i, h->dst[i]);
			break;
		}
}

/* The whole source copied over a refilled destination with flags, checked. */
static void holed_copy_flags(struct holed *h, unsigned int flags)
{
	struct bad_log b = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct memmig_mc_opts o = { .sz = sizeof(o), .flags = flags,
				    .src_fd = -1, .bad = on_bad, .opaque = &b };

	memset(h->dst, DST_FILL, SRC_LEN);
	check_holed_copy(h, memmig_copy_mc(ctx, h->dst, h->src, SRC_LEN, &o), &b);
}

static void test_truncated_window(void)
{
	struct holed h;

	CU_ASSERT_EQUAL_FATAL(holed_make(&h), 0);
	holed_copy_flags(&h, 0);
	holed_free(&h);
}

/* Every flag combination a caller would use, and NULL opts. */
static void test_truncated_flags(void)
{
	static const unsigned int flags[] = {
		0, MEMMIG_COPY_NONTEMPORAL, MEMMIG_COPY_TEMPORAL,
		MEMMIG_COPY_PMEM, MEMMIG_COPY_PMEM | MEMMIG_COPY_NODRAIN,
	};
	struct holed h;

	CU_ASSERT_EQUAL_FATAL(holed_make(&h), 0);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		holed_copy_flags(&h, flags[i]);
	memset(h.dst, DST_FILL, SRC_LEN);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, h.dst, h.src, SRC_LEN, NULL), HOLE_LEN);
	/* Unaligned edges: one byte into the hole's first page. */
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, h.dst + 5, h.src + HOLE_OFF - 3, 4, NULL), 1);
	CU_ASSERT_EQUAL(memcmp(h.dst + 5, h.src + HOLE_OFF - 3, 3), 0);
	holed_free(&h);
}

/* The NT loops' ways of reading the source (nt_prefetch, nt_block), each
 * set on the context: a fault in a block loaded before it is stored loses
 * nothing and makes nothing up either. */
static void test_truncated_nt_ways(void)
{
	static const struct { size_t pf, block; } way[] = {
		{ 0, 0 }, { 4096, 0 }, { 0, 1024 }, { 0, 512 },
	};
	static const unsigned int flags[] = { MEMMIG_COPY_NONTEMPORAL, MEMMIG_COPY_PMEM };
	struct memmig_tuning saved = { .sz = sizeof(saved) }, t;
	struct holed h;

	CU_ASSERT_EQUAL_FATAL(memmig_ctx_get_tuning(ctx, &saved), 0);
	CU_ASSERT_EQUAL_FATAL(holed_make(&h), 0);
	for (size_t w = 0; w < sizeof(way) / sizeof(way[0]); w++) {
		t = saved;
		t.nt_prefetch = way[w].pf;
		t.nt_block = way[w].block;
		CU_ASSERT_EQUAL_FATAL(memmig_ctx_set_tuning(ctx, &t), 0);
		for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
			holed_copy_flags(&h, flags[i]);
	}
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &saved), 0);
	holed_free(&h);
}

struct thread_arg {
	struct holed h;
	ssize_t left;
	struct bad_log b;
};

static void *copy_thread(void *p)
{
	struct thread_arg *a = p;
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .bad = on_bad,
				    .opaque = &a->b };

	a->left = memmig_copy_mc(ctx, a->h.dst, a->h.src, SRC_LEN, &o);
	return NULL;
}

/* Each thread its own guard: faults do not cross over. */
static void test_threads(void)
{
	struct thread_arg a[2] = {
		{ .b = { .lock = PTHREAD_MUTEX_INITIALIZER } },
		{ .b = { .lock = PTHREAD_MUTEX_INITIALIZER } },
	};
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(holed_make(&a[i].h), 0);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, copy_thread, &a[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		check_holed_copy(&a[i].h, a[i].left, &a[i].b);
		holed_free(&a[i].h);
	}
}

/* A poison marker faults as a memory error (BUS_MCEERR_AR) where the
 * kernel has CONFIG_MEMORY_FAILURE (its sysctl exists), else as BUS_ADRERR. */
static int marker_errno(void)
{
	return access("/proc/sys/vm/memory_failure_early_kill", F_OK) ? -EFAULT :
									 -EHWPOISON;
}

/* Poison markers on a shared memfd mapping: the mapping faults with
 * BUS_MCEERR_AR, the file still reads. */
static void test_poison_kernel_read(void)
{
	const size_t len = 8 * MiB, bad[] = { 0, 3 * MiB + 5 * PAGE, len - PAGE };
	int fd = memfd_create("mcsafe-poison", MFD_CLOEXEC);
	uint8_t *src, *dst = map_anon(len);
	struct bad_log b = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .bad = on_bad,
				    .opaque = &b };
	int rc;

	CU_ASSERT_FATAL(fd >= 0 && dst && ftruncate(fd, len) == 0);
	src = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CU_ASSERT_FATAL(src != MAP_FAILED);
	fill(src, len, 0);
	for (size_t i = 0; i < 3; i++) {
		rc = memmig_poison_mark(ctx, src + bad[i], PAGE);
		if (rc == -EOPNOTSUPP) {
			printf("  (no UFFDIO_POISON in this kernel: not tested)\n");
			goto out;
		}
		CU_ASSERT_EQUAL_FATAL(rc, 0);
	}
	/* Without the file: three pages lost, as memory errors. */
	memset(dst, DST_FILL, len);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, dst, src, len, &o), 3 * PAGE);
	CU_ASSERT_EQUAL(b.calls, 3);
	CU_ASSERT_EQUAL(b.err, marker_errno());
	CU_ASSERT_EQUAL(find_bad(dst, PAGE, bad[1]), SIZE_MAX);
	CU_ASSERT_EQUAL(find_bad(dst, bad[1] + PAGE, len - PAGE), SIZE_MAX);
	CU_ASSERT_EQUAL(dst[bad[1]], DST_FILL);
	/* With it: the kernel reads them, nothing is lost. */
	b.calls = 0;
	o.src_fd = fd;
	memset(dst, DST_FILL, len);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, dst, src, len, &o), 0);
	CU_ASSERT_EQUAL(b.calls, 0);
	CU_ASSERT_EQUAL(find_bad(dst, 0, len), SIZE_MAX);
out:
	munmap(src, len);
	munmap(dst, len);
	close(fd);
}

/* The marker is in the page table: it moves with mremap(), as a live
 * migration's swap moves the copy over the guest's RAM. */
static void test_marker_moves(void)
{
	uint8_t *a = map_anon(4 * PAGE), *b = map_anon(4 * PAGE), *dst = map_anon(4 * PAGE);
	int rc;

	CU_ASSERT_FATAL(a && b && dst);
	fill(a, 4 * PAGE, 0);
	rc = memmig_poison_mark(ctx, a + 2 * PAGE, PAGE);
	if (rc == -EOPNOTSUPP) {
		printf("  (no UFFDIO_POISON in this kernel: not tested)\n");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_FATAL(mremap(a, 4 * PAGE, 4 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, b) == b);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, dst, b, 4 * PAGE, NULL), PAGE);
	CU_ASSERT_EQUAL(find_bad(dst, 0, 2 * PAGE), SIZE_MAX);
	CU_ASSERT_EQUAL(find_bad(dst, 3 * PAGE, 4 * PAGE), SIZE_MAX);
	munmap(b, 4 * PAGE);
	munmap(dst, 4 * PAGE);
}

/* A bad() callback that copies with a guard of its own: the outer copy
 * still survives the faults after it. */
struct nest {
	struct holed *h;
	unsigned int calls;
	ssize_t inner;
};

static void on_bad_nested(void *opaque, uint64_t off, uint64_t len, int err)
{
	struct nest *n = opaque;
	uint8_t scratch[PAGE];

	if (n->calls++ == 0)
		n->inner = memmig_copy_mc(ctx, scratch, n->h->src + HOLE_OFF, PAGE, NULL);
}

static void test_nested(void)
{
	struct holed h;
	struct nest n = { .h = &h };
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .bad = on_bad_nested,
				    .opaque = &n };

	CU_ASSERT_EQUAL_FATAL(holed_make(&h), 0);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, h.dst, h.src, SRC_LEN, &o), HOLE_LEN);
	CU_ASSERT_EQUAL(n.inner, PAGE);
	CU_ASSERT_EQUAL(n.calls, HOLE_LEN / PAGE);
	CU_ASSERT_EQUAL(find_bad(h.dst, HOLE_OFF + HOLE_LEN, SRC_LEN), SIZE_MAX);
	holed_free(&h);
}

static void test_bad_args(void)
{
	uint8_t buf[2 * PAGE] = { 0 };
	struct memmig_mc_opts o = { .sz = 1 };

	CU_ASSERT_EQUAL(memmig_copy_mc(NULL, buf, buf + PAGE, PAGE, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, buf, buf + 8, PAGE, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, NULL, buf, 8, NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, buf, buf + PAGE, PAGE, &o), -EINVAL);
	o.sz = sizeof(o);
	o.flags = MEMMIG_COPY_TEMPORAL | MEMMIG_COPY_NONTEMPORAL;
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, buf, buf + PAGE, PAGE, &o), -EINVAL);
	o.flags = 1u << 20;
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, buf, buf + PAGE, PAGE, &o), -EINVAL);
	CU_ASSERT_EQUAL(memmig_copy_mc(ctx, buf, buf + PAGE, 0, NULL), 0);
	CU_ASSERT_EQUAL(memmig_poison_mark(ctx, buf + 1, PAGE), -EINVAL);
	CU_ASSERT_EQUAL(memmig_poison_mark(ctx, buf, 0), -EINVAL);
	CU_ASSERT_EQUAL(memmig_poison_mark(NULL, buf, PAGE), -EINVAL);
}

/* Not mapped, in part or whole: the caller's -EFAULT, not the kernel's
 * -EOPNOTSUPP ("cannot"). */
static void test_poison_unmapped(void)
{
	uint8_t *p = map_anon(2 * PAGE);

	CU_ASSERT_FATAL(p && !munmap(p + PAGE, PAGE));
	CU_ASSERT_EQUAL(memmig_poison_mark(ctx, p, 2 * PAGE), -EFAULT);
	CU_ASSERT_EQUAL(memmig_poison_mark(ctx, p + PAGE, PAGE), -EFAULT);
	munmap(p, PAGE);
}

/* ---- the handler chain, each case in a child of its own ---- */

static sigjmp_buf app_env;
static volatile sig_atomic_t app_calls, app_code;
static void *volatile app_addr;

static void app_sigbus(int sig, siginfo_t *si, void *uc)
{
	app_calls++;
	app_code = si->si_code;
	app_addr = si->si_addr;
	siglongjmp(app_env, 1);
}

static void app_install(void)
{
	struct sigaction sa = { .sa_sigaction = app_sigbus, .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/* The application reads a vanished page itself: its handler must see it. */
static int app_touch(const volatile uint8_t *p)
{
	if (!sigsetjmp(app_env, 1))
		(void)*p;
	return app_calls;
}

enum chain_case { APP_BEFORE, APP_AFTER, APP_NONE };

/* Exit 0: memmig's copy and the application's handler both did right. */
static int chain_child(enum chain_case c)
{
	struct holed h;
	uint8_t *vanished;
	ssize_t left;

	if (c == APP_BEFORE)
		app_install();
	if (holed_make(&h) < 0)
		return 10;
	vanished = h.src + HOLE_OFF + PAGE;
	if (memmig_copy_mc(ctx, h.dst, h.src, SRC_LEN, NULL) != (ssize_t)HOLE_LEN)
		return 11;
	if (c == APP_AFTER) {
		app_install(); /* replaces memmig's: the next copy chains again */
		if (memmig_copy_mc(ctx, h.dst, h.src, SRC_LEN, NULL) != (ssize_t)HOLE_LEN)
			return 12;
	}
	if (c == APP_NONE) {
		(void)*(volatile uint8_t *)vanished; /* must die of SIGBUS */
		return 13;
	}
	if (app_touch(vanished) != 1 || app_code != BUS_ADRERR)
		return 14;
	left = memmig_copy_mc(ctx, h.dst, h.src, SRC_LEN, NULL);
	if (left != (ssize_t)HOLE_LEN || app_calls != 1)
		return 15;
	return 0;
}

/* SIGBUS had its default action when the program started (no sanitizer
 * runtime in front of it). */
static bool bus_default;

static int chain_case_child(void *c)
{
	return chain_child(*(enum chain_case *)c);
}

static void run_chain(enum chain_case c, const char *what)
{
	int status = cunit_in_child(chain_case_child, &c);

	CU_ASSERT_FATAL(status != -1);
	if (c == APP_NONE && !bus_default) {
		/* A sanitizer's runtime had SIGBUS first: the chain reached it. */
		if (!status)
			CUNIT_FAILF("%s: the fault was not passed on", what);
	} else if (c == APP_NONE) {
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGBUS)
			CUNIT_FAILF("%s: status %#x, want death by SIGBUS", what, status);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		CUNIT_FAILF("%s: status %#x", what, status);
	}
}

static void test_chain_app_before(void)
{
	run_chain(APP_BEFORE, "application handler installed first");
}

static void test_chain_app_after(void)
{
	run_chain(APP_AFTER, "application handler installed after the guard");
}

static void test_chain_default(void)
{
	run_chain(APP_NONE, "no application handler");
}

/* ---- the signal setups of real VMMs, each in a child of its own ---- */

static int void_child(void *fn)
{
	return ((int (*)(void))fn)();
}

/* Exit 0 expected; anything else, a signal above all, is a failure (a
 * jump into a dead frame may loop: killed after 30 s). */
static void run_child(int (*fn)(void), const char *what)
{
	int status = cunit_in_child(void_child, (void *)fn);

	CU_ASSERT_FATAL(status != -1);
	if (WIFSIGNALED(status))
		CUNIT_FAILF("%s: killed by signal %d", what, WTERMSIG(status));
	else if (WEXITSTATUS(status))
		CUNIT_FAILF("%s: exit %d", what, WEXITSTATUS(status));
}

static void bus_block(void)
{
	sigset_t bus;

	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	pthread_sigmask(SIG_BLOCK, &bus, NULL);
}

static bool bus_blocked(void)
{
	sigset_t cur;

	return !pthread_sigmask(SIG_BLOCK, NULL, &cur) && sigismember(&cur, SIGBUS) == 1;
}

/* check_holed_copy() for a child: 0 when the copy did right. */
static int holed_copy_ok(struct holed *h, const struct memmig_mc_opts *o,
			 const struct bad_log *b)
{
	ssize_t left = memmig_copy_mc(ctx, h->dst, h->src, SRC_LEN, o);

	return left == (ssize_t)HOLE_LEN && b->off == HOLE_OFF && b->len == HOLE_LEN &&
	       b->err == -EFAULT && !b->gap && find_bad(h->dst, 0, HOLE_OFF) == SIZE_MAX &&
	       find_bad(h->dst, HOLE_OFF + HOLE_LEN, SRC_LEN) == SIZE_MAX ? 0 : 1;
}

/* QEMU's threads block SIGBUS: a fault with it blocked killed the process. */
static int blocked_child(void)
{
	struct bad_log b = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .bad = on_bad,
				    .opaque = &b };
	struct holed h;

	bus_block();
	if (holed_make(&h) < 0)
		return 10;
	if (holed_copy_ok(&h, &o, &b))
		return 11;
	return bus_blocked() ? 0 : 12;	/* the mask given back */
}

static void test_blocked(void)
{
	run_child(blocked_child, "SIGBUS blocked in the copying thread");
}

/* ... and read from a signalfd: a SIGBUS sent to the thread during the
 * copy (here from the bad() callback) is the application's, and waits
 * there for it. */
struct sent_log {
	struct bad_log b;
	bool sent;
};

static void on_bad_send(void *opaque, uint64_t off, uint64_t len, int err)
{
	struct sent_log *s = opaque;

	on_bad(&s->b, off, len, err);
	if (!s->sent) {
		s->sent = true;
		syscall(SYS_tgkill, getpid(), gettid(), SIGBUS);
	}
}

/* Blocks SIGBUS in this thread and reads it from a signalfd, as QEMU. */
static int bus_signalfd(void)
{
	sigset_t bus;

	bus_block();
	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	return signalfd(-1, &bus, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* The one SIGBUS this thread sent itself waits in the signalfd, and
 * nothing else: none of memmig's own faults. */
static bool only_sent_waits(int sfd)
{
	struct signalfd_siginfo fi;

	if (read(sfd, &fi, sizeof(fi)) != sizeof(fi) || fi.ssi_signo != SIGBUS ||
	    fi.ssi_code != SI_TKILL || fi.ssi_pid != (uint32_t)getpid())
		return false;
	return read(sfd, &fi, sizeof(fi)) < 0 && errno == EAGAIN;
}

static int signalfd_child(void)
{
	struct sent_log s = { .b = { .lock = PTHREAD_MUTEX_INITIALIZER } };
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .bad = on_bad_send,
				    .opaque = &s };
	struct holed h;
	int sfd = bus_signalfd();

	if (sfd < 0 || holed_make(&h) < 0)
		return 10;
	if (holed_copy_ok(&h, &o, &s.b))
		return 11;
	if (!bus_blocked())
		return 12;
	return only_sent_waits(sfd) ? 0 : 13;
}

static void test_signalfd(void)
{
	run_child(signalfd_child, "SIGBUS blocked and read from a signalfd");
}

/*
 * A batch (memmig_copy_mc_begin() .. _end()) in a thread that blocks
 * SIGBUS and reads it from a signalfd: two faulting copies survive, a
 * SIGBUS sent to the thread between them (outside any copy, SIGBUS
 * unblocked by the batch) waits for the signalfd, and end gives the mask
 * back; nested pairs keep it unblocked until the outer end.
 */
static int batch_child(void)
{
	struct bad_log b = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .bad = on_bad,
				    .opaque = &b };
	struct holed h;
	int sfd = bus_signalfd();

	if (sfd < 0 || holed_make(&h) < 0)
		return 10;
	if (memmig_copy_mc_begin() || bus_blocked())
		return 11;	/* the batch runs with SIGBUS open */
	if (holed_copy_ok(&h, &o, &b))
		return 12;
	syscall(SYS_tgkill, getpid(), gettid(), SIGBUS);	/* between copies */
	if (memmig_copy_mc_begin())
		return 13;
	memset(&b, 0, sizeof(b));
	pthread_mutex_init(&b.lock, NULL);
	if (holed_copy_ok(&h, &o, &b))
		return 14;
	memmig_copy_mc_end();
	if (bus_blocked())
		return 15;	/* the outer batch still runs */
	memmig_copy_mc_end();
	if (!bus_blocked())
		return 16;
	if (!only_sent_waits(sfd))
		return 17;
	memmig_copy_mc_end();	/* unpaired: nothing happens */
	return bus_blocked() ? 0 : 19;
}

static void test_batch(void)
{
	run_child(batch_child, "a batch in a thread that blocks SIGBUS");
}

/* A batch where SIGBUS was never blocked leaves it unblocked. */
static int batch_open_child(void)
{
	struct bad_log b = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .bad = on_bad,
				    .opaque = &b };
	struct holed h;

	if (holed_make(&h) < 0 || memmig_copy_mc_begin())
		return 10;
	if (holed_copy_ok(&h, &o, &b))
		return 11;
	memmig_copy_mc_end();
	return bus_blocked() ? 12 : 0;
}

static void test_batch_open(void)
{
	run_child(batch_open_child, "a batch in a thread that does not block SIGBUS");
}

/*
 * A consumed memory error is reported with its page's address and
 * si_addr_lsb, not the byte read: a copy whose source starts inside the
 * page must still take it as its own.  The signal is made as the kernel's
 * machine-check path sends it, by the faulting thread itself: reading the
 * (PROT_NONE) page raises SIGSEGV, whose handler queues the SIGBUS to its
 * own thread and opens the page; the SIGBUS comes at the read.
 */
static uint8_t *mce_page;

static void mce_segv(int sig, siginfo_t *si, void *uc)
{
	siginfo_t mce = { .si_signo = SIGBUS, .si_code = BUS_MCEERR_AR };

	mce.si_addr = mce_page;
	mce.si_addr_lsb = 12;
	syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGBUS, &mce);
	mprotect(mce_page, PAGE, PROT_READ | PROT_WRITE);
}

static int mce_child(void)
{
	struct sigaction sa = { .sa_sigaction = mce_segv, .sa_flags = SA_SIGINFO };
	struct bad_log b = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1, .bad = on_bad,
				    .opaque = &b };
	uint8_t *buf = map_anon(2 * PAGE), dst[1000];
	ssize_t left;

	if (!buf)
		return 10;
	mce_page = buf + PAGE;
	fill(buf, 2 * PAGE, 0);
	memset(dst, DST_FILL, sizeof(dst));
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGBUS);	/* it comes after the handler */
	if (sigaction(SIGSEGV, &sa, NULL) || mprotect(mce_page, PAGE, PROT_NONE))
		return 11;
	left = memmig_copy_mc(ctx, dst, mce_page + 100, sizeof(dst), &o);
	if (left != (ssize_t)sizeof(dst))
		return 20;	/* the memory error was not taken as the copy's */
	if (b.calls != 1 || b.off != 0 || b.len != sizeof(dst) || b.err != -EHWPOISON)
		return 21;
	for (size_t i = 0; i < sizeof(dst); i++)
		if (dst[i] != DST_FILL)
			return 22;	/* made up */
	return 0;
}

static void test_mce_page_address(void)
{
	run_child(mce_child, "a memory error at the page's address");
}

/* The application's handler takes a fault on the destination (not
 * memmig's) and leaves the copy with siglongjmp: the guard of that copy
 * must be gone, not left armed on a dead frame.  The copy runs 64 KiB
 * below the frame jumped back to, so that the signal frames after it do
 * not overwrite the dead one and hide a jump into it. */
static __attribute__((noinline)) void copy_deep(uint8_t *dst, const uint8_t *src)
{
	volatile uint8_t pad[64 * 1024];

	pad[0] = 1;
	memmig_copy_mc(ctx, dst, src, SRC_LEN, NULL);
	pad[1] = pad[0];
}

static int escape_child(void)
{
	int fd = memfd_create("mcsafe-dst", MFD_CLOEXEC);
	uint8_t *bad_dst;
	struct holed h;

	app_install();
	if (fd < 0 || holed_make(&h) < 0)
		return 10;
	/* Past the end of an empty file: every write faults. */
	bad_dst = mmap(NULL, SRC_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (bad_dst == MAP_FAILED)
		return 11;
	if (!sigsetjmp(app_env, 1)) {
		copy_deep(bad_dst, h.src);
		return 12;	/* the destination did not fault, or a jump came back */
	}
	if (app_calls != 1 || app_code != BUS_ADRERR)
		return 13;
	/* The application's own read of a vanished page of that source: its
	 * handler's, not a jump into the copy that is gone. */
	if (app_touch(h.src + HOLE_OFF) != 2 || app_addr != h.src + HOLE_OFF)
		return 14;
	/* And the next copy is guarded as before. */
	if (memmig_copy_mc(ctx, h.dst, h.src, SRC_LEN, NULL) != (ssize_t)HOLE_LEN ||
	    app_calls != 2)
		return 15;
	return 0;
}

static void test_escape(void)
{
	run_child(escape_child, "the application's handler leaves a copy with siglongjmp");
}

static int suite_init(void)
{
	return memmig_ctx_new(&ctx);
}

static int suite_fini(void)
{
	memmig_ctx_unref(ctx);
	return 0;
}

/*
 * Each vector copy, forced through the tuning for every length: its
 * overlapping head and tail loads stay inside the source, so a copy that
 * runs into the hole reports exactly the bytes past the hole's start, and
 * the ones before it arrive.
 */
static void test_vec_exact(void)
{
	static const size_t lens[] = { 4, 16, 17, 33, 64, 65, 100, 129, 300,
				       511, 1000, 4096, 5000, 3 * PAGE + 7 };
	struct memmig_tuning saved = { .sz = sizeof(saved) }, t;
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
	struct holed h;
	int n = 0;

	CU_ASSERT_EQUAL_FATAL(holed_make(&h), 0);
	memmig_ctx_get_cpu(ctx, &cpu);
	CU_ASSERT_EQUAL_FATAL(memmig_ctx_get_tuning(ctx, &saved), 0);
	for (int p = MEMMIG_PRIM_VEC_SSE2; p <= MEMMIG_PRIM_VEC_AVX512; p++) {
		if (!memmig_prim_supported(&cpu, p))
			continue;
		n++;
		t = saved;
		t.vec_prim = p;
		t.vec_wide_prim = p;
		t.vec_max = MEMMIG_SIZE_NEVER;
		t.vec_wide_min = MEMMIG_SIZE_NEVER;
		t.nt_min = MEMMIG_SIZE_NEVER;
		CU_ASSERT_EQUAL_FATAL(memmig_ctx_set_tuning(ctx, &t), 0);
		CU_ASSERT_EQUAL(memmig_copy_query(ctx, SRC_LEN, 0), p);
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			for (size_t before = 1; before <= 70; before += 23) {
				size_t len = lens[i] + before;
				ssize_t left;

				memset(h.dst, DST_FILL, len + 64);
				left = memmig_copy_mc(ctx, h.dst + 1, h.src + HOLE_OFF - before,
						      len, NULL);
				if (left != (ssize_t)(len - before))
					CUNIT_FAILF("%s len %zu: %zd not copied, want %zu",
						    memmig_prim_name(p), len, left, len - before);
				if (memcmp(h.dst + 1, h.src + HOLE_OFF - before, before))
					CUNIT_FAILF("%s len %zu: the bytes before the hole "
						    "differ", memmig_prim_name(p), len);
				if (h.dst[0] != DST_FILL || h.dst[len + 1] != DST_FILL)
					CUNIT_FAILF("%s len %zu: wrote outside", memmig_prim_name(p),
						    len);
			}
		}
		/* And the whole source, as a migration copies it. */
		memset(h.dst, DST_FILL, SRC_LEN);
		{
			struct bad_log b = { .lock = PTHREAD_MUTEX_INITIALIZER };
			struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1,
						    .bad = on_bad, .opaque = &b };

			check_holed_copy(&h, memmig_copy_mc(ctx, h.dst, h.src, SRC_LEN, &o),
					 &b);
		}
	}
	CU_ASSERT_EQUAL(memmig_ctx_set_tuning(ctx, &saved), 0);
	holed_free(&h);
	if (cpu.features & MEMMIG_CPU_SSE2)
		CU_ASSERT(n >= 1);
}

static CU_TestInfo mc_tests[] = {
	{ "truncated window: exact count, both sides", test_truncated_window },
	{ "truncated window under each flag", test_truncated_flags },
	{ "truncated window, NT copies prefetching and by blocks", test_truncated_nt_ways },
	{ "vector copies report exactly what they did not copy", test_vec_exact },
	{ "two threads, two guards", test_threads },
	{ "poison markers, kernel read", test_poison_kernel_read },
	{ "poison marker moves with mremap", test_marker_moves },
	{ "a guarded copy inside the bad() callback", test_nested },
	{ "bad arguments", test_bad_args },
	{ "poison marks on unmapped memory: -EFAULT", test_poison_unmapped },
	{ "chain: application handler first", test_chain_app_before },
	{ "chain: application handler after", test_chain_app_after },
	{ "chain: default action still kills", test_chain_default },
	{ "SIGBUS blocked in the copying thread", test_blocked },
	{ "SIGBUS blocked and read from a signalfd", test_signalfd },
	{ "a batch with SIGBUS blocked: held for the signalfd, mask back", test_batch },
	{ "a batch with SIGBUS open leaves it open", test_batch_open },
	{ "a memory error reported at its page's address", test_mce_page_address },
	{ "the application's handler leaves with siglongjmp", test_escape },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "mcsafe", suite_init, suite_fini, NULL, NULL, mc_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	struct sigaction first;

	bus_default = !sigaction(SIGBUS, NULL, &first) &&
		      !(first.sa_flags & SA_SIGINFO) && first.sa_handler == SIG_DFL;
	return cunit_main(suites);
}
