/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Live migration of guest RAM (pre-copy, as QEMU migrates between hosts,
 * here between tiers of one host):
 *  1. dirty logging on; copy every page of the range;
 *  2. rounds: harvest the pages the guest dirtied, copy them, until what is
 *     left fits the pause budget at the measured copy rate, or the round
 *     limit;
 *  3. pause the vCPUs, harvest once more, copy the rest, swap the copy in,
 *     resume; 4. logging off.
 * A page is copied only after KVM logs it again (re-protected), so a write
 * that lands during its copy is seen by the next harvest: nothing the
 * guest wrote is lost.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "lib/live/live-private.h"
#include "lib/migrate/migrate-private.h"
#include "lib/mm/nodemem.h"
#include "lib/mm/smaps.h"

#define DEFAULT_BUDGET_NS 5000000ULL
#define DEFAULT_ROUNDS 30
/* Rounds in a row without a new low of the dirty set: pre-copy is not
 * converging, and more rounds only add time. */
#define STALL_ROUNDS 3
/* Pages re-protected and copied per step: 32 MiB.  Small enough that a
 * page re-protected early is not rewritten long before its copy, large
 * enough that the ioctl is noise. */
#define CHUNK_WORDS 128

static const char *const method_names[] = {
	[MEMMIG_DIRTY_AUTO] = "auto",
	[MEMMIG_DIRTY_LOG] = "log",
	[MEMMIG_DIRTY_LOG_CLEAR] = "log-clear",
	[MEMMIG_DIRTY_RING] = "ring",
	[MEMMIG_DIRTY_UFFD_WP] = "uffd-wp",
	[MEMMIG_DIRTY_SOFT_DIRTY] = "soft-dirty",
};

const char *memmig_dirty_method_name(int method)
{
	if (method < 0 || method > MEMMIG_DIRTY_SOFT_DIRTY)
		return NULL;
	return method_names[method];
}

static const char *const stop_names[] = {
	[MEMMIG_LIVE_STOP_NONE] = "none",
	[MEMMIG_LIVE_STOP_CONVERGED] = "converged",
	[MEMMIG_LIVE_STOP_CLEAN] = "clean",
	[MEMMIG_LIVE_STOP_STALLED] = "stalled",
	[MEMMIG_LIVE_STOP_OVERHEAD] = "overhead",
	[MEMMIG_LIVE_STOP_ROUND_LIMIT] = "round-limit",
	[MEMMIG_LIVE_STOP_STREAMED] = "streamed",
};

const char *memmig_live_stop_name(int reason)
{
	if (reason < 0 || reason > MEMMIG_LIVE_STOP_STREAMED)
		return NULL;
	return stop_names[reason];
}

/*
 * The slot's memory is DAX.  The kernel's DAX write-fault path does not
 * handle userfaultfd write protection: on Linux 6.12 a thread writing a
 * write-protected fsdax page faults forever (insert_pfn() warns, the fault
 * retries).  Soft-dirty bits work there.
 */
static bool slot_on_dax(const struct memmig_live *l)
{
	struct memmig_vma *v = NULL;
	size_t n = 0;
	bool dax;

	if (memmig_vmas_read(0, &v, &n))
		return false;
	dax = memmig_vmas_backing(v, n, (uintptr_t)l->slot.hva, l->slot.size) ==
	      MEMMIG_BACKING_DAX;
	free(v);
	return dax;
}

/* AUTO: the rings if the VMM has them (KVM then refuses the log), else
 * the log with CLEAR where KVM has it; without KVM, userfaultfd write
 * protection, else (before Linux 6.7, or on DAX) soft-dirty bits. */
