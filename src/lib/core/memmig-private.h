/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal to libmemmig: context body, logging macros, internal copy flags. */
#ifndef MEMMIG_PRIVATE_H
#define MEMMIG_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <syslog.h>
#include <time.h>

#include "memmig.h"
#include "lib/copy/arch/arch.h"

#define MEMMIG_COPY_ALL_FLAGS                                               \
	(MEMMIG_COPY_NONTEMPORAL | MEMMIG_COPY_TEMPORAL | MEMMIG_COPY_NODRAIN | \
	 MEMMIG_COPY_PMEM | MEMMIG_COPY_NOFLUSH | MEMMIG_COPY_COLD)

/* The most a small copy (memmig_copy_run()'s fast path) can be: a quarter
 * of the address space, so that a checked address below it plus the
 * length cannot wrap. */
#define MEMMIG_SMALL_MAX (SIZE_MAX >> 2)

/* The thresholds the unflagged policy has (memmig_ctx_apply_tuning()). */
#define MEMMIG_TUNING_THRESHOLDS 5

struct memmig_fault {
	unsigned int nth;	/* 1-based event that fails, 0: disarmed */
	int err;
	bool sticky;
	unsigned int count;	/* events so far */
};

/* Prefaulted 2 MB chunks bound to one node (memmig_ctx_reserve()). */
struct memmig_reserve_pool {
	int node;
	void **chunks;		/* chunks[next..n) are left, ascending as
				 * filled; chunks given back follow */
	size_t next, n, cap;
};

struct memmig_ctx {
	/*
	 * What memmig_copy_run() reads, first: on x86 it is written in
	 * assembly (arch/x86/entry.S), which finds them at the offsets
	 * arch/x86/entry.h gives and copy.c asserts.
	 */
	/* Unflagged copies below small_below find their primitive in by_len
	 * without the policy: small copies cannot afford the whole policy
	 * (memmig_ctx_apply_tuning()). */
	size_t small_below;	/* MEMMIG_SMALL_MAX */
	size_t cold_below;	/* the same for MEMMIG_COPY_COLD copies: below
				 * nt_cold_min they are unflagged ones */
	/* Up to this many bytes of a vector copy are done inline, through
	 * the first ranges of by_len that choose vector copies (copy.c's
	 * apply_inline()): 128 for SSE2, whose moves those are, for the
	 * wider ones what the arch code does inline (else 64: their
	 * two-vector case's bytes), 0 where no vector copy comes first. */
	size_t small_inline;
	/* From here up to small_inline the inline copy is the arch's wide
	 * moves (arch inline.h) of the primitive of the range that holds 65
	 * bytes: 65 where the arch has them, lower (33 at the least) where
	 * the lengths below 65 choose that primitive too, SIZE_MAX where it
	 * has none (copy.c's apply_inline()). */
	size_t inline_wide_min;
	/* Lengths widest_min to widest_min + widest_span - 1 go first, in
	 * one compare, to the arch's widest moves (x86: AVX-512's, in
	 * entry.S): from the shortest the arch moves that way up to
	 * small_inline, where the primitive that holds 65 bytes is the
	 * arch's widest; none (span 0) where it is another. */
	size_t widest_min;
	size_t widest_span;
	/* Above small_inline and below this, by_len's primitive is the arch's
	 * widest, whose loop entry.S jumps to straight away (x86); 0 where
	 * it is not, or small_inline stops short of its loop's lengths. */
	size_t widest_loop_below;

	int refcount;
	memmig_log_fn log_fn;
	void *log_data;
	int log_priority;
	struct memmig_cpu_info cpu;
	struct memmig_tuning tuning;
	enum memmig_flush_kind flush_kind;
	unsigned int prims_ok;	/* bit per primitive this CPU can run */
	/* MEMMIG_COPY_PMEM copies from pmem_nt_min: the NT primitive the
	 * policy gives them, found without it; NULL where there is none. */
	memmig_prim_fn pmem_fn;
	/* nt_prefetch and nt_block as the NT primitives' flag bits (arch.h). */
	unsigned int nt_bits;
	/* The unflagged choice by length, beyond small_below too: the
	 * primitive for lengths below each bound, the last one unbounded
	 * (memmig_ctx_apply_tuning()). */
	struct memmig_len_prim {
		size_t below;
		memmig_prim_fn fn;
	} by_len[MEMMIG_TUNING_THRESHOLDS + 1];

