/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig.h - the public interface of libmemmig.
 *
 * Conventions: every call returns 0 (or a non-negative value where said)
 * or a negative errno; results come back through out-parameters; types are
 * opaque; option structs begin with "size_t sz" so they can grow without
 * breaking the ABI (set sz = sizeof(struct ...) before the call).
 */
#ifndef MEMMIG_H
#define MEMMIG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memmig-version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && defined(MEMMIG_BUILDING_LIBRARY)
#define MEMMIG_EXPORT __attribute__((visibility("default")))
#else
#define MEMMIG_EXPORT
#endif

/* ------------------------------------------------------------------ */
/* Version: MEMMIG_VERSION_* (memmig-version.h) are what a program was  */
/* built with; these calls answer for the library that runs.           */

/* "MAJOR.MINOR.PATCH", as MEMMIG_VERSION_STRING was when it was built. */
MEMMIG_EXPORT const char *memmig_version(void);
/*
 * 0 when the running library has what major.minor has: the same major and
 * a minor at least as new (in 0.x, where minors may break, the same
 * minor); -EOPNOTSUPP otherwise.  A program checks with the numbers it
 * was built against: memmig_version_check(MEMMIG_VERSION_MAJOR,
 * MEMMIG_VERSION_MINOR).
 */
MEMMIG_EXPORT int memmig_version_check(unsigned int major, unsigned int minor);

/* ------------------------------------------------------------------ */
/* Context: owns the CPU description, copy tuning and logging.         */

struct memmig_ctx;

/*
 * Creates a context: detects the CPU, derives copy thresholds from it, then
 * applies a calibration file ($MEMMIG_CALIBRATION, else the system file
 * written by "memmig-cli bench copy --calibrate") and finally the
 * environment overrides (see memmig_tuning_from_env()).
 */
MEMMIG_EXPORT int memmig_ctx_new(struct memmig_ctx **out);

enum memmig_ctx_flags {
	/* No MEMMIG_* environment variable and no calibration file: the
	 * CPU's own thresholds and the default log priority.  For a VMM
	 * that must not depend on the environment it was started in. */
	MEMMIG_CTX_NO_ENV = 1u << 0,
	/* A bad value in the environment or the calibration file is logged
	 * and ignored (the context is made without it), not an error. */
	MEMMIG_CTX_LENIENT = 1u << 1,
};
/* memmig_ctx_new() with flags (enum memmig_ctx_flags); -EINVAL for
 * unknown ones.  memmig_ctx_new() fails on a bad value (-EINVAL, or
 * -ESTALE for a $MEMMIG_CALIBRATION file of another CPU model). */
MEMMIG_EXPORT int memmig_ctx_new_flags(struct memmig_ctx **out, unsigned int flags);
MEMMIG_EXPORT struct memmig_ctx *memmig_ctx_ref(struct memmig_ctx *ctx);
MEMMIG_EXPORT void memmig_ctx_unref(struct memmig_ctx *ctx);

/* syslog priorities; the default is LOG_ERR, or $MEMMIG_LOG (a number or a
 * name: err, warning, info, debug).  A NULL ctx: nothing is set, and the
 * priority read is -EINVAL. */
typedef void (*memmig_log_fn)(struct memmig_ctx *ctx, void *userdata,
			      int priority, const char *file, int line,
			      const char *fn, const char *format, va_list args);
MEMMIG_EXPORT void memmig_ctx_set_log_fn(struct memmig_ctx *ctx,
					 memmig_log_fn fn, void *userdata);
MEMMIG_EXPORT void memmig_ctx_set_log_priority(struct memmig_ctx *ctx,
					       int priority);
MEMMIG_EXPORT int memmig_ctx_get_log_priority(struct memmig_ctx *ctx);

/* ------------------------------------------------------------------ */
/* CPU features.                                                        */

enum memmig_cpu_feature {
	MEMMIG_CPU_SSE2 = 1u << 0,	 /* x86-64 baseline: movnti */
	MEMMIG_CPU_REP_GOOD = 1u << 1,	 /* fast string operations */
	MEMMIG_CPU_ERMS = 1u << 2,	 /* enhanced rep movsb/stosb */
	MEMMIG_CPU_FSRM = 1u << 3,	 /* fast short rep movsb */
	MEMMIG_CPU_FZRM = 1u << 4,	 /* fast zero-length rep movsb */
	MEMMIG_CPU_FSRS = 1u << 5,	 /* fast short rep stosb */
	MEMMIG_CPU_FSRC = 1u << 6,	 /* fast short rep cmpsb/scasb */
	MEMMIG_CPU_AVX2 = 1u << 7,	 /* and the OS saves YMM state */
	MEMMIG_CPU_AVX512F = 1u << 8,	 /* and the OS saves ZMM state */
	MEMMIG_CPU_AVX512BW = 1u << 9,
	MEMMIG_CPU_CLFLUSH = 1u << 10,
	MEMMIG_CPU_CLFLUSHOPT = 1u << 11,
	MEMMIG_CPU_CLWB = 1u << 12,
	MEMMIG_CPU_MOVDIR64B = 1u << 13,
	MEMMIG_CPU_AVX512VL = 1u << 14,	 /* 32- and 16-byte EVEX moves (ymm16-31) */
};

struct memmig_cpu_info {
	size_t sz;
	char vendor[16];	/* "GenuineIntel", "AuthenticAMD", "" */
	unsigned int family;	/* display family, model (with extensions) */
	unsigned int model;
	unsigned int stepping;
	uint64_t features;	/* enum memmig_cpu_feature bits */
	size_t llc_size;	/* last-level cache in bytes, 0 if unknown */
};

/* Reads the running CPU (CPUID and XGETBV on x86; empty elsewhere). */
MEMMIG_EXPORT int memmig_cpu_detect(struct memmig_cpu_info *out);
/* The /proc/cpuinfo spelling of one feature bit ("erms"), or NULL. */
MEMMIG_EXPORT const char *memmig_cpu_feature_name(uint64_t feature);
MEMMIG_EXPORT int memmig_ctx_get_cpu(struct memmig_ctx *ctx,
				     struct memmig_cpu_info *out);

/* ------------------------------------------------------------------ */
/* Copy primitives and the dispatch policy.                             */

enum memmig_prim {
	MEMMIG_PRIM_MOVQ,	/* unrolled 8-byte mov loop */
	MEMMIG_PRIM_REP_MOVSQ,
	MEMMIG_PRIM_REP_MOVSB,
	MEMMIG_PRIM_NT_MOVNTI,	/* non-temporal 8-byte stores */
	MEMMIG_PRIM_NT_AVX2,	/* non-temporal 32-byte stores */
	MEMMIG_PRIM_NT_AVX512,	/* non-temporal 64-byte stores */
	MEMMIG_PRIM_GENERIC,	/* portable C: the C library's memcpy */
	/* Temporal vector copies, overlapping head and tail loads (after
	 * GENERIC: the values above keep their numbers). */
	MEMMIG_PRIM_VEC_SSE2,	/* 16-byte vectors */
	MEMMIG_PRIM_VEC_AVX2,	/* 32-byte vectors */
	MEMMIG_PRIM_VEC_AVX512,	/* 64-byte vectors */
	MEMMIG_PRIM_COUNT
};

/*
 * Copy flags, in the spirit of libpmem2's pmem2_memcpy flags.
 *
 * Persistence point: a copy with MEMMIG_COPY_PMEM (and neither NODRAIN nor
 * NOFLUSH) returns after its drain (sfence); from then on every byte of the
 * destination is durable on real pmem (ADR platforms): whole cache lines
 * were written with non-temporal stores, which the drain orders, and every
 * line written with temporal stores (partial head and tail lines, short
 * copies, MEMMIG_COPY_TEMPORAL) was written back with clwb, or clflushopt,
 * or clflush, the best the CPU has, before the drain.
 */
enum memmig_copy_flags {
	/* Non-temporal stores whatever the length. */
	MEMMIG_COPY_NONTEMPORAL = 1u << 0,
	/* Temporal stores whatever the length (never NT); with
	 * MEMMIG_COPY_PMEM every line written is then flushed. */
	MEMMIG_COPY_TEMPORAL = 1u << 1,
	/* Leave the store fence to the caller (memmig_copy_drain()): the data
	 * is durable only after it. */
	MEMMIG_COPY_NODRAIN = 1u << 2,
	/* Destination is persistent memory: NT stores for the body, cache
	 * line flushes for what was written with temporal stores, then a
	 * drain. */
	MEMMIG_COPY_PMEM = 1u << 3,
	/* With MEMMIG_COPY_PMEM: skip the flushes, and so the drain (as
	 * libpmem2's NOFLUSH implies NODRAIN); the caller flushes with
	 * memmig_copy_flush() and drains with memmig_copy_drain(). */
	MEMMIG_COPY_NOFLUSH = 1u << 4,
	/* The destination is not in the cache (a migration's fresh pages):
	 * NT stores from the cold threshold (nt_cold_min) on, where cached
	 * stores would first read every line they write.  A length cannot
	 * tell hot from cold; the caller can. */
	MEMMIG_COPY_COLD = 1u << 5,
};

/* A threshold that is never reached ("never" in files and variables). */
#define MEMMIG_SIZE_NEVER SIZE_MAX

/* Thresholds of the dispatch policy, in bytes. */
struct memmig_tuning {
	size_t sz;
	size_t movsb_min;	/* rep movsb from here on ERMS/FSRM CPUs */
	size_t movsq_min;	/* rep movsq from here (below movsb_min) on
				 * fast-string CPUs; ERMS CPUs default to
				 * never: no movsq window */
	size_t nt_min;		/* NT stores from here (working set beyond
				 * the cache) unless MEMMIG_COPY_TEMPORAL */
	int nt_prim;		/* which NT primitive (enum memmig_prim) */
	/* Temporal copies below vec_max use vec_prim, a MEMMIG_PRIM_VEC_*
	 * (ahead of the movq loop and the string instructions). */
	size_t vec_max;
	int vec_prim;
	size_t nt_cold_min;	/* NT stores from here with MEMMIG_COPY_COLD */
	/* From vec_wide_min (below vec_max) the vector copy is vec_wide_prim:
	 * a wider one can win the loop and lose the short copies. */
	size_t vec_wide_min;
	int vec_wide_prim;
	/* Descriptor-table init (docs/desc-tables.md); zero is the seed's
	 * rule, templates with NT stores. */
	int desc_store;		/* enum memmig_desc_store of the template path */
	int desc_slow;		/* 1: the field-by-field path instead (it was
				 * measured ahead of both template stores) */
	/* MEMMIG_COPY_PMEM copies below this are written with temporal
	 * stores, every line flushed; from it whole lines go by NT stores
	 * (libpmem's NT path streams from one line).  Host-dependent:
	 * calibration measures it cold. */
	size_t pmem_nt_min;
	/* How far ahead of its loads an NT copy prefetches its source
	 * (inside it), 512 B to 32 KiB rounded down to a power of two; 0:
	 * not.  Host-dependent: calibration measures it on cold pmem
	 * copies. */
	size_t nt_prefetch;
	/* A descriptor table's init range (one thread's share) of at least
	 * this many bytes measures NT against plain stores as it writes and
	 * keeps to the faster (desc_store first); smaller ones, or never,
	 * write with desc_store alone.  A shared host's ranking changes. */
	size_t desc_probe_min;
	/* Non-zero: NT copies of 8 KiB or more load a block of lines (as
	 * many as the primitive's registers hold: 1 KiB with AVX-512, 512 B
	 * with AVX2) before they stream it, without prefetching; 0: line by
	 * line, prefetching nt_prefetch ahead.  Host-dependent: calibration
	 * measures it on cold pmem copies beside the prefetch distances. */
	size_t nt_block;
};

