/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The machine-check-recoverable copy.  A poisoned source page (the kernel
 * answers a consumed memory error with SIGBUS BUS_MCEERR_AR, or warns with
 * BUS_MCEERR_AO) or a page that vanished (BUS_ADRERR: a file truncated
 * under its mapping) would kill the process in a plain copy.  Here each
 * 2 MB unit is copied under a per-thread guard; the SIGBUS handler jumps
 * out of a guarded copy that faulted on its own source, and the unit is
 * bisected down to the 4 KiB pages that fault.  Those are asked of the
 * kernel (pread on the backing file, which copies with the kernel's own
 * machine-check-safe copy) and, failing that, reported: never zero-filled.
 *
 * The guard holds whatever the calling thread's signal mask: a VMM's
 * threads block SIGBUS and read it from a signalfd (QEMU), and the kernel
 * kills a thread that faults with SIGBUS blocked.  So SIGBUS is unblocked
 * for the copy and blocked again after it; a SIGBUS sent meanwhile that is
 * not memmig's is held and queued again once the mask is back, for the
 * signalfd to read.  A memory error is reported with the address of its
 * page (si_addr_lsb), not of the byte read: the guard matches the page.
 * If the application's handler leaves a copy with siglongjmp (a fault on
 * the destination is the application's), the guard is off before it runs.
 *
 * Two system calls per memmig_copy_mc() call (is the handler still ours?
 * the mask) and none per unit: the handler runs with SA_NODEFER, so
 * jumping out of it needs no signal mask restored.  Two system calls are
 * ~0.45 us here, as long as a cold 4 KiB copy: a batch of copies between
 * memmig_copy_mc_begin() and _end() makes them once for all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/copy/copy-private.h"
#include "lib/copy/policy.h"


/* Bytes of the source prefetched before the guard is set up. */
#define MC_PREFETCH 256

/* One guarded copy in progress on this thread. */
struct mc_guard {
	sigjmp_buf env;
	uintptr_t lo, hi;	/* the source being read */
	volatile sig_atomic_t armed;
	volatile int code;	/* si_code of the last fault caught */
	struct mc_guard *prev;	/* the copy this one is nested in */
	bool app_blocked;	/* the thread had SIGBUS blocked before */
};

/* Initial-exec: the handler must not allocate to find it. */
static __thread struct mc_guard *mc_cur __attribute__((tls_model("initial-exec")));
/* A SIGBUS sent to a thread that blocks it, caught while a copy had it
 * unblocked: queued again after (one, as the kernel keeps one pending). */
static __thread siginfo_t mc_held __attribute__((tls_model("initial-exec")));
static __thread volatile sig_atomic_t mc_holding
	__attribute__((tls_model("initial-exec")));
/* Inside memmig_copy_mc_begin() .. _end(): how deep, and whether the
 * thread had SIGBUS blocked before begin (then held as during a copy). */
static __thread unsigned int mc_batch __attribute__((tls_model("initial-exec")));
static __thread bool mc_batch_blocked __attribute__((tls_model("initial-exec")));

static pthread_mutex_t mc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction mc_prev;	/* the application's, before ours */

static bool mc_code_caught(int code)
{
	return code == BUS_MCEERR_AR || code == BUS_MCEERR_AO || code == BUS_ADRERR;
}

/* Not a fault of this thread's own doing: sent, or a memory error the
 * kernel only warns of. */
static bool mc_async(const siginfo_t *si)
{
	return si->si_code <= 0 || si->si_code == BUS_MCEERR_AO;
}

/* A SIGBUS memmig did not cause: as if memmig's handler were not there. */
static void mc_chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = &mc_prev;

	if (p->sa_flags & SA_SIGINFO) {
		p->sa_sigaction(sig, si, uc);
		return;
	}
	if (p->sa_handler == SIG_IGN)
		return;
	if (p->sa_handler != SIG_DFL) {
		p->sa_handler(sig);
		return;
	}
	/* The default action: a fault retried on return now kills; a signal
	 * that was sent, or an asynchronous one, is raised again. */
	signal(sig, SIG_DFL);
	if (mc_async(si))
		raise(sig);
}

/* Whether a fault is the guarded copy's own: a vanished page at the byte
 * read, a memory error anywhere in the page (or huge page) it names. */
static bool mc_hits(const struct mc_guard *g, const siginfo_t *si)
{
	uintptr_t a = (uintptr_t)si->si_addr, len = 1;

	if (!mc_code_caught(si->si_code))
		return false;
	if (si->si_code != BUS_ADRERR) {
		unsigned int lsb = si->si_addr_lsb;

		len = 1UL << (lsb >= 12 && lsb <= 30 ? lsb : 12);
		a &= ~(len - 1);
	}
	return a < g->hi && a + len > g->lo;
}

