/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tiering engine's parts on their own (src/tier/): the policy's
 * checks, one interval's plan (share, watermark, rate, hysteresis, order),
 * a process's units, and the writes soft-dirty sees in a real child, each
 * read through the child's pin (an fd on its /proc/PID): once the child
 * is gone, nothing is read of a process that took its pid.  And the DAMON
 * source against this host's own DAMON sysfs, where there is one: what it
 * finds there is as it was after an open and a close.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cunit-main.h"
#include "lib/tier/tier-damon.h"
#include "lib/tier/tier-plan.h"
#include "lib/tier/tier-react.h"
#include "lib/tier/tier-softdirty.h"
#include "lib/tier/tier-units.h"

#define MB (1ULL << 20)

static struct tier_policy policy(void)
{
	/* memmigd's defaults, nodes 0 fast and 2 slow. */
	return (struct tier_policy){
		.fast = { 0 }, .nfast = 1, .slow = { 2 }, .nslow = 1, .slow_share = 70,
		.interval_ms = 2000, .cold_intervals = 2, .min_stay = 2,
		.pause_ms = TIER_PAUSE_DEFAULT_MS,
	};
}

static void test_policy_check(void)
{
	struct tier_policy p = policy();
	char err[200];

	CU_ASSERT_EQUAL(tier_policy_check(&p, err, sizeof(err)), 0);
	p.slow[0] = 0;
	CU_ASSERT_EQUAL(tier_policy_check(&p, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "both fast and slow"));
	p = policy();
	p.fast_free = 64 * MB;
	CU_ASSERT_EQUAL(tier_policy_check(&p, err, sizeof(err)), -EINVAL);
	p.slow_share = 0;
	CU_ASSERT_EQUAL(tier_policy_check(&p, err, sizeof(err)), 0);
	p.fast_free = 0;
	CU_ASSERT_EQUAL(tier_policy_check(&p, err, sizeof(err)), -EINVAL);
	p = policy();
	p.interval_ms = 10;
	CU_ASSERT_EQUAL(tier_policy_check(&p, err, sizeof(err)), -EINVAL);
	p = policy();
	p.cold_intervals = TIER_HIST_BITS + 1;
	CU_ASSERT_EQUAL(tier_policy_check(&p, err, sizeof(err)), -EINVAL);
	p = policy();
	p.nslow = 0;
	CU_ASSERT_EQUAL(tier_policy_check(&p, err, sizeof(err)), -EINVAL);
	CU_ASSERT(tier_policy_is_fast(&p, 0) && !tier_policy_is_fast(&p, 2));
}

/* n full units at 2 MiB steps, every sampled page on node (fast 0, slow 2),
 * known for 10 intervals and untouched since the first. */
static void units_on(struct tier_unit *u, size_t n, bool fast)
{
	for (size_t i = 0; i < n; i++) {
		memset(&u[i], 0, sizeof(u[i]));
		u[i].addr = 0x40000000 + i * TIER_UNIT;
		u[i].len = TIER_UNIT;
		u[i].sampled = TIER_SAMPLES;
		u[i].on_fast = fast ? TIER_SAMPLES : 0;
		u[i].on_slow = fast ? 0 : TIER_SAMPLES;
		u[i].node = fast ? 0 : 2;
		u[i].cold_since = 1;
	}
}

/* A unit soft-dirty saw written, in the intervals hist has set. */
static void written(struct tier_unit *u, uint8_t hist)
{
	u->hist = hist;
	u->src = TIER_SRC_SOFTDIRTY;
}

