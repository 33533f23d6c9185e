/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Migrations to a target path (memmig_migrate_opts.target_path), on this
 * machine, whose files are not DAX: the options are checked before
 * anything is touched; MAP_SYNC fails on tmpfs and ext4 without -o dax,
 * memmig says so and makes the copy durable with msync; DRAM moves into a
 * regular file by the same path as into DAX (copy, persist, mremap swap),
 * every byte checked in the mapping and again in the file after munmap.
 * The DAX file systems and device DAX themselves are tested in the
 * multi-node guest (tests/vm/guest-dax.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "migrate-util.h"

static char dir[64];		/* a scratch directory in /var/tmp */
static struct mem victim;	/* refused migrations must leave it intact */
static uint64_t victim_sum;

static int dax_init(void)
{
	if (mt_suite_init())
		return 1;
	snprintf(dir, sizeof(dir), "/var/tmp/memmig-test-dax.XXXXXX");
	if (!mkdtemp(dir) || mt_mem_new(&victim, K_THP, 8 * MiB, true))
		return 1;
	victim_sum = mt_csum(victim.map, victim.len);
	return 0;
}

static int dax_cleanup(void)
{
	char cmd[96];

	mt_mem_free(&victim);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "%s: not removed\n", dir);
	return mt_suite_cleanup();
}

static struct memmig_migrate_opts file_opts(const char *path, uint64_t offset)
{
	struct memmig_migrate_opts o = mt_opts_of(MEMMIG_STRATEGY_AUTO, 0, 0);

	o.target_node = -1;
	o.target_path = path;
	o.target_offset = offset;
	return o;
}

static int migrate_mem(struct mem *m, struct memmig_migrate_opts *o,
		       struct memmig_report **rep)
{
	struct memmig_region *r;
	int rc = mt_region_of(ctx, 0, m->map, m->len, MEMMIG_BACKING_AUTO, &r);

	if (rc)
		return rc;
	rc = memmig_migrate(r, o, rep);
	memmig_region_unref(r);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Refused before anything is touched.                                  */

static void expect_refused(const char *what, struct memmig_migrate_opts o, int want,
			   const char *must_not_exist)
{
	struct memmig_report *rep = NULL;
	int rc = migrate_mem(&victim, &o, &rep);

	if (rc != want)
		CUNIT_FAILF("%s: %d, want %d (%s)", what, rc, want, last_log);
	else
		CU_PASS(what);
	if (rep)
		CUNIT_FAILF("%s: a report for a refused migration", what);
	memmig_report_unref(rep);
	mt_mem_intact(&victim, victim_sum, what);
	if (must_not_exist && !access(must_not_exist, F_OK))
		CUNIT_FAILF("%s: %s was created", what, must_not_exist);
}

static void test_refused(void)
{
	char file[128], missing[128];
	struct memmig_migrate_opts o;
	struct mem shm;

	snprintf(file, sizeof(file), "%s/refused", dir);
	snprintf(missing, sizeof(missing), "%s/no-such-dir/file", dir);

	o = file_opts(file, 0);
	o.target_node = 0;
	expect_refused("a target path and a node", o, -EINVAL, file);
	o = file_opts(file, 0);
	o.strategy = MEMMIG_STRATEGY_KERNEL;
	expect_refused("a target path with the kernel strategy", o, -EINVAL, file);
	expect_refused("unaligned target offset", file_opts(file, 100), -EINVAL, file);
	expect_refused("empty path", file_opts("", 0), -EINVAL, NULL);
	expect_refused("missing directory", file_opts(missing, 0), -ENOENT, NULL);
	expect_refused("a character device that is not DAX", file_opts("/dev/null", 0),
		       -ENODEV, NULL);
	expect_refused("a FIFO-less special file", file_opts("/dev/zero", 0), -ENODEV, NULL);

	/* Shared memory belongs to its file: it does not move to another. */
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&shm, K_MEMFD, 4 * MiB, true), 0);
	{
		struct memmig_migrate_opts so = file_opts(file, 0);
		struct memmig_report *rep = NULL;

		CU_ASSERT_EQUAL(migrate_mem(&shm, &so, &rep), -EINVAL);
		CU_ASSERT_PTR_NULL(rep);
		CU_ASSERT_NOT_EQUAL(access(file, F_OK), 0);
	}
	mt_mem_free(&shm);

	/* A mapping that is not DAX registered as DAX. */
	{
		struct memmig_region *r = NULL;

		CU_ASSERT_EQUAL(mt_region_of(ctx, 0, victim.map, victim.len,
					     MEMMIG_BACKING_DAX, &r), -EINVAL);
		CU_ASSERT_PTR_NULL(r);
	}
}