static int method_resolve(const struct memmig_live *l, int want, bool rings)
{
	struct memmig_vm *vm = l->vm;

	if (vm->fd < 0) {
		bool dax = slot_on_dax(l);

		if (want == MEMMIG_DIRTY_UFFD_WP && dax)
			return -EOPNOTSUPP;
		if (want == MEMMIG_DIRTY_AUTO)
			want = memmig_dirty_uffd_supported() && !dax ? MEMMIG_DIRTY_UFFD_WP :
								       MEMMIG_DIRTY_SOFT_DIRTY;
		if (want == MEMMIG_DIRTY_SOFT_DIRTY && !memmig_dirty_softdirty_supported())
			return -EOPNOTSUPP;
		return want == MEMMIG_DIRTY_UFFD_WP || want == MEMMIG_DIRTY_SOFT_DIRTY ?
			       want : -EOPNOTSUPP;
	}
	switch (want) {
	case MEMMIG_DIRTY_AUTO:
		if (rings)
			return MEMMIG_DIRTY_RING;
		return ioctl(vm->fd, KVM_CHECK_EXTENSION,
			     KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2) > 0 ?
			       MEMMIG_DIRTY_LOG_CLEAR : MEMMIG_DIRTY_LOG;
	case MEMMIG_DIRTY_LOG:
	case MEMMIG_DIRTY_LOG_CLEAR:
		return rings ? -EOPNOTSUPP : want;
	case MEMMIG_DIRTY_RING:
		return rings ? want : -ENXIO;
	case MEMMIG_DIRTY_UFFD_WP:
	case MEMMIG_DIRTY_SOFT_DIRTY:
		return -EOPNOTSUPP;	/* KVM's writes bypass the page tables */
	default:
		return -EINVAL;
	}
}

static int opts_check(struct memmig_live *l, bool rings)
{
	struct memmig_live_opts *o = &l->opts;
	uint64_t size = l->slot.size;

	if ((o->target_node >= 0) == (o->target_path != NULL) ||
	    (o->flags & ~(MEMMIG_LIVE_FAIL_OVER_BUDGET | MEMMIG_LIVE_STREAM |
			  MEMMIG_LIVE_KEEP_SCHED)) ||
	    ((o->flags & MEMMIG_LIVE_FAIL_OVER_BUDGET) && (o->flags & MEMMIG_LIVE_STREAM)))
		return -EINVAL;
	if (o->target_node >= 0 && memmig_node_check(l->vm->ctx, o->target_node) < 0)
		return -ENOENT;
	if (o->offset % MEMMIG_PAGE_SIZE || o->length % MEMMIG_PAGE_SIZE || o->offset >= size ||
	    o->length > size - o->offset)
		return -EINVAL;
	l->first = o->offset / MEMMIG_PAGE_SIZE;
	l->npages = (o->length ? o->length : size - o->offset) / MEMMIG_PAGE_SIZE;
	l->cur = l->first;
	/* A file backs a slot whole: its fd stands for all of it.  Without
	 * KVM there is no memslot to re-add: the new file moves over the old
	 * mapping, as anonymous memory does. */
	l->whole_slot_swap = l->slot.fd >= 0 && l->vm->fd >= 0;
	if ((l->slot.fd >= 0 || o->target_path) && l->npages != size / MEMMIG_PAGE_SIZE)
		return -EOPNOTSUPP;
	if (!o->pause_budget_ns)
		o->pause_budget_ns = DEFAULT_BUDGET_NS;
	if (!o->max_rounds)
		o->max_rounds = DEFAULT_ROUNDS;
	l->method = method_resolve(l, o->dirty_method, rings);
	return l->method < 0 ? l->method : 0;
}

static int live_alloc(struct memmig_live *l)
{
	l->words = bitmap_words(l->slot.size / MEMMIG_PAGE_SIZE);
	l->dirty = calloc(l->words, sizeof(uint64_t));
	l->pending = calloc(l->words, sizeof(uint64_t));
	l->log = calloc(l->words, sizeof(uint64_t));
	l->rounds = calloc(l->opts.max_rounds + 2, sizeof(*l->rounds));
	l->lost_map = calloc(l->words, sizeof(uint64_t));
	if (l->opts.target_path)
		l->target_path = strdup(l->opts.target_path);
	l->opts.target_path = l->target_path;
	if (!l->dirty || !l->pending || !l->log || !l->rounds || !l->lost_map ||
	    (l->opts.target_node < 0 && !l->target_path && !l->tracker))
		return -ENOMEM;
	return 0;
}