/* The seed-derived defaults for a CPU: movsb_min 2048 on ERMS without FSRM,
 * the FSRM crossover (vendor specific) on FSRM, movsq_min 512 on CPUs
 * with fast strings but neither ERMS nor FSRM, nt_min from
 * the last-level cache size, the widest NT primitive the CPU has; the AVX2
 * vector copy (SSE2 without AVX2) below vec_max, which is glibc's rep movsb
 * threshold (2 KiB per 16 bytes of vector) on ERMS/FSRM CPUs and never
 * elsewhere; nt_cold_min 4 KiB, a page; no wider vector copy (vec_wide_min
 * never, vec_wide_prim the same copy); descriptor tables by the template
 * path with NT stores (the seed's rule; calibration measures it). */
MEMMIG_EXPORT int memmig_tuning_default(const struct memmig_cpu_info *cpu,
					struct memmig_tuning *out);
/*
 * Applies the environment on top of *t: MEMMIG_COPY_MOVSB_MIN,
 * MEMMIG_COPY_MOVSQ_MIN, MEMMIG_COPY_NT_MIN, MEMMIG_COPY_VEC_MAX,
 * MEMMIG_COPY_NT_COLD_MIN, MEMMIG_COPY_VEC_WIDE_MIN (sizes up to 1T, with
 * optional K/M/G suffix, or "never"), MEMMIG_COPY_NT_PRIM,
 * MEMMIG_COPY_VEC_PRIM and MEMMIG_COPY_VEC_WIDE_PRIM (primitive names).
 * -EINVAL (a value that is no size, too big, or no NT primitive) leaves *t
 * unchanged and names the bad variable through the context's log.
 */
MEMMIG_EXPORT int memmig_tuning_from_env(struct memmig_ctx *ctx,
					 struct memmig_tuning *t);
/* Calibration file: "key = value" lines for one CPU.  Loading a file made
 * on another CPU model fails with -ESTALE and leaves *t unchanged. */
MEMMIG_EXPORT int memmig_tuning_load(struct memmig_ctx *ctx, const char *path,
				     struct memmig_tuning *t);
MEMMIG_EXPORT int memmig_tuning_save(struct memmig_ctx *ctx, const char *path,
				     const struct memmig_tuning *t);
MEMMIG_EXPORT int memmig_ctx_get_tuning(struct memmig_ctx *ctx,
					struct memmig_tuning *out);
MEMMIG_EXPORT int memmig_ctx_set_tuning(struct memmig_ctx *ctx,
					const struct memmig_tuning *t);
/* The system calibration file path (compiled in; $MEMMIG_CALIBRATION wins). */
MEMMIG_EXPORT const char *memmig_tuning_default_path(void);

/* What calibration measures, in order. */
enum memmig_calibrate_step {
	MEMMIG_CALIBRATE_SMALL = 0,	/* movq loop, rep movsq, rep movsb */
	MEMMIG_CALIBRATE_NT_PRIM,	/* the NT primitives, beyond the cache */
	MEMMIG_CALIBRATE_NT_MIN,	/* temporal against the chosen NT one */
	MEMMIG_CALIBRATE_VEC_PRIM,	/* the vector copies (runs first) */
	MEMMIG_CALIBRATE_NT_COLD,	/* cold: temporal against NT */
	/* Descriptor-table init beyond the cache: the slow path, the
	 * template path with NT stores, with temporal stores (last).  Its
	 * row's prims are the stores each issues: MEMMIG_PRIM_MOVQ (scalar),
	 * an NT primitive, a MEMMIG_PRIM_VEC_* of the same width. */
	MEMMIG_CALIBRATE_DESC,
	MEMMIG_CALIBRATE_PMEM_NT,	/* cold pmem: temporal + flush against NT */
	MEMMIG_CALIBRATE_NT_PREFETCH,	/* cold pmem NT: prefetch distances and
					 * blocks (runs before NT_PRIM) */
	/* memmig_copy_run() itself, hot, 64 B to 1 KiB: tuned with the
	 * vector step's wide copy at every size, then as that step found;
	 * the row's prims are the vector copy each starts with.  Only where that step found
	 * two (runs after SMALL). */
	MEMMIG_CALIBRATE_DISPATCH,
};

/* One size of a step, measured: median GB/s of each primitive. */
struct memmig_calibrate_row {
	size_t sz;
	int step;			/* enum memmig_calibrate_step */
	size_t len;
	unsigned int n;
	int prims[4];
	double gbps[4];
};

typedef void (*memmig_calibrate_fn)(void *opaque, const struct memmig_calibrate_row *row);

struct memmig_calibrate_opts {
	size_t sz;
	memmig_calibrate_fn row;	/* each row as it is measured; NULL */
	void *opaque;
	unsigned int reps;		/* samples per size and pass; 0: 11 */
};

/*
 * Measures this CPU's crossovers (hot copies, interleaved, medians of three
 * passes), so that measurement overrides the seed rules, into *out: the
 * defaults with the thresholds found.  Nothing is saved nor applied
 * (memmig_tuning_save(), memmig_ctx_set_tuning()).  A few seconds and
 * 512 MiB of memory; 0 or -ENOMEM.
 */
MEMMIG_EXPORT int memmig_tuning_calibrate(struct memmig_ctx *ctx,
					  const struct memmig_calibrate_opts *opts,
					  struct memmig_tuning *out);

/*
 * The dispatch policy, a pure function: which primitive copies len bytes
 * with these flags on this CPU under these thresholds.  Returns an
 * enum memmig_prim, or -EINVAL for unknown flags.
 */
MEMMIG_EXPORT int memmig_policy_choose(const struct memmig_cpu_info *cpu,
				       const struct memmig_tuning *t,
				       size_t len, unsigned int flags);
MEMMIG_EXPORT const char *memmig_prim_name(int prim);
/* Parses a name as printed by memmig_prim_name(); -EINVAL if unknown. */
MEMMIG_EXPORT int memmig_prim_parse(const char *name);
/* 1 if this build and CPU can run the primitive, else 0. */
MEMMIG_EXPORT int memmig_prim_supported(const struct memmig_cpu_info *cpu,
					int prim);
MEMMIG_EXPORT int memmig_prim_is_nt(int prim);

/*
 * Copies len bytes.  Checked entry points:
 *  - len 0 is a no-op that succeeds, whatever the pointers;
 *  - -EINVAL: NULL dst or src with len > 0, unknown flags, or buffers that
 *    overlap (this is a copy, not a move);
 *  - -EOVERFLOW: dst + len or src + len wraps the address space.
 * Nothing is written when a check fails.
 */
MEMMIG_EXPORT int memmig_copy_run(struct memmig_ctx *ctx, void *dst,
				  const void *src, size_t len,
				  unsigned int flags);
/* The primitive memmig_copy_run() would use for (len, flags), or -EINVAL. */
MEMMIG_EXPORT int memmig_copy_query(struct memmig_ctx *ctx, size_t len,
				    unsigned int flags);
/* Copies with one given primitive: -EOPNOTSUPP if this CPU lacks it. */
MEMMIG_EXPORT int memmig_copy_with(struct memmig_ctx *ctx, int prim,
				   void *dst, const void *src, size_t len,
				   unsigned int flags);

/* The base page: regions, ranges and their offsets are multiples of it. */
#define MEMMIG_PAGE_SIZE 4096UL
#define MEMMIG_UNIT_SIZE (2UL << 20)

/*
 * Batched unit copy: one primitive call per 2 MB unit (not 512 page
 * copies), with the primitive chosen once for the whole length (the
 * working set decides temporal or not) and one drain at the end.
 */
MEMMIG_EXPORT int memmig_copy_units(struct memmig_ctx *ctx, void *dst,
				    const void *src, size_t len,
				    unsigned int flags);
/* Store fence that orders earlier non-temporal stores (sfence on x86). */
MEMMIG_EXPORT void memmig_copy_drain(void);
/* Writes back the cache lines of [addr, addr + len) with the best flush
 * instruction the CPU has (clwb > clflushopt > clflush), no drain. */
MEMMIG_EXPORT int memmig_copy_flush(struct memmig_ctx *ctx, const void *addr,
				    size_t len);

/* ------------------------------------------------------------------ */
/* Machine-check-recoverable copy and poison.                           */

/*
 * Why a source page stayed unreadable: -EHWPOISON (a memory error:
 * SIGBUS BUS_MCEERR_AR/AO), -EIO (the kernel's own read of the backing
 * file failed too: bad media), -EFAULT (nothing backs the page: SIGBUS
 * BUS_ADRERR, e.g. a file mapping past the file's end).
 */
typedef void (*memmig_mc_bad_fn)(void *opaque, uint64_t offset, uint64_t len,
				 int err);

struct memmig_mc_opts {
	size_t sz;
	unsigned int flags;	/* enum memmig_copy_flags */
	/* The source's backing file, or -1.  A page that faults is read
	 * again with pread(2) at src_offset + its offset: the kernel copies
	 * with its own machine-check-safe copy and answers EIO for bad
	 * media, and a page it reads is not lost. */
	int src_fd;
	uint64_t src_offset;
	/* Called for each page of the source (offset from src, within one
	 * 4 KiB page of it) that stayed unreadable.  Optional. */
	memmig_mc_bad_fn bad;
	void *opaque;
};

/*
 * Copies like memmig_copy_units(), but a SIGBUS on the source (a memory
 * error or a vanished page) does not kill the process: the 2 MB unit is
 * bisected down to its 4 KiB pages, the faulting pages are tried through
 * the kernel (opts->src_fd), every other byte is copied, and each page
 * that stays unreadable goes to opts->bad.  Its destination bytes are
 * left as they were (never zero-filled): mark them (memmig_poison_mark()).
 *
 * Returns the number of bytes NOT copied, as the kernel's
 * copy_mc_to_kernel() does (0: all of them), or a negative errno for bad
 * arguments (those of memmig_copy_run()).  opts may be NULL.
 * A SIGBUS on the destination is not caught.  The calling thread may
 * block SIGBUS (a VMM reading it from a signalfd): it is unblocked for the
 * copy, and a SIGBUS sent to the thread meanwhile is queued to it again
 * after, blocked, as it came.
 */
