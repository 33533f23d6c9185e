/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * guest-dax's migrations, in the multi-node guest: an anonymous region of
 * this process goes to a DAX file (MAP_SYNC), back to node 0's DRAM, to
 * DAX again at an offset, then to node 2's DRAM; a tmpfs file takes the
 * MAP_SYNC fallback.  After each step: every byte (checksum), where the
 * pages are (move_pages for DRAM, the region's backing for DAX), the
 * report, what the library logged; at the end the DAX file is read again
 * with pread, with nothing of it mapped any more.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <memmig.h>

#include "guest-check.h"
#include "guest-dax-migrate.h"

#define LEN (32UL << 20)
#define PAGE 4096UL

static char logbuf[16384];	/* what the library said in this step */

__attribute__((format(printf, 7, 0))) static void
log_keep(struct memmig_ctx *c, void *data, int prio, const char *file, int line,
	 const char *fn, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n = strlen(logbuf);

	(void)c; (void)data; (void)prio; (void)file; (void)line; (void)fn;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	printf("  lib: %s%s", msg, msg[0] && msg[strlen(msg) - 1] == '\n' ? "" : "\n");
	snprintf(logbuf + n, sizeof(logbuf) - n, "%s", msg);
}

static uint64_t word(uint64_t seed, size_t i)
{
	uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	return z ^ (z >> 31);
}

/* Pages of [p, p + len) on node, by the kernel's move_pages query. */
static size_t pages_on(void *p, size_t len, int node)
{
	size_t n = len / PAGE, on = 0;
	void **pages = calloc(n, sizeof(*pages));
	int *st = calloc(n, sizeof(*st));

	for (size_t i = 0; pages && st && i < n; i++)
		pages[i] = (uint8_t *)p + i * PAGE;
	if (pages && st && !syscall(SYS_move_pages, 0, n, pages, NULL, st, 0))
		for (size_t i = 0; i < n; i++)
			on += st[i] == node;
	free(pages);
	free(st);
	return on;
}

static int backing_of(struct memmig_ctx *ctx, void *p, size_t len)
{
	struct memmig_region_desc d = { .sz = sizeof(d), .addr = (uintptr_t)p, .len = len };
	struct memmig_region *r;
	int rc = memmig_region_new(ctx, &d, &r);

	if (rc)
		return rc;
	memmig_region_get_desc(r, &d);
	memmig_region_unref(r);
	return d.backing;
}

/* One migration of [p, p + len): to node, or to path when it is set. */
static int step(struct memmig_ctx *ctx, const char *what, void *p, size_t len,
		int node, const char *path, uint64_t offset)
{
	struct memmig_region_desc d = { .sz = sizeof(d), .addr = (uintptr_t)p, .len = len };
	struct memmig_migrate_opts o = {
		.sz = sizeof(o), .target_node = path ? -1 : node,
		.target_path = path, .target_offset = offset,
	};
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r;
	uint64_t before = guest_csum(p, len), after;
	int rc;

	logbuf[0] = '\0';
	printf("== %s\n", what);
	printf("region backing before: %d\n", backing_of(ctx, p, len));
	rc = memmig_region_new(ctx, &d, &r);
	CHECK(rc == 0, "%s: region: %s", what, strerror(-rc));
	if (rc)
		return rc;
	rc = memmig_migrate(r, &o, &rep);
	memmig_region_unref(r);
	CHECK(rc == 0, "%s: memmig_migrate: %d (%s)", what, rc, strerror(-rc));
	if (rep) {
		memmig_report_get_summary(rep, &s);
		printf("report: result %d, moved %llu of %llu bytes, failed pages %llu, "
		       "verified on the target %llu of %zu, %.3f s\n", s.result,
		       (unsigned long long)s.bytes_moved, (unsigned long long)s.bytes_total,
		       (unsigned long long)s.pages_failed,
		       (unsigned long long)s.pages_verified_on_target, len / PAGE, s.total_s);
		CHECK(s.bytes_moved == len, "%s: bytes moved %llu", what,
		      (unsigned long long)s.bytes_moved);
		CHECK(s.pages_failed == 0, "%s: %llu pages failed", what,
		      (unsigned long long)s.pages_failed);
		CHECK(s.pages_verified_on_target == len / PAGE, "%s: %llu pages verified",
		      what, (unsigned long long)s.pages_verified_on_target);
		memmig_report_unref(rep);
	}
	after = guest_csum(p, len);
	printf("checksum before %016llx after %016llx: %s\n", (unsigned long long)before,
	       (unsigned long long)after, before == after ? "same" : "DIFFERENT");
	CHECK(before == after, "%s: the bytes changed", what);
	return rc;
}

/*
 * The checksum of [offset, offset + len) of a file read with pread, or of
 * device DAX (which has no read(2)) through a new mapping of its own.
 */
static uint64_t file_csum(const char *path, uint64_t offset, size_t len)
{
	uint8_t *buf = malloc(len);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t h = 0;
	void *m;

	if (buf && fd >= 0 && pread(fd, buf, len, (off_t)offset) == (ssize_t)len) {
		h = guest_csum(buf, len);
	} else if (fd >= 0) {
		m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)offset);
		if (m != MAP_FAILED) {
			h = guest_csum(m, len);
			munmap(m, len);
		}
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return h;
}

