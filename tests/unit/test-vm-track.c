/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig_vm_track: which slot pages were written, through the
 * VMM-without-KVM path (the same tracking as a live migration's):
 *  - a read gives exactly the pages written since the last one;
 *  - a live migration of the vm waits for no tracker: -EBUSY while one is
 *    on, and runs (every byte whole) once it is stopped;
 *  - bad calls say so.
 * Without userfaultfd write protection (Linux 6.7) or soft-dirty bits
 * there is no tracking without KVM: skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cunit-main.h"

#define PAGE 4096ULL
#define MiB (1ULL << 20)
#define SLOT 3
#define LEN (8 * MiB)
#define WORDS (LEN / PAGE / 64)

static struct memmig_ctx *ctx;

static int no_op(void *opaque)
{
	(void)opaque;
	return 0;
}

struct vmm {
	struct memmig_vm *vm;
	uint8_t *ram;
};

static int vmm_up(struct vmm *v)
{
	const struct memmig_vm_ops ops = { .sz = sizeof(ops), .pause = no_op, .resume = no_op };
	struct memmig_vm_slot s = { .sz = sizeof(s), .slot = SLOT, .gpa = 1ULL << 32,
				    .size = LEN, .fd = -1 };
	int rc;

	v->vm = NULL;
	v->ram = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->ram == MAP_FAILED)
		return -errno;
	for (uint64_t i = 0; i < LEN; i += PAGE)
		v->ram[i] = (uint8_t)(i / PAGE);
	s.hva = v->ram;
	rc = memmig_vm_new(ctx, -1, &ops, NULL, &v->vm);
	return rc ? rc : memmig_vm_add_slot(v->vm, &s);
}

static void vmm_down(struct vmm *v)
{
	memmig_vm_unref(v->vm);
	munmap(v->ram, LEN);
}

static bool bit(const uint64_t *b, uint64_t i)
{
	return b[i / 64] >> (i % 64) & 1;
}

static void test_read_exact(void)
{
	static const uint64_t written[] = { 0, 3, 600, 1500, LEN / PAGE - 1 };
	uint64_t map[WORDS], pages = 99;
	struct memmig_vm_track *t;
	struct vmm v;

	CU_ASSERT_EQUAL_FATAL(vmm_up(&v), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_track_new(v.vm, SLOT, MEMMIG_DIRTY_AUTO, &t), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_track_start(t), 0);
	CU_ASSERT_EQUAL(memmig_vm_track_start(t), -EALREADY);
	/* Nothing written yet. */
	memset(map, 0, sizeof(map));
	CU_ASSERT_EQUAL(memmig_vm_track_read(t, map, WORDS, &pages), 0);
	CU_ASSERT_EQUAL(pages, 0);
	for (size_t i = 0; i < sizeof(written) / sizeof(written[0]); i++)
		v.ram[written[i] * PAGE + 17] = 0x5a;
	memset(map, 0, sizeof(map));
	CU_ASSERT_EQUAL(memmig_vm_track_read(t, map, WORDS, &pages), 0);
	CU_ASSERT_EQUAL(pages, sizeof(written) / sizeof(written[0]));
	for (size_t i = 0; i < sizeof(written) / sizeof(written[0]); i++)
		CU_ASSERT(bit(map, written[i]));
	/* Read again: only what was written since. */
	v.ram[7 * PAGE] = 1;
	memset(map, 0, sizeof(map));
	CU_ASSERT_EQUAL(memmig_vm_track_read(t, map, WORDS, &pages), 0);
	CU_ASSERT_EQUAL(pages, 1);
	CU_ASSERT(bit(map, 7));
	CU_ASSERT_EQUAL(memmig_vm_track_read(t, map, WORDS - 1, &pages), -EINVAL);
	CU_ASSERT_EQUAL(memmig_vm_track_stop(t), 0);
	CU_ASSERT_EQUAL(memmig_vm_track_read(t, map, WORDS, &pages), -EINVAL);
	/* Off: writes are nobody's; on again, they count from there. */
	v.ram[9 * PAGE] = 1;
	CU_ASSERT_EQUAL_FATAL(memmig_vm_track_start(t), 0);
	v.ram[11 * PAGE] = 1;
	memset(map, 0, sizeof(map));
	CU_ASSERT_EQUAL(memmig_vm_track_read(t, map, WORDS, &pages), 0);
	CU_ASSERT_EQUAL(pages, 1);
	CU_ASSERT(bit(map, 11) && !bit(map, 9));
	memmig_vm_track_unref(t);
	vmm_down(&v);
}

