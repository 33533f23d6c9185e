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
 * unit-intervals; the idle units marked two intervals running (the marks
 * the tiering acts on: tier_unit_confirm) in <= 10%.
 *
 * And an admin's kdamonds beside memmig's (issue 34): one configured but
 * off, the only one, keeps its settings (memmig refuses rather than
 * rewrite nr_kdamonds); one that is on keeps running while memmig takes
 * another, free one and gives it back; and one an admin started in
 * memmig's place after memmig's had stopped keeps running when memmig
 * closes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest-check.h"
#include "lib/tier/tier-damon.h"

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
	int confirmed[NR_UNITS];	/* of them, marked the interval before too */
	bool marked[NR_UNITS];	/* in the last interval */
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
		memset(cs[c]->confirmed, 0, sizeof(cs[c]->confirmed));
		memset(cs[c]->marked, 0, sizeof(cs[c]->marked));
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
			if (r < 0)
				continue;
			if (k < check_from) {
				for (int i = 0; i < NR_UNITS; i++)
					ch->marked[i] = ch->u[i].src & TIER_SRC_DAMON;
				continue;
			}
			ch->checked++;
			for (int i = 0; i < NR_UNITS; i++) {
				int m = !!(ch->u[i].src & TIER_SRC_DAMON);

				/* DAMON's marks are its own history: a touch only
				 * once confirmed (tier_unit_confirm). */
				CHECK(m == (ch->u[i].damon_hist & 1) && !(ch->u[i].hist & 1),
				      "%s: unit %d: src and damon_hist disagree", ch->name, i);
				ch->hits[i] += m;
				ch->confirmed[i] += m && ch->marked[i];
				ch->marked[i] = m;
			}
		}
		fflush(stdout);
	}
	for (int c = 0; c < nc; c++) {
		struct child *ch = cs[c];
		int rd = 0, nrd = 0, wr = 0, nwr = 0, idle = 0, nidle = 0, idle_conf = 0;

		for (int i = 0; i < NR_UNITS; i++) {
			if (in(i, ch->rd_lo, ch->rd_hi))
				rd += ch->hits[i], nrd += ch->checked;
			else if (in(i, ch->wr_lo, ch->wr_hi))
				wr += ch->hits[i], nwr += ch->checked;
			else
				idle += ch->hits[i], nidle += ch->checked,
				idle_conf += ch->confirmed[i];
		}
		printf("%s: %s over the last %d intervals: read units marked %d/%d, written %d/%d,"
		       " idle %d/%d (%d of them marked the interval before too)\n", phase,
		       ch->name, ch->checked, rd, nrd, wr, nwr, idle, nidle, idle_conf);
		CHECK(nrd && rd * 10 >= nrd * 9, "%s: %s: read units marked %d/%d (< 90%%)",
		      phase, ch->name, rd, nrd);
		CHECK(nwr && wr * 10 >= nwr * 9, "%s: %s: written units marked %d/%d (< 90%%)",
		      phase, ch->name, wr, nwr);
		/*
		 * An idle unit DAMON marks while its regions still adapt (a
		 * region spanning hot and idle units spreads its accesses over
		 * all of them) is what the tiering's confirmation filters: a
		 * mark counts as a touch only when the interval before marked
		 * the unit too (tier_unit_confirm).  Bound what passes it; how
		 * many intervals DAMON takes to split its regions is the host's.
		 */
		CHECK(idle_conf * 10 <= nidle,
		      "%s: %s: idle units marked two intervals running %d/%d (> 10%%)",
		      phase, ch->name, idle_conf, nidle);
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

static int put(const char *val, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put(const char *val, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	FILE *f;
	int ok;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	f = fopen(path, "w");
	if (!f) {
		printf("  %s: %s\n", path, strerror(errno));
		return -1;
	}
	ok = fputs(val, f) >= 0;
	ok &= fclose(f) == 0;
	if (!ok)
		printf("  %s < %s: %s\n", path, val, strerror(errno));
	return ok ? 0 : -1;
}

static void get(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void get(char *buf, size_t len, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	buf[0] = 0;
	f = fopen(path, "r");
	if (f && !fgets(buf, (int)len, f))
		buf[0] = 0;
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	if (!f)
		snprintf(buf, len, "(none)");
}

/* An admin's kdamond k: vaddr on pid, with intervals no one else uses. */
static int admin_config(int k, pid_t pid)
{
	char p[16];

	snprintf(p, sizeof(p), "%d", (int)pid);
	return put("1", KDAMONDS "/%d/contexts/nr_contexts", k) ||
	       put("vaddr", KDAMONDS "/%d/contexts/0/operations", k) ||
	       put("7000", KDAMONDS "/%d/contexts/0/monitoring_attrs/intervals/sample_us", k) ||
	       put("140000", KDAMONDS "/%d/contexts/0/monitoring_attrs/intervals/aggr_us", k) ||
	       put("1", KDAMONDS "/%d/contexts/0/targets/nr_targets", k) ||
	       put(p, KDAMONDS "/%d/contexts/0/targets/0/pid_target", k) ? -1 : 0;
}

/* What an admin would check of kdamond k: "state pid contexts ops
 * sample aggr targets pid_target". */
static void admin_view(int k, char *out, size_t len)
{
	char st[16], pid[16], nc[16], ops[16], su[32], au[32], nt[16], pt[16];

	get(st, sizeof(st), KDAMONDS "/%d/state", k);
	get(pid, sizeof(pid), KDAMONDS "/%d/pid", k);
	get(nc, sizeof(nc), KDAMONDS "/%d/contexts/nr_contexts", k);
	get(ops, sizeof(ops), KDAMONDS "/%d/contexts/0/operations", k);
	get(su, sizeof(su), KDAMONDS "/%d/contexts/0/monitoring_attrs/intervals/sample_us", k);
	get(au, sizeof(au), KDAMONDS "/%d/contexts/0/monitoring_attrs/intervals/aggr_us", k);
	get(nt, sizeof(nt), KDAMONDS "/%d/contexts/0/targets/nr_targets", k);
	get(pt, sizeof(pt), KDAMONDS "/%d/contexts/0/targets/0/pid_target", k);
	snprintf(out, len, "%s %s %s %s %s %s %s %s", st, pid, nc, ops, su, au, nt, pt);
}

/* Every kdamond off, none left: how each case starts and ends. */
static void damon_reset(void)
{
	int on;
	long nr = kdamonds(&on);

	for (long k = 0; k < nr; k++) {
		char st[16];

		get(st, sizeof(st), KDAMONDS "/%ld/state", k);
		if (!strcmp(st, "on"))
			put("off", KDAMONDS "/%ld/state", k);
	}
	put("0", KDAMONDS "/nr_kdamonds");
}

static bool wait_state(int k, const char *want, int ms)
{
	char st[16];

	for (int t = 0; t < ms; t += 100) {
		get(st, sizeof(st), KDAMONDS "/%d/state", k);
		if (!strcmp(st, want))
			return true;
		usleep(100 * 1000);
	}
	return false;
}

/* A process for an admin's kdamond to watch. */
static pid_t sleeper(void)
{
	pid_t p = fork();

	if (p == 0) {
		for (;;)
			pause();
	}
	return p;
}

static void admins_kdamonds(void)
{
	struct child a = { .name = "A", .rd_lo = 4, .rd_hi = 7, .wr_lo = 20, .wr_hi = 23 };
	char why[512], before[256], after[256], nr[16];
	struct tier_damon *d = NULL;
	pid_t adm = sleeper();
	int r;

	CHECK(adm > 0, "a process for the admin's kdamond");
	if (adm <= 0 || child_start(&a)) {
		printf("FAIL: cannot start the children\n");
		fails++;
		return;
	}

	/* 1: the only kdamond, configured, off: memmig refuses, it stays. */
	damon_reset();
	CHECK(!put("1", KDAMONDS "/nr_kdamonds") && !admin_config(0, adm),
	      "the admin configures kdamond 0");
	admin_view(0, before, sizeof(before));
	r = tier_damon_open(a.pid, INTERVAL_MS, &d, why, sizeof(why));
	printf("admin's kdamond 0 configured, off: open: %d%s%s\n", r, r ? ": " : "",
	       r ? why : "");
	CHECK(r == -EBUSY, "open beside the admin's only kdamond: %d, expected -EBUSY", r);
	if (!r)
		tier_damon_close(d);
	admin_view(0, after, sizeof(after));
	get(nr, sizeof(nr), KDAMONDS "/nr_kdamonds");
	printf("  kdamond 0 before [%s], after [%s]; nr_kdamonds %s\n", before, after, nr);
	CHECK(!strcmp(before, after) && !strcmp(nr, "1"),
	      "the admin's configured kdamond kept its settings");

	/* 2: the admin's on, a free one beside it: memmig takes that one. */
	damon_reset();
	CHECK(!put("2", KDAMONDS "/nr_kdamonds") && !admin_config(0, adm) &&
	      !put("on", KDAMONDS "/0/state"), "the admin starts kdamond 0 of 2");
	admin_view(0, before, sizeof(before));
	d = NULL;
	r = tier_damon_open(a.pid, INTERVAL_MS, &d, why, sizeof(why));
	printf("admin's kdamond 0 on, 1 free: open: %d%s%s\n", r, r ? ": " : "", r ? why : "");
	CHECK(!r, "open takes the free kdamond 1: %s", r ? why : "");
	if (!r) {
		char st[16];

		get(st, sizeof(st), KDAMONDS "/1/state");
		CHECK(!strcmp(st, "on"), "memmig's kdamond 1 is on: %s", st);
		for (int i = 0; i < NR_UNITS; i++)
			a.u[i].damon_hist = a.u[i].src = 0;
		r = tier_damon_mark(d, a.u, NR_UNITS);
		CHECK(r >= 0, "a mark on kdamond 1: %d", r);
		tier_damon_close(d);
		get(st, sizeof(st), KDAMONDS "/1/state");
		get(nr, sizeof(nr), KDAMONDS "/1/contexts/nr_contexts");
		CHECK(!strcmp(st, "off") && !strcmp(nr, "0"),
		      "kdamond 1 given back off, without a context: %s, %s contexts", st, nr);
	}
	admin_view(0, after, sizeof(after));
	get(nr, sizeof(nr), KDAMONDS "/nr_kdamonds");
	printf("  kdamond 0 before [%s], after [%s]; nr_kdamonds %s\n", before, after, nr);
	CHECK(!strcmp(before, after) && !strcmp(nr, "2"),
	      "the admin's kdamond ran on throughout, as configured");

	/* 3: memmig's stops (its process gone); the admin starts their own
	 * in its place; memmig's close leaves that one alone. */
	damon_reset();
	d = NULL;
	r = tier_damon_open(a.pid, INTERVAL_MS, &d, why, sizeof(why));
	CHECK(!r, "open with no kdamond: %s", r ? why : "");
	if (!r) {
		child_stop(&a);
		CHECK(wait_state(0, "off", 10000), "memmig's kdamond stops once its process is gone");
		CHECK(!put("1", KDAMONDS "/nr_kdamonds") && !admin_config(0, adm) &&
		      !put("on", KDAMONDS "/0/state"), "the admin starts their own kdamond 0");
		admin_view(0, before, sizeof(before));
		tier_damon_close(d);
		admin_view(0, after, sizeof(after));
		get(nr, sizeof(nr), KDAMONDS "/nr_kdamonds");
		printf("admin's kdamond 0 started after memmig's stopped: before memmig's close"
		       " [%s], after [%s]; nr_kdamonds %s\n", before, after, nr);
		CHECK(!strncmp(before, "on ", 3) && !strcmp(before, after) && !strcmp(nr, "1"),
		      "memmig's close left the admin's kdamond on, as configured");
	}
	damon_reset();
	child_stop(&a);
	kill(adm, SIGKILL);
	waitpid(adm, NULL, 0);
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

	if (nr_before == 0 && on == 0)
		admins_kdamonds();
	else
		printf("kdamonds someone else set up before the test: the admin's cases skipped\n");

	printf("%s: %d failure(s)\n", fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}
