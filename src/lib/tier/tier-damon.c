/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The DAMON hotness source (tier-damon.h), on DAMON's sysfs interface
 * (/sys/kernel/mm/damon/admin, Documentation/admin-guide/mm/damon/usage.rst).
 *
 * One kdamond of memmig's, one context (vaddr), one target per tiered
 * process and one scheme per target: action "stat" (DAMON does nothing to
 * the memory), access pattern nr_accesses >= 1, and a "target" filter that
 * drops every region but its own target's.  Writing
 * "update_schemes_tried_regions" to the kdamond's state then fills each
 * scheme's tried_regions/ with the accessed regions of one process: the
 * directories do not say which target a region is of, the filters do.
 *
 * Why one kdamond for all, not one each: nr_kdamonds can change only while
 * no kdamond runs, and writing it recreates every kdamond's directory, so
 * a second process would stop and reconfigure the first one's kdamond and
 * lose what it had learned; and the kernel takes one sysfs command at a
 * time (a second one gets -EBUSY) and holds its lock until a tried-regions
 * update is done, so N kdamonds cost N aggregations a round.  Processes
 * come and go by rewriting targets and schemes and writing "commit", which
 * the running kdamond takes at its next aggregation.
 *
 * The kernel's limits this lives with: a command waits for the kdamond's
 * next aggregation (and the writer polls every 100 ms); while an update is
 * collected, every other DAMON sysfs write gets -EBUSY (retried here);
 * min/max nr_regions and the intervals are the context's, shared by all
 * its targets.
 *
 * Whose kdamond (issue 34): writing nr_kdamonds -- any number, the same
 * one too -- removes every kdamond's directory and makes new, empty ones
 * (mm/damon/sysfs.c, damon_sysfs_kdamonds_add_dirs(); -EBUSY while one
 * is on), which drops an admin's configuration.  So memmig takes a
 * kdamond no one configured (off, no context) where there is one; makes
 * nr_kdamonds 1 only where it is 0 (nothing to drop), and gives it back
 * as 0; and else refuses (-EBUSY, saying why: tiering goes on with
 * soft-dirty alone).  From then on it touches that kdamond only while it
 * is still memmig's: on, as the thread memmig started (its pid file); off,
 * with the one context and the targets memmig wrote.  One that someone
 * else stopped, restarted or reconfigured is theirs: memmig stops using
 * it (-EBUSY) and never stops or clears it.  Given back, memmig's kdamond
 * is off and has no context again.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/tier/tier-damon.h"

#define DAMON_ADMIN	"/sys/kernel/mm/damon/admin"
#define KDAMONDS	DAMON_ADMIN "/kdamonds"
#define CTX		KDAMONDS "/%d/contexts/0"
/*
 * DAMON checks each region's sampled page this many times an aggregation:
 * its own default ratio (5 ms / 100 ms), enough to tell a region touched
 * all the time from one touched once.
 */
#define SAMPLES_PER_AGGR	20
/*
 * The share of a unit DAMON must estimate accessed for it to count as
 * touched: half of it (see mark_units()).
 */
#define MIN_ACCESSED_SHIFT	1
#define EBUSY_WAIT_MS		3000	/* plus two aggregations */

/* An accessed region as DAMON's tried_regions/N/ says it. */
struct damon_range {
	uint64_t start, end;
	unsigned int nr_accesses;
};

struct tier_damon {
	int pid;
	int pidfd;		/* readable once the process has exited */
	unsigned int interval_ms;
	bool gone;		/* exited: no longer a target */
	uint64_t seen;		/* the collection its last mark() used */
	struct damon_range *acc;	/* the last collection's accessed regions */
	size_t nr_acc, cap_acc;
};

/*
 * The state all tier_damon share: open/close may run on memmigd's loop
 * while mark() runs on a tier thread.  Held across the sysfs writes too:
 * the kernel takes one DAMON command at a time anyway.
 */
