/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal to the migration engine: regions, jobs, units, strategies. */
#ifndef MEMMIG_MIGRATE_PRIVATE_H
#define MEMMIG_MIGRATE_PRIVATE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/dax/dax.h"
#include "lib/core/memmig-private.h"

#define MEMMIG_UNIT_PAGES (MEMMIG_UNIT_SIZE / MEMMIG_PAGE_SIZE)
/* Units a move_pages(2) call takes, moving or asking: enough to amortise
 * the call, few enough to cancel. */
#define MEMMIG_CALL_UNITS 16
/* A page nobody looked at: in before/after, and in status before the
 * strategy got to it. */
#define MEMMIG_STATUS_UNTOUCHED INT_MIN
/* A page on a node outside the move's from_nodes: left where it is. */
#define MEMMIG_STATUS_SKIPPED (INT_MIN + 1)
/* In status and after: the page maps the job's target_path (its file
 * target).  Not SKIPPED's value: a report counts skipped pages by it. */
#define MEMMIG_STATUS_FILE (INT_MIN + 2)
_Static_assert(MEMMIG_STATUS_FILE != MEMMIG_STATUS_SKIPPED &&
	       MEMMIG_STATUS_FILE != MEMMIG_STATUS_UNTOUCHED, "page statuses differ");

/*
 * The process of a whole-process move as its caller pinned it
 * (memmig_move_opts.procfd and .check), lent to the move's regions and
 * jobs: procfd -1 and check NULL when there is no pin.  Every system
 * call that names the process by its pid (move_pages(2), migrate_pages(2))
 * goes through memmig_pin_call_before() and memmig_pin_call_after().
 */
struct memmig_pin {
	int procfd;			/* its /proc/PID directory, or -1 */
	int (*check)(void *opaque);	/* the caller's rule, or NULL */
	void *opaque;
};

#define MEMMIG_PIN_NONE ((struct memmig_pin){ .procfd = -1 })

/*
 * Before a system call on the pinned process: 0 to make it; -ESRCH once
 * the process was reaped (its pid may be another process's by now), or
 * the check's -errno (the caller no longer may).
 */
int memmig_pin_call_before(const struct memmig_pin *pin);
/*
 * After it: rc, or -ESRCH when the process was reaped meanwhile -- the pid
 * may have named another process by the time the kernel looked it up, and
 * what the call answered is not this process's.
 */
long memmig_pin_call_after(const struct memmig_pin *pin, long rc);

struct memmig_region {
	int refcount;
	struct memmig_ctx *ctx;
	struct memmig_region_desc desc;	/* backing resolved */
	bool self;			/* this process */
	/* The move's pin on another process (its /proc/PID), or -1; the
	 * move's, which outlives its regions' jobs. */
	int procfd;
	/* Device memory (DAX of this process): a descriptor per page;
	 * index 0 is the region's first page. */
	struct memmig_desc_table *table;
};

enum memmig_unit_state {
	MEMMIG_UNIT_PENDING = 0,
	MEMMIG_UNIT_DONE,	/* on the target: moved, or already there */
	MEMMIG_UNIT_FAILED,	/* some pages failed: see the page status */
	MEMMIG_UNIT_SKIPPED,	/* cancelled or stopped before it */
};

/* A 2 MB-aligned piece of the range: a whole 2 MB, or a head or tail. */
struct memmig_unit {
	uint64_t addr, len;
	bool thp;		/* one transparent huge page */
	bool counted;		/* in the job's progress already */
	/* After a process-wide walk: the unit went to move_pages(2) too,
	 * and its placement must be asked again at the end. */
	bool requery;
	unsigned char state;
};

struct memmig_job;

/* One worker thread's share: units [first, last). */
struct memmig_worker {
	struct memmig_job *job;
	unsigned int idx;
	size_t first, last;
	pthread_t thread;
	double prepare_s, copy_s, query_s;
	void *priv;		/* the strategy's per-worker state */
};