static void test_migration_waits(void)
{
	struct memmig_live_opts o = { .sz = sizeof(o), .slot = SLOT, .target_node = 0 };
	struct memmig_live_report rep = { .sz = sizeof(rep) };
	struct memmig_vm_track *t;
	struct vmm v;

	CU_ASSERT_EQUAL_FATAL(vmm_up(&v), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_track_new(v.vm, SLOT, MEMMIG_DIRTY_AUTO, &t), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_vm_track_start(t), 0);
	CU_ASSERT_EQUAL(memmig_vm_migrate(v.vm, &o, &rep), -EBUSY);
	CU_ASSERT_EQUAL(memmig_vm_remove_slot(v.vm, SLOT), -EBUSY);
	CU_ASSERT_EQUAL(memmig_vm_track_stop(t), 0);
	CU_ASSERT_EQUAL(memmig_vm_migrate(v.vm, &o, &rep), 0);
	CU_ASSERT_EQUAL(rep.bytes_switched, LEN);
	/* And a tracker waits for no migration once it ended. */
	CU_ASSERT_EQUAL(memmig_vm_track_start(t), 0);
	memmig_vm_track_unref(t);
	for (uint64_t i = 0; i < LEN; i += PAGE)
		if (v.ram[i] != (uint8_t)(i / PAGE)) {
			CU_FAIL("a page changed in the migration");
			break;
		}
	vmm_down(&v);
}

static void test_bad_calls(void)
{
	struct memmig_vm_track *t = NULL;
	struct vmm v;

	CU_ASSERT_EQUAL_FATAL(vmm_up(&v), 0);
	CU_ASSERT_EQUAL(memmig_vm_track_new(v.vm, SLOT + 1, MEMMIG_DIRTY_AUTO, &t), -ENOENT);
	CU_ASSERT_EQUAL(memmig_vm_track_new(v.vm, SLOT, MEMMIG_DIRTY_LOG, &t), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(memmig_vm_track_new(NULL, SLOT, MEMMIG_DIRTY_AUTO, &t), -EINVAL);
	CU_ASSERT_EQUAL(memmig_vm_track_start(NULL), -EINVAL);
	CU_ASSERT_EQUAL(memmig_vm_track_method(NULL), -EINVAL);
	CU_ASSERT_PTR_NULL(t);
	memmig_vm_track_unref(NULL);
	vmm_down(&v);
}

static int suite_init(void)
{
	return memmig_ctx_new(&ctx) ? -1 : 0;
}

static int suite_clean(void)
{
	memmig_ctx_unref(ctx);
	return 0;
}

/* Is there tracking without KVM here? */
static bool tracking(void)
{
	struct memmig_vm_track *t = NULL;
	struct vmm v;
	int rc = vmm_up(&v);

	if (!rc)
		rc = memmig_vm_track_new(v.vm, SLOT, MEMMIG_DIRTY_AUTO, &t);
	memmig_vm_track_unref(t);
	vmm_down(&v);
	return rc != -EOPNOTSUPP;
}

int main(void)
{
	static CU_TestInfo tests[] = {
		{ "a read gives exactly the pages written since the last", test_read_exact },
		{ "a migration waits for no tracker: -EBUSY, then runs", test_migration_waits },
		{ "bad calls", test_bad_calls },
		CU_TEST_INFO_NULL,
	};
	static CU_SuiteInfo suites[] = {
		{ "vm track", suite_init, suite_clean, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	return cunit_main_if(suites, &ctx, tracking,
			     "no userfaultfd write protection nor soft-dirty bits here");
}
