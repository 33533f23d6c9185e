/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sz rule of libmemmig(3): a call reads and writes no more of a
 * size-prefixed struct than its sz says.  Each call gets the struct at every
 * size an older caller may have built (each multiple of 8 from the first
 * field on), placed so that it ends exactly at a PROT_NONE page: a read or a
 * write past sz is a SIGSEGV, caught in a child of its own.
 *
 * Not here: memmig_tuning_calibrate() (seconds and 512 MiB a call),
 * memmig_topo_get_dax() (needs a DAX device) and memmig_vm_migrate() (needs
 * a guest); they read and write their structs through memmig_struct_in()
 * and memmig_struct_out(), as the calls here do.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memmig.h"
#include "cunit-main.h"

#define PAGE 4096
#define FILL 0x77

static struct memmig_ctx *ctx;
static struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
static struct memmig_tuning tun = { .sz = sizeof(tun) };
static char tmpdir[PATH_MAX], tfile[PATH_MAX + 16];
static unsigned char *buf;	/* 2 MiB of this process's anonymous memory */
#define BUF_LEN (2u << 20)

/* Inputs the calls get, whole; a case copies their first sz bytes. */
static struct memmig_mc_opts mc_in = { .sz = sizeof(mc_in), .src_fd = -1 };
static struct memmig_region_desc desc_in = { .sz = sizeof(desc_in),
					     .backing = MEMMIG_BACKING_AUTO };
static struct memmig_migrate_opts mig_in = { .sz = sizeof(mig_in),
					     .strategy = MEMMIG_STRATEGY_KERNEL };
static struct memmig_move_opts move_in = { .sz = sizeof(move_in) };
static const int tier_fast[] = { 0 }, tier_slow[] = { 1 };
static struct memmig_tier_opts tier_in = { .sz = sizeof(tier_in), .fast_nodes = tier_fast,
					   .nfast = 1, .slow_nodes = tier_slow, .nslow = 1,
					   .slow_share = 50 };
static struct memmig_desc_opts dopts_in = { .sz = sizeof(dopts_in),
					    .len = 1u << 20, .threads = 1 };

/* The struct under test: sz bytes that end where a PROT_NONE page starts. */
static void *at_guard(size_t sz)
{
	unsigned char *m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || mprotect(m + PAGE, PAGE, PROT_NONE))
		return NULL;
	return m + PAGE - sz;
}

static struct memmig_region *own_region(void)
{
	struct memmig_region *r = NULL;

	return memmig_region_new(ctx, &desc_in, &r) ? NULL : r;
}

/* Each call, given the struct p of sz bytes: 0 when it answered as it
 * should have, else the line that failed. */
static int c_cpu_detect(void *p, size_t sz)
{
	return memmig_cpu_detect(p) ? __LINE__ : 0;
}

static int c_ctx_get_cpu(void *p, size_t sz)
{
	return memmig_ctx_get_cpu(ctx, p) ? __LINE__ : 0;
}

static int c_tuning_default_cpu(void *p, size_t sz)
{
	struct memmig_tuning t = { .sz = sizeof(t) };

	return memmig_tuning_default(p, &t) ? __LINE__ : 0;
}

static int c_tuning_default_out(void *p, size_t sz)
{
	return memmig_tuning_default(&cpu, p) ? __LINE__ : 0;
}

