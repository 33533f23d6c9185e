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

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && defined(MEMMIG_BUILDING_LIBRARY)
#define MEMMIG_EXPORT __attribute__((visibility("default")))
#else
#define MEMMIG_EXPORT
#endif

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
MEMMIG_EXPORT struct memmig_ctx *memmig_ctx_ref(struct memmig_ctx *ctx);
MEMMIG_EXPORT void memmig_ctx_unref(struct memmig_ctx *ctx);

/* syslog priorities; the default is LOG_ERR, or $MEMMIG_LOG (a number or a
 * name: err, warning, info, debug). */
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
	MEMMIG_PRIM_COUNT
};

/* Copy flags, in the spirit of libpmem2's pmem2_memcpy flags. */
enum memmig_copy_flags {
	/* Non-temporal stores whatever the length. */
	MEMMIG_COPY_NONTEMPORAL = 1u << 0,
	/* Temporal stores whatever the length (never NT). */
	MEMMIG_COPY_TEMPORAL = 1u << 1,
	/* Leave the store fence to the caller (memmig_copy_drain()). */
	MEMMIG_COPY_NODRAIN = 1u << 2,
	/* Destination is persistent memory: NT stores for the body, cache
	 * line flushes for what was written with temporal stores, then a
	 * drain. */
	MEMMIG_COPY_PMEM = 1u << 3,
	/* With MEMMIG_COPY_PMEM: skip the flushes; the caller flushes. */
	MEMMIG_COPY_NOFLUSH = 1u << 4,
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
};

/* The seed-derived defaults for a CPU: movsb_min 2048 on ERMS without FSRM,
 * the FSRM crossover (vendor specific) on FSRM, movsq_min 512 on CPUs
 * with fast strings but neither ERMS nor FSRM, nt_min from
 * the last-level cache size, the widest NT primitive the CPU has. */
MEMMIG_EXPORT int memmig_tuning_default(const struct memmig_cpu_info *cpu,
					struct memmig_tuning *out);
/*
 * Applies the environment on top of *t: MEMMIG_COPY_MOVSB_MIN,
 * MEMMIG_COPY_MOVSQ_MIN, MEMMIG_COPY_NT_MIN (sizes up to 1T, with optional
 * K/M/G suffix, or "never") and MEMMIG_COPY_NT_PRIM (a primitive name).  -EINVAL leaves *t
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

#ifdef __cplusplus
}
#endif
#endif /* MEMMIG_H */