/* ------------------------------------------------------------------ */
/* DRAM to a file: the same path as DAX, msync for durability.          */

/* The file's bytes [off, off + len) against the fill of seed. */
static void file_holds(int fd, uint64_t off, uint64_t len, uint64_t seed,
		       const char *what)
{
	uint8_t *buf = malloc(len);
	int64_t bad;

	if (!buf || pread(fd, buf, len, (off_t)off) != (ssize_t)len) {
		CUNIT_FAILF("%s: pread of the target: %s", what, strerror(errno));
		free(buf);
		return;
	}
	bad = mt_first_bad(buf, len, seed, 0);
	if (bad >= 0)
		CUNIT_FAILF("%s: the file differs at offset %" PRId64, what, bad);
	else
		CU_PASS(what);
	free(buf);
}

/* Does /proc/self/maps show addr mapping a file whose name has name? */
static bool maps_file(const void *addr, const char *name)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");
	uintptr_t a = (uintptr_t)addr;

	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s <= a && a < e)
			found = strstr(line, name) != NULL;
	}
	if (f)
		fclose(f);
	return found;
}

struct tcase {
	const char *name;
	int kind;		/* K_THP, K_4K */
	uint64_t len;		/* of the region */
	uint64_t offset;	/* in the target */
	bool directory;		/* an unnamed file in dir */
	bool shm;		/* on /dev/shm (tmpfs) */
	unsigned int workers;
};

static void run_file_case(const struct tcase *c)
{
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_migrate_opts o;
	char path[128], cut[128] = "";
	unsigned int mark;
	struct mem m;
	uint64_t sum;
	int fd, rc;

	if (c->directory)
		snprintf(path, sizeof(path), "%s", c->shm ? "/dev/shm" : dir);
	else if (c->shm)
		snprintf(path, sizeof(path), "/dev/shm/memmig-test-dax.%d", getpid());
	else
		snprintf(path, sizeof(path), "%s/%s", dir, c->name);
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, c->kind, c->len, true), 0);
	sum = mt_csum(m.map, m.len);
	o = file_opts(path, c->offset);
	o.workers = c->workers;
	memmig_ctx_set_log_priority(ctx, LOG_WARNING);
	mark = mt_log_mark();
	rc = migrate_mem(&m, &o, &rep);
	memmig_ctx_set_log_priority(ctx, LOG_ERR);
	if (rc)
		CUNIT_FAILF("%s: migrate: %d (%s)", c->name, rc, last_log);
	/* Not DAX here: MAP_SYNC failed, and memmig said so. */
	if (mt_log_mark() == mark || !strstr(last_log, "not on a DAX file system"))
		CUNIT_FAILF("%s: no word of the MAP_SYNC fallback (log: %s)", c->name,
			    last_log);
	if (!rep) {
		mt_mem_free(&m);
		return;
	}
	memmig_report_get_summary(rep, &s);
	EXPECT_EQ(c->name, "result", s.result, 0);
	EXPECT_EQ(c->name, "strategy", s.strategy, MEMMIG_STRATEGY_COPY);
	EXPECT_EQ(c->name, "target node", (uint64_t)(int64_t)s.target_node, (uint64_t)-1);
	EXPECT_EQ(c->name, "bytes moved", s.bytes_moved, c->len);
	EXPECT_EQ(c->name, "pages failed", s.pages_failed, 0);
	/* A page on the file is not one left out by from_nodes. */
	EXPECT_EQ(c->name, "pages skipped", s.pages_skipped, 0);
	EXPECT_EQ(c->name, "pages verified on the target", s.pages_verified_on_target,
		  c->len / PAGE);
	EXPECT_EQ(c->name, "moved ranges", mt_moved_ranges(rep, (uintptr_t)m.map, m.len,
							   NULL, c->name), c->len);
	memmig_report_unref(rep);

	/* The bytes, in the mapping, which now is the file's. */
	mt_mem_intact(&m, sum, c->name);
	snprintf(cut, sizeof(cut), "%s", c->directory ? "(deleted)" : path);
	if (!maps_file(m.map, cut) || !maps_file(m.map + m.len - 1, cut))
		CUNIT_FAILF("%s: the range does not map %s", c->name, cut);

	/* Durable: read back through the file, not the mapping. */
	if (!c->directory) {
		uint64_t seed = m.seed;

		fd = open(path, O_RDONLY | O_CLOEXEC);
		CU_ASSERT_FATAL(fd >= 0);
		mt_mem_free(&m);	/* munmap first */
		file_holds(fd, c->offset, c->len, seed, c->name);
		close(fd);
		unlink(path);
	} else {
		/* A write through the range lands in the one shared file. */
		mt_mem_usable(&m, c->name);
		mt_mem_free(&m);
	}
}