MEMMIG_EXPORT ssize_t memmig_copy_mc(struct memmig_ctx *ctx, void *dst,
				     const void *src, size_t len,
				     const struct memmig_mc_opts *opts);
/*
 * A batch of memmig_copy_mc() calls on this thread.  Each call checks that
 * the SIGBUS guard is still installed and unblocks SIGBUS for its copy: two
 * system calls, as long as a cold 4 KiB copy.  Between begin and the
 * matching end they are made once: begin installs the guard and unblocks
 * SIGBUS, end blocks it again if the thread had it blocked, and a SIGBUS
 * sent to the thread meanwhile is queued to it again then, as after one
 * call.  Until end, the thread must not block SIGBUS nor replace the
 * SIGBUS handler.  Pairs nest.  begin: 0 or -errno (then no end).
 */
MEMMIG_EXPORT int memmig_copy_mc_begin(void);
MEMMIG_EXPORT void memmig_copy_mc_end(void);
/*
 * The SIGBUS guard behind memmig_copy_mc(): one process-wide handler that
 * catches faults inside guarded copies (each thread its own) and passes
 * every other SIGBUS to the handler the application had before (or to the
 * default action).  memmig_copy_mc() installs it on first use, and again
 * if the application replaced it since, chained to the new handler.
 */
MEMMIG_EXPORT int memmig_mc_guard_install(void);

/*
 * Marks [addr, addr + len) of this process poisoned, so that reading it
 * raises SIGBUS (BUS_MCEERR_AR; BUS_ADRERR on kernels without
 * CONFIG_MEMORY_FAILURE) as the lost memory would, and KVM hands a
 * guest that touches it a machine check instead of data: UFFDIO_POISON
 * (Linux 6.6).  Page aligned; anonymous, shmem or hugetlb memory; the
 * current contents are dropped.  -EOPNOTSUPP where the kernel or the
 * mapping cannot (other file mappings, DAX): the caller then keeps the
 * range reported as lost.  -EFAULT where part of the range is not mapped.
 */
MEMMIG_EXPORT int memmig_poison_mark(struct memmig_ctx *ctx, void *addr,
				     size_t len);


/* ------------------------------------------------------------------ */
/* Topology: NUMA nodes, memory tiers, DAX devices (a snapshot).        */

enum memmig_node_kind {
	MEMMIG_NODE_DRAM = 0,	/* a node with CPUs */
	MEMMIG_NODE_CPULESS = 1, /* memory only: CXL expanders, pmem as RAM */
};

struct memmig_node_info {
	size_t sz;
	int id;
	int kind;		/* enum memmig_node_kind */
	unsigned int ncpus;
	uint64_t mem_total;	/* bytes */
	uint64_t mem_free;	/* bytes, when the snapshot was taken */
	int tier;		/* the kernel's memory tier of the node
				 * (memory_tierN: what its own tiering
				 * demotes along), -1 if none; not a
				 * tiering of memmig's (memmig_tier_new) */
	int nearest_cpu_node;	/* this node if it has CPUs, else the nearest
				 * node with CPUs by distance, -1 if none */
	unsigned int flags;	/* MEMMIG_NODE_F_* */
	char dax_dev[32];	/* the DAX device onlined as this node's memory
				 * ("dax1.0"), or "" */
};

/* The node's memory is device DAX onlined as system RAM (the kmem driver:
 * daxctl reconfigure-device --mode=system-ram). */
#define MEMMIG_NODE_F_DAX_KMEM	(1u << 0)
/* ... of a CXL memory device: the DAX device sits under the kernel's CXL
 * bus (a CXL region, as cxl create-region makes it). */
#define MEMMIG_NODE_F_CXL	(1u << 1)

struct memmig_dax_info {
	size_t sz;
	char dev[32];		/* "dax0.0" */
	uint64_t size;		/* bytes */
	uint64_t align;		/* bytes */
	int target_node;	/* -1 if unknown */
	int mode;		/* 0 devdax, 1 onlined as system RAM */
	int region_id;		/* the DAX region (daxctl's "region"), -1 if
				 * unknown */
	unsigned int flags;	/* MEMMIG_DAX_F_* */
};

/* The device is CXL memory: it sits under the kernel's CXL bus. */
#define MEMMIG_DAX_F_CXL	(1u << 0)

struct memmig_topo;

/* Reads libnuma, sysfs and libdaxctl now; later changes need a new one. */
MEMMIG_EXPORT int memmig_topo_new(struct memmig_ctx *ctx,
				  struct memmig_topo **out);
MEMMIG_EXPORT struct memmig_topo *memmig_topo_ref(struct memmig_topo *topo);
MEMMIG_EXPORT void memmig_topo_unref(struct memmig_topo *topo);
/* Nodes with memory, ascending id; idx is 0..count-1. */
MEMMIG_EXPORT int memmig_topo_node_count(const struct memmig_topo *topo);
MEMMIG_EXPORT int memmig_topo_get_node(const struct memmig_topo *topo,
				       unsigned int idx,
				       struct memmig_node_info *out);
/* The node with this id: 0, or -ENOENT if it does not exist or has no
 * memory. */
MEMMIG_EXPORT int memmig_topo_find_node(const struct memmig_topo *topo,
					int node, struct memmig_node_info *out);
/* SLIT distance from one node to another, or -ENOENT. */
MEMMIG_EXPORT int memmig_topo_distance(const struct memmig_topo *topo,
				       int from, int to);
/* Fills cpus[0..max) with the node's CPU numbers; returns how many it has
 * (which may exceed max), or -ENOENT. */
MEMMIG_EXPORT int memmig_topo_node_cpus(const struct memmig_topo *topo,
					int node, int *cpus, unsigned int max);
MEMMIG_EXPORT int memmig_topo_dax_count(const struct memmig_topo *topo);
MEMMIG_EXPORT int memmig_topo_get_dax(const struct memmig_topo *topo,
				      unsigned int idx,
				      struct memmig_dax_info *out);

/* ------------------------------------------------------------------ */
/* Regions: memory to migrate, in this process or another one.          */

enum memmig_backing {
	MEMMIG_BACKING_AUTO = 0,	/* read it from /proc/PID/maps */
	MEMMIG_BACKING_ANON,		/* anonymous private */
	MEMMIG_BACKING_SHMEM,		/* memfd, shmem, anonymous shared */
	MEMMIG_BACKING_HUGETLB,		/* hugetlbfs */
	MEMMIG_BACKING_FILE,		/* a file's page cache */
	MEMMIG_BACKING_DAX,		/* device DAX (/dev/daxX.Y) or a file
					 * on a DAX file system (statx
					 * STATX_ATTR_DAX, or a MAP_SYNC
					 * mapping): no page cache, no LRU
					 * pages, so only this process can
					 * move it, by copy and swap */
};

struct memmig_region_desc {
	size_t sz;
	int pid;		/* 0: this process */
	uint64_t addr;		/* page aligned */
	uint64_t len;		/* page aligned, > 0 */
	int backing;		/* enum memmig_backing */
};

struct memmig_region;
struct memmig_desc_table;

/*
 * Registers a region after checking it: -EINVAL for an unaligned or empty
 * range or a backing that does not match the mapping, -EFAULT when a part
 * of the range is not mapped, -ESRCH for a pid that is gone, -EPERM when
 * this process may not move that process's pages.
 */
MEMMIG_EXPORT int memmig_region_new(struct memmig_ctx *ctx,
				    const struct memmig_region_desc *desc,
				    struct memmig_region **out);
MEMMIG_EXPORT struct memmig_region *memmig_region_ref(struct memmig_region *r);
MEMMIG_EXPORT void memmig_region_unref(struct memmig_region *r);
/* The description, with the backing that was found. */
MEMMIG_EXPORT int memmig_region_get_desc(const struct memmig_region *r,
					 struct memmig_region_desc *out);
/*
 * Device memory (a DAX region of this process) gets a descriptor table at
 * registration, one descriptor per page of the region (lazy: each 1 GiB
 * chunk on first use; offsets are the device's or file's), which its
 * migrations keep: in flight while a unit is copied, clean once it moved,
 * poisoned for a page that could not be read (and is not read again).
 * *out gets a reference; -ENOENT for other regions.
 */
MEMMIG_EXPORT int memmig_region_get_table(const struct memmig_region *r,
					  struct memmig_desc_table **out);
/*
 * Every migratable mapping of a process (anonymous, shared, hugetlb, file;
 * DAX of this process; not special or inaccessible ones, nor another
 * process's DAX): *out gets *count regions, freed with
 * memmig_region_list_free().  -ESRCH when the process is gone, or ended
 * while its mappings were read.
 */
MEMMIG_EXPORT int memmig_region_list_pid(struct memmig_ctx *ctx, int pid,
					 struct memmig_region ***out,
					 unsigned int *count);
MEMMIG_EXPORT void memmig_region_list_free(struct memmig_region **list,
					   unsigned int count);

/* ------------------------------------------------------------------ */
/* Migration: synchronous, or a job with progress, cancel and wait.     */

enum memmig_strategy {
	MEMMIG_STRATEGY_AUTO = 0,	/* copy for this process's anonymous
					 * memory, kernel otherwise */
	MEMMIG_STRATEGY_KERNEL,		/* move_pages(2), any process */
	MEMMIG_STRATEGY_COPY,		/* copy engine + mremap swap (anon,
					 * DAX, target_path),
					 * mbind(MPOL_MF_MOVE) (shared) */
};

enum memmig_migrate_flags {
	/* copy: copy and swap units already on the target node too */
	MEMMIG_MIGRATE_FORCE = 1u << 0,
	/* Only the pages the process alone maps (MPOL_MF_MOVE, never
	 * MPOL_MF_MOVE_ALL): what an unprivileged caller may move.  Pages
	 * shared with other processes (a library's text, shared memory)
	 * stay, reported EACCES.  memmigd sets it for clients other than
	 * root. */
	MEMMIG_MIGRATE_OWN_PAGES = 1u << 1,
	/* memmig_move_* only: the caller holds the process's move lock
	 * (memmig_move_lock(), a tiering's): the move does not take it. */
	MEMMIG_MIGRATE_LOCKED = 1u << 2,
};