static pthread_mutex_t damon_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tier_damon *targets[TIER_DAMON_MAX_TARGETS];	/* DAMON's order */
static unsigned int nr_targets;
static int kdamond = -1;	/* our kdamond's index; -1: none set up */
static bool grew;		/* we made nr_kdamonds 1 (from 0) for it */
static int kd_pid;		/* its thread while we run it; 0: not on */
static int written[TIER_DAMON_MAX_TARGETS];	/* the pid_targets as written */
static unsigned int nr_written;	/* nr_targets as written */
static uint64_t collections;	/* tried-regions updates so far */
static char failed[PATH_MAX];	/* the file of the last write that failed */
static tier_damon_owner_fn owner_fn;	/* hears of our kdamond */
static void *owner_opaque;
static unsigned long aggr_us, sample_us;	/* as last written */

#define PRINTF(f, a) __attribute__((format(printf, f, a)))

static void PRINTF(3, 4) say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static int PRINTF(3, 0) vpath(char *path, size_t len, const char *fmt, va_list ap)
{
	int n = vsnprintf(path, len, fmt, ap);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Writes val to a DAMON sysfs file.  -EBUSY is retried for a while: the
 * kernel answers it while it collects someone's tried regions or handles
 * another command.  EACCES (not root) is -EPERM.
 */
static int PRINTF(2, 3) damon_write(const char *val, const char *fmt, ...)
{
	char path[PATH_MAX];
	unsigned int waited = 0, limit = EBUSY_WAIT_MS + 2 * (unsigned int)(aggr_us / 1000);
	size_t len = strlen(val);
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = vpath(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (err)
		return err;
	for (;;) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		ssize_t n;

		if (fd < 0) {
			err = errno == EACCES ? -EPERM : -errno;
			snprintf(failed, sizeof(failed), "%s", path);
			return err;
		}
		n = write(fd, val, len);
		err = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
		close(fd);
		if (err == -EACCES)
			err = -EPERM;
		if (err != -EBUSY || waited >= limit) {
			if (err)
				snprintf(failed, sizeof(failed), "%s", path);
			return err;
		}
		sleep_ms(10);
		waited += 10;
	}
}

/*
 * Reads a DAMON sysfs file into buf, without its newline.  -EBUSY is
 * retried as for a write: some files (a kdamond's pid) answer it while
 * anyone else's DAMON command runs -- not a kdamond that changed hands.
 */
static int PRINTF(3, 0) damon_vread(char *buf, size_t len, const char *fmt, va_list ap)
{
	char path[PATH_MAX];
	unsigned int waited = 0, limit = EBUSY_WAIT_MS + 2 * (unsigned int)(aggr_us / 1000);
	ssize_t n;
	int fd, err;

	err = vpath(path, sizeof(path), fmt, ap);
	if (err)
		return err;
	for (;;) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return errno == EACCES ? -EPERM : -errno;
		n = read(fd, buf, len - 1);
		err = n < 0 ? -errno : 0;
		close(fd);
		if (err != -EBUSY || waited >= limit)
			break;
		sleep_ms(10);
		waited += 10;
	}
	if (err)
		return err == -EACCES ? -EPERM : err;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int PRINTF(3, 4) damon_read(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = damon_vread(buf, len, fmt, ap);
	va_end(ap);
	return err;
}

static int PRINTF(2, 3) damon_read_u64(uint64_t *v, const char *fmt, ...)
{
	char buf[32], *end;
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = damon_vread(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (err)
		return err;
	errno = 0;
	*v = strtoull(buf, &end, 0);
	return errno || end == buf ? -EIO : 0;
}

static bool pid_gone(const struct tier_damon *d)
{
	struct pollfd p = { .fd = d->pidfd, .events = POLLIN };

	return d->gone || poll(&p, 1, 0) > 0;
}

static bool index_on(int index)
{
	char state[16];

	return !damon_read(state, sizeof(state), KDAMONDS "/%d/state", index) &&
	       !strcmp(state, "on");
}

/* Whether thread pid is a kdamond (its name, "kdamond.N"). */
static bool thread_is_kdamond(int pid)
{
	char path[64], comm[32] = "";
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	return n > 8 && !strncmp(comm, "kdamond.", 8);
}

/* A kdamond no one configured: off, without a context. */
static bool index_free(int index)
{
	uint64_t nr = 1;

	return !index_on(index) &&
	       !damon_read_u64(&nr, KDAMONDS "/%d/contexts/nr_contexts", index) && nr == 0;
}

/*
 * Whether our kdamond is still ours: on, as the thread we started; off,
 * holding the context and targets we wrote (nothing someone else would
 * have left).  *on says which.
 */
static bool kdamond_ours(bool *on)
{
	char buf[32];
	uint64_t v;

	*on = false;
	if (kdamond < 0 || damon_read(buf, sizeof(buf), KDAMONDS "/%d/state", kdamond))
		return false;
	if (!strcmp(buf, "on")) {
		int err = kd_pid > 0 ? damon_read_u64(&v, KDAMONDS "/%d/pid", kdamond) : -ESRCH;

		*on = true;
		if (!err && v == (uint64_t)kd_pid)
			return true;
		/* The pid file answers -EBUSY while any DAMON command runs (an
		 * admin's too, for an aggregation of theirs): our thread still
		 * running says as much -- it runs until this kdamond is off. */
		if (err == -EBUSY && thread_is_kdamond(kd_pid))
			return true;
		if (index_on(kdamond))
			return false;	/* another thread: someone else's */
		*on = false;	/* it stopped meanwhile (its processes gone): as off */
	}
	if (damon_read_u64(&v, KDAMONDS "/%d/contexts/nr_contexts", kdamond) || v != 1 ||
	    damon_read(buf, sizeof(buf), CTX "/operations", kdamond) || strcmp(buf, "vaddr") ||
	    damon_read_u64(&v, CTX "/targets/nr_targets", kdamond) || v != nr_written)
		return false;
	for (unsigned int i = 0; i < nr_written; i++)
		if (damon_read_u64(&v, CTX "/targets/%u/pid_target", kdamond, i) ||
		    v != (uint64_t)written[i])
			return false;
	return true;
}

/* Says that our kdamond is someone else's now; -EBUSY. */
static int kdamond_lost(char *why, size_t len, bool on)
{
	char buf[32] = "";

	if (on && damon_read(buf, sizeof(buf), KDAMONDS "/%d/pid", kdamond))
		buf[0] = 0;
	if (on)
		say(why, len, "DAMON's kdamond %d is no longer memmig's: someone else started it "
		    "(pid %s); memmig leaves it alone", kdamond, buf);
	else
		say(why, len, "DAMON's kdamond %d is no longer memmig's: someone else stopped or "
		    "reconfigured it; memmig leaves it alone", kdamond);
	return -EBUSY;
}

/* Drops the targets whose process exited: DAMON cannot take their pids. */
static void drop_gone(void)
{
	unsigned int i, j = 0;

	for (i = 0; i < nr_targets; i++) {
		if (pid_gone(targets[i]))
			targets[i]->gone = true;
		else
			targets[j++] = targets[i];
	}
	nr_targets = j;
}

/*
 * Claims a kdamond for memmig: the first that no one configured, else a
 * first one where there is none (nr_kdamonds 0 -> 1); never a rewrite of
 * nr_kdamonds over someone else's (-EBUSY, saying whose).  Sets up its
 * context (vaddr).
 */
static int kdamond_claim(char *why, size_t len)
{
	char buf[32];
	uint64_t nr;
	int err, busy = -1;

	if (access(KDAMONDS, F_OK) < 0) {
		err = -errno;
		if (err == -ENOENT)
			say(why, len, "no %s (kernel without CONFIG_DAMON_SYSFS)", DAMON_ADMIN);
		else
			say(why, len, "%s: %s", KDAMONDS, strerror(-err));
		return err;
	}
	err = damon_read_u64(&nr, "%s", KDAMONDS "/nr_kdamonds");
	if (err) {
		say(why, len, "%s/nr_kdamonds: %s", KDAMONDS, strerror(-err));
		return err;
	}
	for (unsigned int i = 0; i < nr && i < 1024 && kdamond < 0; i++) {
		if (index_free((int)i))
			kdamond = (int)i;
		else if (busy < 0)
			busy = (int)i;
	}
	if (kdamond < 0 && nr) {
		bool on = index_on(busy);

		if (!on || damon_read(buf, sizeof(buf), KDAMONDS "/%d/pid", busy))
			buf[0] = 0;
		say(why, len, "DAMON's kdamonds are someone else's (kdamond %d %s%s): memmig "
		    "does not change nr_kdamonds, which would recreate them all without their "
		    "settings; a kdamond that is off and has no context (echo 0 > %s/N/"
		    "contexts/nr_contexts) is one memmig may use", busy,
		    on ? "is on, pid " : "has a context", buf, KDAMONDS);
		return -EBUSY;
	}
	if (kdamond < 0) {
		/* None at all: nothing that a new one could drop. */
		err = damon_write("1", KDAMONDS "/nr_kdamonds");
		if (err) {
			say(why, len, "%s/nr_kdamonds: %s%s", KDAMONDS, strerror(-err),
			    err == -EBUSY ? " (someone else is changing DAMON)" : "");
			return err;
		}
		grew = true;
		kdamond = 0;
	}
	kd_pid = 0;
	nr_written = 0;
	err = damon_write("1", KDAMONDS "/%d/contexts/nr_contexts", kdamond);
	if (!err)
		err = damon_read(buf, sizeof(buf), CTX "/avail_operations", kdamond);
	if (!err && !strstr(buf, "vaddr")) {
		say(why, len, "DAMON without virtual address operations (%s;"
		    " kernel without CONFIG_DAMON_VADDR)", buf);
		err = -ENOENT;
	}
	if (!err)
		err = damon_write("vaddr", CTX "/operations", kdamond);
	if (err) {
		if (err != -ENOENT)
			say(why, len, "setting up DAMON's context: %s: %s", failed, strerror(-err));
		/* Off, without a context: as found. */
		damon_write("0", KDAMONDS "/%d/contexts/nr_contexts", kdamond);
		if (grew && index_free(0))
			damon_write("0", KDAMONDS "/nr_kdamonds");
		grew = false;
		kdamond = -1;
	}
	return err;
}

/*
 * Gives the kdamond back -- while it is still ours: off, without a
 * context, and nr_kdamonds 0 again where we made it 1 and it still is.
 * One that is someone else's now is left as it is.
 */
static void kdamond_release(void)
{
	uint64_t nr;
	bool on;

	if (kdamond < 0)
		return;
	if (kdamond_ours(&on)) {
		if (on)
			damon_write("off", KDAMONDS "/%d/state", kdamond);
		if (!index_on(kdamond))
			damon_write("0", KDAMONDS "/%d/contexts/nr_contexts", kdamond);
		if (grew && !damon_read_u64(&nr, "%s", KDAMONDS "/nr_kdamonds") && nr == 1 &&
		    index_free(0))
			damon_write("0", KDAMONDS "/nr_kdamonds");
	}
	kdamond = -1;
	grew = false;
	kd_pid = 0;
	nr_written = 0;
	if (owner_fn)
		owner_fn(-1, 0, owner_opaque);
}

/* DAMON's lock held: our kdamond was just turned on; its thread's pid is
 * what marks it as ours (an admin's has its own). */
static void kdamond_started(void)
{
	uint64_t kpid = 0;

	kd_pid = !damon_read_u64(&kpid, KDAMONDS "/%d/pid", kdamond) && kpid > 0 &&
		 kpid <= INT_MAX ? (int)kpid : 0;
	if (owner_fn && kd_pid)
		owner_fn(kdamond, kd_pid, owner_opaque);
}

void tier_damon_set_owner_fn(tier_damon_owner_fn fn, void *opaque)
{
	pthread_mutex_lock(&damon_lock);
	owner_fn = fn;
	owner_opaque = opaque;
	pthread_mutex_unlock(&damon_lock);
}

int tier_damon_reclaim(int index, int kpid, char *why, size_t len)
{
	char state[16];
	uint64_t pid = 0;
	int err;

	pthread_mutex_lock(&damon_lock);
	err = damon_read(state, sizeof(state), KDAMONDS "/%d/state", index);
	if (!err && strcmp(state, "on"))
		err = -ESRCH;
	if (!err)
		err = damon_read_u64(&pid, KDAMONDS "/%d/pid", index);
	if (!err && pid != (uint64_t)kpid)
		err = -ESRCH;
	if (!err)
		err = damon_write("off", KDAMONDS "/%d/state", index);
	/* Off, and without the killed memmig's context: free for the next. */
	if (!err)
		damon_write("0", KDAMONDS "/%d/contexts/nr_contexts", index);
	if (err == -ENOENT)
		err = -ESRCH;	/* no such kdamond any more */
	if (err == -ESRCH)
		say(why, len, "kdamond %d is no longer memmig's (pid %d): left alone", index, kpid);
	else if (err)
		say(why, len, "stopping kdamond %d (pid %d): %s", index, kpid, strerror(-err));
	else
		say(why, len, "stopped kdamond %d (pid %d), left on by a memmig that was killed",
		    index, kpid);
	pthread_mutex_unlock(&damon_lock);
	return err;
}

/* One target's scheme: "stat" its accessed regions, only its own. */
static int write_scheme(unsigned int i)
{
	static const char *const files[][2] = {
		{ "action", "stat" },
		{ "access_pattern/sz/min", "0" },
		{ "access_pattern/sz/max", "18446744073709551615" },
		{ "access_pattern/nr_accesses/min", "1" },
		{ "access_pattern/nr_accesses/max", "4294967295" },
		{ "access_pattern/age/min", "0" },
		{ "access_pattern/age/max", "4294967295" },
		{ "filters/nr_filters", "1" },
		/* matching N: filters out what is not target i */
		{ "filters/0/type", "target" },
		{ "filters/0/matching", "N" },
	};
	char idx[16];
	int err = 0;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]) && !err; f++)
		err = damon_write(files[f][1], CTX "/schemes/%u/%s", kdamond, i, files[f][0]);
	snprintf(idx, sizeof(idx), "%u", i);
	return err ?: damon_write(idx, CTX "/schemes/%u/filters/0/damon_target_idx", kdamond, i);
}