static bool has(const size_t *v, size_t n, size_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static void test_plan_promote(void)
{
	struct tier_policy p = policy();
	struct tier_unit u[8];
	struct tier_plan plan;

	units_on(u, 8, false);
	written(&u[3], 1);
	written(&u[6], 0x7);	/* hot for three intervals: first */
	CU_ASSERT_EQUAL(tier_plan_make(u, 8, &(struct tier_plan_in){ &p, 11, 0, 0 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.npromote, 2);
	CU_ASSERT_EQUAL(plan.promote[0], 6);
	CU_ASSERT_EQUAL(plan.promote[1], 3);
	CU_ASSERT_EQUAL(plan.promote_bytes, 2 * TIER_UNIT);
	/* 6 of 8 units stay slow: 75 % >= 70 %, nothing to demote. */
	CU_ASSERT_EQUAL(plan.ndemote, 0);
	tier_plan_free(&plan);
}

/* DAMON's mark counts once it repeats: a single one promotes nothing and
 * keeps nothing from going cold; two in a row are a touch, which keeps a
 * unit warm; three in a row promote it, as a write does at once. */
static void test_damon_confirm(void)
{
	struct tier_policy p = policy();
	struct tier_unit u[5];
	struct tier_plan plan;

	units_on(u, 5, false);
	u[0].damon_hist = 1;		/* marked now, not before */
	u[1].damon_hist = 3;		/* marked now and before */
	u[2].damon_hist = 2;		/* marked before, not now */
	written(&u[3], 1);		/* written: sure at once */
	u[4].damon_hist = 7;		/* marked three intervals running */
	for (int i = 0; i < 5; i++)
		tier_unit_confirm(&u[i]);
	CU_ASSERT_EQUAL(u[0].hist, 0);
	CU_ASSERT_EQUAL(u[1].hist, 1);
	CU_ASSERT_EQUAL(u[2].hist, 0);
	CU_ASSERT_EQUAL(u[3].hist, 1);
	CU_ASSERT_EQUAL(u[4].hist, 1);
	CU_ASSERT(!tier_unit_promotable(&u[1]) && tier_unit_promotable(&u[4]));
	CU_ASSERT_EQUAL(tier_plan_make(u, 5, &(struct tier_plan_in){ &p, 11, 0, 0 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.npromote, 2);
	CU_ASSERT(has(plan.promote, plan.npromote, 3) && has(plan.promote, plan.npromote, 4));
	tier_plan_free(&plan);

	/* Two marks keep a unit on fast from going cold: not demoted. */
	units_on(u, 5, true);
	u[1].damon_hist = 3;
	tier_unit_confirm(&u[1]);
	CU_ASSERT_EQUAL(tier_plan_make(u, 5, &(struct tier_plan_in){ &p, 11, 0, 0 }, &plan), 0);
	CU_ASSERT(plan.ndemote > 0 && !has(plan.demote, plan.ndemote, 1));
	tier_plan_free(&plan);
}

static void test_plan_demote_share(void)
{
	struct tier_policy p = policy();
	struct tier_unit u[10];
	struct tier_plan plan;

	units_on(u, 10, true);
	u[0].hist = u[1].hist = 1;
	u[4].cold_since = 9;	/* touched two intervals ago: cold, but less */
	u[5].cold_since = 11;	/* first seen now: no history, stays */
	CU_ASSERT_EQUAL(tier_plan_make(u, 10, &(struct tier_plan_in){ &p, 11, 0, 0 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.npromote, 0);
	/* 70 % of 10 units: 7 demoted, of the 7 cold ones known long enough
	 * (2,3,4,6,7,8,9), the least recently touched first. */
	CU_ASSERT_EQUAL(plan.ndemote, 7);
	CU_ASSERT(!has(plan.demote, plan.ndemote, 0) && !has(plan.demote, plan.ndemote, 1));
	CU_ASSERT(!has(plan.demote, plan.ndemote, 5));
	CU_ASSERT_EQUAL(plan.demote[plan.ndemote - 1], 4);
	CU_ASSERT_EQUAL(plan.demote_bytes, 7 * TIER_UNIT);
	tier_plan_free(&plan);

	/* Nothing is cold until every source has watched cold_intervals:
	 * DAMON's marks count from interval 3, untouched units first seen at
	 * 1 are cold at 5, not at 3 (a unit only read has no mark before),
	 * nor in the warm-up itself. */
	units_on(u, 10, true);	/* first seen at 1 */
	CU_ASSERT_EQUAL(tier_plan_make(u, 10, &(struct tier_plan_in){ &p, 3, 0, 0 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.ndemote, 7);
	tier_plan_free(&plan);
	for (uint32_t now = 1; now <= 4; now++) {
		CU_ASSERT_EQUAL(tier_plan_make(u, 10, &(struct tier_plan_in){ &p, now, 0, 3 },
					       &plan), 0);
		CU_ASSERT_EQUAL(plan.ndemote, 0);
		tier_plan_free(&plan);
	}
	CU_ASSERT_EQUAL(tier_plan_make(u, 10, &(struct tier_plan_in){ &p, 5, 0, 3 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.ndemote, 7);
	tier_plan_free(&plan);

	/* A unit touched in the last cold_intervals is not cold. */
	units_on(u, 10, true);
	for (int i = 0; i < 10; i++)
		u[i].hist = 2;	/* touched one interval ago */
	CU_ASSERT_EQUAL(tier_plan_make(u, 10, &(struct tier_plan_in){ &p, 11, 0, 0 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.ndemote, 0);
	CU_ASSERT_EQUAL(plan.npromote, 0);
	tier_plan_free(&plan);
}

static void test_plan_hysteresis(void)
{
	struct tier_policy p = policy();
	struct tier_unit u[4];
	struct tier_plan plan;

	units_on(u, 4, false);
	/* Demoted last interval, written now: min_stay (2) keeps it down. */
	written(&u[1], 1);
	u[1].last_dir = -1;
	u[1].moved_at = 10;
	/* Demoted two intervals ago: free to come back. */
	written(&u[2], 1);
	u[2].last_dir = -1;
	u[2].moved_at = 9;
	CU_ASSERT_EQUAL(tier_plan_make(u, 4, &(struct tier_plan_in){ &p, 11, 0, 0 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.npromote, 1);
	CU_ASSERT_EQUAL(plan.promote[0], 2);
	CU_ASSERT_EQUAL(plan.held, 1);
	tier_plan_free(&plan);
}

/*
 * A unit touched in most intervals with gaps of one (QEMU's heap in CI):
 * with cold_intervals 1 it went down in each gap and up at its next touch.
 * After one bounce it needs two idle intervals, and stays through its gaps.
 */
static void test_plan_backoff(void)
{
	struct tier_policy p = policy();
	struct tier_unit u[4];
	struct tier_plan plan;
	uint32_t now = 11;

	p.cold_intervals = 1;
	p.min_stay = 0;
	units_on(u, 4, true);
	for (int i = 1; i < 4; i++)
		u[i].hist = 0xff;	/* the others hot: u[0] alone can go */
	u[0].hist = 0x76;	/* a gap now: cold after 1 */
	u[0].cold_since = now - 1;
	CU_ASSERT_EQUAL(tier_plan_make(u, 4, &(struct tier_plan_in){ &p, now, 0, 0 }, &plan), 0);
	CU_ASSERT(has(plan.demote, plan.ndemote, 0));
	tier_plan_free(&plan);
	CU_ASSERT_FALSE(tier_unit_moved(&u[0], -1, now, 1));
	CU_ASSERT_EQUAL(u[0].backoff, 0);

	/* Touched again the next interval: promoted, a bounce. */
	now++;
	CU_ASSERT(tier_unit_moved(&u[0], 1, now, p.min_stay + p.cold_intervals));
	CU_ASSERT_EQUAL(u[0].backoff, 1);
	CU_ASSERT_EQUAL(u[0].moved_at, now);
	CU_ASSERT_EQUAL(u[0].last_dir, 1);

	/* Its next gap of one: not cold; a gap of two: cold. */
	now += 2;
	u[0].hist = 0xee;
	u[0].cold_since = now - 1;
	CU_ASSERT_FALSE(tier_unit_cold(&u[0], 1, now, 0));
	CU_ASSERT_EQUAL(tier_plan_make(u, 4, &(struct tier_plan_in){ &p, now, 0, 0 }, &plan), 0);
	CU_ASSERT_FALSE(has(plan.demote, plan.ndemote, 0));
	tier_plan_free(&plan);
	u[0].hist = 0xdc;
	u[0].cold_since = now - 2;
	CU_ASSERT(tier_unit_cold(&u[0], 1, now, 0));

	/* A move long after the last is no bounce; the backoff is capped,
	 * and past the history's bits only the last touch counts. */
	CU_ASSERT_FALSE(tier_unit_moved(&u[0], -1, now + 5, 1));
	for (int i = 0; i < 2 * TIER_BACKOFF_MAX; i++)
		tier_unit_moved(&u[0], i % 2 ? -1 : 1, now + 6 + (uint32_t)i, 1);
	CU_ASSERT_EQUAL(u[0].backoff, TIER_BACKOFF_MAX);
	u[0].hist = 0;
	u[0].cold_since = 100;
	CU_ASSERT_FALSE(tier_unit_cold(&u[0], 2, 100 + (2 << TIER_BACKOFF_MAX) - 1, 0));
	CU_ASSERT(tier_unit_cold(&u[0], 2, 100 + (2 << TIER_BACKOFF_MAX), 0));
}

static void test_plan_rate(void)
{
	struct tier_policy p = policy();
	struct tier_unit u[10];
	struct tier_plan plan;

	units_on(u, 10, false);
	for (int i = 0; i < 4; i++)
		written(&u[i], 1);
	/* 3 units a second, 1 s intervals: 3 of the 4 promotions. */
	p.interval_ms = 1000;
	p.rate = 3 * TIER_UNIT;
	CU_ASSERT_EQUAL(tier_plan_make(u, 10, &(struct tier_plan_in){ &p, 11, 0, 0 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.npromote, 3);
	CU_ASSERT_EQUAL(plan.deferred, 1);
	tier_plan_free(&plan);

	/* Promotions go before demotions in the budget. */
	units_on(u, 10, true);
	for (int i = 0; i < 10; i++)
		u[i].on_fast = i < 2 ? 0 : TIER_SAMPLES, u[i].on_slow = TIER_SAMPLES - u[i].on_fast;
	written(&u[0], 1);
	written(&u[1], 1);
	CU_ASSERT_EQUAL(tier_plan_make(u, 10, &(struct tier_plan_in){ &p, 11, 0, 0 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.npromote, 2);
	CU_ASSERT_EQUAL(plan.ndemote, 1);
	CU_ASSERT(plan.promote_bytes + plan.demote_bytes <= p.rate);
	tier_plan_free(&plan);
}

static void test_plan_watermark(void)
{
	struct tier_policy p = policy();
	struct tier_unit u[8];
	struct tier_plan plan;

	p.slow_share = 0;
	p.fast_free = 8 * MB;
	units_on(u, 8, true);
	/* 2 MiB free, 8 wanted: three cold units go down. */
	CU_ASSERT_EQUAL(tier_plan_make(u, 8, &(struct tier_plan_in){ &p, 11, 2 * MB, 0 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.ndemote, 3);
	tier_plan_free(&plan);

	/* Hot units on slow with no room and nothing cold: they wait. */
	units_on(u, 8, false);
	for (int i = 0; i < 8; i++)
		written(&u[i], 1);
	CU_ASSERT_EQUAL(tier_plan_make(u, 8, &(struct tier_plan_in){ &p, 11, 12 * MB, 0 }, &plan), 0);
	CU_ASSERT_EQUAL(plan.npromote, 2);	/* 12 - 8 = 4 MiB of room */
	CU_ASSERT_EQUAL(plan.deferred, 6);
	tier_plan_free(&plan);
}

/* ---- a real child ---- */

struct child {
	pid_t pid;
	int cmd, ack;
	uint64_t addr;
	struct tier_proc pr;	/* pinned by an fd on its /proc/PID */
	int refuse;		/* what pr.check answers */
};

static int child_check(void *opaque)
{
	return ((struct child *)opaque)->refuse;
}

/* The child: 16 MiB, 2 MiB aligned, written whole; then writes unit k for
 * each byte k it reads, acking each. */
static int child_start(struct child *c)
{
	int to[2], from[2];

	if (pipe(to) || pipe(from))
		return -errno;
	c->pid = fork();
	if (c->pid == 0) {
		char *m = mmap(NULL, 20 * MB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		unsigned char k;

		close(to[1]);
		close(from[0]);
		if (m == MAP_FAILED)
			_exit(1);
		m = (char *)(((uintptr_t)m + TIER_UNIT - 1) & ~(TIER_UNIT - 1));
		memset(m, 1, 16 * MB);
		/* The 2 MiB after the 16 MiB, unmapped before the parent looks:
		 * byte 255 maps it again, which merges it into the mapping (the
		 * kernel then marks the whole mapping soft-dirty). */
		munmap(m + 16 * MB, 2 * MB);
		if (write(from[1], &m, sizeof(m)) != sizeof(m))
			_exit(1);
		while (read(to[0], &k, 1) == 1) {
			if (k == 255 && mmap(m + 16 * MB, 2 * MB, PROT_READ | PROT_WRITE,
					     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
						    MAP_FAILED)
				_exit(1);
			if (k != 255)
				memset(m + k * TIER_UNIT + 4096, k, 8192);
			if (write(from[1], &k, 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(to[0]);
	close(from[1]);
	c->cmd = to[1];
	c->ack = from[0];
	{
		char path[32];

		snprintf(path, sizeof(path), "/proc/%d", c->pid);
		c->refuse = 0;
		c->pr = (struct tier_proc){ .pid = c->pid, .check = child_check, .opaque = c,
					    .procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
	}
	if (c->pr.procfd < 0)
		return -errno;
	return read(c->ack, &c->addr, sizeof(c->addr)) == sizeof(c->addr) ? 0 : -EIO;
}

static void child_write(struct child *c, unsigned char k)
{
	CU_ASSERT(write(c->cmd, &k, 1) == 1 && read(c->ack, &k, 1) == 1);
}

/* Ends the child; its pin stays open (child_unpin()), the process reaped
 * behind it. */
static void child_stop(struct child *c)
{
	close(c->cmd);
	close(c->ack);
	waitpid(c->pid, NULL, 0);
}

static void child_unpin(struct child *c)
{
	close(c->pr.procfd);
}

/* The units of the child's 16 MiB: index of its first. */
static ssize_t find(const struct tier_unit *u, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (u[i].addr == addr)
			return (ssize_t)i;
	return -1;
}

static void test_units_child(void)
{
	struct tier_policy p = policy();
	struct tier_unit *u = NULL;
	struct child c;
	size_t n = 0;
	ssize_t f;

	/* Wherever the child's pages are (the multi-node tier runs this too,
	 * and the child's CPU picks its node): nodes 0-62 fast, 63 slow. */
	for (int i = 0; i < TIER_MAX_NODES - 1; i++)
		p.fast[i] = i;
	p.nfast = TIER_MAX_NODES - 1;
	p.slow[0] = TIER_MAX_NODES - 1;
	CU_ASSERT_EQUAL_FATAL(child_start(&c), 0);
	CU_ASSERT_EQUAL(tier_units_read(&c.pr, NULL, 0, &u, &n), 0);
	f = find(u, n, c.addr);
	CU_ASSERT_FATAL(f >= 0 && (size_t)f + 8 <= n);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(u[f + i].len, TIER_UNIT);
	/* Every page of the written 16 MiB sampled, on a node, none absent. */
	CU_ASSERT_EQUAL(tier_units_sample(&c.pr, u, n, &p), 0);
	for (int i = 0; i < 8; i++) {
		CU_ASSERT_EQUAL(u[f + i].sampled, TIER_SAMPLES);
		CU_ASSERT_EQUAL(u[f + i].on_fast, TIER_SAMPLES);
		CU_ASSERT_EQUAL(u[f + i].on_slow, 0);
		CU_ASSERT(u[f + i].node >= 0 && u[f + i].node < TIER_MAX_NODES - 1);
	}
	/* The 2 MiB unmapped after them: not a unit, nothing sampled. */
	CU_ASSERT((size_t)f + 8 == n || u[f + 8].addr != c.addr + 16 * MB);
	/* What is known carries over a new reading. */
	u[f + 3].hist = 0x5;
	u[f + 3].moved_at = 7;
	{
		struct tier_unit *v = NULL;
		size_t m = 0;

		CU_ASSERT_EQUAL(tier_units_read(&c.pr, u, n, &v, &m), 0);
		CU_ASSERT_EQUAL(m, n);
		CU_ASSERT_EQUAL(v[f + 3].hist, 0x5);
		CU_ASSERT_EQUAL(v[f + 3].moved_at, 7);
		free(v);
	}
	/* The caller's rule says no: nothing sampled. */
	c.refuse = -EPERM;
	CU_ASSERT_EQUAL(tier_proc_check(&c.pr), -EPERM);
	c.refuse = 0;
	free(u);
	child_stop(&c);
	/* Reaped: its pin answers nothing, whoever has its pid now. */
	CU_ASSERT_FALSE(tier_proc_alive(&c.pr));
	CU_ASSERT_EQUAL(tier_proc_check(&c.pr), -ESRCH);
	CU_ASSERT_EQUAL(tier_units_read(&c.pr, NULL, 0, &u, &n), -ESRCH);
	child_unpin(&c);
}

static void test_softdirty_child(void)
{
	struct tier_softdirty *sd;
	struct tier_unit *u = NULL;
	struct child c;
	char why[256] = "";
	size_t n = 0;
	ssize_t f;
	int rc;

	CU_ASSERT_EQUAL_FATAL(child_start(&c), 0);
	rc = tier_softdirty_open(&c.pr, &sd, why, sizeof(why));
	if (rc == -ENOENT) {
		printf("\n  not on this kernel: %s\n", why);
		child_stop(&c);
		child_unpin(&c);
		return;
	}
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(tier_units_read(&c.pr, NULL, 0, &u, &n), 0);
	f = find(u, n, c.addr);
	CU_ASSERT_FATAL(f >= 0);
	child_write(&c, 2);
	child_write(&c, 5);
	for (size_t i = 0; i < n; i++)
		u[i].hist = 0, u[i].src = 0;
	CU_ASSERT(tier_softdirty_mark(sd, u, n) >= 2);
	for (int i = 0; i < 8; i++) {
		bool want = i == 2 || i == 5;

		if ((u[f + i].hist & 1) != want)
			CUNIT_FAILF("unit %d: marked %d, written %d", i, u[f + i].hist & 1, want);
		if (want)
			CU_ASSERT_EQUAL(u[f + i].src, TIER_SRC_SOFTDIRTY);
	}
	/* Cleared by the mark: no write since, no mark in the 16 MiB. */
	for (size_t i = 0; i < n; i++)
		u[i].hist = 0;
	CU_ASSERT(tier_softdirty_mark(sd, u, n) >= 0);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(u[f + i].hist, 0);
	child_write(&c, 7);
	CU_ASSERT(tier_softdirty_mark(sd, u, n) >= 1);
	CU_ASSERT_EQUAL(u[f + 7].hist, 1);
	/* A new mapping merged into it: the kernel marks it all soft-dirty;
	 * its units keep what the last interval said (7 written, not 3). */
	child_write(&c, 255);
	free(u);
	CU_ASSERT_EQUAL_FATAL(tier_units_read(&c.pr, NULL, 0, &u, &n), 0);
	f = find(u, n, c.addr);
	CU_ASSERT_FATAL(f >= 0 && u[f + 8].vma == u[f].vma);
	for (size_t i = 0; i < n; i++)
		u[i].hist = i == (size_t)f + 7 ? 2 : 0, u[i].src = 0;
	CU_ASSERT(tier_softdirty_mark(sd, u, n) >= 0);
	for (int i = 0; i < 9; i++)
		if ((u[f + i].hist & 1) != (i == 7))
			CUNIT_FAILF("after the merge, unit %d: marked %d", i, u[f + i].hist & 1);
	/* ... and what it carries is a write, which promotes. */
	CU_ASSERT_EQUAL(u[f + 7].src, TIER_SRC_SOFTDIRTY);
	CU_ASSERT(tier_unit_promotable(&u[f + 7]) && !tier_unit_promotable(&u[f + 3]));
	CU_ASSERT_EQUAL(tier_softdirty_vma_resets(sd), 1);
	/* And the next interval reads true again: nothing written. */
	for (size_t i = 0; i < n; i++)
		u[i].hist = 0;
	CU_ASSERT(tier_softdirty_mark(sd, u, n) >= 0);
	for (int i = 0; i < 9; i++)
		CU_ASSERT_EQUAL(u[f + i].hist, 0);
	/* The caller's rule says no: no mark, and the bits not cleared -- the
	 * write stays for the next mark to see. */
	child_write(&c, 4);
	c.refuse = -EPERM;
	CU_ASSERT_EQUAL(tier_softdirty_mark(sd, u, n), -EPERM);
	c.refuse = 0;
	for (size_t i = 0; i < n; i++)
		u[i].hist = 0;
	CU_ASSERT(tier_softdirty_mark(sd, u, n) >= 1);
	CU_ASSERT_EQUAL(u[f + 4].hist & 1, 1);
	child_stop(&c);
	CU_ASSERT_EQUAL(tier_softdirty_mark(sd, u, n), -ESRCH);
	tier_softdirty_close(sd);
	child_unpin(&c);
	free(u);
}

#define KDAMONDS "/sys/kernel/mm/damon/admin/kdamonds"

/* Appends "path=value\n" for each readable file below dir (sysfs: the
 * kdamonds' settings and states), in a stable order. */
static void snap_dir(const char *dir, char **buf, size_t *len, size_t *cap, int depth)
{
	struct dirent **e;
	int n = depth > 8 ? -1 : scandir(dir, &e, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		char path[512], val[256] = "";
		struct stat st;
		FILE *f;

		if (e[i]->d_name[0] == '.' ||
		    /* What a kdamond keeps changing, or hands out per request. */
		    !strcmp(e[i]->d_name, "stats") || !strcmp(e[i]->d_name, "tried_regions") ||
		    !strcmp(e[i]->d_name, "effective_bytes") || !strcmp(e[i]->d_name, "current_value")) {
			free(e[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, e[i]->d_name);
		free(e[i]);
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			snap_dir(path, buf, len, cap, depth + 1);
			continue;
		}
		if (!(st.st_mode & 0444) || !(f = fopen(path, "re")))
			continue;
		if (!fgets(val, sizeof(val), f))
			val[0] = 0;
		fclose(f);
		val[strcspn(val, "\n")] = 0;
		while (*len + strlen(path) + strlen(val) + 3 > *cap) {
			*cap = *cap ? *cap * 2 : 65536;
			*buf = realloc(*buf, *cap);
		}
		*len += (size_t)sprintf(*buf + *len, "%s=%s\n", path, val);
	}
	if (n >= 0)
		free(e);
}

static char *snap_damon(void)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	snap_dir(KDAMONDS, &buf, &len, &cap, 0);
	if (!buf)
		buf = strdup("");
	return buf;
}

/*
 * Whatever the host's DAMON holds -- an admin's kdamond, on or off, or
 * none -- tier_damon_open() and tier_damon_close() of a child leave it
 * as it was: nr_kdamonds, each kdamond's state, thread and settings.
 * (Where it took a kdamond of its own, it gave it back.)  Skipped where
 * there is no DAMON sysfs; not root, every write is refused anyway.
 */
static void test_damon_leaves_host(void)
{
	struct tier_damon *d = NULL;
	char why[512] = "", *before, *after;
	pid_t child;
	int r;

	if (access(KDAMONDS, F_OK)) {
		printf("\n  (no DAMON sysfs here: skipped) ");
		return;
	}
	before = snap_damon();
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	CU_ASSERT_FATAL(child > 0);
	r = tier_damon_open(child, 1000, &d, why, sizeof(why));
	printf("\n  tier_damon_open: %d%s%s ", r, r ? ": " : "", r ? why : "");
	CU_ASSERT(r == 0 || r == -EBUSY || r == -ENOENT || r == -EPERM || r == -EOPNOTSUPP);
	if (!r)
		tier_damon_close(d);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	after = snap_damon();
	if (strcmp(before, after))
		printf("\n  DAMON before:\n%s  DAMON after:\n%s", before, after);
	CU_ASSERT_STRING_EQUAL(after, before);
	free(before);
	free(after);
}

/*
 * The init of a pid namespace of its own (root only): a process pinned,
 * killed, reaped, and its pid given to another (ns_last_pid): the engine
 * reads nothing of the new one through the pin.  The exit status: 0, 1 a
 * failure, 2 not run here.
 */
static int reuse_in_ns(void)
{
	struct tier_unit *u = NULL;
	struct child a, b;
	size_t n = 0;
	FILE *f;
	int rc = 1;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return 2;
	if (child_start(&a))
		return 1;
	child_stop(&a);
	f = fopen("/proc/sys/kernel/ns_last_pid", "we");
	if (!f || fprintf(f, "%d", a.pid - 1) < 0 || fclose(f))
		return 1;
	if (child_start(&b) || b.pid != a.pid)
		return 1;
	/* By its number the pid is b's; through a's pin, nothing is. */
	if (tier_proc_alive(&a.pr) || tier_proc_check(&a.pr) != -ESRCH ||
	    tier_units_read(&a.pr, NULL, 0, &u, &n) != -ESRCH)
		goto out;
	if (tier_units_read(&b.pr, NULL, 0, &u, &n))
		goto out;
	rc = tier_units_sample(&a.pr, u, n, &(struct tier_policy){ .nfast = 1, .nslow = 1,
								   .slow = { 1 } }) == -ESRCH ? 0 : 1;
out:
	free(u);
	child_stop(&b);
	child_unpin(&b);
	child_unpin(&a);
	return rc;
}

static void test_pid_reuse(void)
{
	pid_t p;
	int status;

	if (geteuid()) {
		printf("\n  not here: needs root, for a pid namespace of its own\n");
		return;
	}
	/* A child enters the namespaces, and its child is the new pid
	 * namespace's init: this process stays where it was. */
	p = fork();
	if (p == 0) {
		pid_t q;

		if (unshare(CLONE_NEWPID | CLONE_NEWNS))
			_exit(2);
		q = fork();
		if (q == 0)
			_exit(reuse_in_ns());
		_exit(q > 0 && waitpid(q, &status, 0) == q && WIFEXITED(status) ?
		      WEXITSTATUS(status) : 1);
	}
	CU_ASSERT_FATAL(p > 0);
	CU_ASSERT_EQUAL(waitpid(p, &status, 0), p);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
		printf("\n  not here: no pid namespace with a /proc of its own\n");
		return;
	}
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Units 0..n-1 of 2 MiB; those of hot[] (addresses in units) touched. */
static void set_hot(struct tier_unit *u, size_t n, const int *hot, size_t nhot)
{
	for (size_t i = 0; i < n; i++)
		u[i] = (struct tier_unit){ .addr = i * TIER_UNIT, .len = TIER_UNIT };
	for (size_t i = 0; i < nhot; i++)
		u[hot[i]].hist = 1;
}

static void test_react(void)
{
	static const int a[] = { 0, 1, 2, 3 }, a_less[] = { 0, 1, 2 }, b[] = { 4, 5, 6, 7 };
	struct tier_unit u[8];
	struct tier_react r;
	double react = -1;
	const uint64_t hb = 4 * TIER_UNIT;	/* the hot set's bytes */

	tier_react_init(&r);
	/* Nothing hot: no change, no reaction. */
	set_hot(u, 8, NULL, 0);
	tier_react_note(&r, u, 8, 0, 0, 0, &react);
	CU_ASSERT_EQUAL(react, -1);
	/* A first hot set, on slow at 3 s, 90 % on fast at 9 s: 6 s. */
	set_hot(u, 8, a, 4);
	tier_react_note(&r, u, 8, hb, 0, 3, &react);
	CU_ASSERT_EQUAL(react, -1);
	tier_react_note(&r, u, 8, hb, hb / 2, 6, &react);
	CU_ASSERT_EQUAL(react, -1);	/* half of it: not yet */
	tier_react_note(&r, u, 8, hb, hb - hb / 10, 9, &react);
	CU_ASSERT_DOUBLE_EQUAL(react, 6, 1e-9);
	/* A quarter of the set gone is no change (not more than a quarter). */
	set_hot(u, 8, a_less, 3);
	tier_react_note(&r, u, 8, 3 * TIER_UNIT, 0, 12, &react);
	set_hot(u, 8, a_less, 3);
	tier_react_note(&r, u, 8, 3 * TIER_UNIT, 3 * TIER_UNIT, 100, &react);
	CU_ASSERT_DOUBLE_EQUAL(react, 6, 1e-9);
	/* A new set at 102 s, answered at 105 s: shorter, the longest stays. */
	set_hot(u, 8, b, 4);
	tier_react_note(&r, u, 8, hb, 0, 102, &react);
	tier_react_note(&r, u, 8, hb, hb, 105, &react);
	CU_ASSERT_DOUBLE_EQUAL(react, 6, 1e-9);
	/* Another, answered 20 s later: the new longest. */
	set_hot(u, 8, a, 4);
	tier_react_note(&r, u, 8, hb, TIER_UNIT, 110, &react);
	tier_react_note(&r, u, 8, hb, hb, 130, &react);
	CU_ASSERT_DOUBLE_EQUAL(react, 20, 1e-9);
	tier_react_free(&r);

	/* A change already answered when seen: 0, where none was before. */
	tier_react_init(&r);
	react = -1;
	set_hot(u, 8, a, 4);
	tier_react_note(&r, u, 8, hb, hb, 1, &react);
	CU_ASSERT_DOUBLE_EQUAL(react, 0, 1e-9);
	tier_react_free(&r);
}

static CU_TestInfo tests[] = {
	{ "react_s: a change of the hot set to 90 % of it on fast", test_react },
	{ "policy: node sets, share or watermark, ranges", test_policy_check },
	{ "plan: hot units on slow promoted, hottest first", test_plan_promote },
	{ "plan: a DAMON mark counts when it repeats", test_damon_confirm },
	{ "plan: cold units demoted to the share, coldest first", test_plan_demote_share },
	{ "plan: a unit moved lately stays (hysteresis)", test_plan_hysteresis },
	{ "plan: a unit that bounced needs longer to go cold", test_plan_backoff },
	{ "plan: the rate, promotions first", test_plan_rate },
	{ "plan: the fast nodes' free-memory watermark", test_plan_watermark },
	{ "units of a real child, sampled and carried over", test_units_child },
	{ "soft-dirty: the units a real child wrote, and no other", test_softdirty_child },
	{ "DAMON: the host's kdamonds as they were after open and close", test_damon_leaves_host },
	{ "a reused pid: nothing read of the new process through the pin", test_pid_reuse },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "tiering engine", .pTests = tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