struct memmig_strategy_ops {
	const char *name;
	/* Job-wide set-up before the workers start; may fail the job. */
	int (*setup)(struct memmig_job *job);
	/* Processes w->first..w->last, whose placement is in job->before;
	 * returns 0 or a fatal -errno. */
	int (*run)(struct memmig_worker *w);
	/* Optional: on the job thread alone, after the workers ran units
	 * [first, last): one thread's swap, as concurrent mremaps in one
	 * process cost several times what one thread's do.  The units then
	 * run in rounds of round_units, which bounds what waits for it. */
	void (*finish)(struct memmig_job *job, size_t first, size_t last);
	size_t round_units;
	/* Frees what setup left in job->priv, after the workers. */
	void (*teardown)(struct memmig_job *job);
	/* Optional: fills job->after for the worker's units where the
	 * placement query cannot see (a target_path). */
	void (*verify)(struct memmig_worker *w);
	/* Its page statuses never come from a placement query: -EFAULT is
	 * a page it could not read, not the shared zero page. */
	bool status_not_queried;
};

extern const struct memmig_strategy_ops memmig_strategy_kernel;
/* Moves one unit with move_pages(2): the copy strategy's fallback for a
 * unit it must not read (poisoned pages).  0 or a fatal -errno. */
int memmig_kernel_move_unit(struct memmig_job *job, struct memmig_unit *u);
extern const struct memmig_strategy_ops memmig_strategy_copy;
/* DAX sources to a node, and any source to a target_path: copy + swap. */
extern const struct memmig_strategy_ops memmig_strategy_dax;

struct memmig_thp_probe;

struct memmig_job {
	int refcount;
	struct memmig_ctx *ctx;
	struct memmig_region *region;
	int pid;			/* for system calls: 0 is this process */
	/* Another process as the move's caller pinned it (MEMMIG_PIN_NONE
	 * for a job of its own, or of this process). */
	struct memmig_pin pin;
	/* Atomic: the pin's -errno once it said no (the process reaped, the
	 * caller's permission gone): no system call on the process after. */
	int pin_denied;
	uint64_t addr, len;
	int target;			/* node, or -1 for the file target */
	bool to_file;			/* opts.target_path: a file target */
	struct memmig_dax_target file;	/* mapped by memmig_job_start() */
	int strategy;			/* resolved: kernel or copy */
	const struct memmig_strategy_ops *ops;
	unsigned int nworkers;
	unsigned int flags;
	int pin_node;			/* CPUs of this node run the workers */
	struct memmig_topo *topo;	/* for pin_node's CPUs: the move's */
	struct memmig_pool *pool;	/* the move's, or the job's own */
	bool own_pool;
	int prim;			/* copy: the primitive for every unit */
	void *priv;			/* the strategy's, from setup to teardown */

	struct memmig_unit *units;
	size_t nunits;
	int *before, *after;		/* per 4 KiB page: node or -errno */
	int *status;			/* per page, what the strategy did */
	size_t pages_bytes;		/* the one mapping of the three; 0: malloc'd */
	const uint64_t *from_mask;	/* the move's (env), or NULL */
	/* The move's frame ranges (env), or NULL: where the pagemap's frame
	 * numbers say a page is, without the kernel's query. */
	const struct memmig_frames *frames;
	const struct memmig_thp_probe *probe;	/* the move's (env), or NULL */
	/* before was asked already (memmig_job_query_before()); premoved:
	 * a process-wide migrate_pages(2) ran since (walk.c), so the
	 * workers settle what it moved and move only what it left. */
	bool before_known, premoved;

	bool cancel;			/* atomics */
	int error;			/* first fatal error */
	uint64_t bytes_done;

	double t_start;
	double prepare_s, copy_s, query_s, total_s;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done, joined;
	int result;
	struct memmig_report *report;
	/* rate over the last progress interval, under lock */
	double rate_t, rate;
	uint64_t rate_bytes;
};

/*
 * What a whole-process move lends each of its region's jobs: its topology
 * snapshot and its worker threads.  NULL members: the job's own.
 */
