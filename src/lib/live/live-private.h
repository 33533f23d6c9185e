/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal to live migration: the migration, its tracker and destination. */
#ifndef MEMMIG_LIVE_PRIVATE_H
#define MEMMIG_LIVE_PRIVATE_H

#include "lib/mm/swap.h"
#include "lib/live/vm-private.h"

/* The copy of a range, and what the swap needs. */
struct live_dest {
	uint8_t *base;		/* the copy: page p of the range at base + p * 4K */
	uint64_t len;
	int fd;			/* a shared destination's file, or -1 */
	int old_fd;		/* memmig's file the slot left, closed after
				 * resume */
	bool shared;		/* MAP_SHARED (memfd or file tier) */
	struct memmig_swap_src src;	/* the source mapping's attributes */
	unsigned int copy_flags;	/* MEMMIG_COPY_PMEM on DAX */
	bool msync;		/* a file tier without DAX: msync after resume */
	uint8_t *synced_at;	/* the copy, once swapped in */
	void *spare;		/* where the old memory waits during the swap */
	uint64_t spare_len;
	uint64_t spare_holes;	/* pieces moved there: a hole after each */
	uint64_t switched;	/* bytes of the range swapped in, from its
				 * start: base's first bytes are gone */
};

/* Slot pages that could not be read (live-poison.c). */
struct live_lost {
	uint64_t page, n;
	int err;
};

struct live_round {
	uint64_t bytes;
	double seconds;
};

struct memmig_live {
	int refcount;
	struct memmig_vm *vm;
	struct memmig_live_opts opts;
	char *target_path;
	struct memmig_vm_slot slot;	/* as it was at new() */
	uint64_t first, npages;		/* the range, in slot pages */
	uint64_t cur;			/* its first page not switched over:
					 * the pages before are the copy's */
	int method;			/* resolved */
	bool whole_slot_swap;		/* fd-backed: re-add the memslot */

	uint64_t *dirty;		/* slot pages to copy (whole slot) */
	uint64_t *pending;		/* rings and mark_dirty, under vm->lock */
	uint64_t *log;			/* KVM_GET_DIRTY_LOG's buffer */
	size_t words;
	int uffd, pagemap;		/* UFFD_WP tracking, or -1 */
	int uffd_quit;			/* eventfd: the reader returns */
	pthread_t uffd_reader;		/* reads the swap's remap event */
	bool uffd_reader_live;
	bool manual_protect;		/* we turned it on: turn it off */
	bool logging;			/* the slot's LOG_DIRTY_PAGES is ours */

	struct live_dest dest;
	bool prepared, ran;
	bool paused;			/* the vCPUs are stopped */
	bool switching;			/* the switchover began: no cancel */
	bool stream;			/* MEMMIG_LIVE_STREAM, and it can */
	bool softdirty;			/* holds the process's soft-dirty bits */
	bool cancel;			/* atomic */
	bool tracker;			/* a memmig_vm_track's: tracking only */
	int prim;			/* the full round's primitive */

	uint64_t *lost_map;		/* lost slot pages: never copied again */
	struct live_lost *lost;		/* the same, as ranges */
	unsigned int nlost, lost_cap;
	uint64_t unmarked;		/* lost pages without a poison marker */
	bool lost_enomem;		/* a range could not be recorded */

	double harvest_s;		/* the last pre-copy harvest took */
	uint64_t harvest_span;		/* the bytes it scanned */
	struct live_round *rounds;
	unsigned int nrounds;
	struct memmig_live_report rep;
};

/* Machine-check-safe copies of slot pages [page, page + n) into the
 * destination; what cannot be read is recorded and marked (live-poison.c). */
void memmig_live_copy(struct memmig_live *l, uint64_t page, uint64_t n,
		      unsigned int flags);
/* 0, or why the copy must not be swapped in: a lost page that could not
 * be recorded (-ENOMEM) or whose copy has no poison marker (-EHWPOISON:
 * the guest would read whatever the copy holds). */
int memmig_live_lost_check(struct memmig_live *l);
/* Drops lost pages from dirty words [w, w + n). */
void memmig_live_lost_mask(struct memmig_live *l, size_t w, size_t n);
/* After the run: sorts the lost ranges and tells the VMM; -ENOMEM if one
 * could not be recorded. */
int memmig_live_lost_finish(struct memmig_live *l);

/* memmig_live_cancel() was called. */
static inline bool memmig_live_cancelled(struct memmig_live *l)
{
	return __atomic_load_n(&l->cancel, __ATOMIC_ACQUIRE);
}

