/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * minivmm's hot-set guest (guest-hot.S, and its host-thread twin where
 * there is no /dev/kvm): it writes the window the VMM sets and nothing
 * else, its pages check clean while it runs, a window moved takes effect,
 * and a write lost behind its back is seen by the host's check and by the
 * guest.  With a KVM vCPU where /dev/kvm works, else the host thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "cunit-main.h"
#include "minivmm/vmm.h"

#define MEM (8ULL << 20)
#define WINDOW 64

static int kind = MINIVMM_VCPU_KVM;

static uint32_t count_of(struct minivmm *vmm, uint32_t page)
{
	struct minivmm_slot s;

	minivmm_get_slot(vmm, &s);
	return ((const uint32_t *)((const uint8_t *)s.hva + MINIVMM_HOT_TABLE * MINIVMM_PAGE))[page];
}

/* Waits for more passes than the guest had made: 0 or -errno. */
static int more_passes(struct minivmm *vmm, uint64_t more)
{
	struct minivmm_stats st;

	minivmm_get_stats(vmm, &st);
	return minivmm_wait_pass(vmm, st.passes + more, 20000);
}

static struct minivmm *up(void)
{
	struct minivmm_opts o = { .mem = MEM, .vcpu = kind, .guest = MINIVMM_GUEST_HOTSET };
	struct minivmm *vmm = NULL;

	if (minivmm_create(&o, &vmm))
		return NULL;
	/* The window before the guest's first pass. */
	if (minivmm_set_window(vmm, 10, WINDOW) || minivmm_start(vmm)) {
		minivmm_destroy(vmm);
		return NULL;
	}
	return vmm;
}

static void test_window(void)
{
	struct minivmm *vmm = up();
	struct minivmm_check c;
	struct minivmm_stats st;
	uint32_t data0, ndata, before[4];

	CU_ASSERT_PTR_NOT_NULL_FATAL(vmm);
	minivmm_data_pages(vmm, &data0, &ndata);
	CU_ASSERT_EQUAL(data0, MINIVMM_HOT_TABLE + 2);	/* 2048 pages: 8 KiB of table */
	CU_ASSERT_EQUAL(ndata, MEM / MINIVMM_PAGE - data0);
	CU_ASSERT_EQUAL_FATAL(minivmm_wait_pass(vmm, 50, 20000), 0);
	CU_ASSERT_EQUAL(minivmm_verify(vmm, &c), 0);
	CU_ASSERT_EQUAL(c.lost, 0);
	CU_ASSERT_EQUAL(c.torn, 0);
	CU_ASSERT_EQUAL(c.guest_errors, 0);
	/* In the window, written every pass; outside, never. */
	CU_ASSERT(count_of(vmm, data0 + 10) >= 49);
	CU_ASSERT(count_of(vmm, data0 + 10 + WINDOW - 1) >= 49);
	CU_ASSERT_EQUAL(count_of(vmm, data0 + 9), 0);
	CU_ASSERT_EQUAL(count_of(vmm, data0 + 10 + WINDOW), 0);
	/* Moved, wrapping past the end. */
	CU_ASSERT_EQUAL(minivmm_set_window(vmm, ndata - 8, 16), 0);
	before[0] = count_of(vmm, data0 + 10);
	before[1] = count_of(vmm, data0 + ndata - 1);
	before[2] = count_of(vmm, data0);
	CU_ASSERT_EQUAL_FATAL(more_passes(vmm, 50), 0);
	CU_ASSERT(count_of(vmm, data0 + 10) - before[0] <= 1);	/* a pass under way */
	CU_ASSERT(count_of(vmm, data0 + ndata - 1) - before[1] >= 40);
	CU_ASSERT(count_of(vmm, data0 + 7) > 40);
	CU_ASSERT(count_of(vmm, data0) - before[2] >= 40);
	CU_ASSERT_EQUAL(count_of(vmm, data0 + 8), 0);
	CU_ASSERT_EQUAL(minivmm_verify(vmm, &c), 0);
	CU_ASSERT_EQUAL(c.lost + c.torn + c.guest_errors, 0);
	minivmm_get_stats(vmm, &st);
	CU_ASSERT_EQUAL(st.guest_errors, 0);
	CU_ASSERT_EQUAL(st.fatal, 0);
	minivmm_destroy(vmm);
}

static void test_lost_write(void)
{
	struct minivmm *vmm = up();
	struct minivmm_slot s;
	struct minivmm_check c;
	struct minivmm_stats st;
	uint32_t data0, page, *line;

	CU_ASSERT_PTR_NOT_NULL_FATAL(vmm);
	minivmm_data_pages(vmm, &data0, NULL);
	CU_ASSERT_EQUAL_FATAL(minivmm_wait_pass(vmm, 5, 20000), 0);
	/* A page of the window loses its last write to line 5, as a copy
	 * that missed it would. */
	page = data0 + 10 + WINDOW / 2;
	CU_ASSERT_EQUAL_FATAL(minivmm_pause(vmm), 0);
	minivmm_get_slot(vmm, &s);
	line = (uint32_t *)((uint8_t *)s.hva + (uint64_t)page * MINIVMM_PAGE + 5 * MINIVMM_LINE);
	/* Not the page under way: its lines are a run of two values. */
	if (((const struct minivmm_state *)((uint8_t *)s.hva + MINIVMM_STATE_OFFSET))->pos == page)
		page++, line += MINIVMM_PAGE / 4;
	(*line)--;
	CU_ASSERT_EQUAL(minivmm_verify(vmm, &c), 0);
	CU_ASSERT_EQUAL(c.lost, 1);
	CU_ASSERT_EQUAL(minivmm_resume(vmm), 0);
	CU_ASSERT_EQUAL(more_passes(vmm, 3), 0);
	minivmm_get_stats(vmm, &st);
	CU_ASSERT_EQUAL(st.guest_errors, 1);
	CU_ASSERT_EQUAL(st.last_error_page, page);
	minivmm_destroy(vmm);
}

static void test_other_guests(void)
{
	struct minivmm_opts o = { .mem = MEM, .vcpu = MINIVMM_VCPU_THREAD };
	struct minivmm *vmm;

	CU_ASSERT_EQUAL_FATAL(minivmm_create(&o, &vmm), 0);
	CU_ASSERT_EQUAL(minivmm_set_window(vmm, 0, 1), -EINVAL);
	minivmm_destroy(vmm);
	o.guest = MINIVMM_GUEST_HOTSET;
	o.mem = 2 * MINIVMM_PAGE;	/* no room for a data page */
	CU_ASSERT_EQUAL(minivmm_create(&o, &vmm), -EINVAL);
}

int main(void)
{
	static CU_TestInfo tests[] = {
		{ "it writes the window, and only the window", test_window },
		{ "a lost write: the host's check and the guest see it", test_lost_write },
		{ "the window is the hot-set guest's only", test_other_guests },
		CU_TEST_INFO_NULL,
	};
	static CU_SuiteInfo suites[] = {
		{ "minivmm hot set", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};
	struct minivmm_opts o = { .mem = MEM, .guest = MINIVMM_GUEST_HOTSET };
	struct minivmm *vmm;

	/* KVM where it works; the host thread runs the same algorithm. */
	if (minivmm_create(&o, &vmm))
		kind = MINIVMM_VCPU_THREAD;
	else
		minivmm_destroy(vmm);
	printf("vCPU: %s\n", kind == MINIVMM_VCPU_KVM ? "KVM" : "host thread (no /dev/kvm)");
	return cunit_main(suites);
}
