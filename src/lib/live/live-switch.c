/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The switchover, in pieces.  Swapping the copy in costs time per byte:
 * page tables move, and KVM unmaps the range (0.3 to 7 ms a GiB on the
 * hosts seen).  In one pause it would grow with the guest.  So the range
 * goes in piece by piece, in address order, each under a pause of its own
 * in which the piece's last dirty pages are copied and the piece is
 * swapped in; between pauses the guest runs, on the copy for the pieces
 * switched and on its old memory for the rest, which is still tracked.
 * A piece is sized from the swap's cost per byte as this host measured
 * it, so that its pause fits the budget; a vm whose swap was never timed
 * starts with a small piece that times it.  Before its pause each piece
 * gets rounds of its own, as the range had in pre-copy, until its last
 * dirty pages fit; what still does not fit (where the guest writes now)
 * is left to the next piece, so that no pause copies more than a share of
 * the budget, however large the guest.
 */
#include <errno.h>
#include <math.h>
#include <time.h>

#include "lib/live/live-private.h"

/*
 * A piece is sized for a pause of PAUSE_SHARE of the budget, its swap for
 * SWAP_SHARE of it; the rest of the budget is headroom for what a host
 * does to one pause (a scheduler's slice, a hypervisor's exit): on the
 * AMD Zen 5 VM host a pause took up to 1.8 times what was expected, and
 * the longest of fifty pieces is the one that counts.
 */
#define PAUSE_SHARE 0.2
#define SWAP_SHARE 0.1
/* The first piece of a vm whose swap was never timed: 8 MiB take 0.06 ms
 * at the slowest swap seen (7 ms a GiB), so that on a host ten times
 * slower it still fits a 1 ms budget. */
#define PROBE_BYTES (8ULL << 20)
/* A piece is at most this many times the last: one swap that ran fast
 * must not size a piece far beyond what was timed. */
#define GROWTH_MAX 4
/* A piece's own rounds before its pause, at most, and without a new low
 * of its dirty set.  A guest writing where the piece is (a writer
 * sweeping its RAM dirties pages three times as fast as they copy here)
 * moves on after a few: a round of one piece costs little.  What still
 * does not fit is cut off the piece (piece_cut()). */
#define PIECE_ROUNDS 8
#define PIECE_STALL_ROUNDS 2
/* Streamed (MEMMIG_LIVE_STREAM), a piece is at most this share of the
 * range: a guest sweeping its RAM writes inside a piece about that share
 * of the time, and what it writes there while the piece is copied is
 * copied again.  Pieces sized by the swap alone (a GiB, a quarter of a 4 GiB
 * range) made such a guest's migration 1.4-2.1 times a raw copy here; a
 * 32nd of it, 1.1-1.5. */
#define STREAM_PIECES 32
/* A pause copies at least this much before its rate counts: a few pages
 * time the call, not the copy. */
#define COPY_LEARN_MIN (256ULL << 10)

static double budget_s(const struct memmig_live *l)
{
	return l->opts.pause_budget_ns * 1e-9;
}

uint64_t memmig_live_piece_pages(const struct memmig_live *l, uint64_t last)
{
	const struct memmig_vm *vm = l->vm;
	uint64_t left = memmig_live_end(l) - l->cur;
	uintptr_t at = (uintptr_t)l->slot.hva + l->cur * MEMMIG_PAGE_SIZE, to;
	double want;

	/* A shared copy is a file that takes the slot's place whole. */
	if (l->dest.shared || l->whole_slot_swap)
		return left;
	/* A swap too fast to time leaves only the growth limit. */
	want = !vm->pause_learnt ? (double)PROBE_BYTES :
	       vm->swap_s_per_byte > 0 ? budget_s(l) * SWAP_SHARE / vm->swap_s_per_byte :
					 (double)left * MEMMIG_PAGE_SIZE;
	if (l->stream && want > (double)l->npages * MEMMIG_PAGE_SIZE / STREAM_PIECES)
		want = (double)l->npages * MEMMIG_PAGE_SIZE / STREAM_PIECES;
	if (last && want > (double)last * MEMMIG_PAGE_SIZE * GROWTH_MAX)
		want = (double)last * MEMMIG_PAGE_SIZE * GROWTH_MAX;
	if (want >= (double)left * MEMMIG_PAGE_SIZE)
		return left;
	/* To a 2 MiB boundary of the host address: huge pages move whole. */
	to = (at + (uint64_t)want) & ~(uintptr_t)(MEMMIG_UNIT_SIZE - 1);
	if (to <= at)
		to = (at + MEMMIG_UNIT_SIZE) & ~(uintptr_t)(MEMMIG_UNIT_SIZE - 1);
	return (to - at) / MEMMIG_PAGE_SIZE < left ? (to - at) / MEMMIG_PAGE_SIZE : left;
}