static const struct tcase tcases[] = {
	{ "thp-8M-file", K_THP, 8 * MiB, 0, false, false, 0 },
	{ "4k-6M-file-offset-2M", K_4K, 6 * MiB, 2 * MiB, false, false, 2 },
	{ "4k-12K-file-offset-12K", K_4K, 12 * 1024, 12 * 1024, false, false, 1 },
	{ "thp-16M-dir", K_THP, 16 * MiB, 0, true, false, 2 },
	{ "thp-8M-tmpfs-file", K_THP, 8 * MiB, 0, false, true, 0 },
	{ "4k-4M-tmpfs-dir", K_4K, 4 * MiB, 0, true, true, 1 },
};

static void test_to_file(void)
{
	for (size_t i = 0; i < sizeof(tcases) / sizeof(tcases[0]); i++)
		run_file_case(&tcases[i]);
}

/* An existing, larger file: grown never shrunk, the rest left alone. */
static void test_existing_file(void)
{
	struct memmig_report *rep = NULL;
	struct memmig_migrate_opts o;
	uint8_t head[4096], want[4096];
	char path[128];
	struct stat st;
	struct mem m;
	uint64_t seed;
	int fd;

	snprintf(path, sizeof(path), "%s/existing", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	memset(want, 0x5a, sizeof(want));
	CU_ASSERT_EQUAL(pwrite(fd, want, sizeof(want), 0), (ssize_t)sizeof(want));
	CU_ASSERT_EQUAL(ftruncate(fd, 32 * MiB), 0);
	CU_ASSERT_EQUAL_FATAL(mt_mem_new(&m, K_THP, 4 * MiB, true), 0);
	o = file_opts(path, 4 * MiB);
	CU_ASSERT_EQUAL(migrate_mem(&m, &o, &rep), 0);
	memmig_report_unref(rep);
	seed = m.seed;
	mt_mem_free(&m);
	CU_ASSERT_EQUAL(fstat(fd, &st), 0);
	EXPECT_EQ("existing file", "size", st.st_size, 32 * MiB);
	CU_ASSERT_EQUAL(pread(fd, head, sizeof(head), 0), (ssize_t)sizeof(head));
	CU_ASSERT(!memcmp(head, want, sizeof(head)));
	file_holds(fd, 4 * MiB, 4 * MiB, seed, "existing file");
	close(fd);
	unlink(path);
}

static CU_TestInfo dax_tests[] = {
	{ "refused before anything is touched", test_refused },
	{ "DRAM to a file, MAP_SYNC fallback, bytes in the file", test_to_file },
	{ "an existing file keeps its other bytes", test_existing_file },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	CU_SuiteInfo suites[] = {
		MT_SUITE("target path", dax_init, dax_cleanup, dax_tests),
		CU_SUITE_INFO_NULL,
	};

	return mt_main(suites);
}
