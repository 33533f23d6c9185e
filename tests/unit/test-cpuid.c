/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig_cpu_detect() on the running machine against what the kernel says:
 * /proc/cpuinfo (identity and feature flags) and the cacheinfo in sysfs
 * (last-level cache size).  Skipped (77) where neither the library nor the
 * kernel sees an x86-64 CPU.
 */
#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "memmig.h"
#include "cunit-main.h"

#define NFEATURES 15	/* bits 0..14 of enum memmig_cpu_feature */

/* The first processor's entry of /proc/cpuinfo. */
static struct {
	bool read;
	char vendor[64];
	long family, model, stepping;	/* -1: absent or not a number */
	char *flags;			/* " flag flag ... " */
} proc = { .family = -1, .model = -1, .stepping = -1 };

static struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };

static char *trim(char *s)
{
	char *e = s + strlen(s);

	while (isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static long number(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return end == s || *end ? -1 : v;
}

static void read_cpuinfo(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[8192];

	if (!f)
		return;
	proc.read = true;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *key, *val;

		if (!colon) {
			if (proc.flags && !*trim(line))
				break;	/* end of the first processor */
			continue;
		}
		*colon = '\0';
		key = trim(line);
		val = trim(colon + 1);
		if (!strcmp(key, "vendor_id"))
			snprintf(proc.vendor, sizeof(proc.vendor), "%s", val);
		else if (!strcmp(key, "cpu family"))
			proc.family = number(val);
		else if (!strcmp(key, "model"))
			proc.model = number(val);
		else if (!strcmp(key, "stepping"))
			proc.stepping = number(val);
		else if (!strcmp(key, "flags") && !proc.flags) {
			proc.flags = malloc(strlen(val) + 3);
			if (proc.flags)
				sprintf(proc.flags, " %s ", val);
		}
	}
	fclose(f);
}

static bool proc_has(const char *flag)
{
	char word[64];

	if (!flag)
		return false;
	snprintf(word, sizeof(word), " %s ", flag);
	return proc.flags && strstr(proc.flags, word);
}

static int suite_init(void)
{
	return memmig_cpu_detect(&cpu) == 0 ? 0 : 1;
}

static void test_identity(void)
{
	printf("\n    detected %s family %#x model %#x stepping %u features %#llx "
	       "llc %zu\n    ", cpu.vendor, cpu.family, cpu.model, cpu.stepping,
	       (unsigned long long)cpu.features, cpu.llc_size);
	CU_ASSERT_STRING_EQUAL(cpu.vendor, proc.vendor);
	CU_ASSERT_EQUAL((long)cpu.family, proc.family);
	CU_ASSERT_EQUAL((long)cpu.model, proc.model);
	if (proc.stepping >= 0) {
		CU_ASSERT_EQUAL((long)cpu.stepping, proc.stepping);
	} else {
		printf("(/proc/cpuinfo has no stepping) ");
	}
	CU_ASSERT_EQUAL(cpu.sz, sizeof(cpu));
}

/* Flags that every kernel we run on knows by these names. */
static const uint64_t exact[] = {
	MEMMIG_CPU_SSE2, MEMMIG_CPU_REP_GOOD, MEMMIG_CPU_ERMS, MEMMIG_CPU_FSRM,
	MEMMIG_CPU_AVX2, MEMMIG_CPU_AVX512F, MEMMIG_CPU_AVX512BW, MEMMIG_CPU_AVX512VL,
	MEMMIG_CPU_CLWB, MEMMIG_CPU_CLFLUSHOPT, MEMMIG_CPU_CLFLUSH,
};
/* Newer names an older kernel may not print. */
static const uint64_t newer[] = {
	MEMMIG_CPU_FZRM, MEMMIG_CPU_FSRS, MEMMIG_CPU_FSRC, MEMMIG_CPU_MOVDIR64B,
};

static void test_flags(void)
{
	CU_ASSERT_PTR_NOT_NULL_FATAL(proc.flags);
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
		const char *name = memmig_cpu_feature_name(exact[i]);
		bool lib = cpu.features & exact[i], kernel = proc_has(name);

		CU_ASSERT_PTR_NOT_NULL_FATAL(name);
		if (lib != kernel)
			CUNIT_FAILF("%s: detected %s, /proc/cpuinfo %s", name,
				    lib ? "yes" : "no", kernel ? "yes" : "no");
		else
			CU_PASS(name);
	}
	for (size_t i = 0; i < sizeof(newer) / sizeof(newer[0]); i++) {
		const char *name = memmig_cpu_feature_name(newer[i]);

		CU_ASSERT_PTR_NOT_NULL_FATAL(name);
		if (proc_has(name) && !(cpu.features & newer[i]))
			CUNIT_FAILF("%s: in /proc/cpuinfo but not detected", name);
		else
			CU_PASS(name);
	}
	/* Nothing beyond the defined bits. */
	CU_ASSERT_EQUAL(cpu.features >> NFEATURES, 0);
}