/* An anonymous 2 MB-aligned region of len bytes with THP, filled, on a
 * CPU's node. */
static uint8_t *region_new(uint64_t seed, size_t len)
{
	uint8_t *al = guest_map_2m(len);

	if (al == MAP_FAILED)
		return NULL;
	madvise(al, len, MADV_HUGEPAGE);
	for (size_t i = 0; i < len / 8; i++)
		((uint64_t *)al)[i] = word(seed, i);
	return al;
}

static struct memmig_ctx *ctx_new(void)
{
	struct memmig_ctx *ctx;

	if (memmig_ctx_new(&ctx))
		return NULL;
	memmig_ctx_set_log_fn(ctx, log_keep, NULL);
	memmig_ctx_set_log_priority(ctx, LOG_INFO);
	return ctx;
}

/* A DAX target: mapped with MAP_SYNC (fsdax) or as device DAX; the region
 * now is DAX. */
static void check_on_dax(struct memmig_ctx *ctx, const char *what, void *p, size_t len,
			 const char *said)
{
	int b = backing_of(ctx, p, len);

	CHECK(strstr(logbuf, said), "%s: the library did not say \"%s\"", what, said);
	CHECK(!strstr(logbuf, "not on a DAX"), "%s: fell back to msync on DAX", what);
	printf("region backing after: %d (%s)\n", b, b == MEMMIG_BACKING_DAX ? "dax" : "?");
	CHECK(b == MEMMIG_BACKING_DAX, "%s: backing %d after, not DAX", what, b);
}

static void check_on_node(struct memmig_ctx *ctx, const char *what, void *p, size_t len,
			  int node)
{
	size_t on = pages_on(p, len, node);
	int b = backing_of(ctx, p, len);

	printf("pages on node %d: %zu of %lu; backing %d\n", node, on, len / PAGE, b);
	CHECK(on == len / PAGE, "%s: %zu pages on node %d", what, on, node);
	CHECK(b == MEMMIG_BACKING_ANON, "%s: backing %d after, not anonymous", what, b);
}

