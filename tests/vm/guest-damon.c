/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The DAMON hotness source in the multi-node guest (6.12): children that
 * only read some 2 MiB units and only write others, which DAMON must see
 * (soft-dirty would miss the reads), while their idle units stay unmarked;
 * two processes at once, each its own units; -ESRCH once a process is
 * gone; and no kdamond of memmig's left on after the last close.  Under
 * 6.1 (no DAMON) it skips with tier_damon_open()'s reason.
 *
 * DAMON samples, so the checks count over the last intervals of each
 * phase (after warm-up: DAMON starts from a few big regions and refines
 * them every aggregation): each accessed unit set marked in >= 90% of its
 * unit-intervals, the idle units in <= 10%.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest-check.h"
#include "tier/tier-damon.h"

#define MAP_LEN		(64UL << 20)
#define NR_UNITS	((int)(MAP_LEN / TIER_UNIT))	/* 32 */
#define INTERVAL_MS	2000	/* DAMON aggregates every 500 ms */
#define KDAMONDS	"/sys/kernel/mm/damon/admin/kdamonds"

struct child {
	const char *name;
	int rd_lo, rd_hi, wr_lo, wr_hi;	/* unit ranges it reads, writes */
	pid_t pid;
	uint64_t addr;
	struct tier_damon *d;
	struct tier_unit u[NR_UNITS];
	int hits[NR_UNITS];	/* intervals marked, among those checked */
	int checked;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_until(double t)
{
	double left = t - now_ms();

	if (left > 0) {
		struct timespec ts = { (time_t)(left / 1e3), (long)((left - (time_t)(left / 1e3) * 1e3) * 1e6) };

		nanosleep(&ts, NULL);
	}
}

/* The child: fills its mapping, then only reads one set of units and only writes another. */
static void child_main(const struct child *c, int fd)
{
	uint8_t *p = guest_map_2m(MAP_LEN);
	uint64_t addr = (uintptr_t)p;
	volatile uint64_t sum = 0;
	struct timespec pause = { 0, 1000000 };

	if (p == MAP_FAILED)
		_exit(2);
	memset(p, 0x5a, MAP_LEN);
	if (write(fd, &addr, sizeof(addr)) != sizeof(addr))
		_exit(2);
	close(fd);
	for (uint64_t round = 0;; round++) {
		for (int i = c->rd_lo; i <= c->rd_hi; i++)
			for (size_t o = 0; o < TIER_UNIT; o += 4096)
				sum += *(volatile uint8_t *)(p + i * TIER_UNIT + o);
		for (int i = c->wr_lo; i <= c->wr_hi; i++)
			for (size_t o = 0; o < TIER_UNIT; o += 4096)
				*(volatile uint8_t *)(p + i * TIER_UNIT + o) = (uint8_t)round;
		/* Leaves the guest's two CPUs some time for kdamond and the parent. */
		nanosleep(&pause, NULL);
	}
}

static int child_start(struct child *c)
{
	int fds[2];

	if (pipe(fds) < 0)
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (!c->pid) {
		close(fds[0]);
		child_main(c, fds[1]);
	}
	close(fds[1]);
	if (read(fds[0], &c->addr, sizeof(c->addr)) != sizeof(c->addr)) {
		close(fds[0]);
		return -EIO;
	}
	close(fds[0]);
	for (int i = 0; i < NR_UNITS; i++) {
		c->u[i] = (struct tier_unit){ .addr = c->addr + i * TIER_UNIT, .len = TIER_UNIT,
					      .node = -1 };
	}
	printf("%s: pid %d, 64 MiB at 0x%llx: reads units %d-%d, writes %d-%d, the rest idle\n",
	       c->name, (int)c->pid, (unsigned long long)c->addr, c->rd_lo, c->rd_hi,
	       c->wr_lo, c->wr_hi);
	return 0;
}

static void child_stop(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		c->pid = 0;
	}
}

static bool in(int i, int lo, int hi)
{
	return i >= lo && i <= hi;
}