/* Size of the highest-level data or unified cache of cpu0, 0 if unknown. */
static size_t sysfs_llc(void)
{
	glob_t g;
	size_t best = 0;
	long best_level = -1;

	if (glob("/sys/devices/system/cpu/cpu0/cache/index*", 0, NULL, &g))
		return 0;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char path[4096], buf[64], *end;
		long level = -1;
		unsigned long long size = 0;
		bool usable = false;
		FILE *f;

		snprintf(path, sizeof(path), "%s/type", g.gl_pathv[i]);
		if ((f = fopen(path, "re"))) {
			if (fgets(buf, sizeof(buf), f))
				usable = !strcmp(trim(buf), "Data") ||
					 !strcmp(trim(buf), "Unified");
			fclose(f);
		}
		snprintf(path, sizeof(path), "%s/level", g.gl_pathv[i]);
		if ((f = fopen(path, "re"))) {
			if (fgets(buf, sizeof(buf), f))
				level = number(trim(buf));
			fclose(f);
		}
		snprintf(path, sizeof(path), "%s/size", g.gl_pathv[i]);
		if ((f = fopen(path, "re"))) {
			if (fgets(buf, sizeof(buf), f)) {
				size = strtoull(trim(buf), &end, 10);
				if (*end == 'K')
					size <<= 10;
				else if (*end == 'M')
					size <<= 20;
				else if (*end == 'G')
					size <<= 30;
			}
			fclose(f);
		}
		if (!usable || level < 0 || !size)
			continue;
		if (level > best_level || (level == best_level && size > best)) {
			best_level = level;
			best = (size_t)size;
		}
	}
	globfree(&g);
	return best;
}

static void test_llc(void)
{
	size_t want = sysfs_llc();

	if (!want) {
		/* Some containers and VMs publish no cacheinfo. */
		printf("(no cache sizes in sysfs; only checking llc > 0) ");
		CU_ASSERT(cpu.llc_size > 0);
		return;
	}
	if (cpu.llc_size != want)
		CUNIT_FAILF("llc_size %zu, sysfs says %zu", cpu.llc_size, want);
	else
		CU_PASS("llc");
}