struct memmig_job_env {
	struct memmig_topo *topo;
	struct memmig_pool *pool;
	/* A move's from_nodes, one bit a node (MEMMIG_MOVE_MAX_NODES), or
	 * NULL; the kernel strategy leaves pages elsewhere alone. */
	const uint64_t *from_mask;
	/* Which node a frame is on (lib/mm/frames.h), or NULL: the
	 * placement queries ask the kernel. */
	const struct memmig_frames *frames;
	/* The move's caller's check (memmig_move_opts.check), or NULL; its
	 * procfd is the region's. */
	int (*check)(void *opaque);
	void *check_opaque;
	/* The move's THP probe, open for as long as its jobs run, or NULL:
	 * each job opens its own (a process is dozens of mappings, and the
	 * two opens and closes of each job's three probes were most of a
	 * small mapping's system calls). */
	const struct memmig_thp_probe *probe;
	/* The move checked the target node once for all its jobs. */
	bool target_checked;
};

/*
 * memmig_job_start() without the job thread: checks and plans the job as
 * memmig_job_start() does; memmig_job_run() then runs it on the calling
 * thread.  The job holds one reference, for memmig_job_unref().
 */
int memmig_job_create(struct memmig_region *r, const struct memmig_migrate_opts *opts,
		      const struct memmig_job_env *env, struct memmig_job **out);
void memmig_job_run(struct memmig_job *job);
/* Asks where every page of the job is, into job->before, on the calling
 * thread: for a walk (walk.c), which must know before it moves. */
int memmig_job_query_before(struct memmig_job *job);
/*
 * 0 when the strategy can move the region (resolving AUTO into
 * *resolved when not NULL), else -EINVAL with the reason logged: the copy
 * strategy works in the process itself only, DAX memory needs it.
 */
int memmig_strategy_check(struct memmig_ctx *ctx, int strategy, bool self, int backing,
			  bool to_path, int pid, int *resolved);

/* Records err as the job's fatal error unless one is there; stops the
 * workers after their current unit. */
void memmig_job_fail(struct memmig_job *job, int err);
/* True once the job was cancelled or failed: workers stop. */
bool memmig_job_stopping(struct memmig_job *job);
/* Marks a unit done and counts its bytes for progress (once). */
void memmig_job_unit_done(struct memmig_job *job, struct memmig_unit *u,
			  unsigned char state);
/* Counts a unit's bytes for progress once it is copied: its swap comes
 * at the end of its round. */
void memmig_job_unit_copied(struct memmig_job *job, struct memmig_unit *u);
/* Sets the status of every page of the unit. */
void memmig_job_set_status(struct memmig_job *job, const struct memmig_unit *u,
			   int s);
/* The unit failed whole with err, which fails the job. */
void memmig_job_unit_fail(struct memmig_job *job, struct memmig_unit *u, int err);
/* The page status that says "on the target": the node, or the file. */
static inline int memmig_job_target_status(const struct memmig_job *job)
{
	return job->to_file ? MEMMIG_STATUS_FILE : job->target;
}
/* The page index of an address of the job's range. */
static inline size_t memmig_job_page(const struct memmig_job *job, uint64_t addr)
{
	return (addr - job->addr) / MEMMIG_PAGE_SIZE;
}
/* False for a page the move's from_nodes leave alone: found on another
 * node (the target too: it stays there either way, and is counted as left
 * alone).  A page found nowhere (absent) is the kernel's to answer. */
static inline bool memmig_job_page_wanted(const struct memmig_job *job, size_t page)
{
	int node;

	if (!job->from_mask)
		return true;
	node = job->before[page];
	return node < 0 || node >= MEMMIG_MOVE_MAX_NODES ||
	       (job->from_mask[node / 64] >> (node % 64) & 1);
}
/* The target is down to what the kernel keeps free (its zones' high
 * watermarks) plus a unit: pages left behind now are out of memory, not
 * busy. */
bool memmig_job_target_full(const struct memmig_job *job);
/* True when every page of the unit was on the target before the job. */
bool memmig_job_unit_on_target(const struct memmig_job *job,
			       const struct memmig_unit *u);
/*
 * A page status that is nothing to move rather than a failure: -ENOENT
 * (not present) and -EFAULT (the shared zero page of memory read but never
 * written).  memmig_pageflags_refine() has turned the pages hiding behind
 * these, poisoned or busy ones, into failures first.
 */