/* "4-7,20-23": the units marked this interval. */
static void marked_list(const struct child *c, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; i < NR_UNITS; i++) {
		int j = i;

		if (!(c->u[i].src & TIER_SRC_DAMON))
			continue;
		while (j + 1 < NR_UNITS && (c->u[j + 1].src & TIER_SRC_DAMON))
			j++;
		if (j > i)
			n += snprintf(buf + n, n < len ? len - n : 0, "%s%d-%d", n ? "," : "", i, j);
		else
			n += snprintf(buf + n, n < len ? len - n : 0, "%s%d", n ? "," : "", i);
		i = j;
	}
	if (!n)
		snprintf(buf, len, "none");
}

/* count intervals of tier_damon_mark() for each child; those from check_from on count. */
static void intervals(const char *phase, struct child **cs, int nc, int count, int check_from)
{
	double t0 = now_ms();

	for (int c = 0; c < nc; c++) {
		memset(cs[c]->hits, 0, sizeof(cs[c]->hits));
		cs[c]->checked = 0;
	}
	for (int k = 0; k < count; k++) {
		sleep_until(t0 + (k + 1) * INTERVAL_MS);
		for (int c = 0; c < nc; c++) {
			struct child *ch = cs[c];
			char list[256];
			double t = now_ms(), took;
			int r;

			for (int i = 0; i < NR_UNITS; i++)
				ch->u[i].damon_hist = ch->u[i].src = 0;
			r = tier_damon_mark(ch->d, ch->u, NR_UNITS);
			took = now_ms() - t;
			marked_list(ch, list, sizeof(list));
			printf("%s interval %d at %.0f ms: %s: mark %d in %.0f ms: %s%s\n", phase, k,
			       t - t0, ch->name, r, took, list, k >= check_from ? "" : " (warm-up)");
			CHECK(r >= 0, "%s: tier_damon_mark: %s", ch->name, strerror(-r));
			if (r < 0 || k < check_from)
				continue;
			ch->checked++;
			for (int i = 0; i < NR_UNITS; i++) {
				int m = !!(ch->u[i].src & TIER_SRC_DAMON);

				/* DAMON's marks are its own history: a touch only
				 * once confirmed (tier_unit_confirm). */
				CHECK(m == (ch->u[i].damon_hist & 1) && !(ch->u[i].hist & 1),
				      "%s: unit %d: src and damon_hist disagree", ch->name, i);
				ch->hits[i] += m;
			}
		}
		fflush(stdout);
	}
	for (int c = 0; c < nc; c++) {
		struct child *ch = cs[c];
		int rd = 0, nrd = 0, wr = 0, nwr = 0, idle = 0, nidle = 0;

		for (int i = 0; i < NR_UNITS; i++) {
			if (in(i, ch->rd_lo, ch->rd_hi))
				rd += ch->hits[i], nrd += ch->checked;
			else if (in(i, ch->wr_lo, ch->wr_hi))
				wr += ch->hits[i], nwr += ch->checked;
			else
				idle += ch->hits[i], nidle += ch->checked;
		}
		printf("%s: %s over the last %d intervals: read units marked %d/%d, written %d/%d,"
		       " idle %d/%d\n", phase, ch->name, ch->checked, rd, nrd, wr, nwr, idle, nidle);
		CHECK(nrd && rd * 10 >= nrd * 9, "%s: %s: read units marked %d/%d (< 90%%)",
		      phase, ch->name, rd, nrd);
		CHECK(nwr && wr * 10 >= nwr * 9, "%s: %s: written units marked %d/%d (< 90%%)",
		      phase, ch->name, wr, nwr);
		CHECK(idle * 10 <= nidle, "%s: %s: idle units marked %d/%d (> 10%%)",
		      phase, ch->name, idle, nidle);
	}
}

/* nr_kdamonds, and how many are on; -1 without DAMON's sysfs. */
static long kdamonds(int *on)
{
	char path[128], buf[32];
	long nr = -1;
	FILE *f = fopen(KDAMONDS "/nr_kdamonds", "r");

	*on = 0;
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	for (long i = 0; i < nr; i++) {
		snprintf(path, sizeof(path), KDAMONDS "/%ld/state", i);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f) && !strncmp(buf, "on", 2))
			(*on)++;
		if (f)
			fclose(f);
	}
	return nr;
}

