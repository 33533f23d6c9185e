/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The version a program is built with (memmig-version.h, made by configure)
 * against the library that runs: the macros, memmig_version(),
 * memmig_version_check() and the symbols' version node.
 */
#include "config.h"	/* PACKAGE_VERSION; _GNU_SOURCE: dlvsym */

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "memmig.h"
#include "cunit-main.h"

static void test_macros(void)
{
	char s[32];

	/* configure's own version, split into the three numbers. */
	CU_ASSERT_STRING_EQUAL(MEMMIG_VERSION_STRING, PACKAGE_VERSION);
	snprintf(s, sizeof(s), "%d.%d.%d", MEMMIG_VERSION_MAJOR,
		 MEMMIG_VERSION_MINOR, MEMMIG_VERSION_PATCH);
	CU_ASSERT_STRING_EQUAL(s, MEMMIG_VERSION_STRING);
	CU_ASSERT_EQUAL(MEMMIG_VERSION_NUMBER,
			MEMMIG_VERSION_MAJOR * 65536 + MEMMIG_VERSION_MINOR * 256 +
				MEMMIG_VERSION_PATCH);
#if MEMMIG_VERSION_NUMBER < 0x000100
#error "the number must be usable in #if and at least 0.1.0"
#endif
}

static void test_runtime(void)
{
	CU_ASSERT_PTR_NOT_NULL_FATAL(memmig_version());
	CU_ASSERT_STRING_EQUAL(memmig_version(), MEMMIG_VERSION_STRING);
}

static void test_check(void)
{
	CU_ASSERT_EQUAL(memmig_version_check(MEMMIG_VERSION_MAJOR, MEMMIG_VERSION_MINOR), 0);
	/* A newer minor or another major than the library has. */
	CU_ASSERT_EQUAL(memmig_version_check(MEMMIG_VERSION_MAJOR, MEMMIG_VERSION_MINOR + 1),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(memmig_version_check(MEMMIG_VERSION_MAJOR + 1, 0), -EOPNOTSUPP);
	/* An older minor: compatible from 1.0 on; in 0.x minors may break. */
	if (MEMMIG_VERSION_MINOR > 0)
		CU_ASSERT_EQUAL(memmig_version_check(MEMMIG_VERSION_MAJOR,
						     MEMMIG_VERSION_MINOR - 1),
				MEMMIG_VERSION_MAJOR ? 0 : -EOPNOTSUPP);
}

/* The calls are in their own version node, after LIBMEMMIG_1. */
static void test_symbol_node(void)
{
	CU_ASSERT_PTR_NOT_NULL(dlvsym(RTLD_DEFAULT, "memmig_version", "LIBMEMMIG_1.1"));
	CU_ASSERT_PTR_NOT_NULL(dlvsym(RTLD_DEFAULT, "memmig_version_check", "LIBMEMMIG_1.1"));
	CU_ASSERT_PTR_NOT_NULL(dlvsym(RTLD_DEFAULT, "memmig_ctx_new", "LIBMEMMIG_1"));
}

static CU_TestInfo version_tests[] = {
	{ "macros: configure's version, number in order", test_macros },
	{ "memmig_version() is the macros' string", test_runtime },
	{ "memmig_version_check(): same major, minor at least", test_check },
	{ "symbols in the LIBMEMMIG_1.1 node", test_symbol_node },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "version", .pTests = version_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
