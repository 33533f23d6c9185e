/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What people read (issue 33): one size format (IEC, three significant
 * digits), durations in the two units that matter, tables whose over-long
 * cells are cut, and a progress bar's time left that waits for a steady
 * rate -- fed synthetic samples, so no host's pace decides it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit-main.h"
#include "cli/eta.h"
#include "cli/table.h"
#include "util/duration.h"
#include "util/size.h"

static void test_sizes(void)
{
	static const struct { unsigned long long v; const char *s; } cases[] = {
		{ 0, "0 B" }, { 512, "512 B" }, { 1023, "1023 B" }, { 1024, "1.00 KiB" },
		{ 1536, "1.50 KiB" }, { 84041728, "80.1 MiB" }, { 2164260864ULL, "2.02 GiB" },
		{ 2113692ULL << 10, "2.02 GiB" }, { 100ULL << 20, "100 MiB" },
		{ 1010ULL << 10, "1010 KiB" }, { 10235, "10.0 KiB" }, { 3ULL << 40, "3.00 TiB" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(util_size_human(cases[i].v, buf, sizeof(buf)), cases[i].s))
			CUNIT_FAILF("%llu: \"%s\", not \"%s\"", cases[i].v, buf, cases[i].s);
	/* The exact printer stays exact, for what is read back. */
	CU_ASSERT_STRING_EQUAL(util_size_format(2 << 20, buf, sizeof(buf)), "2 MiB");
	CU_ASSERT_STRING_EQUAL(util_size_format(84041728, buf, sizeof(buf)), "82072 KiB");
}

static void test_durations(void)
{
	static const struct { double s; const char *out; } cases[] = {
		{ 0, "0 s" }, { 2.7, "2 s" }, { 59, "59 s" }, { 184, "3 min 4 s" },
		{ 3600, "1 h 0 min" }, { 5 * 3600 + 6 * 60 + 7, "5 h 6 min" },
		{ 2 * 86400 + 3 * 3600 + 59, "2 d 3 h" }, { -1, "0 s" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(util_duration_human(cases[i].s, buf, sizeof(buf)), cases[i].out))
			CUNIT_FAILF("%g s: \"%s\", not \"%s\"", cases[i].s, buf, cases[i].out);
}

/* Samples every 0.1 s of a move of total bytes; the rate of sample i is
 * rates[i]; returns how many showed a time left, the last in *left. */
static int feed(const double *rates, int n, double *left)
{
	const uint64_t total = 2ULL << 30;
	struct cli_eta e = { 0 };
	uint64_t done = 0;
	int shown = 0;

	*left = -1;
	for (int i = 0; i < n; i++) {
		double l = cli_eta_sample(&e, 100 + i * 0.1, done, total, rates[i]);

		if (l >= 0) {
			shown++;
			*left = l;
		}
		done += (uint64_t)(rates[i] * 0.1);
		if (done > total)
			done = total;
	}
	return shown;
}

static void test_eta_steady(void)
{
	double rates[40], left;

	for (int i = 0; i < 40; i++)
		rates[i] = 10e6;	/* 10 MB/s: 2 GiB take minutes */
	/* Not at the first samples: a steady rate needs CLI_ETA_AGREE more. */
	CU_ASSERT_EQUAL(feed(rates, CLI_ETA_AGREE, &left), 0);
	CU_ASSERT_EQUAL(feed(rates, 40, &left), 40 - CLI_ETA_AGREE);
	/* What is left at the last sample, at its rate. */
	CU_ASSERT_DOUBLE_EQUAL(left, ((2ULL << 30) - 39 * 1e6) / 10e6, 1e-6);
}

static void test_eta_swinging(void)
{
	/* The move: 0.57 s, but the first rates said minutes (2 GiB at
	 * 10.6, 12.4 and 9.5 MB/s) before the pace came: none of it shown. */
	const double rates[] = { 10.6e6, 12.4e6, 9.5e6, 3.8e9, 4.1e9, 3.6e9 };
	double left;

	CU_ASSERT_EQUAL(feed(rates, 4, &left), 0);
	/* Once the pace holds, what is shown is the move's, not minutes. */
	feed(rates, 6, &left);
	CU_ASSERT(left < 1);
}

static void test_eta_change(void)
{
	double rates[30], left;

	/* Steady, then the rate halves: hidden until the new one holds. */
	for (int i = 0; i < 30; i++)
		rates[i] = i < 20 ? 20e6 : 10e6;
	CU_ASSERT_EQUAL(feed(rates, 20, &left), 20 - CLI_ETA_AGREE);
	CU_ASSERT_EQUAL(feed(rates, 21 + CLI_ETA_AGREE - 1, &left), 20 - CLI_ETA_AGREE);
	CU_ASSERT(feed(rates, 30, &left) > 20 - CLI_ETA_AGREE);
	/* No rate, no time left. */
	rates[0] = 0;
	CU_ASSERT_EQUAL(feed(rates, 1, &left), 0);
}

static void test_table(void)
{
	static const struct cli_col cols[] = {
		{ "name", 12, false }, { "n", 0, true }, { "last", 0, false },
	};
	struct cli_table *t = cli_table_new(cols, 3);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	cli_table_cell(t, "short");
	cli_table_cell(t, "%d", 7);
	cli_table_cell(t, "a");
	cli_table_cell(t, "a-very-long-domain-name");
	cli_table_cell(t, "%d", 12345);
	cli_table_cell(t, "b");
	cli_table_print(t, f);
	fclose(f);
	CU_ASSERT_STRING_EQUAL(out, "name              n  last\n"
				    "short             7  a\n"
				    "a-very-lo...  12345  b\n");
	free(out);
}

static CU_TestInfo tests[] = {
	{ "sizes: IEC, three significant digits; the exact printer kept", test_sizes },
	{ "durations: the two units that matter", test_durations },
	{ "time left: shown once the rate holds", test_eta_steady },
	{ "time left: none while the rate swings", test_eta_swinging },
	{ "time left: hidden again when the rate changes", test_eta_change },
	{ "tables: aligned, long cells cut with an ellipsis", test_table },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "human output", .pTests = tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
