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
 * The guard costs one system call per memmig_copy_mc() call (is the handler
 * still ours?) and none per unit: the handler runs with SA_NODEFER, so
 * jumping out of it needs no signal mask restored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "copy-private.h"
#include "policy.h"

#define MC_PAGE 4096UL

/* One guarded copy in progress on this thread. */
struct mc_guard {
	sigjmp_buf env;
	uintptr_t lo, hi;	/* the source being read */
	volatile sig_atomic_t armed;
	volatile int code;	/* si_code of the last fault caught */
};

/* Initial-exec: the handler must not allocate to find it. */
static __thread struct mc_guard *mc_cur __attribute__((tls_model("initial-exec")));

static pthread_mutex_t mc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction mc_prev;	/* the application's, before ours */

static bool mc_code_caught(int code)
{
	return code == BUS_MCEERR_AR || code == BUS_MCEERR_AO || code == BUS_ADRERR;
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
	if (si->si_code <= 0 || si->si_code == BUS_MCEERR_AO)
		raise(sig);
}

static void mc_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct mc_guard *g = mc_cur;
	uintptr_t a = (uintptr_t)si->si_addr;

	if (g && g->armed && mc_code_caught(si->si_code) && a >= g->lo && a < g->hi) {
		g->armed = 0;
		g->code = si->si_code;
		siglongjmp(g->env, 1);
	}
	mc_chain(sig, si, uc);
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
	memmig_copy_dispatch(c->ctx, c->prim, c->dst + off, c->src + off, n, c->flags);
	g->armed = 0;
	return true;
}

static int mc_errno(int code)
{
	return code == BUS_ADRERR ? -EFAULT : -EHWPOISON;
}

/* A span inside one source page that faults: the kernel's read, or lost. */
static size_t mc_page(const struct mc_copy *c, size_t off, size_t n)
{
	const struct memmig_mc_opts *o = c->o;
	unsigned char bounce[MC_PAGE];
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

/* Copies [off, off + n), halving what faults down to source pages. */
static size_t mc_span(const struct mc_copy *c, size_t off, size_t n)
{
	uintptr_t s = (uintptr_t)c->src + off, mid;

	if (mc_try(c, off, n))
		return 0;
	if ((s & ~(MC_PAGE - 1)) == ((s + n - 1) & ~(MC_PAGE - 1)))
		return mc_page(c, off, n);
	/* Split on a page boundary of the source: pages fail whole. */
	mid = (s + n / 2 + MC_PAGE - 1) & ~(MC_PAGE - 1);
	if (mid >= s + n)
		mid = (s + n - 1) & ~(MC_PAGE - 1);
	return mc_span(c, off, mid - s) + mc_span(c, off + (mid - s), s + n - mid);
}

ssize_t memmig_copy_mc_installed(struct memmig_ctx *ctx, void *dst, const void *src,
				 size_t len, const struct memmig_mc_opts *opts)
{
	struct memmig_mc_opts o = { .sz = sizeof(o), .src_fd = -1 };
	struct mc_guard g = { .lo = (uintptr_t)src, .hi = (uintptr_t)src + len };
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
	/* A bad() callback may copy with a guard of its own: nest. */
	prev = mc_cur;
	mc_cur = &g;
	for (size_t off = 0; off < len; off += MEMMIG_UNIT_SIZE)
		left += mc_span(&c, off, len - off < MEMMIG_UNIT_SIZE ?
					 len - off : MEMMIG_UNIT_SIZE);
	mc_cur = prev;
	/* NOFLUSH leaves the flushes, and so the drain, to the caller. */
	if (!(o.flags & (MEMMIG_COPY_NODRAIN | MEMMIG_COPY_NOFLUSH)))
		memmig_copy_drain();
	return (ssize_t)left;
}

ssize_t memmig_copy_mc(struct memmig_ctx *ctx, void *dst, const void *src,
		       size_t len, const struct memmig_mc_opts *opts)
{
	int rc = memmig_mc_guard_install();

	return rc ? rc : memmig_copy_mc_installed(ctx, dst, src, len, opts);
}