	pthread_mutex_t lock;	/* faults and reserve pools */
	struct memmig_fault faults[MEMMIG_FAULT_COUNT];
	/* $MEMMIG_SWAP_DELAY: seconds a live swap spins per byte it moved,
	 * to play a host whose page-table moves cost more. */
	double swap_delay_s_per_byte;
	/* $MEMMIG_MOVE_HOLD, $MEMMIG_PLAN_HOLD: files whose existence holds
	 * each whole-process move before its first region, and at the end of
	 * its plan ("": none). */
	char move_hold[256], plan_hold[256];
	struct memmig_reserve_pool *pools;
	size_t npools;
};

/* Fault injection (fault.c): 0, or the injected -errno for this event. */
int memmig_fault_hit(struct memmig_ctx *ctx, int point);
int memmig_fault_from_env(struct memmig_ctx *ctx);
/* Spins as long as $MEMMIG_SWAP_DELAY says a swap of len bytes costs more. */
void memmig_fault_swap_delay(struct memmig_ctx *ctx, uint64_t len);
/* Waits while the file at path exists ($MEMMIG_MOVE_HOLD's or
 * $MEMMIG_PLAN_HOLD's), until stop(arg) says to stop: at once when path
 * is "" (no such variable). */
void memmig_fault_hold(struct memmig_ctx *ctx, const char *path, bool (*stop)(void *arg),
		       void *arg);
/* The ctx's reserve pools, filled and freed by the migration engine
 * (migrate/reserve.c). */
void memmig_reserve_free_all(struct memmig_ctx *ctx);

void memmig_log(struct memmig_ctx *ctx, int priority, const char *file,
		int line, const char *fn, const char *format, ...)
	__attribute__((format(printf, 6, 7)));

#define memmig_log_cond(ctx, prio, ...)                                       \
	do {                                                                  \
		if ((ctx) && memmig_ctx_get_log_priority(ctx) >= (prio))      \
			memmig_log(ctx, prio, __FILE__, __LINE__, __func__,   \
				   __VA_ARGS__);                              \
	} while (0)

#define err(ctx, ...) memmig_log_cond(ctx, LOG_ERR, __VA_ARGS__)
#define warn(ctx, ...) memmig_log_cond(ctx, LOG_WARNING, __VA_ARGS__)
#define info(ctx, ...) memmig_log_cond(ctx, LOG_INFO, __VA_ARGS__)
#define dbg(ctx, ...) memmig_log_cond(ctx, LOG_DEBUG, __VA_ARGS__)

/* A bad value: an error, or with MEMMIG_CTX_LENIENT a warning. */
static inline int memmig_ctx_bad(struct memmig_ctx *ctx, unsigned int flags,
				 const char *what, int rc)
{
	if (!(flags & MEMMIG_CTX_LENIENT))
		return rc;
	warn(ctx, "%s ignored (MEMMIG_CTX_LENIENT)\n", what);
	return 0;
}

/*
 * Sized structs across the ABI: the caller's sz says how much of the struct
 * it knows.  An out-struct gets min(sz, ours) bytes; an in-struct is read up
 * to min(sz, ours) over our defaults.  Too small to hold one field: -EINVAL.
 */
int memmig_struct_out(void *out, const void *ours, size_t ours_sz);
int memmig_struct_in(void *ours, size_t ours_sz, const void *in);

int memmig_log_priority_parse(const char *s);
/* Seconds on the monotonic clock. */
static inline double memmig_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
/* The CPUs this process may run on (cpu.c), at least 1. */
unsigned int memmig_usable_cpus(void);
enum memmig_flush_kind memmig_flush_kind_for(const struct memmig_cpu_info *cpu);

#endif