/* The bytes a harvest for piece [lo, hi) walks: userfaultfd the piece's,
 * soft-dirty those not switched yet, KVM the range's (its log is the
 * slot's). */
static uint64_t harvest_span(const struct memmig_live *l, uint64_t lo, uint64_t hi)
{
	if (l->method == MEMMIG_DIRTY_UFFD_WP)
		return (hi - lo) * MEMMIG_PAGE_SIZE;
	if (l->method == MEMMIG_DIRTY_SOFT_DIRTY)
		return (memmig_live_end(l) - l->cur) * MEMMIG_PAGE_SIZE;
	return l->npages * MEMMIG_PAGE_SIZE;
}

/* As the last pauses' harvests with this tracking took, per byte, else as
 * the last pre-copy one. */
static double harvest_expected(const struct memmig_live *l, uint64_t span)
{
	const struct memmig_vm *vm = l->vm;

	if (vm->harvest_method == l->method)
		return vm->harvest_s_per_byte * span;
	return l->harvest_span ? l->harvest_s * span / l->harvest_span : 0;
}

/* A pause's copy per byte: as the last pauses copied, else as pre-copy's
 * last timed round, else a rate no machine is slower than. */
static double copy_s_per_byte(const struct memmig_live *l)
{
	if (l->vm->copy_s_per_byte > 0)
		return l->vm->copy_s_per_byte;
	return 1.0 / ((l->rep.copy_gbps > 0 ? l->rep.copy_gbps : 1.0) * 1e9);
}

double memmig_live_piece_expected(const struct memmig_live *l, uint64_t lo, uint64_t hi,
				  uint64_t dirty, struct memmig_live_report *p)
{
	p->expected_stop_s = l->vm->pause_stop_s;
	p->expected_harvest_s = harvest_expected(l, harvest_span(l, lo, hi));
	p->expected_copy_s = dirty * copy_s_per_byte(l);
	p->expected_swap_s = l->vm->swap_s_per_byte * (hi - lo) * MEMMIG_PAGE_SIZE;
	return p->expected_stop_s + p->expected_harvest_s + p->expected_copy_s +
	       p->expected_swap_s;
}

static double piece_target_s(const struct memmig_live *l)
{
	return budget_s(l) * PAUSE_SHARE;
}

static void sleep_until(double when)
{
	double left = when - memmig_now();
	struct timespec ts;

	if (left <= 0)
		return;
	ts.tv_sec = (time_t)left;
	ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
}

/*
 * The piece's own rounds, the guest running, until its last dirty pages
 * fit its pause, and until not_before: the guest runs between two pauses
 * at least as long as the last one took (back to back they would be one
 * long stop to it), and the rounds count towards that.  Soft-dirty's
 * harvest is a pause of its own: there the piece goes with what the last
 * harvest found.
 */
static int piece_rounds(struct memmig_live *l, uint64_t lo, uint64_t hi, double not_before)
{
	struct memmig_live_report e;
	uint64_t bytes, dirty, low = UINT64_MAX;
	unsigned int since_low = 0;
	double t;
	bool done;
	int rc = 0;

	if (l->method == MEMMIG_DIRTY_SOFT_DIRTY) {
		sleep_until(not_before);
		return 0;
	}
	for (unsigned int i = 0;; i++) {
		rc = memmig_dirty_harvest(l, lo, hi);
		dirty = memmig_live_dirty_bytes(l, lo, hi);
		if (dirty < low) {
			low = dirty;
			since_low = 0;
		} else {
			since_low++;
		}
		if (rc < 0)
			break;
		/* Streamed, the piece was never copied: the first copy is the
		 * guest's to run through, even where the pause could take it. */
		done = (i || !l->stream) &&
		       (i >= PIECE_ROUNDS || since_low >= PIECE_STALL_ROUNDS ||
			memmig_live_piece_expected(l, lo, hi, dirty, &e) <= piece_target_s(l));
		if (done && memmig_now() >= not_before)
			break;
		if (done) {
			/* What the guest dirties meanwhile is the next
			 * harvest's. */
			sleep_until(not_before);
			continue;
		}
		t = memmig_now();
		rc = memmig_live_copy_dirty(l, lo, hi, false, -1, &bytes);
		if (rc < 0)
			break;
		memmig_live_copied(l, bytes, memmig_now() - t);
	}
	return rc;
}

/*
 * Cuts piece [lo, hi) where its dirty pages would take its pause past
 * what a piece is sized for, and returns the new end: the rest, where the
 * guest writes now, gets rounds of its own as the next piece, by which
 * time a guest sweeping its RAM has moved on, and one writing a hot spot
 * has it in a piece of its own.  At 2 MiB boundaries of the host address,
 * a unit at least.  e: the pause expected for the piece as cut.
 */