/* The round trip of len bytes through target, a DAX file or device DAX. */
static void round_trip(struct memmig_ctx *ctx, const char *target, const char *said,
		       uint64_t off2, size_t len)
{
	uint64_t seed = 0x6d656d6d69672d31ULL, sum;
	uint8_t *p = region_new(seed, len);
	char what[160];

	CHECK(p != NULL, "mmap: %s", strerror(errno));
	if (!p)
		return;
	sum = guest_csum(p, len);
	printf("region %p +%lu MiB, pages on node 0: %zu, node 1: %zu\n", (void *)p,
	       len >> 20, pages_on(p, len, 0), pages_on(p, len, 1));

	snprintf(what, sizeof(what), "DRAM -> %s", target);
	if (!step(ctx, what, p, len, -1, target, 0)) {
		check_on_dax(ctx, what, p, len, said);
		CHECK(file_csum(target, 0, len) == sum, "%s: pread of the target differs", what);
	}
	if (!step(ctx, "DAX -> node 0 DRAM", p, len, 0, NULL, 0))
		check_on_node(ctx, "DAX -> node 0", p, len, 0);
	snprintf(what, sizeof(what), "DRAM -> %s at offset %#llx", target,
		 (unsigned long long)off2);
	if (!step(ctx, what, p, len, -1, target, off2))
		check_on_dax(ctx, what, p, len, said);
	if (!step(ctx, "DAX -> node 2 DRAM", p, len, 2, NULL, 0))
		check_on_node(ctx, "DAX -> node 2", p, len, 2);
	CHECK(guest_csum(p, len) == sum, "the region's bytes at the end");
	munmap(p, len);

	/* Durable: nothing of the target is mapped any more. */
	CHECK(file_csum(target, 0, len) == sum, "pread of %s at 0 after munmap", target);
	CHECK(file_csum(target, off2, len) == sum, "pread of %s at %#llx after munmap",
	      target, (unsigned long long)off2);
	printf("%s: both copies read back after munmap (pread, or a new mapping "
	       "of device DAX): %s\n", target,
	       file_csum(target, 0, len) == sum && file_csum(target, off2, len) == sum ?
	       "intact" : "DIFFERENT");
}

#define BAD_LEN (8UL << 20)
#define GOOD_LEN ((6UL << 20) + 3 * PAGE)	/* the file's new end */

bool dax_poison_markers(struct memmig_ctx *ctx)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool yes = p != MAP_FAILED && memmig_poison_mark(ctx, p, PAGE) == 0;

	if (p != MAP_FAILED)
		munmap(p, PAGE);
	return yes;
}

/*
 * A DAX source with pages that cannot be read: a MAP_SYNC mapping of an
 * 8 MiB file cut to 6 MiB + 12 KiB, so that its last 509 pages raise
 * SIGBUS (BUS_ADRERR) as lost media would, moved to node 2.  They must be
 * reported (EFAULT, one failed range), must still fault afterwards (no
 * zero page in their place), and everything else must be on node 2 with
 * its bytes.  Where the kernel has poison markers (UFFDIO_POISON, 6.6)
 * the cut pages' copies are markers, which fault as memory errors
 * (BUS_MCEERR_AR); without, the cut pages stay mapped from the file, as
 * they were (BUS_ADRERR).
 */