struct memmig_migrate_opts {
	size_t sz;
	int target_node;
	uint64_t offset;	/* sub-range of the region: page aligned */
	uint64_t len;		/* 0: to the end of the region */
	int strategy;		/* enum memmig_strategy */
	unsigned int workers;	/* 0: the CPUs this process may use; the
				 * copy strategy adds a helper thread per
				 * worker that prepares destinations ahead
				 * when the process may use twice as many
				 * CPUs and the node has no reserve */
	unsigned int flags;	/* enum memmig_migrate_flags */
	/*
	 * To DAX instead of a node (target_node must then be -1): device DAX
	 * (/dev/daxX.Y: the range and target_offset aligned to the device's
	 * alignment), a file (created if missing, grown to target_offset +
	 * the length, blocks allocated first: -ENOSPC before anything is
	 * copied) or a directory (an unnamed file in it).  Files are mapped
	 * MAP_SHARED_VALIDATE | MAP_SYNC; on a file system without DAX that
	 * fails, memmig logs it and makes each unit durable with msync(2)
	 * before its swap instead.  The range of this process's anonymous
	 * or DAX memory then maps the target.  NULL: to target_node.
	 */
	const char *target_path;
	uint64_t target_offset;	/* in the target: page aligned */
};

enum memmig_job_state {
	MEMMIG_JOB_RUNNING = 0,
	MEMMIG_JOB_DONE,	/* finished: see the result */
};

struct memmig_progress {
	size_t sz;
	int state;		/* enum memmig_job_state */
	int result;		/* 0 or -errno once done */
	uint64_t bytes_done;	/* units the job got through (copied, for
				 * the copy strategy: swapped at the end of
				 * their round of up to 1 GiB), moved or
				 * failed */
	uint64_t bytes_total;
	double rate;		/* bytes/s over the last interval */
	double elapsed_s;
};

struct memmig_job;
struct memmig_report;

/*
 * Starts a migration on worker threads.  Bad options fail here with
 * nothing changed: -EINVAL (unaligned or out-of-region range, unknown
 * strategy or flags, copy strategy on another process, DAX memory of
 * another process or with the kernel strategy, target_path with a
 * target_node, a source that is not anonymous or DAX, misaligned for a
 * device DAX target), -ENOENT (node that does not exist or has no memory,
 * target_path missing), -ENOSPC (target too small or its file system
 * full), -ENODEV (target_path is a device that is not DAX).  With
 * target_path, the target is opened and mapped here.
 */
MEMMIG_EXPORT int memmig_job_start(struct memmig_region *r,
				   const struct memmig_migrate_opts *opts,
				   struct memmig_job **out);
MEMMIG_EXPORT int memmig_job_get_progress(struct memmig_job *job,
					  struct memmig_progress *out);
/* Asks the workers to stop after the units they are on; what was moved
 * stays moved and consistent, the rest stays where it was. */
MEMMIG_EXPORT int memmig_job_cancel(struct memmig_job *job);
/*
 * Waits for the end; returns the job's result: 0, -ECANCELED, -ENOMEM
 * (the target ran out: the report says which ranges moved), -EFAULT (a
 * part of the region was unmapped since it was registered: the rest moved,
 * and the report names those pages as failed with EFAULT), or another
 * -errno.  *report (if not NULL) gets a reference to the report.
 */
MEMMIG_EXPORT int memmig_job_wait(struct memmig_job *job,
				  struct memmig_report **report);
MEMMIG_EXPORT void memmig_job_unref(struct memmig_job *job);

/* memmig_job_start() + memmig_job_wait(). */
MEMMIG_EXPORT int memmig_migrate(struct memmig_region *r,
				 const struct memmig_migrate_opts *opts,
				 struct memmig_report **report);

/* ------------------------------------------------------------------ */
/* A whole-process move: every mapping of a process, or some ranges.   */

/*
 * What memmig-cli move and each memmigd job run: the process's mappings
 * (or the ranges asked for) moved one after the other, each one a job as
 * above, on one set of worker threads and one topology snapshot, with
 * progress, cancel and one report for the whole.
 */
struct memmig_move;

struct memmig_range {
	uint64_t addr, len;	/* page aligned, len > 0 */
};

#define MEMMIG_MOVE_MAX_RANGES 65536
/* Node ids of from_nodes are below this. */
#define MEMMIG_MOVE_MAX_NODES 1024

enum memmig_move_state {
	MEMMIG_MOVE_NEW = 0,	/* checked, nothing listed yet */
	MEMMIG_MOVE_PLANNING,	/* listing and checking the mappings */
	MEMMIG_MOVE_PLANNED,	/* ready to start */
	MEMMIG_MOVE_RUNNING,
	MEMMIG_MOVE_DONE,	/* ended: see the result (a plan that
				 * failed ends the move too) */
};

/* Called on the move's thread each time it reaches PLANNED or DONE; it
 * must not wait for the move nor drop the last reference. */
typedef void (*memmig_move_notify_fn)(struct memmig_move *mv, void *opaque);

struct memmig_move_opts {
	size_t sz;
	int pid;			/* > 0: the process */
	const struct memmig_range *ranges;	/* NULL: every mapping */
	unsigned int nranges;		/* up to MEMMIG_MOVE_MAX_RANGES */
	int target_node;
	int strategy;			/* enum memmig_strategy: the copy
					 * strategy in this process only */
	unsigned int workers;		/* 0: the CPUs this process may use */
	unsigned int flags;		/* enum memmig_migrate_flags */
	memmig_move_notify_fn notify;	/* NULL: none */
	void *opaque;
	/* Like migratepages(8): NULL moves pages wherever they are; else
	 * only the pages found on these nodes (ids below
	 * MEMMIG_MOVE_MAX_NODES) move, with the kernel strategy, and the
	 * others are left alone (the report's pages_skipped).  Copied. */
	const int *from_nodes;
	unsigned int nfrom_nodes;	/* up to MEMMIG_MOVE_MAX_NODES */
	/*
	 * The caller's hold on another process, or 0: an fd on its /proc/PID
	 * directory (open(2) with O_DIRECTORY), which names that process and
	 * no later one with its pid.  The move then reads the process's files
	 * (smaps, maps, pagemap, ...) through it, not through /proc/PID, and
	 * looks into it before and after each system call that takes the pid
	 * (move_pages(2), migrate_pages(2)): once the process was reaped --
	 * its pid may be another process's -- the move stops with -ESRCH.
	 * The caller's, not closed; open for as long as the move runs.
	 */
	int procfd;
	/*
	 * NULL, or the caller's own rule (an unprivileged client's
	 * permission, say), asked with check_opaque before the move's first
	 * region, before each region, before each system call that takes the
	 * pid, and at the end: 0 goes on; a -errno (-EPERM) stops the move
	 * there with it, as its result.  Called on the move's threads, several
	 * at once; it must not wait for the move.
	 */
	int (*check)(void *check_opaque);
	void *check_opaque;
};

struct memmig_move_progress {
	size_t sz;
	int state;			/* enum memmig_move_state */
	int result;			/* 0 or -errno once DONE */
	uint64_t bytes_done;		/* as memmig_progress, over the move */
	uint64_t bytes_total;		/* of the mappings planned */
	unsigned int regions_done, regions;
	double rate;			/* bytes/s, recent */
	double elapsed_s;		/* since the start */
};

/*
 * Checks a move without reading the process's mappings: -EINVAL (bad
 * options, copy strategy for another process), -ESRCH (no such process),
 * -ENOENT (no node target_node with memory).  The ranges are copied.
 */
MEMMIG_EXPORT int memmig_move_new(struct memmig_ctx *ctx,
				  const struct memmig_move_opts *opts,
				  struct memmig_move **out);
MEMMIG_EXPORT struct memmig_move *memmig_move_ref(struct memmig_move *mv);
/* Dropping the last reference to a running move cancels it and waits. */
MEMMIG_EXPORT void memmig_move_unref(struct memmig_move *mv);
/*
 * Lists the mappings (or checks the ranges) on the calling thread, so that
 * a bad request fails before any work: -EFAULT (a range not mapped),
 * -EINVAL (a range not movable), -EPERM, -ESRCH (the process is gone,
 * also when it ended while the plan read it).  A failed plan ends the
 * move (DONE).  -EBUSY when already planned or started.
 */
MEMMIG_EXPORT int memmig_move_plan(struct memmig_move *mv);
/* The same on the move's thread: the notify callback tells when it
 * ended (state PLANNED, or DONE with the error). */
MEMMIG_EXPORT int memmig_move_plan_start(struct memmig_move *mv);
/*
 * Moves the mappings on the move's thread (planning first when that was
 * not done).  Mappings that went away meanwhile are skipped; pages the
 * kernel could not move are in the report.  -EBUSY when started already.
 * Two moves of one process never run at once, in one program or several
 * (memmigd, memmig-cli -l, yours): each holds an flock(2) on the
 * process's /proc/PID/mem while it runs, and one that finds it held ends
 * at once with -EBUSY, nothing moved.  Where that file cannot be opened
 * (no ptrace attach access: Yama's ptrace_scope) the move runs unlocked.
 */
MEMMIG_EXPORT int memmig_move_start(struct memmig_move *mv);
MEMMIG_EXPORT int memmig_move_get_progress(struct memmig_move *mv,
					   struct memmig_move_progress *out);
/*
 * The move lock of a process (pid; procfd >= 0: its /proc/PID directory,
 * as in memmig_move_opts, -1: none), which every whole-process move holds
 * while it runs.  A program that moves a process's pages by other means
 * for a while (a tiering, say) takes it for as long, so that no move runs
 * meanwhile, and none is running when it starts.  An fd, to be closed to
 * release it (its holder's death does too), -EBUSY (held), or another
 * -errno: none can be had here (no ptrace attach access to the process).
 */
MEMMIG_EXPORT int memmig_move_lock(int pid, int procfd);
/* From any thread: the mapping being moved stops after its units (a
 * whole-process walk: after the source node being walked), the rest is
 * not started.  What moved stays moved. */
MEMMIG_EXPORT int memmig_move_cancel(struct memmig_move *mv);
/*
 * Waits for the end of a started move (or of its plan when only that was
 * started) and returns its result: 0, -ECANCELED, -ESRCH (the process
 * ended), -EBUSY (another move of the process ran: nothing moved), or the
 * first region's fatal -errno.  *report (may be NULL) gets
 * the whole move's report, whose summary counts the regions.
 */
MEMMIG_EXPORT int memmig_move_wait(struct memmig_move *mv,
				   struct memmig_report **report);

/* ------------------------------------------------------------------ */
/* Reports.                                                             */