/* Detection is repeatable, the context holds the same, sizes are honoured. */
static void test_detect_api(void)
{
	struct memmig_cpu_info again = { .sz = sizeof(again) }, small;
	struct memmig_ctx *ctx = NULL;
	size_t vendor_end = offsetof(struct memmig_cpu_info, family);

	CU_ASSERT_EQUAL(memmig_cpu_detect(&again), 0);
	CU_ASSERT_EQUAL(memcmp(&again, &cpu, sizeof(cpu)), 0);

	CU_ASSERT_EQUAL_FATAL(memmig_ctx_new(&ctx), 0);
	memset(&again, 0, sizeof(again));
	again.sz = sizeof(again);
	CU_ASSERT_EQUAL(memmig_ctx_get_cpu(ctx, &again), 0);
	CU_ASSERT_EQUAL(memcmp(&again, &cpu, sizeof(cpu)), 0);
	memmig_ctx_unref(ctx);

	/* An older caller that knows only up to vendor. */
	memset(&small, 0x5a, sizeof(small));
	small.sz = vendor_end;
	CU_ASSERT_EQUAL(memmig_cpu_detect(&small), 0);
	CU_ASSERT_EQUAL(small.sz, vendor_end);
	CU_ASSERT_STRING_EQUAL(small.vendor, cpu.vendor);
	CU_ASSERT_EQUAL(small.family, 0x5a5a5a5au);
	CU_ASSERT_EQUAL(small.llc_size, (size_t)0x5a5a5a5a5a5a5a5aULL);

	small.sz = 0;
	CU_ASSERT_EQUAL(memmig_cpu_detect(&small), -EINVAL);
	CU_ASSERT_EQUAL(memmig_cpu_detect(NULL), -EINVAL);
}

static void test_feature_names(void)
{
	static const char *const names[NFEATURES] = {
		"sse2", "rep_good", "erms", "fsrm", "fzrm", "fsrs", "fsrc",
		"avx2", "avx512f", "avx512bw", "clflush", "clflushopt", "clwb",
		"movdir64b", "avx512vl",
	};

	CU_ASSERT_EQUAL(MEMMIG_CPU_AVX512VL, 1u << (NFEATURES - 1));
	for (unsigned int i = 0; i < 64; i++) {
		uint64_t bit = 1ULL << i;
		const char *name = memmig_cpu_feature_name(bit);

		if (i >= NFEATURES) {
			CU_ASSERT_PTR_NULL(name);
			continue;
		}
		if (!name || strcmp(name, names[i])) {
			CUNIT_FAILF("bit %u: name %s, want %s", i,
				    name ? name : "NULL", names[i]);
			continue;
		}
		/* Back from the name: exactly this bit has it. */
		for (unsigned int k = 0; k < 64; k++) {
			const char *other = memmig_cpu_feature_name(1ULL << k);

			CU_ASSERT((k == i) == (other && !strcmp(other, name)));
		}
	}
	CU_ASSERT_PTR_NULL(memmig_cpu_feature_name(0));
	CU_ASSERT_PTR_NULL(memmig_cpu_feature_name(MEMMIG_CPU_SSE2 |
						   MEMMIG_CPU_ERMS));
}

static CU_TestInfo cpuid_tests[] = {
	{ "vendor, family, model, stepping", test_identity },
	{ "feature flags match /proc/cpuinfo", test_flags },
	{ "last-level cache matches sysfs", test_llc },
	{ "detect is repeatable and sized", test_detect_api },
	{ "feature names round-trip", test_feature_names },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "cpuid", .pInitFunc = suite_init, .pTests = cpuid_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	struct memmig_cpu_info c = { .sz = sizeof(c) };
	int rc;

	read_cpuinfo();
	if (memmig_cpu_detect(&c) < 0) {
		fprintf(stderr, "memmig_cpu_detect failed\n");
		return 1;
	}
	if (!(c.features & MEMMIG_CPU_SSE2) && !proc_has("sse2")) {
		free(proc.flags);
		return cunit_skip("not an x86-64 CPU (no SSE2 detected, "
				  "no sse2 in /proc/cpuinfo)");
	}
	/* The portable build detects nothing, by design, on any CPU. */
	if (!memmig_prim_supported(&c, MEMMIG_PRIM_MOVQ) && !c.features) {
		free(proc.flags);
		return cunit_skip("libmemmig was built with the generic "
				  "architecture code: no CPUID detection");
	}
	if (!proc.read || !proc.flags) {
		free(proc.flags);
		return cunit_skip("/proc/cpuinfo is unreadable or has no flags");
	}
	rc = cunit_main(suites);
	free(proc.flags);
	return rc;
}
