/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's list format ("0-3,8,10-11") into bitmaps, and bitmaps into
 * arrays of ids (src/lib/topology/sysfs-list.c): the topology reads every
 * node's CPUs through them, into bitmaps of 65536 bits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/memmig-private.h"
#include "lib/topology/sysfs-list.h"
#include "cunit-main.h"

/* The library's log sink, which sysfs-list.c calls only for an attribute
 * it cannot parse (not read here): a call is a failure. */
void memmig_log(struct memmig_ctx *ctx, int priority, const char *file, int line,
		const char *fn, const char *format, ...)
{
	(void)ctx; (void)priority; (void)file; (void)line; (void)fn; (void)format;
	CU_FAIL("unexpected log message");
}

/* list parsed under limit, as an array: equal to want[0..n). */
static void check_list(const char *list, unsigned int limit, const int *want, unsigned int n)
{
	unsigned long *bits = calloc(BITMAP_LONGS(limit), sizeof(*bits));
	unsigned int count = 99;
	int *got = NULL;

	CU_ASSERT_FATAL(bits != NULL);
	CU_ASSERT_EQUAL_FATAL(memmig_list_parse(list, bits, limit), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_bitmap_to_array(bits, limit, &got, &count), 0);
	CU_ASSERT_EQUAL(count, n);
	for (unsigned int i = 0; i < n && i < count; i++)
		if (got[i] != want[i])
			CUNIT_FAILF("\"%s\": id %u is %d, want %d", list, i, got[i], want[i]);
	CU_ASSERT(n ? got != NULL : got == NULL);
	free(got);
	free(bits);
}

static void test_lists(void)
{
	static const int small[] = { 0, 1, 2, 3, 8, 10, 11 };
	static const int edges[] = { 62, 63, 64, 65, 127, 128, 65535 };
	static const int one[] = { 5 };

	check_list("0-3,8,10-11", 64, small, 7);
	check_list("62-65,127-128,65535", 65536, edges, 7);
	check_list("5\n", 6, one, 1);
	check_list("", 65536, NULL, 0);
	/* Ids at or beyond the limit are the parser's error. */
	{
		unsigned long bits[2] = { 0 };

		CU_ASSERT_EQUAL(memmig_list_parse("70", bits, 70), -ERANGE);
		CU_ASSERT_EQUAL(memmig_list_parse("3-", bits, 70), -EINVAL);
	}
}

/* Every bit of a 65536-bit bitmap: 65536 ids, ascending. */
static void test_full(void)
{
	unsigned long *bits = calloc(BITMAP_LONGS(65536), sizeof(*bits));
	unsigned int count = 0;
	int *got = NULL;

	CU_ASSERT_FATAL(bits != NULL);
	CU_ASSERT_EQUAL_FATAL(memmig_list_parse("0-65535", bits, 65536), 0);
	CU_ASSERT_EQUAL_FATAL(memmig_bitmap_to_array(bits, 65536, &got, &count), 0);
	CU_ASSERT_EQUAL_FATAL(count, 65536);
	for (int i = 0; i < 65536; i++)
		if (got[i] != i) {
			CUNIT_FAILF("id %d is %d", i, got[i]);
			break;
		}
	free(got);
	free(bits);
}

/* Random bitmaps of every limit to 200 bits (words both full and cut):
 * the array lists exactly the bits below the limit, set past it or not. */
static void test_random(void)
{
	unsigned long bits[4];
	unsigned int seed = 12345;

	for (unsigned int limit = 1; limit <= 200; limit++) {
		for (int rep = 0; rep < 20; rep++) {
			unsigned int count, k = 0;
			int *got = NULL;
			bool ok = true;

			for (int w = 0; w < 4; w++)
				bits[w] = (unsigned long)rand_r(&seed) << 33 ^
					  (unsigned long)rand_r(&seed) << 11 ^ (unsigned long)rand_r(&seed);
			CU_ASSERT_EQUAL_FATAL(memmig_bitmap_to_array(bits, limit, &got, &count), 0);
			for (unsigned int i = 0; i < limit; i++)
				if (memmig_bit_test(bits, i))
					ok &= k < count && got[k++] == (int)i;
			ok &= k == count;
			if (!ok)
				CUNIT_FAILF("limit %u: the array differs from the bitmap", limit);
			free(got);
		}
	}
}

static CU_TestInfo tests[] = {
	{ "lists into arrays: word edges, the last id, empty", test_lists },
	{ "all 65536 ids", test_full },
	{ "random bitmaps, every limit to 200 bits", test_random },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "sysfs lists", .pTests = tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