static void mc_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct mc_guard *g = mc_cur;
	sig_atomic_t armed;

	if (g && g->armed && mc_hits(g, si)) {
		g->armed = 0;
		g->code = si->si_code;
		siglongjmp(g->env, 1);
	}
	if (((g && g->app_blocked) || (!g && mc_batch_blocked)) && mc_async(si)) {
		/* Blocked but for memmig: it waits for the copy's end. */
		mc_held = *si;
		mc_holding = 1;
		return;
	}
	if (!g) {
		mc_chain(sig, si, uc);
		return;
	}
	/* The application's handler may leave with siglongjmp: no guard of
	 * a dead frame must stay behind.  Back on if it returns. */
	armed = g->armed;
	mc_cur = g->prev;
	g->armed = 0;
	mc_chain(sig, si, uc);
	g->armed = armed;
	mc_cur = g;
}

static bool mc_is_ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == mc_sigbus;
}

int memmig_mc_guard_install(void)
{
	struct sigaction cur, sa = {
		.sa_sigaction = mc_sigbus,
		.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART,
	};
	int rc = 0;

	/* The usual case, one query and no lock: still installed. */
	if (sigaction(SIGBUS, NULL, &cur) < 0)
		return -errno;
	if (mc_is_ours(&cur))
		return 0;
	sigemptyset(&sa.sa_mask);
	pthread_mutex_lock(&mc_lock);
	if (sigaction(SIGBUS, NULL, &cur) < 0) {
		rc = -errno;
	} else if (!mc_is_ours(&cur)) {
		/* The chain target is in place before the handler can use it. */
		mc_prev = cur;
		if (sigaction(SIGBUS, &sa, NULL) < 0)
			rc = -errno;
	}
	pthread_mutex_unlock(&mc_lock);
	return rc;
}

/* One guarded copy; out of line, so that nothing of the caller's lives in
 * registers across the jump. */
struct mc_copy {
	struct memmig_ctx *ctx;
	struct mc_guard *g;
	int prim;
	unsigned int flags;
	/* The primitive called straight, with fn_flags, or NULL: through
	 * memmig_copy_dispatch() with flags. */
	memmig_prim_fn fn;
	unsigned int fn_flags;
	unsigned char *dst;
	const unsigned char *src;
	const struct memmig_mc_opts *o;
};

static __attribute__((noinline)) bool mc_try(const struct mc_copy *c, size_t off,
					     size_t n)
{
	struct mc_guard *g = c->g;

	if (sigsetjmp(g->env, 0))
		return false;
	g->armed = 1;
	if (c->fn)
		c->fn(c->dst + off, c->src + off, n, c->fn_flags);
	else
		memmig_copy_dispatch(c->ctx, c->prim, c->dst + off, c->src + off, n,
				     c->flags);
	g->armed = 0;
	return true;
}

/* SIGBUS unblocked for a copy: whether the thread had it blocked. */
static bool mc_unblock(void)
{
	sigset_t bus, old;

	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	return !pthread_sigmask(SIG_UNBLOCK, &bus, &old) && sigismember(&old, SIGBUS) == 1;
}

/* Blocked again, and what was held for the thread queued to it again:
 * pending, where its signalfd or sigwait finds it. */
static void mc_reblock(void)
{
	sigset_t bus;

	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	pthread_sigmask(SIG_BLOCK, &bus, NULL);
	if (mc_holding) {
		mc_holding = 0;
		syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGBUS, &mc_held);
	}
}

static int mc_errno(int code)
{
	return code == BUS_ADRERR ? -EFAULT : -EHWPOISON;
}

/* A span inside one source page that faults: the kernel's read, or lost. */
static size_t mc_page(const struct mc_copy *c, size_t off, size_t n)
{
	const struct memmig_mc_opts *o = c->o;
	unsigned char bounce[MEMMIG_PAGE_SIZE];
	int err = mc_errno(c->g->code);

	if (o->src_fd >= 0) {
		ssize_t r = pread(o->src_fd, bounce, n, (off_t)(o->src_offset + off));

		if (r == (ssize_t)n) {
			memmig_copy_dispatch(c->ctx, c->prim, c->dst + off, bounce, n,
					     c->flags);
			return 0;
		}
		/* A short read is the file's end: nothing backs the page. */
		err = r < 0 ? (errno == EIO ? -EIO : -errno) : -EFAULT;
	}
	if (o->bad)
		o->bad(o->opaque, off, n, err);
	return n;
}

static size_t mc_span(const struct mc_copy *c, size_t off, size_t n);