struct memmig_report_summary {
	size_t sz;
	int result;		/* 0 or -errno */
	int strategy;		/* the strategy that ran */
	int target_node;
	unsigned int workers;
	uint64_t bytes_total;	/* planned */
	uint64_t bytes_moved;	/* on a node at the start, on the target
				 * node at the end, through this job */
	uint64_t units_total;	/* 2 MB-aligned units planned */
	uint64_t units_thp;	/* of which one 2 MB page each (THP or
				 * hugetlbfs) */
	double prepare_s;	/* destination allocation and prefault, the
				 * workers' average */
	double copy_s;		/* copy + swap, or move_pages, the workers'
				 * average */
	double total_s;		/* the job, wall clock, placement queries
				 * included */
	double gbps;		/* bytes_moved / total_s, 1e9 bytes/s */
	uint64_t pages_failed;	/* 4 KiB pages that did not move (a zero
				 * page or an absent one is not a failure;
				 * an unmapped one is) */
	uint64_t pages_verified_on_target; /* move_pages(nodes = NULL) after */
	int pid;		/* the process (0: this one) */
	unsigned int regions;	/* mappings: 1 for a job, those a
				 * whole-process move got through */
	double query_s;		/* placement queries before and after
				 * (move_pages, pagemap), the workers'
				 * average; in total_s */
	double plan_s;		/* a whole-process move: listing and
				 * checking its mappings, the topology
				 * snapshot; before total_s */
	uint64_t pages_skipped;	/* on a node outside the move's
				 * from_nodes: left alone */
	uint64_t failed_ranges_omitted;	/* failed ranges past the first
					 * MEMMIG_REPORT_MAX_FAILED_RANGES:
					 * counted, not kept */
	uint64_t failed_pages_omitted;	/* 4 KiB pages in them (of
					 * pages_failed) */
};

/*
 * A report keeps the first MEMMIG_REPORT_MAX_FAILED_RANGES failed ranges
 * (adjacent failed pages with the same errno are one range) and counts
 * the others (failed_ranges_omitted, failed_pages_omitted), so that its
 * size does not grow with the process: one page in two of a process that
 * shares its memory copy-on-write with a child fails on its own.
 * pages_failed and the errno counts cover every page all the same.
 */
#define MEMMIG_REPORT_MAX_FAILED_RANGES 64

MEMMIG_EXPORT int memmig_report_get_summary(const struct memmig_report *rep,
					    struct memmig_report_summary *out);
/* 4 KiB pages of the range on a node before and after (move_pages query). */
MEMMIG_EXPORT int memmig_report_node_pages(const struct memmig_report *rep,
					   int node, uint64_t *before,
					   uint64_t *after);
/* The largest node id the node page counts cover, or -1 if none. */
MEMMIG_EXPORT int memmig_report_max_node(const struct memmig_report *rep);
/* Ranges moved by this job, coalesced, ascending: idx 0..count-1. */
MEMMIG_EXPORT int memmig_report_moved_count(const struct memmig_report *rep);
MEMMIG_EXPORT int memmig_report_get_moved(const struct memmig_report *rep,
					  unsigned int idx, uint64_t *addr,
					  uint64_t *len);
/* Pages not moved: counts per errno (EACCES, ENOMEM, EFAULT, ENOENT, EBUSY,
 * ...), and the failed ranges with their errno, coalesced, ascending: the
 * first MEMMIG_REPORT_MAX_FAILED_RANGES at most (the summary counts the
 * others). */
MEMMIG_EXPORT uint64_t memmig_report_errno_pages(const struct memmig_report *rep,
						 int err);
/* The errnos seen, idx 0..count-1, with their page counts. */
MEMMIG_EXPORT int memmig_report_errno_count(const struct memmig_report *rep);
MEMMIG_EXPORT int memmig_report_get_errno(const struct memmig_report *rep,
					  unsigned int idx, int *err,
					  uint64_t *pages);
/* Of memmig_report_errno_pages(), those in pages_failed: the failed ranges'
 * pages with err, those left out of the list included (a page not present,
 * or a zero page, is not a failure). */
MEMMIG_EXPORT uint64_t memmig_report_failed_errno_pages(const struct memmig_report *rep,
							int err);
MEMMIG_EXPORT int memmig_report_failed_count(const struct memmig_report *rep);
MEMMIG_EXPORT int memmig_report_get_failed(const struct memmig_report *rep,
					   unsigned int idx, uint64_t *addr,
					   uint64_t *len, int *err);
MEMMIG_EXPORT struct memmig_report *memmig_report_ref(struct memmig_report *rep);
MEMMIG_EXPORT void memmig_report_unref(struct memmig_report *rep);

/* ------------------------------------------------------------------ */
/* Live migration of a running KVM guest's RAM, inside its VMM.         */

/*
 * A VMM hands memmig its KVM VM fd, its memslots and two callbacks; memmig
 * can then move a slot, or a range of one, to another node or to a file
 * tier while the guest runs: dirty tracking, pre-copy rounds, a short
 * pause, the last dirty pages, a swap, resume.
 */
struct memmig_vm;
struct memmig_live;

struct memmig_vm_ops {
	size_t sz;
	/* Stops every vCPU; returns once none is inside KVM_RUN (its dirty
	 * writes are then all logged), by blocking: it runs at real-time
	 * priority (MEMMIG_LIVE_KEEP_SCHED).  0 or -errno.  Required. */
	int (*pause)(void *opaque);
	/* Lets them run again.  0 or -errno (after a swap, the migration
	 * stands all the same: memmig_live_report.resume_err).  Required. */
	int (*resume)(void *opaque);
	/*
	 * A slot's host memory changed, vCPUs paused: its new host address
	 * (the same one after an mremap swap) and fd (-1: anonymous).  The
	 * fd stays memmig's: dup() it to keep it.  When the slot was swapped
	 * by re-adding the memslot (fd-backed RAM), old_hva is the VMM's
	 * mapping, which the guest no longer uses: the VMM unmaps it.
	 * Optional.
	 */
	void (*slot_moved)(void *opaque, uint32_t slot, void *old_hva,
			   void *hva, int fd, uint64_t fd_offset);
	/*
	 * Guest memory that could not be read during a live migration: the
	 * guest-physical range and why (-EHWPOISON a memory error, -EIO the
	 * kernel's read of the backing file failed too, -EFAULT nothing
	 * backs it).  The copy holds a poison marker there, so a guest that
	 * touches it exits with SIGBUS BUS_MCEERR_AR on the vCPU thread, as
	 * before: the VMM injects a machine check (memmig_vm_mce_inject()).
	 * Where the kernel cannot mark the copy (before Linux 6.6), the
	 * migration fails with -EHWPOISON instead and the guest stays on its
	 * memory.  Called after resume, whatever the result.  Optional.
	 */
	void (*poisoned)(void *opaque, uint32_t slot, uint64_t gpa, uint64_t len,
			 int err);
};

/* One KVM memslot as the VMM registered it with KVM. */
struct memmig_vm_slot {
	size_t sz;
	uint32_t slot;		/* address space << 16 | slot id, as KVM's */
	uint32_t flags;		/* the KVM_MEM_* flags the VMM set */
	uint64_t gpa;		/* guest-physical base */
	void *hva;		/* host address */
	uint64_t size;
	int fd;			/* the backing fd, or -1 for anonymous RAM */
	uint64_t fd_offset;
};

/*
 * The VMM keeps vm_fd open while the vm lives.  ops is copied.  vm_fd -1:
 * no KVM; the slots are memory of this process that its own threads
 * write, pause() stops them, and tracking is MEMMIG_DIRTY_UFFD_WP (or
 * MEMMIG_DIRTY_SOFT_DIRTY where the kernel lacks it).
 */
MEMMIG_EXPORT int memmig_vm_new(struct memmig_ctx *ctx, int vm_fd,
				const struct memmig_vm_ops *ops, void *opaque,
				struct memmig_vm **out);
MEMMIG_EXPORT struct memmig_vm *memmig_vm_ref(struct memmig_vm *vm);
MEMMIG_EXPORT void memmig_vm_unref(struct memmig_vm *vm);
/* Registers a slot the VMM created (-EEXIST, -EINVAL on overlap or bad
 * alignment). */
MEMMIG_EXPORT int memmig_vm_add_slot(struct memmig_vm *vm,
				     const struct memmig_vm_slot *slot);
MEMMIG_EXPORT int memmig_vm_remove_slot(struct memmig_vm *vm, uint32_t slot);
/* The slot as it is now (its hva and fd change when it moves). */
MEMMIG_EXPORT int memmig_vm_get_slot(struct memmig_vm *vm, uint32_t slot,
				     struct memmig_vm_slot *out);
/*
 * The VMM enabled KVM_CAP_DIRTY_LOG_RING before creating its vCPUs: it
 * hands memmig each vCPU's mmapped ring (entries: a power of two).  KVM
 * then refuses KVM_GET_DIRTY_LOG, and memmig harvests the rings.
 */
MEMMIG_EXPORT int memmig_vm_add_dirty_ring(struct memmig_vm *vm,
					   unsigned int vcpu, void *ring,
					   uint32_t entries);
/* The VMM's answer to KVM_EXIT_DIRTY_RING_FULL, from the vCPU thread:
 * harvests and resets the rings, then the vCPU may run again. */
MEMMIG_EXPORT int memmig_vm_dirty_ring_full(struct memmig_vm *vm,
					    unsigned int vcpu);
/* The VMM wrote guest memory itself (device emulation): KVM did not see
 * it.  During a live migration the pages are copied again. */
MEMMIG_EXPORT int memmig_vm_mark_dirty(struct memmig_vm *vm, uint64_t gpa,
				       uint64_t len);

/*
 * Guest memory errors (x86 KVM; -EOPNOTSUPP elsewhere or with vm_fd -1).
 * A page of guest RAM is lost -- the host consumed poison on it (KVM's
 * SIGBUS BUS_MCEERR_AR on a vCPU thread), or memmig could not copy it --
 * and the guest learns it as from hardware: a machine check on a vCPU,
 * as QEMU sends one.  Both calls use vcpu_fd: make them on the vCPU's
 * thread while it is out of KVM_RUN (KVM serializes vCPU ioctls and
 * would hold the caller until KVM_RUN returns).
 *
 * memmig_vm_mce_setup() gives the vCPU machine-check banks (KVM_CAP_MCE,
 * KVM_X86_SETUP_MCE), once, before the guest enables CR4.MCE: banks 0
 * means MEMMIG_VM_MCE_BANKS_DEFAULT; more than KVM has are clamped.
 * MCG_CTL_P, MCG_SER_P and MCG_LMCE_P are set where KVM supports them.
 *
 * memmig_vm_mce_inject() reports the 4 KiB page holding gpa (which must
 * lie in a registered slot: -EINVAL otherwise) in bank 9, or the last one
 * with fewer banks: uncorrected, action required (a data load: SRAR) by
 * default, action optional (found by a scrub: SRAO) with
 * MEMMIG_VM_MCE_AO.  -ENXIO when the vCPU has no banks.  (KVM gives a new
 * vCPU 32 banks but no MCG_SER_P: without memmig_vm_mce_setup() the guest
 * cannot tell action required from optional.)  KVM queues #MC;
 * if the guest has CR4.MCE clear or is still handling the last machine
 * check (MCG_STATUS.MCIP), KVM shuts the guest down (KVM_EXIT_SHUTDOWN)
 * as hardware would.
 */
#define MEMMIG_VM_MCE_BANKS_DEFAULT	10
#define MEMMIG_VM_MCE_AO		(1u << 0)
MEMMIG_EXPORT int memmig_vm_mce_setup(struct memmig_vm *vm, int vcpu_fd,
				      unsigned int banks);