static void bad_pages(struct memmig_ctx *ctx, const char *dir)
{
	struct sigaction sa = { .sa_sigaction = guest_on_sigbus, .sa_flags = SA_SIGINFO }, old;
	struct memmig_region_desc d = { .sz = sizeof(d), .len = BAD_LEN };
	struct memmig_migrate_opts o = { .sz = sizeof(o), .target_node = 2 };
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_region *r;
	uint64_t *w, sum, addr, len;
	char path[256];
	int fd, rc, err, want;

	printf("== DAX with unreadable pages -> node 2 DRAM\n");
	snprintf(path, sizeof(path), "%s/bad-pages.data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && !ftruncate(fd, BAD_LEN) && !posix_fallocate(fd, 0, BAD_LEN),
	      "%s: %s", path, strerror(errno));
	w = mmap(NULL, BAD_LEN, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC,
		 fd, 0);
	CHECK(w != MAP_FAILED, "MAP_SYNC: %s", strerror(errno));
	if (fd < 0 || w == MAP_FAILED)
		return;
	for (size_t i = 0; i < BAD_LEN / 8; i++)
		w[i] = word(0x626164, i);
	sum = guest_csum(w, GOOD_LEN);
	CHECK(ftruncate(fd, GOOD_LEN) == 0, "ftruncate: %s", strerror(errno));
	sigaction(SIGBUS, &sa, &old);
	rc = guest_probe((uint8_t *)w + GOOD_LEN);
	printf("reading past the new end: si_code %d (BUS_ADRERR %d)\n", rc, BUS_ADRERR);
	CHECK(rc == BUS_ADRERR, "reading past the end: si_code %d", rc);

	d.addr = (uintptr_t)w;
	rc = memmig_region_new(ctx, &d, &r);
	CHECK(rc == 0, "region: %s", strerror(-rc));
	if (!rc) {
		rc = memmig_migrate(r, &o, &rep);
		memmig_region_unref(r);
	}
	printf("memmig_migrate: %d\n", rc);
	CHECK(rc == 0, "memmig_migrate: %d (%s)", rc, strerror(-rc));
	if (rep) {
		memmig_report_get_summary(rep, &s);
		printf("report: moved %llu bytes, failed pages %llu, EFAULT pages %llu\n",
		       (unsigned long long)s.bytes_moved, (unsigned long long)s.pages_failed,
		       (unsigned long long)memmig_report_errno_pages(rep, EFAULT));
		CHECK(s.bytes_moved == GOOD_LEN, "bytes moved %llu",
		      (unsigned long long)s.bytes_moved);
		CHECK(s.pages_failed == (BAD_LEN - GOOD_LEN) / PAGE, "pages failed %llu",
		      (unsigned long long)s.pages_failed);
		CHECK(memmig_report_failed_count(rep) == 1, "%d failed ranges",
		      memmig_report_failed_count(rep));
		if (!memmig_report_get_failed(rep, 0, &addr, &len, &err)) {
			printf("failed range %#llx +%llu: %s\n", (unsigned long long)addr,
			       (unsigned long long)len, strerror(err));
			CHECK(addr == (uintptr_t)w + GOOD_LEN && len == BAD_LEN - GOOD_LEN &&
			      err == EFAULT, "the failed range is not the cut pages");
		}
		memmig_report_unref(rep);
	}
	printf("pages on node 2: %zu of %lu\n", pages_on(w, GOOD_LEN, 2), GOOD_LEN / PAGE);
	CHECK(pages_on(w, GOOD_LEN, 2) == GOOD_LEN / PAGE, "not all good pages on node 2");
	CHECK(guest_csum(w, GOOD_LEN) == sum, "the good pages' bytes changed");
	want = dax_poison_markers(ctx) ? BUS_MCEERR_AR : BUS_ADRERR;
	rc = guest_probe((uint8_t *)w + GOOD_LEN);
	printf("a cut page after: si_code %d (want %d: %s)\n", rc, want,
	       want == BUS_ADRERR ? "left as it was" : "a poison marker");
	CHECK(rc == want, "a cut page after the migration: si_code %d, not %d", rc, want);
	CHECK(guest_probe((uint8_t *)w + BAD_LEN - 1) == want, "the last page reads");
	sigaction(SIGBUS, &old, NULL);
	munmap(w, BAD_LEN);
	close(fd);
	unlink(path);
}

/*
 * Another process's DAX: only the process that maps it can move it (no
 * pages for move_pages): registered as DAX, refused with EINVAL, and left
 * out of memmig_region_list_pid() (which memmig-cli move uses).
 */