static uint64_t piece_cut(const struct memmig_live *l, uint64_t lo, uint64_t hi,
			  struct memmig_live_report *e)
{
	uintptr_t base = (uintptr_t)l->slot.hva;
	double rate = copy_s_per_byte(l), room;
	uint64_t p, next, d, dirty = 0;

	/* The fixed parts as for the whole piece: no less for a part.  A
	 * shared copy is a file that takes the slot's place whole: uncut. */
	room = l->dest.shared || l->whole_slot_swap ?
		       HUGE_VAL : piece_target_s(l) - memmig_live_piece_expected(l, lo, hi, 0, e);
	for (p = lo; p < hi; p = next) {
		next = (((base + p * MEMMIG_PAGE_SIZE) | (MEMMIG_UNIT_SIZE - 1)) + 1 - base) /
		       MEMMIG_PAGE_SIZE;
		if (next > hi)
			next = hi;
		d = memmig_live_dirty_bytes(l, p, next);
		if (p > lo && (dirty + d) * rate > room)
			break;
		dirty += d;
	}
	memmig_live_piece_expected(l, lo, p, dirty, e);
	return p;
}

/* Moves *avg towards x, or sets it to x the first time.  An x the
 * scheduler stretched counts at most GROWTH_MAX times *avg: the pieces it
 * sizes shrink, but not to nothing at once. */
static void learn_capped(double *avg, double x, bool first)
{
	if (first) {
		*avg = x;
		return;
	}
	if (x > GROWTH_MAX * *avg)
		x = GROWTH_MAX * *avg;
	*avg += 0.5 * (x - *avg);
}

/*
 * What the next pauses' stop, harvest, copy and swap will cost: the first
 * pause timed replaces the guesses, later ones move a running average,
 * fast enough to follow the pieces of one switchover, slow enough that
 * one pause the scheduler stretched does not shrink every later piece.
 * The copy's rate counts once a pause copied enough to time it.
 */
static void learn_pause(struct memmig_live *l, const struct memmig_live_report *took,
			uint64_t piece, uint64_t span, uint64_t copied)
{
	struct memmig_vm *vm = l->vm;
	double w = vm->pause_learnt ? 0.5 : 1.0;

	vm->pause_stop_s += w * (took->pause_stop_s - vm->pause_stop_s);
	learn_capped(&vm->swap_s_per_byte, took->pause_swap_s / piece, !vm->pause_learnt);
	vm->pause_learnt = true;
	if (copied >= COPY_LEARN_MIN && took->pause_copy_s > 0)
		learn_capped(&vm->copy_s_per_byte, took->pause_copy_s / copied,
			     !vm->copy_s_per_byte);
	w = vm->harvest_method == l->method ? 0.5 : 1.0;
	vm->harvest_s_per_byte += w * (took->pause_harvest_s / span - vm->harvest_s_per_byte);
	vm->harvest_method = l->method;
}

/* Counts a pause; the longest keeps its parts in the report. */
static void pause_count(struct memmig_live *l, const struct memmig_live_report *took,
			const struct memmig_live_report *e, uint64_t bytes, uint64_t piece)
{
	struct memmig_live_report *r = &l->rep;

	r->pauses++;
	r->pause_total_s += took->pause_s;
	r->swap_total_s += took->pause_swap_s;
	r->pause_bytes += bytes;
	if (bytes > r->pause_bytes_max)
		r->pause_bytes_max = bytes;
	r->bytes_copied += bytes;
	if (piece > r->piece_bytes)
		r->piece_bytes = piece;
	if (took->pause_s < r->pause_s)
		return;
	r->pause_s = took->pause_s;
	r->pause_stop_s = took->pause_stop_s;
	r->pause_harvest_s = took->pause_harvest_s;
	r->pause_copy_s = took->pause_copy_s;
	r->pause_swap_s = took->pause_swap_s;
	r->resume_s = took->resume_s;
	r->expected_stop_s = e->expected_stop_s;
	r->expected_harvest_s = e->expected_harvest_s;
	r->expected_copy_s = e->expected_copy_s;
	r->expected_swap_s = e->expected_swap_s;
	r->pause_expected_s = e->expected_stop_s + e->expected_harvest_s +
			      e->expected_copy_s + e->expected_swap_s;
}

/* vCPUs stopped: the piece's last pages, its swap.  The first error. */
static int paused_part(struct memmig_live *l, uint64_t hi, struct memmig_live_report *took,
		       uint64_t *bytes)
{
	double t = memmig_now();
	int rc;

	rc = memmig_dirty_harvest(l, l->cur, hi);
	took->pause_harvest_s = memmig_now() - t;
	t = memmig_now();
	if (!rc)
		rc = memmig_live_copy_dirty(l, l->cur, hi, true, -1, bytes);
	took->pause_copy_s = memmig_now() - t;
	t = memmig_now();
	if (!rc)
		rc = memmig_live_dest_swap(l, l->cur, hi);
	took->pause_swap_s = memmig_now() - t;
	return rc;
}