MEMMIG_EXPORT int memmig_vm_mce_inject(struct memmig_vm *vm, int vcpu_fd,
				       uint64_t gpa, unsigned int flags);

enum memmig_dirty_method {
	MEMMIG_DIRTY_AUTO = 0,	/* the ring if the VMM gave rings, else the
				 * log, with CLEAR where KVM has it */
	MEMMIG_DIRTY_LOG,	/* KVM_GET_DIRTY_LOG, clearing as it reads */
	MEMMIG_DIRTY_LOG_CLEAR,	/* KVM_GET_DIRTY_LOG + KVM_CLEAR_DIRTY_LOG
				 * (KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2) */
	MEMMIG_DIRTY_RING,	/* KVM_CAP_DIRTY_LOG_RING */
	MEMMIG_DIRTY_UFFD_WP,	/* without KVM: userfaultfd write-protection
				 * (UFFD_FEATURE_WP_ASYNC + PAGEMAP_SCAN,
				 * Linux 6.7) */
	MEMMIG_DIRTY_SOFT_DIRTY, /* without KVM, before Linux 6.7: the page
				 * tables' soft-dirty bits; each harvest
				 * pauses the VMM's threads briefly (the
				 * kernel cannot read and clear them in one
				 * step), and the clear is process-wide */
};
MEMMIG_EXPORT const char *memmig_dirty_method_name(int method);

struct memmig_live_opts {
	size_t sz;
	uint32_t slot;
	uint64_t offset, length;	/* in the slot, 4 KiB multiples; length
					 * 0: to the slot's end.  fd-backed
					 * slots move whole. */
	int target_node;		/* -1 for target_path */
	const char *target_path;	/* file target: a directory (an unnamed
					 * file is made in it) or a file */
	uint64_t pause_budget_ns;	/* 0: 5 ms */
	unsigned int max_rounds;	/* pre-copy rounds after the first
					 * full copy; 0: 30 */
	int dirty_method;		/* enum memmig_dirty_method */
	unsigned int flags;		/* MEMMIG_LIVE_* */
};

/*
 * Pre-copy that cannot bring what is left under the budget (the guest
 * dirties memory as fast as it is copied, or the pause's fixed part alone
 * is over budget) stops anyway, within the round limit, and pauses
 * longer than the budget: the report says why (stop_reason).  With this
 * flag it fails instead, -ETIMEDOUT, and the guest stays on its memory.
 */
#define MEMMIG_LIVE_FAIL_OVER_BUDGET	(1u << 0)
/*
 * No pre-copy of the whole range: the switchover starts at once, each
 * piece copied by rounds of its own and swapped in under its pause before
 * the next piece is copied.  What the guest writes on a piece once it is
 * in lands on the copy, so a guest that rewrites all of its RAM has each
 * page copied about once, where pre-copy copies again, every round, all
 * that it rewrote.  The price: memmig_live_cancel() stops between pieces,
 * and those before stay on the copy (report.bytes_switched).  Not with
 * MEMMIG_LIVE_FAIL_OVER_BUDGET (-EINVAL: there is no pre-copy to refuse).
 * Soft-dirty tracking (whose harvest is a pause) and a copy that replaces
 * the slot whole (one piece) pre-copy as without it (report.stop_reason
 * says which ran).
 */
#define MEMMIG_LIVE_STREAM		(1u << 1)
/*
 * Each pause runs at the calling thread's own scheduling.  Without this
 * flag, the thread that runs the migration is raised to SCHED_FIFO
 * priority 1 from just before pause() to just after resume(), where it
 * may be (CAP_SYS_NICE or RLIMIT_RTPRIO; a thread real-time or deadline
 * already is left alone), and gets its own policy back: a CPU-bound task
 * then cannot take its CPU while the guest is stopped.  pause() must
 * therefore wait for the vCPUs by blocking, not by spinning.
 */
#define MEMMIG_LIVE_KEEP_SCHED		(1u << 2)

/* Why pre-copy ended (memmig_live_report.stop_reason). */
enum memmig_live_stop {
	MEMMIG_LIVE_STOP_NONE = 0,	/* it did not end: failed or cancelled */
	MEMMIG_LIVE_STOP_CONVERGED,	/* what is left fits the budget */
	MEMMIG_LIVE_STOP_CLEAN,		/* nothing left to copy */
	MEMMIG_LIVE_STOP_STALLED,	/* the dirty set stopped shrinking: the
					 * guest writes as fast as memmig copies */
	MEMMIG_LIVE_STOP_OVERHEAD,	/* the pause without its copy (stop,
					 * harvest, swap) is over budget */
	MEMMIG_LIVE_STOP_ROUND_LIMIT,	/* max_rounds */
	MEMMIG_LIVE_STOP_STREAMED,	/* MEMMIG_LIVE_STREAM: no pre-copy, each
					 * piece copied in its turn */
};
MEMMIG_EXPORT const char *memmig_live_stop_name(int reason);

/* Validates opts and takes the slot; nothing is allocated yet. */
MEMMIG_EXPORT int memmig_live_new(struct memmig_vm *vm,
				  const struct memmig_live_opts *opts,
				  struct memmig_live **out);
/* Allocates and prefaults the destination on its node or file (the
 * kernel zeroes it): timed on its own.  memmig_live_run() does it when
 * the caller did not. */
MEMMIG_EXPORT int memmig_live_prepare(struct memmig_live *live);
/*
 * Copies the range while the guest runs, then copies what the guest
 * dirtied in rounds until the rest fits the pause budget at the measured
 * copy rate (or the round limit), then switches over piece by piece:
 * pauses, copies the piece's last dirty pages, swaps the piece in,
 * resumes (see memmig_live_report.pauses).  Once.  0, -ECANCELED, or
 * -errno with the guest on its old memory, untouched, except the pieces
 * switched before a failure, which stay on the copy with every byte the
 * guest wrote (report.bytes_switched; a shared or file copy replaces the
 * slot in one piece).  Once the last piece is in (slot_moved() called),
 * the migration stands: a resume() that fails after it does not make the
 * call fail; the report has its error in resume_err, and the vCPUs are as
 * that resume() left them (the VMM's to restart).
 */
MEMMIG_EXPORT int memmig_live_run(struct memmig_live *live);
/* From any thread: stops pre-copy; the guest stays on its memory.  Once
 * the switchover began, it finishes; with MEMMIG_LIVE_STREAM it stops
 * before the next piece, the pieces before on the copy. */
MEMMIG_EXPORT int memmig_live_cancel(struct memmig_live *live);
MEMMIG_EXPORT void memmig_live_unref(struct memmig_live *live);

struct memmig_live_report {
	size_t sz;
	int result;
	int dirty_method;	/* the one used */
	uint64_t bytes;		/* the range */
	uint64_t bytes_copied;	/* every round and the pause */
	unsigned int rounds;	/* copy rounds: the full one, then dirty ones
				 * (0 streamed: the pieces' own rounds) */
	int converged;		/* 1: what was left fit the budget (or
				 * nothing was); 0: see stop_reason */
	uint64_t pause_bytes;	/* copied while paused, in every pause */
	double prepare_s;	/* destination allocation and prefault */
	double precopy_s;	/* from tracking on to the first pause */
	double pause_s;		/* the longest pause (see pauses): pause()
				 * called to resume() called, the vCPUs run
				 * again from there.  Of which: */
	double pause_stop_s;	/* pause() */
	double pause_harvest_s;	/* the piece's last dirty harvest */
	double pause_copy_s, pause_swap_s;
	double resume_s;	/* resume() itself, till it returned */
	double total_s;		/* run, prepare excluded */
	double gbps;		/* bytes / total_s, 1e9 bytes/s */
	double copy_gbps;	/* the copy rate the pause was sized with */
	uint64_t pages_poisoned;	/* unreadable: never copied, marked */
	unsigned int poisoned_ranges;	/* memmig_live_get_poisoned() */
	int stop_reason;	/* enum memmig_live_stop */
	double dirty_gbps;	/* the guest's dirty rate over the last
				 * pre-copy round, 1e9 bytes/s */
	uint64_t stop_dirty_bytes;	/* dirty when pre-copy ended */
	double pause_expected_s;	/* what the pause was sized to take */
	double pause_budget_s;		/* the budget it had */
	int resume_err;		/* resume() failed after the swap: its
				 * -errno (the migration stands); 0 */
	/* pause_expected_s in parts, as pause_stop_s to pause_swap_s: the
	 * stop, the harvest and the swap as the last pauses of this vm took
	 * them (the harvest and the swap per byte; the harvest as the last
	 * pre-copy one took before a pause with this tracking), the copy as
	 * the last pauses copied per byte (at copy_gbps before any did).  A
	 * pause over budget shows which part ran over. */
	double expected_stop_s, expected_harvest_s;
	double expected_copy_s, expected_swap_s;
	/*
	 * The switchover: the copy goes in piece by piece, each piece's last
	 * dirty pages copied and the piece swapped in under a pause of its
	 * own, sized so that the pause takes a fifth of the budget at the
	 * swap's and the copy's cost per byte as this host measured them (a
	 * piece whose guest still writes much of it is cut short, the rest
	 * left to the next).  pause_s is the longest of them.
	 */
	unsigned int pauses;	/* how many (1: the range in one piece) */
	double pause_total_s;	/* their sum */
	uint64_t piece_bytes;	/* the largest piece */
	double switchover_s;	/* the pieces' own rounds and pauses, from
				 * the end of pre-copy to the last resume() */
	uint64_t bytes_switched;	/* on the copy: all of bytes, or, when
					 * a piece failed, those before it */
	double swap_total_s;	/* every piece's swap: what swapping the
				 * range costs on this host */
	uint64_t pause_bytes_max;	/* the most one pause copied: bounded
					 * by a piece's share of the budget,
					 * not by the guest's size */
};
MEMMIG_EXPORT int memmig_live_get_report(const struct memmig_live *live,
					 struct memmig_live_report *out);
/* The pause's part i (0 .. 3: "stop", "harvest", "copy", "swap"): its
 * name, the seconds it took and was expected to take (each optional; a
 * field past r->sz reads 0).  0, -EINVAL (bad sz), or -ENOENT past the
 * last. */
MEMMIG_EXPORT int memmig_live_pause_part(const struct memmig_live_report *r, unsigned int i,
					 const char **name, double *took,
					 double *expected);
/* A pause over its budget: the part ("stop", "harvest", "copy" or "swap")
 * that ran furthest over what it was expected to take, and (took,
 * expected: optional) its seconds.  NULL for a pause within budget. */
MEMMIG_EXPORT const char *memmig_live_report_overrun(const struct memmig_live_report *r,
						     double *took, double *expected);
/* Round idx (0: the full copy): bytes copied and seconds taken. */
MEMMIG_EXPORT int memmig_live_get_round(const struct memmig_live *live,
					unsigned int idx, uint64_t *bytes,
					double *seconds);