int main(void)
{
	struct child a = { .name = "A", .rd_lo = 4, .rd_hi = 7, .wr_lo = 20, .wr_hi = 23 };
	struct child b = { .name = "B", .rd_lo = 10, .rd_hi = 13, .wr_lo = 26, .wr_hi = 29 };
	struct child *both[] = { &a, &b };
	struct tier_damon *dead_d = NULL;
	char why[256] = "";
	int on, on_after, r;
	long nr_before, nr_after;
	pid_t dead;

	setvbuf(stdout, NULL, _IOLBF, 0);
	nr_before = kdamonds(&on);
	printf("kdamonds before: %ld (%d on)\n", nr_before, on);
	if (child_start(&a)) {
		printf("FAIL: cannot start child A\n");
		return 1;
	}
	double t = now_ms();
	r = tier_damon_open(a.pid, INTERVAL_MS, &a.d, why, sizeof(why));
	printf("open A: %d in %.0f ms%s%s\n", r, now_ms() - t, r ? ": " : "", r ? why : "");
	if (r == -ENOENT) {
		child_stop(&a);
		return skip(why);
	}
	if (r) {
		child_stop(&a);
		printf("FAIL: tier_damon_open: %s: %s\n", strerror(-r), why);
		return 1;
	}
	nr_after = kdamonds(&on_after);
	printf("kdamonds while open: %ld (%d on)\n", nr_after, on_after);
	CHECK(on_after == on + 1, "%d kdamonds on, expected %d", on_after, on + 1);

	/* One process: 6 intervals, the last 3 checked. */
	intervals("one", both, 1, 6, 3);

	/* Two at once: B joins the running kdamond (commit). */
	if (child_start(&b)) {
		printf("FAIL: cannot start child B\n");
		child_stop(&a);
		return 1;
	}
	t = now_ms();
	r = tier_damon_open(b.pid, INTERVAL_MS, &b.d, why, sizeof(why));
	printf("open B: %d in %.0f ms%s%s\n", r, now_ms() - t, r ? ": " : "", r ? why : "");
	CHECK(!r, "tier_damon_open(B): %s: %s", strerror(-r), why);
	if (!r) {
		intervals("two", both, 2, 6, 3);
		t = now_ms();
		tier_damon_close(b.d);
		printf("close B in %.0f ms\n", now_ms() - t);
	}
	child_stop(&b);
	/* A alone again after B left. */
	intervals("after", both, 1, 4, 2);

	/* A gone: -ESRCH. */
	child_stop(&a);
	for (int i = 0; i < NR_UNITS; i++)
		a.u[i].damon_hist = a.u[i].src = 0;
	r = tier_damon_mark(a.d, a.u, NR_UNITS);
	printf("mark A after its exit: %d\n", r);
	CHECK(r == -ESRCH, "mark after exit: %d, expected -ESRCH", r);
	t = now_ms();
	tier_damon_close(a.d);
	printf("close A in %.0f ms\n", now_ms() - t);
	nr_after = kdamonds(&on_after);
	printf("kdamonds after close: %ld (%d on)\n", nr_after, on_after);
	CHECK(on_after == on, "%d kdamonds on after close, %d before", on_after, on);
	CHECK(nr_after == nr_before, "nr_kdamonds %ld after close, %ld before", nr_after, nr_before);

	/* A process that is gone before open. */
	dead = fork();
	if (!dead)
		_exit(0);
	waitpid(dead, NULL, 0);
	r = tier_damon_open(dead, INTERVAL_MS, &dead_d, why, sizeof(why));
	printf("open of an exited process: %d: %s\n", r, r ? why : "");
	CHECK(r == -ESRCH, "open(exited): %d, expected -ESRCH", r);
	if (!r)
		tier_damon_close(dead_d);

	printf("%s: %d failure(s)\n", fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}