/*
 * One piece, [l->cur, hi), under its pause.  A resume() that fails after
 * the last piece does not fail the migration: the guest is on the copy
 * (report.resume_err).  After another piece it ends the switchover.
 */
static int piece_pause(struct memmig_live *l, uint64_t hi, const struct memmig_live_report *e)
{
	struct memmig_vm *vm = l->vm;
	struct memmig_live_report took = { 0 };
	uint64_t bytes = 0, lo = l->cur;
	struct memmig_sched_was was;
	double t;
	int rc, rrc;

	memmig_live_sched_raise(l, &was);
	t = memmig_now();
	rc = vm->ops.pause(vm->opaque);
	took.pause_stop_s = memmig_now() - t;
	if (rc < 0) {
		memmig_live_sched_restore(&was);
		err(vm->ctx, "slot %u: pause: %d\n", l->slot.slot, rc);
		return rc;
	}
	l->paused = true;
	rc = paused_part(l, hi, &took, &bytes);
	l->paused = false;
	took.pause_s = memmig_now() - t;
	t = memmig_now();
	rrc = vm->ops.resume(vm->opaque);
	took.resume_s = memmig_now() - t;
	memmig_live_sched_restore(&was);
	pause_count(l, &took, e, bytes, (hi - lo) * MEMMIG_PAGE_SIZE);
	if (!rc) {
		l->cur = hi;
		learn_pause(l, &took, (hi - lo) * MEMMIG_PAGE_SIZE, harvest_span(l, lo, hi), bytes);
	}
	if (rrc < 0 && !rc && hi == memmig_live_end(l)) {
		err(vm->ctx, "slot %u: resume after the swap: %d; the guest's memory "
			     "is moved, its vCPUs are the VMM's to restart\n", l->slot.slot, rrc);
		l->rep.resume_err = rrc;
	} else if (rrc < 0) {
		err(vm->ctx, "slot %u: resume: %d\n", l->slot.slot, rrc);
		if (!rc) {
			l->rep.resume_err = rrc;
			rc = rrc;
		}
	}
	return rc;
}

/* Says which part of the longest pause over budget ran over its
 * expectation. */
static void explain_overrun(struct memmig_live *l)
{
	struct memmig_live_report rep = l->rep, *r = &rep;
	double took, expected;
	const char *part;

	rep.sz = sizeof(rep);	/* the public call reads no more than sz */
	part = memmig_live_report_overrun(r, &took, &expected);

	if (part)
		info(l->vm->ctx, "slot %u: pause %.2f ms over its budget of %.2f ms "
		     "(%.2f expected): the %s took %.2f ms, %.2f expected\n", l->slot.slot,
		     r->pause_s * 1e3, r->pause_budget_s * 1e3, r->pause_expected_s * 1e3,
		     part, took * 1e3, expected * 1e3);
}

int memmig_live_switchover(struct memmig_live *l)
{
	struct memmig_live_report e;
	double t0 = memmig_now(), resumed = 0, before = 0;
	uint64_t n = 0;
	int rc = 0;

	l->switching = true;
	while (!rc && l->cur < memmig_live_end(l)) {
		/* Streamed, the pieces still to come are on the old memory. */
		if (l->stream && memmig_live_cancelled(l)) {
			rc = -ECANCELED;
			break;
		}
		/* The rounds come last before the pause: what they leave dirty
		 * is what the pause copies. */
		n = memmig_live_piece_pages(l, n);
		rc = piece_rounds(l, l->cur, l->cur + n, resumed + l->rep.pause_total_s - before);
		if (rc < 0)
			break;
		before = l->rep.pause_total_s;
		/* n stays as planned: a cut says where the guest writes, not
		 * what the swap costs. */
		rc = piece_pause(l, piece_cut(l, l->cur, l->cur + n, &e), &e);
		resumed = memmig_now();
	}
	l->rep.switchover_s = memmig_now() - t0;
	l->rep.bytes_switched = l->dest.switched;
	if (l->rep.pauses)
		info(l->vm->ctx, "slot %u: switched over in %u pieces of up to %llu bytes, "
		     "pauses %.3f ms at the longest, %.3f ms in all, over %.3f ms\n",
		     l->slot.slot, l->rep.pauses, (unsigned long long)l->rep.piece_bytes,
		     l->rep.pause_s * 1e3, l->rep.pause_total_s * 1e3, l->rep.switchover_s * 1e3);
	if (!rc)
		explain_overrun(l);
	return rc;
}