/* A live object on opts' slot (its opts copied, rings: whether the VMM
 * gave dirty rings), or -errno: -ENOENT no such slot. */
static int live_create(struct memmig_vm *vm, const struct memmig_live_opts *opts, bool tracker,
		       struct memmig_live **out, bool *rings)
{
	struct memmig_live *l = calloc(1, sizeof(*l));
	struct vm_slot *e;
	int rc;

	*out = l;
	if (!l)
		return -ENOMEM;
	l->refcount = 1;
	l->vm = memmig_vm_ref(vm);
	l->dest.fd = l->dest.old_fd = -1;
	l->uffd = l->pagemap = l->uffd_quit = -1;
	l->tracker = tracker;
	l->opts.target_node = -1;
	rc = memmig_struct_in(&l->opts, sizeof(l->opts), opts);
	pthread_mutex_lock(&vm->lock);
	e = rc ? NULL : memmig_vm_slot_find(vm, l->opts.slot);
	if (e)
		l->slot = e->s;
	*rings = vm->nrings > 0;
	pthread_mutex_unlock(&vm->lock);
	if (!rc && !e)
		rc = -ENOENT;
	return rc;
}

int memmig_live_new(struct memmig_vm *vm, const struct memmig_live_opts *opts,
		    struct memmig_live **out)
{
	struct memmig_live *l;
	bool rings;
	int rc;

	if (!vm || !opts || !out)
		return -EINVAL;
	rc = live_create(vm, opts, false, &l, &rings);
	if (!l)
		return rc;
	if (!rc)
		rc = opts_check(l, rings);
	if (!rc)
		rc = live_alloc(l);
	if (rc < 0) {
		memmig_live_unref(l);
		return rc;
	}
	*out = l;
	return 0;
}

int memmig_live_new_tracker(struct memmig_vm *vm, uint32_t slot, int method,
			    struct memmig_live **out)
{
	const struct memmig_live_opts o = { .sz = sizeof(o), .slot = slot, .target_node = -1 };
	struct memmig_live *l;
	bool rings;
	int rc = live_create(vm, &o, true, &l, &rings);

	if (!l)
		return rc;
	l->npages = l->slot.size / MEMMIG_PAGE_SIZE;
	/*
	 * KVM without rings: the log that re-protects as it reads.  CLEAR's
	 * manual protection is one mode for the whole VM, and a tracker that
	 * runs for hours would hold it against the VMM's own logging.
	 */
	if (!rc && method == MEMMIG_DIRTY_AUTO && vm->fd >= 0 && !rings)
		method = MEMMIG_DIRTY_LOG;
	if (!rc)
		rc = l->method = method_resolve(l, method, rings);
	if (rc >= 0)
		rc = live_alloc(l);
	if (rc < 0) {
		memmig_live_unref(l);
		return rc;
	}
	*out = l;
	return 0;
}

void memmig_live_unref(struct memmig_live *l)
{
	if (!l || __atomic_sub_fetch(&l->refcount, 1, __ATOMIC_ACQ_REL))
		return;
	memmig_live_dest_release(l);
	free(l->dirty);
	free(l->pending);
	free(l->log);
	free(l->rounds);
	free(l->lost_map);
	free(l->lost);
	free(l->target_path);
	memmig_vm_unref(l->vm);
	free(l);
}

static int prepare(struct memmig_live *l)
{
	double t = memmig_now();
	int rc;

	rc = memmig_live_dest_prepare(l);
	l->rep.prepare_s = memmig_now() - t;
	l->prepared = rc == 0;
	return rc;
}

int memmig_live_prepare(struct memmig_live *l)
{
	if (!l)
		return -EINVAL;
	if (l->prepared || l->ran)
		return -EALREADY;
	return prepare(l);
}

