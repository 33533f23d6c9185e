/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Live migration over guest memory that cannot be read, through the
 * VMM-without-KVM path (memmig_vm with vm_fd -1: the same pre-copy, copy
 * and swap code as for a KVM guest):
 *  - anonymous RAM with pages lost in the middle (poison markers: SIGBUS
 *    on access, as after a memory error): exactly those pages are
 *    reported, with their guest-physical addresses, to the report and to
 *    the VMM's callback; every other byte moves; the lost pages fault
 *    again in the new memory, never read as zeros;
 *  - fd-backed RAM whose mapping faults but whose file reads (markers on
 *    a memfd mapping): the kernel's read recovers every page;
 *  - fd-backed RAM whose file was cut short under the guest: the pages
 *    past its end are reported (-EFAULT), the rest moves;
 *  - a destination that cannot hold a poison marker: no swap at all;
 * and a VMM whose resume() fails after the swap: the migration stands
 * (the call succeeds, the report says resume failed), as the header says.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cunit-main.h"

#define PAGE 4096ULL
#define MiB (1ULL << 20)
#define GPA 0x100000000ULL
#define SLOT 3

static struct memmig_ctx *ctx;

/* What the VMM was told. */
struct vmm {
	struct memmig_vm *vm;
	unsigned int pauses, resumes, calls;
	uint64_t gpa[8], len[8];
	int err[8];
	uint8_t *hva;		/* where the slot is now */
	int resume_rc;		/* what resume() answers once the slot
				 * moved */
};

static int vmm_pause(void *opaque)
{
	((struct vmm *)opaque)->pauses++;
	return 0;
}

static int vmm_resume(void *opaque)
{
	struct vmm *v = opaque;

	v->resumes++;
	/* After the last piece: slot_moved() came. */
	return v->hva ? v->resume_rc : 0;
}

static void vmm_moved(void *opaque, uint32_t slot, void *old, void *hva, int fd,
		      uint64_t off)
{
	((struct vmm *)opaque)->hva = hva;
}

static void vmm_poisoned(void *opaque, uint32_t slot, uint64_t gpa, uint64_t len,
			 int err)
{
	struct vmm *v = opaque;

	if (slot == SLOT && v->calls < 8) {
		v->gpa[v->calls] = gpa;
		v->len[v->calls] = len;
		v->err[v->calls] = err;
	}
	v->calls++;
}

static int vmm_new(struct vmm *v, uint8_t *hva, uint64_t size, int fd)
{
	const struct memmig_vm_ops ops = {
		.sz = sizeof(ops), .pause = vmm_pause, .resume = vmm_resume,
		.slot_moved = vmm_moved, .poisoned = vmm_poisoned,
	};
	const struct memmig_vm_slot s = {
		.sz = sizeof(s), .slot = SLOT, .gpa = GPA, .hva = hva, .size = size,
		.fd = fd,
	};
	int rc;

	memset(v, 0, sizeof(*v));
	v->hva = hva;
	rc = memmig_vm_new(ctx, -1, &ops, v, &v->vm);
	return rc ? rc : memmig_vm_add_slot(v->vm, &s);
}

static uint64_t pattern(uint64_t i)
{
	return i * 0x9e3779b97f4a7c15ULL + 12345;
}

static void fill(uint8_t *p, uint64_t len)
{
	for (uint64_t i = 0; i < len / 8; i++)
		((uint64_t *)p)[i] = pattern(i);
}

/* Pages of [0, len) that differ from the fill, outside lost[]. */
static uint64_t bad_pages(const uint8_t *p, uint64_t len, const uint64_t *lost, int nlost)
{
	uint64_t bad = 0;

	for (uint64_t pg = 0; pg < len / PAGE; pg++) {
		bool skip = false;

		for (int k = 0; k < nlost; k++)
			skip |= pg == lost[k];
		for (uint64_t i = pg * PAGE / 8; !skip && i < (pg + 1) * PAGE / 8; i++)
			if (((const uint64_t *)p)[i] != pattern(i)) {
				bad++;
				break;
			}
	}
	return bad;
}

/* Does reading the page still fault (a marker, not data)? */
static bool faults(const uint8_t *page)
{
	uint8_t probe[PAGE];

	return memmig_copy_mc(ctx, probe, page, PAGE, NULL) == (ssize_t)PAGE;
}

static int marker_errno(void)
{
	return access("/proc/sys/vm/memory_failure_early_kill", F_OK) ? -EFAULT :
									 -EHWPOISON;
}

static int migrate(struct vmm *v, struct memmig_live_report *rep)
{
	const struct memmig_live_opts o = { .sz = sizeof(o), .slot = SLOT, .target_node = 0 };

	rep->sz = sizeof(*rep);
	return memmig_vm_migrate(v->vm, &o, rep);
}

