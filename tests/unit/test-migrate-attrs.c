/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A copy swapped over its source with mremap(2) brings its own mapping: the
 * range must keep every attribute the kernel shows for it (smaps VmFlags),
 * or the job must refuse it and say why.  Checked with the kernel's view:
 *  - MADV_WIPEONFORK: a child forked after the move reads zeros, not the
 *    parent's data (it read the data before the fix: a leak);
 *  - MADV_RANDOM and MADV_SEQUENTIAL;
 *  - the commit charge: a MAP_NORESERVE source stays "nr", a charged one
 *    stays "ac" (the copy was always MAP_NORESERVE);
 *  - a flag a copy cannot be given (MAP_GROWSDOWN, "gd"): -EOPNOTSUPP,
 *    nothing moved, bytes intact;
 * for the copy strategy and for a live migration (the VMM-without-KVM
 * path: the same destination and swap as for a KVM guest).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "migrate-util.h"

#define PIECE (2 * MiB)

/* The VmFlags of the mapping that holds addr, as the kernel shows them. */
static bool vmflags_of(const void *addr, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	uintptr_t a = (uintptr_t)addr;
	char line[512];
	bool in = false, found = false;

	while (f && !found && fgets(line, sizeof(line), f)) {
		uint64_t s, e;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " ", &s, &e) == 2)
			in = s <= a && a < e;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			strncpy(out, line + 8, len - 1);
			out[len - 1] = '\0';
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static bool has_vmflag(const void *addr, const char *flag)
{
	char flags[256], key[8];

	snprintf(key, sizeof(key), " %s", flag);
	return vmflags_of(addr, flags, sizeof(flags)) && strstr(flags, key);
}

/* A child forked now reads [p, p + len): 1 all zeros, 0 not, -1 error. */
static int child_reads_zeros(const uint8_t *p, uint64_t len)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid)
		_exit(mt_all_zero(p, len) ? 1 : 0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static uint8_t *map_rw(uint64_t len, int extra)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Four 2 MiB pieces with advice of their own: wipe-on-fork, random,
 * sequential, none. */
static const struct {
	int advice;
	const char *flag;
} pieces[] = {
	{ MADV_WIPEONFORK, "wf" }, { MADV_RANDOM, "rr" }, { MADV_SEQUENTIAL, "sr" }, { -1, NULL },
};
#define NPIECES 4

static uint8_t *advised_mem(int extra, uint64_t seed)
{
	uint8_t *p = map_rw(NPIECES * PIECE, extra);

	if (!p)
		return NULL;
	/* 4K pages: each piece its own mapping, none of them THP-merged. */
	madvise(p, NPIECES * PIECE, MADV_NOHUGEPAGE);
	for (int i = 0; i < NPIECES; i++)
		if (pieces[i].advice >= 0 && madvise(p + i * PIECE, PIECE, pieces[i].advice))
			return NULL;
	mt_fill(p, NPIECES * PIECE, seed, 0);
	return p;
}

/* After a move: each piece has its advice and the charge it had, the
 * bytes are the same, and a child reads zeros where it must. */
static void check_kept(const uint8_t *p, uint64_t seed, bool noreserve, const char *what)
{
	for (int i = 0; i < NPIECES; i++) {
		const uint8_t *piece = p + i * PIECE;
		char flags[256] = "";

		vmflags_of(piece, flags, sizeof(flags));
		printf("  %s, piece %d: VmFlags%s", what, i, flags);
		if (pieces[i].flag && !has_vmflag(piece, pieces[i].flag))
			CUNIT_FAILF("%s: piece %d lost \"%s\"", what, i, pieces[i].flag);
		if (has_vmflag(piece, "nr") != noreserve || has_vmflag(piece, "ac") == noreserve)
			CUNIT_FAILF("%s: piece %d: charge not kept (%s wanted)", what, i,
				    noreserve ? "nr" : "ac");
	}
	CU_ASSERT(mt_first_bad(p, NPIECES * PIECE, seed, 0) < 0);
	if (child_reads_zeros(p, PIECE) != 1)
		CUNIT_FAILF("%s: a child forked after the move reads the wipe-on-fork piece's "
			    "data", what);
	if (child_reads_zeros(p + PIECE, PIECE) != 0)
		CUNIT_FAILF("%s: a child reads zeros where it must not", what);
}

static void copy_case(int extra, bool noreserve, const char *what)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 1);
	uint64_t seed = mt_new_seed();
	uint8_t *p = advised_mem(extra, seed);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, p, NPIECES * PIECE, 0, &r), 0);
	CU_ASSERT_EQUAL(memmig_migrate(r, &o, &rep), 0);
	check_kept(p, seed, noreserve, what);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	munmap(p, NPIECES * PIECE);
}