/* The slot page past the range. */
static inline uint64_t memmig_live_end(const struct memmig_live *l)
{
	return l->first + l->npages;
}

/* Copies the dirty pages of slot pages [lo, hi) (live.c): while the guest
 * runs (paused false) a chunk at a time, re-protected first.  prim: as
 * memmig_copy_query() chose for the full round, or -1. */
int memmig_live_copy_dirty(struct memmig_live *l, uint64_t lo, uint64_t hi,
			   bool paused, int prim, uint64_t *bytes);
/* Counts a round's copy, and its rate if it copied enough to time. */
void memmig_live_copied(struct memmig_live *l, uint64_t bytes, double seconds);
/* Dirty bytes among slot pages [lo, hi). */
uint64_t memmig_live_dirty_bytes(const struct memmig_live *l, uint64_t lo, uint64_t hi);

/* The switchover in pieces (live-switch.c). */
/* The next piece's length in pages, from l->cur; last: the one before (0:
 * none). */
uint64_t memmig_live_piece_pages(const struct memmig_live *l, uint64_t last);
/* What a pause for piece [lo, hi) would take with dirty bytes left in it,
 * in parts into p (its expected_* fields). */
double memmig_live_piece_expected(const struct memmig_live *l, uint64_t lo, uint64_t hi,
				  uint64_t dirty, struct memmig_live_report *p);
/* Pauses piece by piece, copies each piece's last dirty pages and swaps it
 * in; 0, or the first error (the pieces before it stay switched). */
int memmig_live_switchover(struct memmig_live *l);

/* live-sched.c: the calling thread at real-time priority for a pause,
 * where it may be, and back to what it was after resume(). */
struct memmig_sched_was {
	int policy;
	struct sched_param param;
	bool raised;
};
void memmig_live_sched_raise(const struct memmig_live *l, struct memmig_sched_was *was);
void memmig_live_sched_restore(const struct memmig_sched_was *was);

/* A live object that only tracks writes to the whole slot, for a
 * memmig_vm_track (vm-track.c): no destination, never run. */
int memmig_live_new_tracker(struct memmig_vm *vm, uint32_t slot, int method,
			    struct memmig_live **out);
/* Takes the vm's one live slot (-EBUSY: a migration or tracker holds it),
 * or gives it back. */
int memmig_live_claim_vm(struct memmig_live *l, bool on);

/* Dirty tracking (dirty.c). */
int memmig_dirty_start(struct memmig_live *l);
/* ORs the pages dirtied since the last harvest into l->dirty, from l->cur
 * on: userfaultfd scans only slot pages [lo, hi), the others everything
 * (KVM's log is the slot's, soft-dirty bits are cleared process-wide).
 * For LOG_CLEAR they stay dirty in KVM until memmig_dirty_clear(). */
int memmig_dirty_harvest(struct memmig_live *l, uint64_t lo, uint64_t hi);
/* Before words [w, w + n) of l->dirty are copied: has KVM log their
 * pages again (LOG_CLEAR only; the others re-protect as they harvest). */
int memmig_dirty_clear(struct memmig_live *l, size_t w, size_t n);
/* Switches logging off as it was before start; safe after a failed start. */
void memmig_dirty_stop(struct memmig_live *l);
/* The same without KVM (dirty-uffd.c). */
bool memmig_dirty_uffd_supported(void);
int memmig_dirty_uffd_start(struct memmig_live *l);
int memmig_dirty_uffd_harvest(struct memmig_live *l, uint64_t lo, uint64_t hi);
void memmig_dirty_uffd_stop(struct memmig_live *l);
/* Before Linux 6.7: soft-dirty bits (dirty-softdirty.c); the pagemap is
 * closed by memmig_dirty_uffd_stop(). */
bool memmig_dirty_softdirty_supported(void);
int memmig_dirty_softdirty_start(struct memmig_live *l);
int memmig_dirty_softdirty_harvest(struct memmig_live *l);
void memmig_dirty_softdirty_stop(struct memmig_live *l);

/* The destination (live-dest.c). */
int memmig_live_dest_prepare(struct memmig_live *l);
/* Paused: puts the copy of slot pages [lo, hi) in the source's place, the
 * pieces in address order from l->first.  On failure that piece is on its
 * old memory. */
int memmig_live_dest_swap(struct memmig_live *l, uint64_t lo, uint64_t hi);
/* After resume: makes a file tier's copy durable where the drain did not
 * (msync(MS_SYNC) of a file without DAX). */
int memmig_live_dest_persist(struct memmig_live *l);
/* After resume, or instead of the swap: frees what is left. */
void memmig_live_dest_release(struct memmig_live *l);

#endif