int memmig_live_cancel(struct memmig_live *l)
{
	if (!l)
		return -EINVAL;
	__atomic_store_n(&l->cancel, true, __ATOMIC_RELEASE);
	return 0;
}

/* Copies the runs of set bits in words [w, end) and clears them.  prim:
 * the full round's primitive, whose NT or not the pages keep; -1: chosen
 * by each run's length. */
static uint64_t copy_words(struct memmig_live *l, size_t w, size_t end, int prim)
{
	unsigned int flags = prim < 0 ? 0 : memmig_prim_is_nt(prim) ?
			     MEMMIG_COPY_NONTEMPORAL : MEMMIG_COPY_TEMPORAL;

	uint64_t bytes = 0, p = (uint64_t)w * 64;

	for (;;) {
		size_t i = p / 64;
		uint64_t bits = i < end ? l->dirty[i] & (~0ULL << (p % 64)) : 0, s;

		while (!bits && ++i < end)
			bits = l->dirty[i];
		if (!bits)
			break;
		s = (uint64_t)i * 64 + __builtin_ctzll(bits);
		bits = ~l->dirty[i] & (~0ULL << (s % 64));
		while (!bits && ++i < end)
			bits = ~l->dirty[i];
		p = bits ? (uint64_t)i * 64 + __builtin_ctzll(bits) : (uint64_t)end * 64;
		memmig_live_copy(l, s, p - s, flags);
		bytes += (p - s) * MEMMIG_PAGE_SIZE;
	}
	memset(&l->dirty[w], 0, (end - w) * sizeof(uint64_t));
	return bytes;
}