static void test_copy_charged(void)
{
	copy_case(0, false, "copy, charged");
}

static void test_copy_noreserve(void)
{
	copy_case(MAP_NORESERVE, true, "copy, MAP_NORESERVE");
}

/* A stack-like mapping: the copy could not grow down. */
static void test_copy_refused(void)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_COPY, MEMMIG_MIGRATE_FORCE, 1);
	uint64_t seed = mt_new_seed();
	unsigned int before = mt_log_mark();
	uint8_t *p = map_rw(PIECE, MAP_GROWSDOWN);
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	mt_fill(p, PIECE, seed, 0);
	CU_ASSERT_FATAL(has_vmflag(p, "gd"));
	CU_ASSERT_EQUAL_FATAL(mt_region_of(ctx, 0, p, PIECE, 0, &r), 0);
	rc = memmig_migrate(r, &o, &rep);
	printf("  MAP_GROWSDOWN: %d\n", rc);
	CU_ASSERT_EQUAL(rc, -EOPNOTSUPP);
	CU_ASSERT(mt_log_mark() > before);	/* and it said why */
	CU_ASSERT(has_vmflag(p, "gd"));
	CU_ASSERT(mt_first_bad(p, PIECE, seed, 0) < 0);
	memmig_report_unref(rep);
	memmig_region_unref(r);
	munmap(p, PIECE);
}

/* ---- live migration: a VMM without KVM (vm_fd -1) ---- */

static int vmm_pause(void *opaque)
{
	return 0;
}

static int vmm_resume(void *opaque)
{
	return 0;
}

static void vmm_moved(void *opaque, uint32_t slot, void *old, void *hva, int fd,
		      uint64_t offset)
{
}

static void live_case(int extra, bool noreserve, const char *what)
{
	const struct memmig_vm_ops ops = {
		.sz = sizeof(ops), .pause = vmm_pause, .resume = vmm_resume,
		.slot_moved = vmm_moved,
	};
	const struct memmig_live_opts lo = { .sz = sizeof(lo), .slot = 1, .target_node = 0 };
	struct memmig_live_report rep = { .sz = sizeof(rep) };
	uint64_t seed = mt_new_seed();
	uint8_t *p = advised_mem(extra, seed);
	struct memmig_vm_slot s = {
		.sz = sizeof(s), .slot = 1, .gpa = 1ULL << 32, .hva = p,
		.size = NPIECES * PIECE, .fd = -1,
	};
	struct memmig_vm *vm = NULL;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_new(ctx, -1, &ops, NULL, &vm), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_add_slot(vm, &s), 0);
	rc = memmig_vm_migrate(vm, &lo, &rep);
	CU_ASSERT_EQUAL(rc, 0);
	if (!rc)
		check_kept(p, seed, noreserve, what);
	memmig_vm_unref(vm);
	munmap(p, NPIECES * PIECE);
}

static void test_live_charged(void)
{
	live_case(0, false, "live, charged");
}

static void test_live_noreserve(void)
{
	live_case(MAP_NORESERVE, true, "live, MAP_NORESERVE");
}

static CU_TestInfo attr_tests[] = {
	{ "copy: wipe-on-fork, access advice, charge kept", test_copy_charged },
	{ "copy: the same over MAP_NORESERVE", test_copy_noreserve },
	{ "copy: a flag no copy can have is refused", test_copy_refused },
	{ "live: wipe-on-fork, access advice, charge kept", test_live_charged },
	{ "live: the same over MAP_NORESERVE", test_live_noreserve },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	MT_SUITE("mapping attributes", mt_suite_init, mt_suite_cleanup, attr_tests),
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return mt_main(suites);
}