static void other_process(struct memmig_ctx *ctx, const char *dir)
{
	struct memmig_migrate_opts o = { .sz = sizeof(o), .target_node = 2 };
	struct memmig_region_desc d = { .sz = sizeof(d), .len = 4UL << 20 };
	struct memmig_region **list, *r;
	unsigned int n, listed = 0;
	char path[256];
	pid_t child;
	void *m;
	int fd, rc;

	printf("== another process's DAX\n");
	snprintf(path, sizeof(path), "%s/other.data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || posix_fallocate(fd, 0, d.len)) {
		CHECK(0, "%s: %s", path, strerror(errno));
		return;
	}
	m = mmap(NULL, d.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
	if (m == MAP_FAILED)
		return;
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	d.pid = child;
	d.addr = (uintptr_t)m;
	rc = memmig_region_new(ctx, &d, &r);
	CHECK(rc == 0, "region of pid %d: %s", child, strerror(-rc));
	if (!rc) {
		memmig_region_get_desc(r, &d);
		CHECK(d.backing == MEMMIG_BACKING_DAX, "pid %d's mapping: backing %d",
		      child, d.backing);
		rc = memmig_migrate(r, &o, NULL);
		printf("pid %d's DAX mapping (backing %d) to node 2: %d (%s)\n", child,
		       d.backing, rc, strerror(-rc));
		CHECK(rc == -EINVAL, "another process's DAX migrated: %d", rc);
		memmig_region_unref(r);
	}
	rc = memmig_region_list_pid(ctx, child, &list, &n);
	CHECK(rc == 0, "region list of pid %d: %s", child, strerror(-rc));
	for (unsigned int i = 0; !rc && i < n; i++) {
		memmig_region_get_desc(list[i], &d);
		listed += d.addr == (uintptr_t)m;
	}
	if (!rc) {
		printf("pid %d: %u regions listed, the DAX mapping %s\n", child, n,
		       listed ? "among them" : "left out");
		memmig_region_list_free(list, n);
	}
	CHECK(!listed, "another process's DAX mapping is listed as migratable");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	munmap(m, 4UL << 20);
	close(fd);
	unlink(path);
}

int dax_migrate_fsdax(const char *dir)
{
	struct memmig_ctx *ctx = ctx_new();
	char path[256];
	uint64_t sum;
	uint8_t *p;

	fails = 0;
	if (!ctx)
		return 1;
	bad_pages(ctx, dir);
	fails += dax_table_case(ctx, dir);
	fails += dax_live_cases(ctx, dir, dir);
	other_process(ctx, dir);
	snprintf(path, sizeof(path), "%s/dram-to-dax.data", dir);
	/* Not 2 MB congruent with the first copy: 4 KiB faults on DAX. */
	round_trip(ctx, path, "MAP_SYNC (DAX)", LEN + PAGE, LEN);
	unlink(path);

	/* tmpfs: MAP_SYNC fails; memmig says so and uses msync. */
	snprintf(path, sizeof(path), "/tmp/dram-to-tmpfs.data");
	p = region_new(0x746d7066732d3031ULL, LEN);
	CHECK(p != NULL, "mmap");
	if (p) {
		sum = guest_csum(p, LEN);
		if (!step(ctx, "DRAM -> tmpfs file (not DAX)", p, LEN, -1, path, 0)) {
			CHECK(strstr(logbuf, "not on a DAX file system") &&
			      strstr(logbuf, "msync"),
			      "tmpfs: the library did not say it fell back to msync");
			CHECK(backing_of(ctx, p, LEN) == MEMMIG_BACKING_SHMEM,
			      "tmpfs: backing %d", backing_of(ctx, p, LEN));
		}
		munmap(p, LEN);
		CHECK(file_csum(path, 0, LEN) == sum, "tmpfs: pread after munmap differs");
		printf("tmpfs file read back with pread after munmap: %s\n",
		       file_csum(path, 0, LEN) == sum ? "intact" : "DIFFERENT");
		unlink(path);
	}
	memmig_ctx_unref(ctx);
	return fails;
}

int dax_migrate_devdax(const char *dev, size_t len, bool live)
{
	struct memmig_ctx *ctx = ctx_new();

	fails = 0;
	if (!ctx)
		return 1;
	round_trip(ctx, dev, "device DAX", 64UL << 20, len);
	if (live)
		fails += dax_live_cases(ctx, dev, NULL);
	memmig_ctx_unref(ctx);
	return fails;
}