/*
 * Writes the context for the targets there are and starts the kdamond, or
 * commits to the running one.  The aggregation is a quarter of the
 * shortest interval: mark() waits for the current one to end, and each
 * call reads the one aggregation that ended after it began.
 */
static int apply_targets(char *why, size_t len)
{
	unsigned int min_ms = UINT_MAX, i;
	unsigned long min_r, max_r;
	bool on;
	char buf[32];
	int err = 0;

	if (!kdamond_ours(&on))
		return kdamond_lost(why, len, on);
	if (!on)
		kd_pid = 0;

	for (i = 0; i < nr_targets; i++)
		if (targets[i]->interval_ms < min_ms)
			min_ms = targets[i]->interval_ms;
	aggr_us = (unsigned long)min_ms * 1000 / 4;
	aggr_us = aggr_us < 50000 ? 50000 : aggr_us > 10000000 ? 10000000 : aggr_us;
	sample_us = aggr_us / SAMPLES_PER_AGGR;
	min_r = (unsigned long)TIER_DAMON_MIN_REGIONS * nr_targets;
	max_r = (unsigned long)TIER_DAMON_MAX_REGIONS * nr_targets;

	/* Intervals and region counts, widest first (DAMON checks them when it takes them). */
	const struct { const char *file; unsigned long v; } attrs[] = {
		{ "monitoring_attrs/intervals/sample_us", sample_us },
		{ "monitoring_attrs/intervals/aggr_us", aggr_us },
		{ "monitoring_attrs/intervals/update_us", aggr_us },
		{ "monitoring_attrs/nr_regions/max", max_r },
		{ "monitoring_attrs/nr_regions/min", min_r },
	};
	for (size_t a = 0; a < sizeof(attrs) / sizeof(attrs[0]) && !err; a++) {
		snprintf(buf, sizeof(buf), "%lu", attrs[a].v);
		err = damon_write(buf, CTX "/%s", kdamond, attrs[a].file);
	}
	/* What is written is what kdamond_ours() looks for: writing
	 * nr_targets makes new target directories, pid_target 0. */
	snprintf(buf, sizeof(buf), "%u", nr_targets);
	if (!err)
		err = damon_write(buf, CTX "/targets/nr_targets", kdamond);
	if (!err) {
		memset(written, 0, sizeof(written));
		nr_written = nr_targets;
	}
	for (i = 0; i < nr_targets && !err; i++) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", targets[i]->pid);
		err = damon_write(pid, CTX "/targets/%u/pid_target", kdamond, i);
		if (!err)
			written[i] = targets[i]->pid;
	}
	if (!err)
		err = damon_write(buf, CTX "/schemes/nr_schemes", kdamond);
	for (i = 0; i < nr_targets && !err; i++)
		err = write_scheme(i);
	if (err) {
		say(why, len, "writing DAMON's context: %s: %s", failed, strerror(-err));
		/* A file missing past the admin directory: an older DAMON. */
		return err == -ENOENT ? -EOPNOTSUPP : err;
	}
	err = damon_write(on ? "commit" : "on", KDAMONDS "/%d/state", kdamond);
	if (err)
		say(why, len, "%s DAMON (kdamond %d): %s", on ? "committing to" : "starting",
		    kdamond, strerror(-err));
	else if (!on)
		kdamond_started();

	/*
	 * What was collected before no longer lines up with the targets:
	 * each one's next mark() collects afresh.
	 */
	for (i = 0; i < nr_targets; i++) {
		targets[i]->nr_acc = 0;
		targets[i]->seen = collections;
	}
	return err;
}