static inline bool memmig_status_nothing(int st)
{
	return st == -ENOENT || st == -EFAULT;
}

/* Regions for ranges of pid's memory, its mappings read once: list[0..n)
 * (*made of them made, also on failure); 0 or the first range's -errno.
 * procfd: the caller's pin on the process (-1: none), read through and
 * kept by the regions, which must not outlive it. */
int memmig_region_new_ranges(struct memmig_ctx *ctx, int pid, int procfd,
			     const struct memmig_range *r, unsigned int n,
			     struct memmig_region **list, unsigned int *made);
/* memmig_region_list_pid() through procfd (-1: none), kept as above. */
int memmig_region_list_at(struct memmig_ctx *ctx, int pid, int procfd,
			  struct memmig_region ***out, unsigned int *count);
/* move_pages(2) of the job's process through its pin (see memmig_pin):
 * the kernel's answer, or the pin's -errno, after which every later call
 * of the job answers the same without being made. */
long memmig_job_move_pages(struct memmig_job *job, unsigned long count, void **pages,
			   const int *nodes, int *status, int flags);
/* Builds the report from the job's page arrays and units. */
int memmig_report_build(struct memmig_job *job);
/* A whole-process move's report: empty, then each region's added. */
struct memmig_report *memmig_report_new_empty(int pid, int target_node, int strategy);
int memmig_report_add(struct memmig_report *to, const struct memmig_report *from);
/* Time the kernel moved pages for the move as a whole (a walk). */
void memmig_report_add_copy_s(struct memmig_report *rep, double s);
/* The move's own figures: its result, all it planned, its wall clock. */
void memmig_report_set_end(struct memmig_report *rep, int result, uint64_t bytes_total,
			   double total_s, double plan_s);

const char *memmig_backing_name(int backing);
/*
 * Which units are one PMD-mapped THP: the pagemap's PAGEMAP_SCAN walk where
 * the kernel has it, else its frame numbers and /proc/kpageflags, which
 * need CAP_SYS_ADMIN.  With neither open fails and every unit counts as
 * 4 KiB pages: slower, the same result.
 */
struct memmig_thp_probe {
	int pagemap, kflags;
	bool scan;	/* the kernel answers PAGEMAP_SCAN */
};
int memmig_thp_probe_open(struct memmig_ctx *ctx, int pid, int procfd,
			  struct memmig_thp_probe *p);
void memmig_thp_probe_close(struct memmig_thp_probe *p);
/* The unit's pagemap entries into e (one a page): false when they cannot
 * be read (no probe). */
bool memmig_thp_probe_entries(const struct memmig_thp_probe *p, const struct memmig_unit *u,
			      uint64_t *e);
/* Which of units [u, u + n), in address order, are one PMD-mapped THP (or
 * hugetlbfs page) each, into huge[], by one walk: false where the kernel
 * cannot say so (memmig_thp_probe_is_thp() then decides). */
bool memmig_thp_probe_scan(const struct memmig_thp_probe *p, const struct memmig_unit *u,
			   size_t n, bool *huge);
/* Whether a unit with those entries is one PMD-mapped THP. */
bool memmig_thp_probe_is_thp(const struct memmig_thp_probe *p, const struct memmig_unit *u,
			     const uint64_t *e);
/*
 * Placement of units [u, u + n) into the job-relative page array pages:
 * one query entry per THP unit (its pages share a node), one per page
 * elsewhere; sets u->thp if set_thp.  0 or the query's -errno.
 */
int memmig_placement_query_units(struct memmig_job *job,
				 const struct memmig_thp_probe *probe,
				 struct memmig_unit *u, size_t n, int *pages,
				 bool set_thp);

/* Takes a run of contiguous prefaulted 2 MB chunks of the node's reserve,
 * 1 to max of them (*n), or NULL (*n 0) when it is empty. */
void *memmig_reserve_take(struct memmig_ctx *ctx, int node, size_t max, size_t *n);
/* Gives n contiguous chunks taken and not used back to the reserve. */
void memmig_reserve_put(struct memmig_ctx *ctx, int node, void *run, size_t n);

#endif