/* [off, off + n) faulted: halved down to the source pages that fault. */
static __attribute__((noinline)) size_t mc_split(const struct mc_copy *c,
						 size_t off, size_t n)
{
	uintptr_t s = (uintptr_t)c->src + off, mid;

	if ((s & ~(MEMMIG_PAGE_SIZE - 1)) == ((s + n - 1) & ~(MEMMIG_PAGE_SIZE - 1)))
		return mc_page(c, off, n);
	/* Split on a page boundary of the source: pages fail whole. */
	mid = (s + n / 2 + MEMMIG_PAGE_SIZE - 1) & ~(MEMMIG_PAGE_SIZE - 1);
	if (mid >= s + n)
		mid = (s + n - 1) & ~(MEMMIG_PAGE_SIZE - 1);
	return mc_span(c, off, mid - s) + mc_span(c, off + (mid - s), s + n - mid);
}

/* Copies [off, off + n), halving what faults down to source pages. */
static size_t mc_span(const struct mc_copy *c, size_t off, size_t n)
{
	return mc_try(c, off, n) ? 0 : mc_split(c, off, n);
}

/* memmig_copy_mc() once the guard is known to be installed. */
static ssize_t copy_mc_installed(struct memmig_ctx *ctx, void *dst, const void *src,
				 size_t len, const struct memmig_mc_opts *opts)
{
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1 };
	struct mc_guard g;	/* not zeroed whole: env is 200 bytes */
	struct mc_copy c = { .ctx = ctx, .g = &g, .dst = dst, .src = src, .o = &o };
	struct mc_guard *prev;
	size_t left = 0;
	int rc;

	if (!ctx || (opts && memmig_struct_in(&o, sizeof(o), opts) < 0))
		return -EINVAL;
	/* The whole length is the working set: it decides NT or not. */
	c.prim = memmig_policy(&ctx->cpu, &ctx->tuning, len, o.flags);
	if (c.prim < 0)
		return c.prim;
	if (!len)
		return 0;
	rc = memmig_copy_check(dst, src, len);
	if (rc)
		return rc;
	c.flags = o.flags | MEMMIG_COPY_NODRAIN;
	c.fn_flags = c.flags;
	c.fn = memmig_copy_direct(ctx, c.prim, &c.fn_flags);
	g.lo = (uintptr_t)src;
	g.hi = (uintptr_t)src + len;
	g.armed = 0;
	g.code = 0;
	/* A bad() callback may copy with a guard of its own: nest. */
	prev = mc_cur;
	g.prev = prev;
	if (prev)
		g.app_blocked = prev->app_blocked;
	else if (mc_batch)
		g.app_blocked = mc_batch_blocked;	/* unblocked at begin */
	else
		g.app_blocked = mc_unblock();
	mc_cur = &g;
	for (size_t off = 0; off < len; off += MEMMIG_UNIT_SIZE)
		left += mc_span(&c, off, len - off < MEMMIG_UNIT_SIZE ?
					 len - off : MEMMIG_UNIT_SIZE);
	mc_cur = prev;
	if (!prev && !mc_batch && g.app_blocked)
		mc_reblock();
	/* NOFLUSH leaves the flushes, and so the drain, to the caller. */
	if (!(o.flags & (MEMMIG_COPY_NODRAIN | MEMMIG_COPY_NOFLUSH)))
		memmig_copy_drain();
	return (ssize_t)left;
}

ssize_t memmig_copy_mc(struct memmig_ctx *ctx, void *dst, const void *src,
		       size_t len, const struct memmig_mc_opts *opts)
{
	/* In a batch, begin checked the handler and the mask. */
	int rc = mc_batch ? 0 : memmig_mc_guard_install();

	/*
	 * The first source lines asked for now, so that their misses overlap
	 * the guard's set-up instead of following it: a cold copy waits for
	 * every instruction before its first load.  A prefetch neither faults
	 * nor consumes the data (a poisoned line is signalled when an
	 * instruction reads it, in the guarded copy), and it stays inside
	 * the source.
	 */
	if (len && src) {
		const char *s = src;
		size_t n = len < MC_PREFETCH ? len : MC_PREFETCH;

		for (size_t off = 0; off < n; off += 64)
			__builtin_prefetch(s + off);
	}

	return rc ? rc : copy_mc_installed(ctx, dst, src, len, opts);
}

int memmig_copy_mc_begin(void)
{
	int rc;

	if (mc_batch) {
		mc_batch++;
		return 0;
	}
	rc = memmig_mc_guard_install();
	if (rc)
		return rc;
	/* Inside a guarded copy (a bad() callback), the copy has it. */
	mc_batch_blocked = mc_cur ? mc_cur->app_blocked : mc_unblock();
	mc_batch = 1;
	return 0;
}

void memmig_copy_mc_end(void)
{
	if (!mc_batch || --mc_batch)
		return;
	if (mc_batch_blocked && !mc_cur)
		mc_reblock();
	mc_batch_blocked = false;
}