static bool words_empty(const uint64_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/*
 * Copies the dirty pages, a chunk at a time: re-protect (LOG_CLEAR), copy,
 * drain.  In the pause nothing is re-protected: the guest is stopped.
 * One batch of machine-check-safe copies: the guard's system calls once,
 * not once per run of pages.
 */
int memmig_live_copy_dirty(struct memmig_live *l, uint64_t lo, uint64_t hi, bool paused,
			   int prim, uint64_t *bytes)
{
	size_t w0 = lo / 64, w1 = bitmap_words(hi);
	uint64_t keep0, keep1;
	bool begun;
	int rc;

	*bytes = 0;
	if (lo >= hi)
		return 0;
	/* The edge words' pages outside [lo, hi) wait for their own piece. */
	keep0 = l->dirty[w0] & ~bitmap_range_mask(w0, lo, hi);
	keep1 = l->dirty[w1 - 1] & ~bitmap_range_mask(w1 - 1, lo, hi);
	l->dirty[w0] &= ~keep0;
	l->dirty[w1 - 1] &= ~keep1;
	rc = memmig_copy_mc_begin();
	begun = rc == 0;
	for (size_t w = w0; !rc && w < w1; w += CHUNK_WORDS) {
		size_t n = w1 - w < CHUNK_WORDS ? w1 - w : CHUNK_WORDS;

		if (!paused && (!l->switching || l->stream) && memmig_live_cancelled(l)) {
			rc = -ECANCELED;
			break;
		}
		if (words_empty(&l->dirty[w], n))
			continue;
		if (!paused)
			rc = memmig_dirty_clear(l, w, n);
		memmig_live_lost_mask(l, w, n);
		if (!rc)
			*bytes += copy_words(l, w, w + n, prim);
		memmig_copy_drain();
		if (!rc)
			rc = memmig_live_lost_check(l);
	}
	if (begun)
		memmig_copy_mc_end();
	l->dirty[w0] |= keep0;
	l->dirty[w1 - 1] |= keep1;
	return rc;
}

uint64_t memmig_live_dirty_bytes(const struct memmig_live *l, uint64_t lo, uint64_t hi)
{
	uint64_t n = 0;

	for (size_t w = lo / 64; lo < hi && w < bitmap_words(hi); w++)
		n += __builtin_popcountll(l->dirty[w] & bitmap_range_mask(w, lo, hi));
	return n * MEMMIG_PAGE_SIZE;
}

void memmig_live_copied(struct memmig_live *l, uint64_t bytes, double seconds)
{
	l->rep.bytes_copied += bytes;
	/* The rate the pause is sized with: the latest round that copied
	 * enough to time (scattered pages copy slower than a stream). */
	if (bytes >= (1ULL << 20) && seconds > 0)
		l->rep.copy_gbps = bytes / seconds / 1e9;
}

static void round_done(struct memmig_live *l, uint64_t bytes, double t0)
{
	struct live_round *r = &l->rounds[l->nrounds++];

	r->bytes = bytes;
	r->seconds = memmig_now() - t0;
	memmig_live_copied(l, bytes, r->seconds);
	info(l->vm->ctx, "slot %u round %u: %llu bytes in %.3f ms\n", l->slot.slot,
	     l->nrounds - 1, (unsigned long long)bytes, r->seconds * 1e3);
}

/* What the first piece's pause would take if it came now, in parts (into
 * p): its dirty pages as all of what is dirty, up to the piece's size. */
static double pause_expected(struct memmig_live *l, struct memmig_live_report *p)
{
	uint64_t hi = l->cur + memmig_live_piece_pages(l, 0);
	uint64_t dirty = memmig_live_dirty_bytes(l, l->cur, memmig_live_end(l));
	uint64_t piece = (hi - l->cur) * MEMMIG_PAGE_SIZE;

	return memmig_live_piece_expected(l, l->cur, hi, dirty < piece ? dirty : piece, p);
}

/*
 * Whether pre-copy ends after this harvest, and why.  It goes on only
 * while rounds still shrink what the pause would copy.
 */
struct precopy_watch {
	uint64_t low;		/* the smallest dirty set seen */
	unsigned int since_low;	/* rounds since it was seen */
	double harvested_at;
};

static int precopy_stop(struct memmig_live *l, struct precopy_watch *w)
{
	uint64_t dirty = memmig_live_dirty_bytes(l, l->cur, memmig_live_end(l));
	double now = memmig_now(), budget = l->opts.pause_budget_ns * 1e-9;
	struct memmig_live_report p;

	if (now > w->harvested_at)
		l->rep.dirty_gbps = dirty / (now - w->harvested_at) / 1e9;
	w->harvested_at = now;
	if (!dirty)
		return MEMMIG_LIVE_STOP_CLEAN;
	if (pause_expected(l, &p) <= budget)
		return MEMMIG_LIVE_STOP_CONVERGED;
	if (dirty < w->low) {
		w->low = dirty;
		w->since_low = 0;
	} else if (++w->since_low >= STALL_ROUNDS) {
		return p.expected_stop_s + p.expected_harvest_s + p.expected_swap_s > budget ?
			       MEMMIG_LIVE_STOP_OVERHEAD : MEMMIG_LIVE_STOP_STALLED;
	}
	if (l->nrounds > l->opts.max_rounds)
		return MEMMIG_LIVE_STOP_ROUND_LIMIT;
	return MEMMIG_LIVE_STOP_NONE;
}

/*
 * Rounds until what is dirty fits the first piece's pause, or until more
 * rounds cannot help.  A pause over budget is reported, or refused with
 * MEMMIG_LIVE_FAIL_OVER_BUDGET (-ETIMEDOUT).
 */
static int precopy(struct memmig_live *l)
{
	struct precopy_watch w = { .low = UINT64_MAX, .harvested_at = memmig_now() };
	double t = w.harvested_at;
	uint64_t bytes;
	int rc, why;

	rc = memmig_live_copy_dirty(l, l->cur, memmig_live_end(l), false, l->prim, &bytes);
	if (rc < 0)
		return rc;
	round_done(l, bytes, t);
	for (;;) {
		if (memmig_live_cancelled(l))
			return -ECANCELED;
		t = memmig_now();
		rc = memmig_dirty_harvest(l, l->cur, memmig_live_end(l));
		l->harvest_s = memmig_now() - t;
		l->harvest_span = l->rep.bytes;
		if (rc < 0)
			return rc;
		why = precopy_stop(l, &w);
		if (why != MEMMIG_LIVE_STOP_NONE)
			break;
		t = memmig_now();
		rc = memmig_live_copy_dirty(l, l->cur, memmig_live_end(l), false, -1, &bytes);
		if (rc < 0)
			return rc;
		round_done(l, bytes, t);
	}
	l->rep.stop_reason = why;
	l->rep.converged = why == MEMMIG_LIVE_STOP_CONVERGED || why == MEMMIG_LIVE_STOP_CLEAN;
	l->rep.stop_dirty_bytes = memmig_live_dirty_bytes(l, l->cur, memmig_live_end(l));
	l->rep.pause_expected_s = pause_expected(l, &l->rep);
	if (!l->rep.converged)
		info(l->vm->ctx, "slot %u: pre-copy %s after %u rounds: %llu bytes dirty, "
		     "dirtied at %.3f GB/s, copied at %.3f GB/s, pause %.1f ms "
		     "(fixed part %.1f ms) for a budget of %.1f ms\n", l->slot.slot,
		     memmig_live_stop_name(why), l->nrounds,
		     (unsigned long long)l->rep.stop_dirty_bytes, l->rep.dirty_gbps,
		     l->rep.copy_gbps, l->rep.pause_expected_s * 1e3,
		     (l->rep.pause_expected_s - l->rep.expected_copy_s) * 1e3,
		     l->rep.pause_budget_s * 1e3);
	if (!l->rep.converged && (l->opts.flags & MEMMIG_LIVE_FAIL_OVER_BUDGET))
		return -ETIMEDOUT;
	return 0;
}

int memmig_live_pause_part(const struct memmig_live_report *r, unsigned int i,
			   const char **name, double *took, double *expected)
{
	static const char *const names[] = { "stop", "harvest", "copy", "swap" };
	struct memmig_live_report c = { .sz = sizeof(c) };

	/* The caller's report up to its sz: a part it has no field for took
	 * and was expected to take 0 s. */
	if (!r || memmig_struct_in(&c, sizeof(c), r) < 0)
		return -EINVAL;
	if (i >= sizeof(names) / sizeof(names[0]))
		return -ENOENT;
	if (name)
		*name = names[i];
	if (took)
		*took = (const double[]){ c.pause_stop_s, c.pause_harvest_s, c.pause_copy_s,
					  c.pause_swap_s }[i];
	if (expected)
		*expected = (const double[]){ c.expected_stop_s, c.expected_harvest_s,
					      c.expected_copy_s, c.expected_swap_s }[i];
	return 0;
}

const char *memmig_live_report_overrun(const struct memmig_live_report *r, double *took,
				       double *expected)
{
	struct memmig_live_report c = { .sz = sizeof(c) };
	const char *name, *worst = NULL;
	double t, e, over = 0;

	if (!r || memmig_struct_in(&c, sizeof(c), r) < 0 || c.pause_s <= c.pause_budget_s)
		return NULL;
	for (unsigned int i = 0; !memmig_live_pause_part(r, i, &name, &t, &e); i++) {
		if (worst && t - e <= over)
			continue;
		worst = name;
		over = t - e;
		if (took)
			*took = t;
		if (expected)
			*expected = e;
	}
	return worst;
}

int memmig_live_claim_vm(struct memmig_live *l, bool on)
{
	struct memmig_vm *vm = l->vm;
	int rc = 0;

	pthread_mutex_lock(&vm->lock);
	if (!on)
		vm->active = NULL;
	else if (vm->active)
		rc = -EBUSY;
	else
		vm->active = l;
	pthread_mutex_unlock(&vm->lock);
	return rc;
}

int memmig_live_run(struct memmig_live *l)
{
	double t, freed;
	int rc, lost_rc;

	if (!l)
		return -EINVAL;
	if (l->ran)
		return -EALREADY;
	l->ran = true;
	l->rep.bytes = l->npages * MEMMIG_PAGE_SIZE;
	l->rep.dirty_method = l->method;
	l->rep.pause_budget_s = l->opts.pause_budget_ns * 1e-9;
	rc = l->prepared ? 0 : prepare(l);
	if (!rc)
		rc = memmig_live_claim_vm(l, true);
	if (rc < 0)
		goto out;
	t = memmig_now();
	/* The pre-copy rounds write the destination, cold: NT or not by the
	 * guest's size as a cold copy. */
	l->prim = memmig_copy_query(l->vm->ctx, l->rep.bytes, MEMMIG_COPY_COLD);
	rc = l->prim < 0 ? l->prim : memmig_dirty_start(l);
	/* Streaming needs pieces, and rounds that do not pause. */
	l->stream = (l->opts.flags & MEMMIG_LIVE_STREAM) && l->method != MEMMIG_DIRTY_SOFT_DIRTY &&
		    !l->dest.shared && !l->whole_slot_swap;
	if (!rc && l->stream) {
		l->rep.stop_reason = MEMMIG_LIVE_STOP_STREAMED;
		l->rep.converged = 1;	/* each piece is sized and cut to fit */
	} else if (!rc) {
		rc = precopy(l);
	}
	l->rep.precopy_s = memmig_now() - t;
	if (!rc)
		rc = memmig_live_switchover(l);
	/* The guest is on the copy now, whatever the file tier's msync says. */
	if (!rc)
		memmig_live_dest_persist(l);
	/*
	 * The old memory goes before the tracking: closing a userfaultfd
	 * un-protects every range it registered, under the mmap lock held
	 * for writing, and the old memory took its registration aside with
	 * it.  Freed first, it has none to walk: the close took 19-27 ms
	 * after a 4 GiB migration here, and 0.1 ms so.  Its freeing is not
	 * counted in total_s, as when it came after.
	 */
	freed = memmig_now();
	memmig_live_dest_release(l);
	freed = memmig_now() - freed;
	memmig_dirty_stop(l);
	memmig_live_claim_vm(l, false);
	l->rep.total_s = memmig_now() - t - freed;
	if (l->rep.total_s > 0)
		l->rep.gbps = l->rep.bytes / l->rep.total_s / 1e9;
out:
	/* After resume: the old memory is freed while the guest runs (done
	 * above once the tracking started). */
	memmig_live_dest_release(l);
	/* The VMM hears of lost pages whatever the result. */
	lost_rc = memmig_live_lost_finish(l);
	if (!rc)
		rc = lost_rc;
	l->rep.rounds = l->nrounds;
	l->rep.result = rc;
	if (rc < 0)
		err(l->vm->ctx, "slot %u: live migration: %d\n", l->slot.slot, rc);
	return rc;
}

int memmig_live_get_report(const struct memmig_live *l, struct memmig_live_report *out)
{
	struct memmig_live_report r;

	if (!l || !out)
		return -EINVAL;
	r = l->rep;
	r.sz = sizeof(r);
	return memmig_struct_out(out, &r, sizeof(r));
}

int memmig_live_get_round(const struct memmig_live *l, unsigned int idx,
			  uint64_t *bytes, double *seconds)
{
	if (!l || idx >= l->nrounds)
		return -EINVAL;
	if (bytes)
		*bytes = l->rounds[idx].bytes;
	if (seconds)
		*seconds = l->rounds[idx].seconds;
	return 0;
}

int memmig_vm_migrate(struct memmig_vm *vm, const struct memmig_live_opts *opts,
		      struct memmig_live_report *report)
{
	struct memmig_live *l;
	int rc;

	rc = memmig_live_new(vm, opts, &l);
	if (rc < 0)
		return rc;
	rc = memmig_live_run(l);
	if (report)
		memmig_live_get_report(l, report);
	memmig_live_unref(l);
	return rc;
}