/*
 * Reads target i's accessed regions from its scheme's tried_regions/.  The
 * kernel numbers the region directories across all schemes (scheme 1's
 * may begin at 4), so they are listed, not counted from 0.
 */
static int read_regions(unsigned int i)
{
	struct tier_damon *d = targets[i];
	size_t bound = (size_t)TIER_DAMON_MAX_REGIONS * nr_targets, seen = 0;
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *dp;
	int err = 0;

	d->nr_acc = 0;
	snprintf(dir, sizeof(dir), CTX "/schemes/%u/tried_regions", kdamond, i);
	dp = opendir(dir);
	if (!dp)
		return -errno;
	while (!err && (e = readdir(dp)) && seen++ < bound + 3) {
		struct damon_range r;
		uint64_t nr;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;	/* ., .., total_bytes */
		err = damon_read_u64(&r.start, "%s/%s/start", dir, e->d_name);
		if (!err)
			err = damon_read_u64(&r.end, "%s/%s/end", dir, e->d_name);
		if (!err)
			err = damon_read_u64(&nr, "%s/%s/nr_accesses", dir, e->d_name);
		/* The scheme matched on a moving average; the count is what ended. */
		if (err || !nr || r.end <= r.start)
			continue;
		r.nr_accesses = nr > UINT_MAX ? UINT_MAX : (unsigned int)nr;
		if (d->nr_acc == d->cap_acc) {
			size_t cap = d->cap_acc ? 2 * d->cap_acc : 64;
			struct damon_range *p = realloc(d->acc, cap * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				break;
			}
			d->acc = p;
			d->cap_acc = cap;
		}
		d->acc[d->nr_acc++] = r;
	}
	closedir(dp);
	return err;
}