/* Poisoned range idx (0 .. poisoned_ranges - 1), ascending: guest-physical
 * address, length and why (as in memmig_vm_ops.poisoned). */
MEMMIG_EXPORT int memmig_live_get_poisoned(const struct memmig_live *live,
					   unsigned int idx, uint64_t *gpa,
					   uint64_t *len, int *err);

/* new + prepare + run + report + unref. */
MEMMIG_EXPORT int memmig_vm_migrate(struct memmig_vm *vm,
				    const struct memmig_live_opts *opts,
				    struct memmig_live_report *report);

/*
 * Which pages of a slot the guest writes, without migrating anything: a
 * VMM's estimate of its guest's working set or dirty rate (as QEMU's
 * calc-dirty-rate), and a tiering's source of writes (memmig_tier_opts.vm).
 * It uses a live migration's tracking (dirty_method as there; AUTO takes
 * the rings where the VMM gave them, else KVM_GET_DIRTY_LOG, which
 * re-protects as it reads; without KVM, userfaultfd write protection or
 * soft-dirty bits), so it and a live migration of the vm do not run at
 * once: start() says -EBUSY while one runs, and a migration started while
 * tracking is on says -EBUSY too.  Stop it around a migration.
 */
struct memmig_vm_track;

MEMMIG_EXPORT int memmig_vm_track_new(struct memmig_vm *vm, uint32_t slot,
				      int dirty_method,
				      struct memmig_vm_track **out);
/* Tracking on: what read() gives is written after this call. */
MEMMIG_EXPORT int memmig_vm_track_start(struct memmig_vm_track *t);
/*
 * ORs the slot pages written since the last read (or the start) into
 * bitmap (bit i: the slot's 4 KiB page i; words of 64 bits, at least
 * (slot size / 4 KiB + 63) / 64 of them) and sets *pages to how many there
 * were.  -EINVAL when tracking is off or the bitmap is too short.
 */
MEMMIG_EXPORT int memmig_vm_track_read(struct memmig_vm_track *t,
				       uint64_t *bitmap, size_t words,
				       uint64_t *pages);
/* Tracking off, as the slot was before start(); 0 when it was off. */
MEMMIG_EXPORT int memmig_vm_track_stop(struct memmig_vm_track *t);
/* The method start() uses (enum memmig_dirty_method). */
MEMMIG_EXPORT int memmig_vm_track_method(const struct memmig_vm_track *t);
/* The last reference stops it too. */
MEMMIG_EXPORT void memmig_vm_track_unref(struct memmig_vm_track *t);

/* ------------------------------------------------------------------ */
/* Tiering: a process's (or a VMM's own guest's) hot memory on fast     */
/* nodes, its cold memory on slow ones, without being asked             */
/* (docs/tiering.md, memmig_tier_new(3)).                               */

/*
 * One tiering per process.  Each memmig_tier_step() -- one interval, on the
 * caller's thread and clock -- reads its hotness sources, ages what it
 * knows, plans promotions and demotions in 2 MiB units within the options'
 * share and rate, and moves them.  A process is moved with the kernel
 * strategy (move_pages(2)); a VMM's guest (opts.vm) through the live path,
 * one unit at a time, each with its own short pause.  memmigd's tiering is
 * one user of this object.
 */
struct memmig_tier;

#define MEMMIG_TIER_UNIT		(2ULL << 20)	/* bytes */
#define MEMMIG_TIER_MAX_NODES		64	/* in each of fast and slow */
#define MEMMIG_TIER_INTERVAL_MIN_MS	100
#define MEMMIG_TIER_INTERVAL_MAX_MS	3600000
#define MEMMIG_TIER_COLD_MAX		8	/* intervals of history kept */
#define MEMMIG_TIER_STAY_MAX		1000
#define MEMMIG_TIER_PAUSE_MAX_MS	10000
/* The defaults (0 in memmig_tier_opts' interval_ms, cold_intervals and
 * pause_ms), and memmigd's for what has none. */
#define MEMMIG_TIER_INTERVAL_DEFAULT_MS	2000
#define MEMMIG_TIER_COLD_DEFAULT	2
#define MEMMIG_TIER_PAUSE_DEFAULT_MS	50
#define MEMMIG_TIER_STAY_DEFAULT	2	/* memmigd's min_stay */
#define MEMMIG_TIER_SLOW_SHARE_DEFAULT	70	/* memmigd's slow_share */
#define MEMMIG_TIER_HISTORY		64	/* intervals kept (get_sample) */

/* Where a unit's "touched" came from (memmig_tier_stats.sources). */
enum memmig_tier_source {
	MEMMIG_TIER_SRC_SOFTDIRTY = 1 << 0,	/* writes: the kernel's soft-dirty bits */
	MEMMIG_TIER_SRC_DAMON = 1 << 1,		/* reads and writes: DAMON (vaddr) */
	MEMMIG_TIER_SRC_DIRTYLOG = 1 << 2,	/* writes: the vm's KVM dirty log or ring */
};

struct memmig_tier_opts {
	size_t sz;
	/* What is tiered: a process (pid > 0, or 0 for this one), or, with
	 * vm, the guest RAM of one of the VMM's own anonymous slots (pid 0,
	 * procfd 0: this process). */
	int pid;
	int procfd;			/* 0 or the caller's pin, as in
					 * memmig_move_opts; duplicated */
	struct memmig_vm *vm;		/* NULL: a process.  Else its slot
					 * vm_slot: writes from the vm's
					 * tracking (memmig_vm_track_new(3)),
					 * each run of units moved live
					 * (memmig_vm_migrate(3)) under a pause
					 * of pause_ms; referenced */
	uint32_t vm_slot;
	const int *fast_nodes;		/* copied */
	unsigned int nfast;		/* 1..MEMMIG_TIER_MAX_NODES */
	const int *slow_nodes;		/* none of them fast */
	unsigned int nslow;
	unsigned int slow_share;	/* % wanted on slow; 0: fast_free */
	uint64_t fast_free;		/* bytes kept free on fast; 0: slow_share
					 * (one of the two, not both) */
	unsigned int interval_ms;	/* 0: MEMMIG_TIER_INTERVAL_DEFAULT_MS */
	uint64_t rate;			/* bytes moved a second; 0: no limit */
	unsigned int cold_intervals;	/* untouched this long before a
					 * demotion, up to MEMMIG_TIER_COLD_MAX;
					 * 0: MEMMIG_TIER_COLD_DEFAULT */
	unsigned int min_stay;		/* intervals a moved unit stays (0: it
					 * may move back at the next one), up to
					 * MEMMIG_TIER_STAY_MAX */
	unsigned int pause_ms;		/* a unit's pause budget; 0:
					 * MEMMIG_TIER_PAUSE_DEFAULT_MS */
	unsigned int flags;		/* enum memmig_migrate_flags of the moves */
	int (*check)(void *check_opaque);	/* as in memmig_move_opts, asked
						 * before each interval's reads
						 * and each batch of moves */
	void *check_opaque;
	/* NULL, or where a refusal's sentence goes (memmigd relays it to its
	 * client), besides the context's log. */
	char *why;
	size_t why_len;
};

struct memmig_tier_stats {
	size_t sz;
	uint32_t intervals;
	unsigned int sources;		/* enum memmig_tier_source bits in use */
	uint32_t units, hot_units;
	uint64_t bytes_resident, bytes_fast, bytes_slow;	/* sampled */
	uint64_t hot_bytes, hot_fast;	/* the hot units', of them on fast */
	uint64_t promotions, demotions;	/* units, since the start */
	uint64_t promoted_bytes, demoted_bytes;
	/* Of the promoted units, those each source saw touched. */
	uint64_t promoted_softdirty, promoted_damon, promoted_dirtylog;
	uint64_t bounces;		/* moves back within min_stay + cold_intervals */
	double bounce_pct;		/* bounces over moves (promotions and
					 * demotions), % */
	/*
	 * The longest time, over the run, from a change of the hot set to
	 * 90 % of the new hot set's bytes on fast; -1: none yet.  A change:
	 * the hot units differ from the last interval's in more than a
	 * quarter of the larger set (a first hot set counts).  Both are seen
	 * at an interval's start, so it is a multiple of the interval, from
	 * the interval that saw the change.
	 */
	double react_s;
	uint64_t held, deferred;	/* kept by hysteresis, by the rate */
	uint64_t softdirty_resets;	/* mappings read as all written (new,
					 * merged): their marks ignored */
	uint64_t pages_failed;		/* did not move */
	double cpu_s;			/* the process's CPU time during the
					 * intervals, the moves' workers included */
	double cpu_pct_per_gib;		/* cpu_s over elapsed_s, % of one CPU,
					 * per GiB of bytes_resident; 0: none */
	double pause_max_s;		/* longest pause of a unit */
	double batch_max_s;		/* longest batch of moves */
	uint64_t over_budget;		/* units whose pause passed pause_ms */
	double elapsed_s;
	int last_error;			/* 0 or -errno of the last interval */
	char why[160];			/* a source not used (DAMON) and why, or "" */
};

/*
 * Checks opts (-EINVAL, a sentence in opts->why and the context's log):
 * what memmig_tier_new() and memmig_tier_set_opts() check first, for a
 * policy given before its process runs (memmigd: a domain's).
 */
MEMMIG_EXPORT int memmig_tier_check_opts(struct memmig_ctx *ctx,
					 const struct memmig_tier_opts *opts);
/*
 * Checks opts, pins the process (-ESRCH) and takes its move lock (-EBUSY:
 * another move runs), opens the sources (-ENOENT: no soft-dirty bits on
 * this kernel).  The nodes are asked at each step (a node may go away).
 * Nothing moves before the first step.
 */
MEMMIG_EXPORT int memmig_tier_new(struct memmig_ctx *ctx,
				  const struct memmig_tier_opts *opts,
				  struct memmig_tier **out);
MEMMIG_EXPORT struct memmig_tier *memmig_tier_ref(struct memmig_tier *t);
/* The last reference stops the tiering: nothing is moved back. */
MEMMIG_EXPORT void memmig_tier_unref(struct memmig_tier *t);
/*
 * One interval.  0; -ESRCH (the process is gone), the check's -errno or
 * -ECANCELED (stopped): stop; another -errno: this interval failed, the
 * next may not: -ENOENT, a node of the options without memory (said in
 * the context's log), nothing moved.
 */
MEMMIG_EXPORT int memmig_tier_step(struct memmig_tier *t);
/*
 * From any thread: no interval runs any more (steps are -ECANCELED) and
 * the process's move lock is let go, so that another move may start at
 * once; the stats stay readable.  A holder that frees the tiering later
 * (its DAMON close may wait for an aggregation) stops it first.
 */
MEMMIG_EXPORT void memmig_tier_stop(struct memmig_tier *t);
/* New options from the next interval on (the same pid, procfd and vm);
 * history is kept.  0 or -EINVAL. */