static int c_policy_choose_tuning(void *p, size_t sz)
{
	static const size_t lens[] = { 1, 64, 4096, 1u << 20, 1u << 30 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		if (memmig_policy_choose(&cpu, p, lens[i], 0) < 0 ||
		    memmig_policy_choose(&cpu, p, lens[i], MEMMIG_COPY_COLD) < 0)
			return __LINE__;
	return 0;
}

static int c_policy_choose_cpu(void *p, size_t sz)
{
	return memmig_policy_choose(p, &tun, 4096, 0) < 0 ? __LINE__ : 0;
}

static int c_prim_supported(void *p, size_t sz)
{
	for (int prim = 0; prim < MEMMIG_PRIM_COUNT; prim++)
		memmig_prim_supported(p, prim);
	return memmig_prim_supported(p, MEMMIG_PRIM_GENERIC) == 1 ? 0 : __LINE__;
}

static int c_ctx_get_tuning(void *p, size_t sz)
{
	return memmig_ctx_get_tuning(ctx, p) ? __LINE__ : 0;
}

static int c_ctx_set_tuning(void *p, size_t sz)
{
	return memmig_ctx_set_tuning(ctx, p) ? __LINE__ : 0;
}

static int c_tuning_from_env(void *p, size_t sz)
{
	return memmig_tuning_from_env(ctx, p) ? __LINE__ : 0;
}

static int c_tuning_save(void *p, size_t sz)
{
	return memmig_tuning_save(ctx, tfile, p) ? __LINE__ : 0;
}

static int c_tuning_load(void *p, size_t sz)
{
	return memmig_tuning_load(ctx, tfile, p) ? __LINE__ : 0;
}

static int c_copy_mc(void *p, size_t sz)
{
	return memmig_copy_mc(ctx, buf, buf + PAGE, PAGE, p) ? __LINE__ : 0;
}

static int c_topo_get_node(void *p, size_t sz)
{
	struct memmig_topo *topo = NULL;

	if (memmig_topo_new(ctx, &topo) || memmig_topo_node_count(topo) < 1)
		return __LINE__;
	return memmig_topo_get_node(topo, 0, p) ? __LINE__ : 0;
}

static int c_region_new(void *p, size_t sz)
{
	struct memmig_region *r = NULL;
	int rc = memmig_region_new(ctx, p, &r);

	/* Without addr and len there is no region: -EINVAL, not a crash. */
	if (sz < offsetof(struct memmig_region_desc, backing))
		return rc == -EINVAL ? 0 : __LINE__;
	return rc ? __LINE__ : 0;
}

static int c_region_get_desc(void *p, size_t sz)
{
	struct memmig_region *r = own_region();

	return !r || memmig_region_get_desc(r, p) ? __LINE__ : 0;
}

static int c_migrate(void *p, size_t sz)
{
	struct memmig_region *r = own_region();
	struct memmig_report *rep = NULL;

	return !r || memmig_migrate(r, p, &rep) ? __LINE__ : 0;
}

static int c_job_progress(void *p, size_t sz)
{
	struct memmig_region *r = own_region();
	struct memmig_job *job = NULL;

	if (!r || memmig_job_start(r, &mig_in, &job) ||
	    memmig_job_wait(job, NULL))
		return __LINE__;
	return memmig_job_get_progress(job, p) ? __LINE__ : 0;
}

static int c_report_summary(void *p, size_t sz)
{
	struct memmig_region *r = own_region();
	struct memmig_report *rep = NULL;

	if (!r || memmig_migrate(r, &mig_in, &rep) || !rep)
		return __LINE__;
	return memmig_report_get_summary(rep, p) ? __LINE__ : 0;
}

static int c_move_new(void *p, size_t sz)
{
	struct memmig_move *mv = NULL;

	return memmig_move_new(ctx, p, &mv) ? __LINE__ : 0;
}

static int c_move_progress(void *p, size_t sz)
{
	struct memmig_move *mv = NULL;

	if (memmig_move_new(ctx, &move_in, &mv))
		return __LINE__;
	return memmig_move_get_progress(mv, p) ? __LINE__ : 0;
}

/* Without its nodes or its share (an older, smaller struct): -EINVAL. */
static int c_tier_check_opts(void *p, size_t sz)
{
	int rc = memmig_tier_check_opts(ctx, p);

	if (sz <= offsetof(struct memmig_tier_opts, slow_share))
		return rc == -EINVAL ? 0 : __LINE__;
	return rc ? __LINE__ : 0;
}

/* This process, tiered: -ENOENT where the kernel keeps no soft-dirty bits. */
static int c_tier_new(void *p, size_t sz)
{
	struct memmig_tier *t = NULL;
	int rc = memmig_tier_new(ctx, p, &t);

	memmig_tier_unref(t);
	if (sz <= offsetof(struct memmig_tier_opts, slow_share))
		return rc == -EINVAL ? 0 : __LINE__;
	return rc && rc != -ENOENT ? __LINE__ : 0;
}

/* The figures of this process's tiering, where it can be had. */
static int c_tier_stats(void *p, size_t sz)
{
	struct memmig_tier *t = NULL;
	int rc;

	if (memmig_tier_new(ctx, &tier_in, &t))
		return 0;
	rc = memmig_tier_step(t) == -ENOMEM || memmig_tier_get_stats(t, p) ? __LINE__ : 0;
	memmig_tier_unref(t);
	return rc;
}

static int c_tier_sample(void *p, size_t sz)
{
	struct memmig_tier *t = NULL;
	int rc;

	if (memmig_tier_new(ctx, &tier_in, &t))
		return 0;
	memmig_tier_step(t);
	rc = memmig_tier_get_sample(t, 0, p);
	memmig_tier_unref(t);
	/* No sample where the step failed (a slow node not here). */
	return rc && rc != -ENOENT ? __LINE__ : 0;
}

static int c_desc_table_new(void *p, size_t sz)
{
	struct memmig_desc_table *t = NULL;
	int rc = memmig_desc_table_new(ctx, p, &t);

	if (sz < offsetof(struct memmig_desc_opts, node))
		return rc == -EINVAL ? 0 : __LINE__;	/* no len */
	/* No 1 MiB of huge pages or THP here is no failure of the sz rule. */
	return rc && rc != -ENOMEM ? __LINE__ : 0;
}

static int c_desc_table_info(void *p, size_t sz)
{
	struct memmig_desc_table *t = NULL;

	if (memmig_desc_table_new(ctx, &dopts_in, &t))
		return 0;
	return memmig_desc_table_get_info(t, p) ? __LINE__ : 0;
}

static int pause_nop(void *opaque)
{
	return 0;
}

static struct memmig_vm_ops ops_in = { .sz = sizeof(ops_in), .pause = pause_nop,
				       .resume = pause_nop };
static struct memmig_vm_slot slot_in = { .sz = sizeof(slot_in), .slot = 1, .fd = -1 };
/* A pause over its budget, the copy furthest over. */
static struct memmig_live_report live_rep = {
	.sz = sizeof(live_rep), .pause_budget_s = 5e-3, .pause_s = 6e-3,
	.pause_stop_s = 1e-4, .pause_harvest_s = 1e-3, .pause_copy_s = 4e-3,
	.pause_swap_s = 9e-4, .expected_stop_s = 1e-4, .expected_harvest_s = 5e-4,
	.expected_copy_s = 2.2e-3, .expected_swap_s = 1e-3,
};

static int c_vm_new(void *p, size_t sz)
{
	struct memmig_vm *vm = NULL;
	int rc = memmig_vm_new(ctx, -1, p, NULL, &vm);

	/* Without pause and resume there is nothing to drive: -EINVAL. */
	if (sz < offsetof(struct memmig_vm_ops, slot_moved))
		return rc == -EINVAL ? 0 : __LINE__;
	return rc ? __LINE__ : 0;
}

static int c_vm_add_slot(void *p, size_t sz)
{
	struct memmig_vm *vm = NULL;
	int rc;

	if (memmig_vm_new(ctx, -1, &ops_in, NULL, &vm))
		return __LINE__;
	rc = memmig_vm_add_slot(vm, p);
	/* A slot without its memory (hva, size) is no slot. */
	if (sz < offsetof(struct memmig_vm_slot, fd))
		return rc == -EINVAL ? 0 : __LINE__;
	return rc ? __LINE__ : 0;
}

static int c_vm_get_slot(void *p, size_t sz)
{
	struct memmig_vm *vm = NULL;

	if (memmig_vm_new(ctx, -1, &ops_in, NULL, &vm) || memmig_vm_add_slot(vm, &slot_in))
		return __LINE__;
	return memmig_vm_get_slot(vm, slot_in.slot, p) ? __LINE__ : 0;
}

static int c_live_pause_part(void *p, size_t sz)
{
	double took, expected;

	for (unsigned int i = 0; i < 4; i++)
		if (memmig_live_pause_part(p, i, NULL, &took, &expected))
			return __LINE__;
	return 0;
}

static int c_live_report_overrun(void *p, size_t sz)
{
	double took, expected;

	memmig_live_report_overrun(p, &took, &expected);
	return 0;
}

static struct memmig_live_opts live_in = { .sz = sizeof(live_in), .slot = 1 };

static int c_live_new(void *p, size_t sz)
{
	struct memmig_live *l = NULL;
	struct memmig_vm *vm = NULL;
	int rc;

	if (memmig_vm_new(ctx, -1, &ops_in, NULL, &vm) || memmig_vm_add_slot(vm, &slot_in))
		return __LINE__;
	rc = memmig_live_new(vm, p, &l);
	if (sz == sizeof(live_in))
		return rc ? __LINE__ : 0;
	/* Up to the slot only, target_node reads 0 (a node); without it,
	 * -1 as documented.  Either way the call answers, and does not
	 * crash: a target it cannot use is -EINVAL or -ENOENT. */
	return rc && rc != -EINVAL && rc != -ENOENT ? __LINE__ : 0;
}

static int c_live_get_report(void *p, size_t sz)
{
	struct memmig_live *l = NULL;
	struct memmig_vm *vm = NULL;

	if (memmig_vm_new(ctx, -1, &ops_in, NULL, &vm) || memmig_vm_add_slot(vm, &slot_in) ||
	    memmig_live_new(vm, &live_in, &l))
		return __LINE__;
	return memmig_live_get_report(l, p) ? __LINE__ : 0;
}

static int c_topo_find_node(void *p, size_t sz)
{
	struct memmig_topo *topo = NULL;

	if (memmig_topo_new(ctx, &topo))
		return __LINE__;
	return memmig_topo_find_node(topo, 0, p) ? __LINE__ : 0;
}

struct sz_case {
	const char *name;
	size_t full;		/* sizeof the struct now */
	const void *in;		/* the whole input, or NULL: an output */
	int (*call)(void *p, size_t sz);
};

static const struct sz_case cases[] = {
	{ "memmig_cpu_detect", sizeof(struct memmig_cpu_info), NULL, c_cpu_detect },
	{ "memmig_ctx_get_cpu", sizeof(struct memmig_cpu_info), NULL, c_ctx_get_cpu },
	{ "memmig_tuning_default(cpu)", sizeof(cpu), &cpu, c_tuning_default_cpu },
	{ "memmig_tuning_default(out)", sizeof(tun), NULL, c_tuning_default_out },
	{ "memmig_policy_choose(tuning)", sizeof(tun), &tun, c_policy_choose_tuning },
	{ "memmig_policy_choose(cpu)", sizeof(cpu), &cpu, c_policy_choose_cpu },
	{ "memmig_prim_supported", sizeof(cpu), &cpu, c_prim_supported },
	{ "memmig_ctx_get_tuning", sizeof(tun), NULL, c_ctx_get_tuning },
	{ "memmig_ctx_set_tuning", sizeof(tun), &tun, c_ctx_set_tuning },
	{ "memmig_tuning_from_env", sizeof(tun), &tun, c_tuning_from_env },
	{ "memmig_tuning_save", sizeof(tun), &tun, c_tuning_save },
	{ "memmig_tuning_load", sizeof(tun), &tun, c_tuning_load },
	{ "memmig_copy_mc", sizeof(mc_in), &mc_in, c_copy_mc },
	{ "memmig_topo_get_node", sizeof(struct memmig_node_info), NULL, c_topo_get_node },
	{ "memmig_region_new", sizeof(desc_in), &desc_in, c_region_new },
	{ "memmig_region_get_desc", sizeof(desc_in), NULL, c_region_get_desc },
	{ "memmig_migrate", sizeof(mig_in), &mig_in, c_migrate },
	{ "memmig_job_get_progress", sizeof(struct memmig_progress), NULL, c_job_progress },
	{ "memmig_report_get_summary", sizeof(struct memmig_report_summary), NULL,
	  c_report_summary },
	{ "memmig_move_new", sizeof(move_in), &move_in, c_move_new },
	{ "memmig_move_get_progress", sizeof(struct memmig_move_progress), NULL,
	  c_move_progress },
	{ "memmig_tier_check_opts", sizeof(tier_in), &tier_in, c_tier_check_opts },
	{ "memmig_tier_new", sizeof(tier_in), &tier_in, c_tier_new },
	{ "memmig_tier_get_stats", sizeof(struct memmig_tier_stats), NULL, c_tier_stats },
	{ "memmig_tier_get_sample", sizeof(struct memmig_tier_sample), NULL, c_tier_sample },
	{ "memmig_desc_table_new", sizeof(dopts_in), &dopts_in, c_desc_table_new },
	{ "memmig_desc_table_get_info", sizeof(struct memmig_desc_table_info), NULL,
	  c_desc_table_info },
	{ "memmig_topo_find_node", sizeof(struct memmig_node_info), NULL, c_topo_find_node },
	{ "memmig_live_new", sizeof(live_in), &live_in, c_live_new },
	{ "memmig_live_get_report", sizeof(live_rep), NULL, c_live_get_report },
	{ "memmig_vm_new", sizeof(ops_in), &ops_in, c_vm_new },
	{ "memmig_vm_add_slot", sizeof(slot_in), &slot_in, c_vm_add_slot },
	{ "memmig_vm_get_slot", sizeof(slot_in), NULL, c_vm_get_slot },
	{ "memmig_live_pause_part", sizeof(live_rep), &live_rep, c_live_pause_part },
	{ "memmig_live_report_overrun", sizeof(live_rep), &live_rep, c_live_report_overrun },
};

struct sz_run {
	const struct sz_case *c;
	size_t sz;
};

/* In the child: the struct at the guard, then the call. */
static int run_case(void *arg)
{
	const struct sz_run *r = arg;
	unsigned char *p = at_guard(r->sz);

	if (!p)
		return 100;
	if (r->c->in)
		memcpy(p, r->c->in, r->sz);
	else
		memset(p, FILL, r->sz);
	memcpy(p, &r->sz, sizeof(size_t));
	return r->c->call(p, r->sz) ? 101 : 0;
}

static void test_sz_at_guard(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct sz_case *c = &cases[i];

		/* Every size an older caller may have built: the struct's
		 * members are 8-byte aligned, and so its sizes. */
		for (size_t sz = 2 * sizeof(size_t); sz <= c->full; sz += 8) {
			struct sz_run r = { c, sz };
			int st = cunit_in_child(run_case, &r);

			if (st == -1 || !WIFEXITED(st))
				CUNIT_FAILF("%s, sz %zu of %zu: killed by signal %d "
					    "(read or wrote past sz)", c->name, sz,
					    c->full, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
			else if (WEXITSTATUS(st))
				CUNIT_FAILF("%s, sz %zu of %zu: failed (%d)",
					    c->name, sz, c->full, WEXITSTATUS(st));
		}
	}
}

/* What an older tuning leaves out takes the defaults: the policy answers as
 * it does for the whole struct with those fields at this CPU's defaults. */
static void test_policy_old_tuning(void)
{
	const size_t old = offsetof(struct memmig_tuning, vec_max);
	struct {
		struct memmig_tuning t;
	} junk;
	struct memmig_tuning def = { .sz = sizeof(def) };
	static const size_t lens[] = { 64, 512, 4096, 65536, 1u << 20 };

	CU_ASSERT_EQUAL_FATAL(memmig_tuning_default(&cpu, &def), 0);
	/* The old fields as the defaults, the newer ones garbage. */
	memset(&junk, 0x5a, sizeof(junk));
	memcpy(&junk.t, &def, old);
	junk.t.sz = old;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (unsigned int f = 0; f < 2; f++) {
			unsigned int fl = f ? MEMMIG_COPY_COLD : 0;
			int want = memmig_policy_choose(&cpu, &def, lens[i], fl);
			int got = memmig_policy_choose(&cpu, &junk.t, lens[i], fl);

			if (got != want)
				CUNIT_FAILF("len %zu flags %u: %s with sz %zu, %s "
					    "with the defaults", lens[i], fl,
					    memmig_prim_name(got), old,
					    memmig_prim_name(want));
		}
}

static int suite_init(void)
{
	struct memmig_tuning t = { .sz = sizeof(t) };

	if (memmig_ctx_new(&ctx) || memmig_ctx_get_cpu(ctx, &cpu) ||
	    memmig_ctx_get_tuning(ctx, &tun))
		return -1;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/memmig-api-sz.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(tfile, sizeof(tfile), "%s/tuning", tmpdir);
	if (memmig_tuning_default(&cpu, &t) || memmig_tuning_save(ctx, tfile, &t))
		return -1;
	buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return -1;
	memset(buf, 1, BUF_LEN);
	desc_in.addr = (uintptr_t)buf;
	desc_in.len = BUF_LEN;
	mig_in.target_node = 0;
	slot_in.hva = buf;
	slot_in.size = BUF_LEN;
	move_in.pid = getpid();
	move_in.target_node = 0;
	return 0;
}

static int suite_cleanup(void)
{
	unlink(tfile);
	rmdir(tmpdir);
	memmig_ctx_unref(ctx);
	return 0;
}

static CU_TestInfo sz_tests[] = {
	{ "every sized struct, every older size, at a guard page", test_sz_at_guard },
	{ "policy: an older tuning takes the defaults", test_policy_old_tuning },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "sz rule", .pInitFunc = suite_init,
	  .pCleanupFunc = suite_cleanup, .pTests = sz_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