static int range_cmp(const void *a, const void *b)
{
	const struct damon_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* One tried-regions update of the kdamond: every target's last aggregation. */
static int collect(void)
{
	bool on;
	int err;

	if (!kdamond_ours(&on))
		return kdamond_lost(NULL, 0, on);
	if (!on) {
		/* It stops by itself when all its processes are gone. */
		drop_gone();
		if (!nr_targets)
			return -ESRCH;
		err = apply_targets(NULL, 0);
		if (err)
			return err;
	}
	err = damon_write("update_schemes_tried_regions", KDAMONDS "/%d/state", kdamond);
	for (unsigned int i = 0; i < nr_targets && !err; i++) {
		err = read_regions(i);
		qsort(targets[i]->acc, targets[i]->nr_acc, sizeof(struct damon_range), range_cmp);
	}
	collections++;
	return err;
}

/*
 * A unit is touched when DAMON's estimate of its accessed bytes in the
 * aggregation -- each overlapping region's overlap times its nr_accesses
 * over the samples an aggregation takes -- is at least half of it.
 *
 * Why not "any overlap with a region with nr_accesses > 0": DAMON's
 * regions are its own, wider than units where little happens (up to
 * 1/min_nr_regions of the space), with random boundaries; a region's
 * nr_accesses counts the samples that found its one sampled page
 * accessed, so a large mostly idle region that one sample found touched
 * (nr_accesses 1 of 20) would mark every unit it covers, and a region
 * straddling the end of a hot run would mark the idle unit next to it.
 * Weighted, those stay below the bar while a unit that is accessed
 * through the aggregation (nr_accesses near the maximum) clears it at
 * once.  Half, not less: a region straddling the end of a hot run has
 * nr_accesses near its hot share of the samples, and all of them weigh on
 * its overlap with the idle unit beside it; at 1/16, an overlap of an
 * eighth of that unit with a half-hot region marked it.  A KVM guest's
 * idle unit next to its hot set was marked so two intervals running,
 * promoted, and sent back (6.12 tier, two bounces in 52 moves).  At half,
 * the region must lie over most of the idle unit.  nr_accesses > 0 is still "accessed in the last aggregation": the
 * count is reset at each one, and the scheme reports the aggregation that
 * ended after the call began.
 */
static int mark_units(const struct tier_damon *d, struct tier_unit *u, size_t n)
{
	uint64_t max_nr = aggr_us / (sample_us ? sample_us : 1);
	size_t j = 0;
	int marked = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t s = u[i].addr, e = s + u[i].len, w = 0;

		while (j < d->nr_acc && d->acc[j].end <= s)
			j++;
		for (size_t k = j; k < d->nr_acc && d->acc[k].start < e; k++) {
			uint64_t lo = d->acc[k].start > s ? d->acc[k].start : s;
			uint64_t hi = d->acc[k].end < e ? d->acc[k].end : e;
			uint64_t nr = d->acc[k].nr_accesses < max_nr ? d->acc[k].nr_accesses : max_nr;

			w += (hi - lo) * nr;
		}
		if (u[i].len && w << MIN_ACCESSED_SHIFT >= (uint64_t)u[i].len * max_nr) {
			u[i].damon_hist |= 1;
			u[i].src |= TIER_SRC_DAMON;
			marked++;
		}
	}
	return marked;
}

