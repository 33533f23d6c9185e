/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* x86 feature detection: CPUID, and XGETBV for the OS-enabled AVX state. */
#include <cpuid.h>
#include <string.h>

#include "lib/copy/arch/arch.h"

/* CPUID.(EAX=7,ECX=0) */
#define L7_EBX_AVX2 (1u << 5)
#define L7_EBX_ERMS (1u << 9)
#define L7_EBX_AVX512F (1u << 16)
#define L7_EBX_CLFLUSHOPT (1u << 23)
#define L7_EBX_CLWB (1u << 24)
#define L7_EBX_AVX512BW (1u << 30)
#define L7_EBX_AVX512VL (1u << 31)
#define L7_ECX_MOVDIR64B (1u << 28)
#define L7_EDX_FSRM (1u << 4)
/* CPUID.(EAX=7,ECX=1) */
#define L71_EAX_FZRM (1u << 10)
#define L71_EAX_FSRS (1u << 11)
#define L71_EAX_FSRC (1u << 12)
/* CPUID.1 */
#define L1_ECX_OSXSAVE (1u << 27)
#define L1_EDX_CLFLUSH (1u << 19)
#define L1_EDX_SSE2 (1u << 26)
/* XCR0 state components */
#define XCR0_SSE_AVX 0x06u	 /* XMM | YMM */
#define XCR0_AVX512 0xe0u	 /* opmask | ZMM_Hi256 | Hi16_ZMM */
/* CPUID.0x80000001 */
#define LE1_ECX_TOPOEXT (1u << 22)

static unsigned int xgetbv0(void)
{
	unsigned int eax, edx;

	__asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
	return eax;
}

/* Deterministic cache parameters (leaf 4, or AMD's 0x8000001d). */
static size_t llc_from_leaf(unsigned int leaf)
{
	unsigned int a, b, c, d, best_level = 0;
	size_t best = 0;

	for (unsigned int i = 0; i < 16; i++) {
		__cpuid_count(leaf, i, a, b, c, d);
		unsigned int type = a & 0x1f, level = (a >> 5) & 7;

		if (type == 0)
			break;
		if (type == 2) /* instruction cache */
			continue;
		size_t size = (size_t)((b >> 22) + 1) * (((b >> 12) & 0x3ff) + 1) *
			      ((b & 0xfff) + 1) * ((size_t)c + 1);
		if (level >= best_level) {
			best_level = level;
			best = size;
		}
	}
	return best;
}

static size_t detect_llc(bool amd)
{
	unsigned int a, b, c, d, max_ext = __get_cpuid_max(0x80000000, NULL);

	if (!amd)
		return __get_cpuid_max(0, NULL) >= 4 ? llc_from_leaf(4) : 0;
	if (max_ext >= 0x8000001d && __get_cpuid(0x80000001, &a, &b, &c, &d) &&
	    (c & LE1_ECX_TOPOEXT))
		return llc_from_leaf(0x8000001d);
	if (max_ext >= 0x80000006) {
		__cpuid(0x80000006, a, b, c, d);
		if (d >> 18)
			return (size_t)(d >> 18) * 512 * 1024;
		return (size_t)(c >> 16) * 1024;
	}
	return 0;
}

/*
 * Fast strings have no CPUID bit.  Follow the kernel's X86_FEATURE_REP_GOOD:
 * AMD and Hygon from family 0x10, Intel family 6 and late family 15.
 */
static bool detect_rep_good(const struct memmig_cpu_info *cpu, bool amd)
{
	if (cpu->features & MEMMIG_CPU_ERMS)
		return true;
	if (amd)
		return cpu->family >= 0x10;
	if (!strcmp(cpu->vendor, "GenuineIntel"))
		return cpu->family == 6 || (cpu->family == 15 && cpu->model >= 3);
	return false;
}

void memmig_arch_cpu_detect(struct memmig_cpu_info *cpu)
{
	unsigned int a, b, c, d, max, xcr0 = 0;
	uint64_t f = 0;
	bool amd;

	max = __get_cpuid_max(0, NULL);
	__cpuid(0, a, b, c, d);
	memcpy(cpu->vendor, &b, 4);
	memcpy(cpu->vendor + 4, &d, 4);
	memcpy(cpu->vendor + 8, &c, 4);
	cpu->vendor[12] = '\0';
	amd = !strcmp(cpu->vendor, "AuthenticAMD") ||
	      !strcmp(cpu->vendor, "HygonGenuine");

	__cpuid(1, a, b, c, d);
	cpu->stepping = a & 0xf;
	cpu->family = (a >> 8) & 0xf;
	cpu->model = (a >> 4) & 0xf;
	if (cpu->family == 0xf)
		cpu->family += (a >> 20) & 0xff;
	if (cpu->family == 0x6 || cpu->family >= 0xf)
		cpu->model |= ((a >> 16) & 0xf) << 4;
	if (d & L1_EDX_SSE2)
		f |= MEMMIG_CPU_SSE2;
	if (d & L1_EDX_CLFLUSH)
		f |= MEMMIG_CPU_CLFLUSH;
	if (c & L1_ECX_OSXSAVE)
		xcr0 = xgetbv0();

	if (max >= 7) {
		__cpuid_count(7, 0, a, b, c, d);
		unsigned int max7 = a;

		if (b & L7_EBX_ERMS)
			f |= MEMMIG_CPU_ERMS;
		if (d & L7_EDX_FSRM)
			f |= MEMMIG_CPU_FSRM;
		if (b & L7_EBX_CLFLUSHOPT)
			f |= MEMMIG_CPU_CLFLUSHOPT;
		if (b & L7_EBX_CLWB)
			f |= MEMMIG_CPU_CLWB;
		if (c & L7_ECX_MOVDIR64B)
			f |= MEMMIG_CPU_MOVDIR64B;
		/* AVX is usable only if the OS saves the wider registers. */
		if ((b & L7_EBX_AVX2) && (xcr0 & XCR0_SSE_AVX) == XCR0_SSE_AVX)
			f |= MEMMIG_CPU_AVX2;
		if ((xcr0 & (XCR0_SSE_AVX | XCR0_AVX512)) ==
		    (XCR0_SSE_AVX | XCR0_AVX512)) {
			if (b & L7_EBX_AVX512F)
				f |= MEMMIG_CPU_AVX512F;
			if (b & L7_EBX_AVX512BW)
				f |= MEMMIG_CPU_AVX512BW;
			if (b & L7_EBX_AVX512VL)
				f |= MEMMIG_CPU_AVX512VL;
		}
		if (max7 >= 1) {
			__cpuid_count(7, 1, a, b, c, d);
			if (a & L71_EAX_FZRM)
				f |= MEMMIG_CPU_FZRM;
			if (a & L71_EAX_FSRS)
				f |= MEMMIG_CPU_FSRS;
			if (a & L71_EAX_FSRC)
				f |= MEMMIG_CPU_FSRC;
		}
	}
	cpu->features = f;
	if (detect_rep_good(cpu, amd))
		cpu->features |= MEMMIG_CPU_REP_GOOD;
	cpu->llc_size = detect_llc(amd);
}