static void test_anon_lost_pages(void)
{
	const uint64_t len = 32 * MiB;
	const uint64_t lost[] = { 5 * MiB / PAGE + 7, 20 * MiB / PAGE, 20 * MiB / PAGE + 1,
				  20 * MiB / PAGE + 2 };
	uint8_t *ram = mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct memmig_live_report rep;
	struct live_check { uint64_t gpa, len; int err; } got[2];
	struct vmm v;
	int rc;

	CU_ASSERT_FATAL(ram != MAP_FAILED);
	fill(ram, len);
	rc = memmig_poison_mark(ctx, ram + lost[0] * PAGE, PAGE);
	if (rc == -EOPNOTSUPP) {
		printf("  (no UFFDIO_POISON here: not tested)\n");
		munmap(ram, len);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL_FATAL(memmig_poison_mark(ctx, ram + lost[1] * PAGE, 3 * PAGE), 0);
	CU_ASSERT_EQUAL_FATAL(vmm_new(&v, ram, len, -1), 0);
	CU_ASSERT_EQUAL(migrate(&v, &rep), 0);
	CU_ASSERT_EQUAL(v.pauses, rep.pauses);	/* one a piece */
	CU_ASSERT_EQUAL(v.resumes, rep.pauses);
	CU_ASSERT_EQUAL(rep.pages_poisoned, 4);
	CU_ASSERT_EQUAL_FATAL(rep.poisoned_ranges, 2);
	/* The VMM heard of both ranges, ascending, as the report has them. */
	CU_ASSERT_EQUAL_FATAL(v.calls, 2);
	for (unsigned int i = 0; i < 2; i++)
		got[i] = (struct live_check){ v.gpa[i], v.len[i], v.err[i] };
	CU_ASSERT(got[0].gpa == GPA + lost[0] * PAGE && got[0].len == PAGE);
	CU_ASSERT(got[1].gpa == GPA + lost[1] * PAGE && got[1].len == 3 * PAGE);
	CU_ASSERT(got[0].err == marker_errno() && got[1].err == marker_errno());
	/* anonymous RAM is swapped in place: the same hva */
	CU_ASSERT_PTR_EQUAL(v.hva, ram);
	CU_ASSERT_EQUAL(bad_pages(ram, len, lost, 4), 0);
	for (int k = 0; k < 4; k++)
		CU_ASSERT(faults(ram + lost[k] * PAGE));
	CU_ASSERT_FALSE(faults(ram + (lost[0] + 1) * PAGE));
	memmig_vm_unref(v.vm);
	munmap(ram, len);
}

/* The report's accessor, on a migration of its own. */
static void test_report_ranges(void)
{
	const uint64_t len = 8 * MiB;
	uint8_t *ram = mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const struct memmig_live_opts o = { .sz = sizeof(o), .slot = SLOT, .target_node = 0 };
	struct memmig_live_report rep = { .sz = sizeof(rep) };
	struct memmig_live *l = NULL;
	uint64_t gpa = 0, n = 0;
	struct vmm v;
	int err = 0;

	CU_ASSERT_FATAL(ram != MAP_FAILED);
	fill(ram, len);
	if (memmig_poison_mark(ctx, ram + 2 * MiB, 2 * PAGE) == -EOPNOTSUPP) {
		munmap(ram, len);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(vmm_new(&v, ram, len, -1), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_live_new(v.vm, &o, &l), 0);
	CU_ASSERT_EQUAL(memmig_live_run(l), 0);
	CU_ASSERT_EQUAL(memmig_live_get_report(l, &rep), 0);
	CU_ASSERT_EQUAL(rep.poisoned_ranges, 1);
	CU_ASSERT_EQUAL(memmig_live_get_poisoned(l, 0, &gpa, &n, &err), 0);
	CU_ASSERT(gpa == GPA + 2 * MiB && n == 2 * PAGE && err == marker_errno());
	CU_ASSERT_EQUAL(memmig_live_get_poisoned(l, 1, &gpa, &n, &err), -EINVAL);
	CU_ASSERT_EQUAL(memmig_live_get_poisoned(NULL, 0, &gpa, &n, &err), -EINVAL);
	memmig_live_unref(l);
	memmig_vm_unref(v.vm);
	munmap(ram, len);
}

/* fd-backed guest RAM: a memfd of len bytes, mapped shared and filled. */
static uint8_t *fd_ram(uint64_t len, int *fd)
{
	void *p;

	*fd = memfd_create("live-poison", MFD_CLOEXEC);
	if (*fd < 0 || ftruncate(*fd, len))
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	fill(p, len);
	return p;
}

/* The mapping faults, the file reads: the kernel's read recovers it all. */
static void test_fd_kernel_read(void)
{
	const uint64_t len = 16 * MiB;
	struct memmig_live_report rep;
	struct vmm v;
	int fd;
	uint8_t *ram = fd_ram(len, &fd);

	CU_ASSERT_FATAL(ram != NULL);
	if (memmig_poison_mark(ctx, ram + 3 * MiB, 5 * PAGE) == -EOPNOTSUPP) {
		munmap(ram, len);
		close(fd);
		return;
	}
	CU_ASSERT_FATAL(faults(ram + 3 * MiB));
	CU_ASSERT_EQUAL_FATAL(vmm_new(&v, ram, len, fd), 0);
	CU_ASSERT_EQUAL(migrate(&v, &rep), 0);
	CU_ASSERT_EQUAL(rep.pages_poisoned, 0);
	CU_ASSERT_EQUAL(v.calls, 0);
	CU_ASSERT_EQUAL(bad_pages(v.hva, len, NULL, 0), 0);
	munmap(ram, len);
	memmig_vm_unref(v.vm);
	close(fd);
}

/* The file was cut short under the guest: its tail is lost, -EFAULT. */
static void test_fd_truncated(void)
{
	const uint64_t len = 16 * MiB, keep = 9 * MiB + 3 * PAGE;
	struct memmig_live_report rep;
	struct vmm v;
	int fd;
	uint8_t *ram = fd_ram(len, &fd);

	CU_ASSERT_FATAL(ram != NULL);
	CU_ASSERT_FATAL(ftruncate(fd, keep) == 0);
	CU_ASSERT_EQUAL_FATAL(vmm_new(&v, ram, len, fd), 0);
	CU_ASSERT_EQUAL(migrate(&v, &rep), 0);
	CU_ASSERT_EQUAL(rep.pages_poisoned, (len - keep) / PAGE);
	CU_ASSERT_EQUAL(rep.poisoned_ranges, 1);
	CU_ASSERT_EQUAL_FATAL(v.calls, 1);
	CU_ASSERT(v.gpa[0] == GPA + keep && v.len[0] == len - keep && v.err[0] == -EFAULT);
	CU_ASSERT_EQUAL(bad_pages(v.hva, keep, NULL, 0), 0);
	CU_ASSERT(faults(v.hva + keep));
	CU_ASSERT(faults(v.hva + len - PAGE));
	munmap(ram, len);
	memmig_vm_unref(v.vm);
	close(fd);
}

/*
 * A destination that cannot hold a poison marker (a file tier on a disk
 * file system: userfaultfd does not take such mappings): the migration
 * stops before the swap with -EHWPOISON, and the guest keeps its memory,
 * bytes and lost page as they were.
 */
static void test_unmarkable_dest(void)
{
	const uint64_t len = 8 * MiB, lost = 3 * MiB / PAGE + 1;
	uint8_t *ram = mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct memmig_live_opts o = { .sz = sizeof(o), .slot = SLOT, .target_node = -1,
				      .target_path = "/var/tmp" };
	struct memmig_live_report rep = { .sz = sizeof(rep) };
	struct vmm v;

	CU_ASSERT_FATAL(ram != MAP_FAILED);
	fill(ram, len);
	if (memmig_poison_mark(ctx, ram + lost * PAGE, PAGE) == -EOPNOTSUPP) {
		munmap(ram, len);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(vmm_new(&v, ram, len, -1), 0);
	CU_ASSERT_EQUAL(memmig_vm_migrate(v.vm, &o, &rep), -EHWPOISON);
	CU_ASSERT_EQUAL(rep.result, -EHWPOISON);
	CU_ASSERT_EQUAL(rep.pages_poisoned, 1);
	CU_ASSERT_EQUAL(v.calls, 1);
	CU_ASSERT_EQUAL(v.resumes, v.pauses);
	CU_ASSERT_PTR_EQUAL(v.hva, ram);
	CU_ASSERT_EQUAL(bad_pages(ram, len, &lost, 1), 0);
	CU_ASSERT(faults(ram + lost * PAGE));
	memmig_vm_unref(v.vm);
	munmap(ram, len);
}

/*
 * resume() fails after the swap: the guest is on the new memory already
 * (slot_moved() said so), so the migration must not read as failed --
 * "an error leaves the guest on its old memory".  It stands, and the
 * report has resume's error.
 */
static void test_resume_fails(void)
{
	const uint64_t len = 8 * MiB;
	uint8_t *ram = mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct memmig_live_report rep;
	struct vmm v;

	CU_ASSERT_FATAL(ram != MAP_FAILED);
	fill(ram, len);
	CU_ASSERT_EQUAL_FATAL(vmm_new(&v, ram, len, -1), 0);
	v.hva = NULL;
	v.resume_rc = -EIO;
	CU_ASSERT_EQUAL(migrate(&v, &rep), 0);
	CU_ASSERT_EQUAL(rep.resume_err, -EIO);
	CU_ASSERT_PTR_EQUAL(v.hva, ram);	/* slot_moved() came */
	CU_ASSERT_EQUAL(v.resumes, rep.pauses);
	CU_ASSERT_EQUAL(bad_pages(ram, len, NULL, 0), 0);
	memmig_vm_unref(v.vm);
	munmap(ram, len);
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

int main(void)
{
	static CU_TestInfo tests[] = {
		{ "anonymous RAM, pages lost in the middle", test_anon_lost_pages },
		{ "the report's poisoned ranges", test_report_ranges },
		{ "fd-backed RAM: the kernel's read recovers", test_fd_kernel_read },
		{ "fd-backed RAM: the file cut short", test_fd_truncated },
		{ "no marker possible: the guest stays", test_unmarkable_dest },
		{ "resume() fails after the swap: the move stands", test_resume_fails },
		CU_TEST_INFO_NULL,
	};
	static CU_SuiteInfo suites[] = {
		{ "live poison", suite_init, suite_clean, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	return cunit_main(suites);
}