MEMMIG_EXPORT int memmig_tier_set_opts(struct memmig_tier *t,
				       const struct memmig_tier_opts *opts);
MEMMIG_EXPORT int memmig_tier_get_stats(const struct memmig_tier *t,
					struct memmig_tier_stats *out);

/* One interval, as a report shows it over time. */
struct memmig_tier_sample {
	size_t sz;
	uint32_t interval;
	double t_s;			/* since the tiering began */
	uint64_t bytes_fast, bytes_slow;	/* at the interval's start */
	uint64_t hot_bytes, hot_fast;
	uint64_t promoted, demoted;	/* bytes the interval moved */
	double pause_s;			/* its longest pause of a unit */
};
/* The last intervals kept (up to MEMMIG_TIER_HISTORY): idx 0 the oldest.
 * -ENOENT past the end. */
MEMMIG_EXPORT int memmig_tier_get_sample(const struct memmig_tier *t,
					 unsigned int idx,
					 struct memmig_tier_sample *out);

/*
 * DAMON, where a tiering uses it, runs in one kdamond of libmemmig's for
 * every tiering of the program.  A program killed with it on leaves it
 * on; one that keeps a record of it (memmigd: its state file) hears of it
 * through fn -- (index, the kdamond thread's pid) when it starts, (-1, 0)
 * when it is given back; called with the DAMON lock held -- and stops the
 * one left on with memmig_tier_damon_reclaim() before it tiers: only that
 * kdamond index while it still runs as thread kpid.  0 stopped; -ESRCH
 * not that one any more (left alone); -errno from DAMON's files.  why:
 * what was done, in words, either way.
 */
typedef void (*memmig_tier_damon_owner_fn)(int index, int kpid, void *opaque);
MEMMIG_EXPORT void memmig_tier_damon_set_owner(memmig_tier_damon_owner_fn fn,
					       void *opaque);
MEMMIG_EXPORT int memmig_tier_damon_reclaim(int index, int kpid, char *why,
					    size_t len);

/* ------------------------------------------------------------------ */
/* Device-memory descriptor tables (docs/desc-tables.md).              */

/*
 * One 64-byte descriptor per 4 KiB page of a device-memory region, like the
 * kernel's struct page for ZONE_DEVICE memory.  Pages of a 2 MB unit that
 * lies wholly in the region (2 MB-aligned device offsets) form a compound:
 * a head and 511 tails; the pages outside such units are single pages.
 */
#define MEMMIG_DESC_PAGE_SIZE MEMMIG_PAGE_SIZE
#define MEMMIG_DESC_COMPOUND_ORDER 9	/* 2 MB / 4 KiB = 512 pages */

enum memmig_desc_state {
	MEMMIG_DESC_CLEAN = 0,
	MEMMIG_DESC_DIRTY,
	MEMMIG_DESC_IN_FLIGHT,	/* being copied by a migration */
	MEMMIG_DESC_POISONED,	/* sticky: a poisoned page stays poisoned */
	MEMMIG_DESC_STATE_COUNT
};

/* Kinds, in memmig_desc.flags; a single page has neither bit. */
enum memmig_desc_kind {
	MEMMIG_DESC_HEAD = 1u << 0,
	MEMMIG_DESC_TAIL = 1u << 1,
};

struct memmig_desc {
	uint64_t offset;	/* the page's device offset (base + index * 4 KiB) */
	uint64_t head;		/* table index of its compound head; its own
				 * index for heads and single pages */
	uint32_t generation;	/* bumped by every state change */
	uint32_t state;		/* enum memmig_desc_state */
	uint32_t node;		/* owning NUMA node or device id */
	uint16_t flags;		/* enum memmig_desc_kind */
	uint8_t order;		/* log2 pages of its compound: 9 in a 2 MB
				 * unit, 0 for a single page */
	uint8_t reserved0;	/* zero */
	uint64_t reserved[4];	/* zero */
} __attribute__((aligned(64)));

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct memmig_desc) == 64, "one cache line per page");
_Static_assert(_Alignof(struct memmig_desc) == 64, "line-aligned");
#endif

/* Table options (memmig_desc_opts.flags) and reset flags. */
enum memmig_desc_flags {
	/* Initialize each 1 GiB chunk of the region on its first
	 * memmig_desc_get() instead of all of it at creation. */
	MEMMIG_DESC_LAZY = 1u << 0,
	/* The field-by-field path instead of the template one (also:
	 * $MEMMIG_DESC_SLOW=1, memmig_tuning.desc_slow, and debug or
	 * sanitizer builds). */
	MEMMIG_DESC_SLOW = 1u << 1,
};

struct memmig_desc_opts {
	size_t sz;
	uint64_t base;		/* device offset of the region: 4 KiB aligned */
	uint64_t len;		/* bytes: a 4 KiB multiple, > 0 */
	uint32_t node;		/* owning node or device id */
	unsigned int threads;	/* init threads; 0: the CPUs this process may
				 * use */
	unsigned int flags;	/* enum memmig_desc_flags */
};

enum memmig_desc_path {
	MEMMIG_DESC_PATH_NONE = 0,	/* nothing initialized yet (lazy) */
	MEMMIG_DESC_PATH_TEMPLATE,	/* templates stored whole, with the
					 * stores of memmig_tuning.desc_store
					 * (memcpy on other architectures) */
	MEMMIG_DESC_PATH_SLOW,		/* field by field */
};

/* The stores of the template path (memmig_tuning.desc_store): NT stores
 * need not read the lines they write, but on some machines (AMD Zen 5)
 * plain stores of whole lines are faster; calibration measures which. */
enum memmig_desc_store {
	MEMMIG_DESC_STORE_NT = 0,	/* non-temporal, one drain */
	MEMMIG_DESC_STORE_TEMPORAL,	/* plain (cached) vector stores */
};

enum memmig_desc_backing {
	MEMMIG_DESC_BACKING_HUGETLB = 0,	/* MAP_HUGETLB 2 MB pages */
	MEMMIG_DESC_BACKING_THP,		/* 2 MB-aligned, MADV_HUGEPAGE */
	MEMMIG_DESC_BACKING_PAGES,		/* THP refused: 4 KiB pages */
};

struct memmig_desc_table_info {
	size_t sz;
	uint64_t count;		/* descriptors */
	uint64_t base, len;
	uint32_t node;
	unsigned int flags;	/* as created, plus MEMMIG_DESC_SLOW when
				 * the environment or the build forced it */
	int path;		/* enum memmig_desc_path of the last init */
	int backing;		/* enum memmig_desc_backing */
	uint64_t table_bytes;	/* the mapping */
	uint64_t chunks;	/* 1 GiB chunks of the region */
	uint64_t chunks_ready;	/* of which initialized */
	int store;		/* enum memmig_desc_store of the last init
				 * (the slow path's are temporal) */
};

struct memmig_desc_table;

/*
 * Allocates the table (huge pages where it can) and, unless
 * MEMMIG_DESC_LAZY, initializes every descriptor on opts->threads threads:
 * clean, generation 0.  -EINVAL for a bad range or unknown flags,
 * -ENOMEM.
 */
MEMMIG_EXPORT int memmig_desc_table_new(struct memmig_ctx *ctx,
					const struct memmig_desc_opts *opts,
					struct memmig_desc_table **out);
MEMMIG_EXPORT struct memmig_desc_table *
memmig_desc_table_ref(struct memmig_desc_table *t);
MEMMIG_EXPORT void memmig_desc_table_unref(struct memmig_desc_table *t);
/*
 * Initializes every descriptor again, now (the device was rebound), on
 * threads threads (0: as at creation); flags may hold MEMMIG_DESC_SLOW.
 * Not while other threads use the table.
 */
MEMMIG_EXPORT int memmig_desc_table_reset(struct memmig_desc_table *t,
					  unsigned int threads,
					  unsigned int flags);
MEMMIG_EXPORT int memmig_desc_table_get_info(const struct memmig_desc_table *t,
					     struct memmig_desc_table_info *out);
/* The number of descriptors (pages), 0 for NULL. */
MEMMIG_EXPORT uint64_t memmig_desc_table_count(const struct memmig_desc_table *t);

/*
 * The descriptor of page idx, read-only: change its state with
 * memmig_desc_set_state().  Initializes its 1 GiB chunk first if the table
 * is lazy (thread-safe).  -ERANGE past the end.
 */
MEMMIG_EXPORT int memmig_desc_get(struct memmig_desc_table *t, uint64_t idx,
				  const struct memmig_desc **out);
/* The state of page idx (enum memmig_desc_state), read atomically, or a
 * negative errno as memmig_desc_get(). */
MEMMIG_EXPORT int memmig_desc_get_state(struct memmig_desc_table *t,
					uint64_t idx);
/*
 * Sets the state of page idx and bumps its generation, atomically against
 * other setters; *generation (if not NULL) gets the new generation.
 * -EINVAL for an unknown state, -ERANGE past the end, -EHWPOISON when the
 * page is poisoned and state is not MEMMIG_DESC_POISONED.
 */
MEMMIG_EXPORT int memmig_desc_set_state(struct memmig_desc_table *t,
					uint64_t idx, int state,
					uint32_t *generation);

/* ------------------------------------------------------------------ */
/* Destination reserve and fault injection.                             */

/*
 * Prefaults len bytes on a node ahead of time, so that copy migrations to
 * it take their destination from the reserve instead of paying the
 * kernel's page zeroing during the migration.  Calls add up; len 0 frees
 * the node's reserve.  The reserve is charged memory (not MAP_NORESERVE):
 * it stands in only for sources that are charged too.
 */
MEMMIG_EXPORT int memmig_ctx_reserve(struct memmig_ctx *ctx, int node,
				     uint64_t len);
/* Bytes left in a node's reserve. */
MEMMIG_EXPORT uint64_t memmig_ctx_reserved(struct memmig_ctx *ctx, int node);

enum memmig_fault_point {
	MEMMIG_FAULT_DEST_ALLOC = 0,	/* destination unit allocation */
	MEMMIG_FAULT_MOVE_PAGES,	/* one move_pages(2) call */
	MEMMIG_FAULT_MOVE_PAGES_AFTER,	/* the same, failing after the kernel ran it */
	/* One move_pages(2) call skips its first page meant for the target
	 * that was found on a node, as the kernel does a page it cannot take
	 * off its LRU list: the page stays, its status -err (EBUSY). */
	MEMMIG_FAULT_MOVE_PAGES_BUSY,
	MEMMIG_FAULT_COUNT
};

/*
 * Test hook: the nth (1-based) event at the point fails with err, and
 * every one after it too when sticky.  nth 0 disarms.  Also from the
 * environment: MEMMIG_FAULT=dest_alloc:3:ENOMEM[:sticky].
 */
MEMMIG_EXPORT int memmig_ctx_set_fault(struct memmig_ctx *ctx, int point,
				       unsigned int nth, int err, int sticky);

#ifdef __cplusplus
}
#endif
#endif /* MEMMIG_H */