int tier_damon_open(int pid, unsigned int interval_ms, struct tier_damon **out,
		    char *why, size_t len)
{
	struct tier_damon *d;
	int err;

	*out = NULL;
	if (pid <= 0 || !interval_ms) {
		say(why, len, "pid %d, interval %u ms: invalid", pid, interval_ms);
		return -EINVAL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->pid = pid;
	d->interval_ms = interval_ms;
	d->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (d->pidfd < 0) {
		err = -errno;
		say(why, len, "process %d: %s", pid, strerror(-err));
		free(d);
		return err;
	}
	pthread_mutex_lock(&damon_lock);
	err = kdamond < 0 ? kdamond_claim(why, len) : 0;
	if (!err && nr_targets == TIER_DAMON_MAX_TARGETS) {
		say(why, len, "DAMON already watches %u processes for memmig", nr_targets);
		err = -EBUSY;
	}
	if (!err) {
		drop_gone();
		targets[nr_targets++] = d;
		err = apply_targets(why, len);
		if (err) {
			if (pid_gone(d)) {
				err = -ESRCH;
				say(why, len, "process %d exited", pid);
			}
			nr_targets--;
			if (!nr_targets)
				kdamond_release();
			else
				apply_targets(NULL, 0);
		}
	}
	pthread_mutex_unlock(&damon_lock);
	if (err) {
		close(d->pidfd);
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

int tier_damon_mark(struct tier_damon *d, struct tier_unit *units, size_t n)
{
	int ret = 0;

	pthread_mutex_lock(&damon_lock);
	if (pid_gone(d)) {
		ret = -ESRCH;
	} else if (d->seen == collections) {
		/* Nothing collected since this process's last call. */
		ret = collect();
		if (ret && pid_gone(d))
			ret = -ESRCH;
	}
	if (!ret) {
		d->seen = collections;
		ret = mark_units(d, units, n);
	}
	/* DAMON took the pid by its number when its targets were last set:
	 * what it collected was this process's only if it still has not
	 * exited (its pid is not free while it has not). */
	if (ret >= 0 && pid_gone(d))
		ret = -ESRCH;
	pthread_mutex_unlock(&damon_lock);
	return ret;
}

void tier_damon_close(struct tier_damon *d)
{
	unsigned int i, j = 0;

	if (!d)
		return;
	pthread_mutex_lock(&damon_lock);
	for (i = 0; i < nr_targets; i++)
		if (targets[i] != d)
			targets[j++] = targets[i];
	if (j != nr_targets) {
		nr_targets = j;
		drop_gone();
		if (nr_targets)
			apply_targets(NULL, 0);
	}
	if (!nr_targets)
		kdamond_release();
	pthread_mutex_unlock(&damon_lock);
	close(d->pidfd);
	free(d->acc);
	free(d);
}
