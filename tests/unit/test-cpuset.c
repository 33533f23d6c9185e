/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The util layer's node lists, cpuset and per-node usage (src/util/cpuset.c,
 * numa-usage.c), against this process as the kernel shows it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cunit-main.h"
#include "util/cpuset.h"
#include "util/numa-usage.h"

static void test_nodelist_has(void)
{
	CU_ASSERT(util_nodelist_has("0", 0));
	CU_ASSERT(!util_nodelist_has("0", 1));
	CU_ASSERT(util_nodelist_has("0-2,4", 1));
	CU_ASSERT(util_nodelist_has("0-2,4", 4));
	CU_ASSERT(!util_nodelist_has("0-2,4", 3));
	CU_ASSERT(util_nodelist_has("1023", 1023));
	CU_ASSERT(util_nodelist_has("0\n", 0));	/* as sysfs has it */
	/* Anything unreadable has no node: never a guess. */
	CU_ASSERT(!util_nodelist_has("", 0));
	CU_ASSERT(!util_nodelist_has("2-1", 1));
	CU_ASSERT(!util_nodelist_has("0,,1", 1));
	CU_ASSERT(!util_nodelist_has("0-", 0));
	CU_ASSERT(!util_nodelist_has("1024", 0));
	CU_ASSERT(!util_nodelist_has("^0", 0));
}

static void test_nodelist_add(void)
{
	char out[UTIL_NODELIST_MAX], tiny[4];

	CU_ASSERT_EQUAL(util_nodelist_add("0", 1, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "0-1");
	CU_ASSERT_EQUAL(util_nodelist_add("0,2", 1, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "0-2");
	CU_ASSERT_EQUAL(util_nodelist_add("0-2,7", 4, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "0-2,4,7");
	CU_ASSERT_EQUAL(util_nodelist_add("3", 3, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "3");
	CU_ASSERT_EQUAL(util_nodelist_add("x", 1, out, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(util_nodelist_add("0", 1024, out, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(util_nodelist_add("0,2,4", 6, tiny, sizeof(tiny)), -ENOSPC);
	/* The same nodes however written (libvirt's and the kernel's forms). */
	CU_ASSERT(util_nodelist_same("0-1", "0,1"));
	CU_ASSERT(util_nodelist_same("0-2,4", "4,0,1-2"));
	CU_ASSERT(!util_nodelist_same("0-1", "0"));
	CU_ASSERT(!util_nodelist_same("0", "x"));
}

/* Touched memory shows on the node numa_maps puts it; moved() does not
 * count it as moved: it left no node. */
static void test_usage(void)
{
	struct util_numa_usage *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	size_t len = 8 << 20;
	uint64_t total_a = 0, total_b = 0;
	char *p;

	CU_ASSERT_FATAL(a && b);
	CU_ASSERT_EQUAL(util_numa_usage_read(getpid(), a), 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(p != MAP_FAILED);
	memset(p, 1, len);
	CU_ASSERT_EQUAL(util_numa_usage_read(getpid(), b), 0);
	for (int n = 0; n < UTIL_USAGE_NODES; n++) {
		total_a += a->bytes[n];
		total_b += b->bytes[n];
	}
	CU_ASSERT(total_b >= total_a + len);
	CU_ASSERT_EQUAL(util_numa_usage_moved(a, b), 0);
	CU_ASSERT_EQUAL(util_numa_usage_moved(b, a), 0);	/* freed, not moved */
	CU_ASSERT_EQUAL(util_numa_usage_moved(b, b), 0);
	CU_ASSERT_EQUAL(util_numa_usage_read(-1, a), -ESRCH);
	munmap(p, len);
	free(a);
	free(b);
}

/* Readings made up: 3 MiB leave node 1 for node 0 while the process
 * touches 5 MiB more on node 0 and frees 1 MiB on node 2. */
static void test_usage_moved(void)
{
	struct util_numa_usage *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct util_numa_mark mark;

	CU_ASSERT_FATAL(a && b);
	a->bytes[0] = 10 << 20;
	a->bytes[1] = 4 << 20;
	a->bytes[2] = 2 << 20;
	util_numa_usage_mark(a, 0, &mark);
	CU_ASSERT_EQUAL(mark.on, 10 << 20);
	CU_ASSERT_EQUAL(mark.off, 6 << 20);
	b->bytes[0] = (10 + 3 + 5) << 20;
	b->bytes[1] = 1 << 20;
	b->bytes[2] = 1 << 20;
	/* Gained 8 MiB, lost 4 MiB: at most 4 MiB changed node. */
	CU_ASSERT_EQUAL(util_numa_usage_moved(a, b), 4 << 20);
	/* Node 0 gained 8 MiB, the others lost 4: at most 4 came from them. */
	CU_ASSERT_EQUAL(util_numa_usage_arrived(b, 0, &mark), 4 << 20);
	/* Nothing left the others: nothing arrived, whatever node 0 gained. */
	b->bytes[1] = 4 << 20;
	b->bytes[2] = 2 << 20;
	CU_ASSERT_EQUAL(util_numa_usage_arrived(b, 0, &mark), 0);
	free(a);
	free(b);
}

static void test_cpuset_self(void)
{
	struct util_cpuset cs;
	char msg[512] = "";

	CU_ASSERT_EQUAL(util_cpuset_get(getpid(), &cs), 0);
	/* Every node with memory here is allowed to the test, node 0 too. */
	CU_ASSERT(util_nodelist_has(cs.allowed, 0));
	CU_ASSERT_EQUAL(util_cpuset_check(getpid(), 0, msg, sizeof(msg)), 0);
	/* A node without memory is the move's to refuse, naming it. */
	CU_ASSERT_EQUAL(util_cpuset_check(getpid(), 1023, msg, sizeof(msg)), 0);
	CU_ASSERT_EQUAL(util_cpuset_get(-1, &cs), -ESRCH);
}

/* text with the look-alike "fake" at byte 511 of its cpuset line, the
 * rest of the path after it "/victim": a 512-byte fgets() of the file
 * would read a second line there. */
static char *line_with(const char *first, const char *fake, char *rest)
{
	static char text[8192];
	size_t n = (size_t)snprintf(text, sizeof(text), "%s/deleg/", first);

	while (n < 511) {
		size_t take = 511 - n > 101 ? 100 : 511 - n - 1;

		memset(text + n, 'p', take);
		n += take;
		text[n++] = '/';
	}
	snprintf(text + n, sizeof(text) - n, "%s/victim\n%s", fake, rest);
	return text;
}

/* The cpuset's path from /proc/PID/cgroup's whole text, lines as the
 * kernel ends them: a look-alike inside a path is part of the path. */
static void test_cgroup_path(void)
{
	char path[UTIL_CGROUP_PATH_MAX], *t, big[2 * UTIL_CGROUP_PATH_MAX];
	bool v2;
	size_t len;

	t = "4:memory:/a\n3:cpuset:/cs/x\n0::/u/y\n";
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, strlen(t), false, path, sizeof(path), &v2), 0);
	CU_ASSERT_STRING_EQUAL(path, "/cs/x");
	CU_ASSERT(!v2);
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, strlen(t), true, path, sizeof(path), &v2), 0);
	CU_ASSERT_STRING_EQUAL(path, "/u/y");
	CU_ASSERT(v2);
	t = "2:cpu,cpuset,memory:/\n";
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, strlen(t), true, path, sizeof(path), &v2), 0);
	CU_ASSERT_STRING_EQUAL(path, "/");
	t = "4:memory:/a\n1:name=cpuset:/b\n";
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, strlen(t), false, path, sizeof(path), &v2),
			-ENOENT);

	/* v1: "3:cpuset:" at byte 511 of the cpuset line. */
	t = line_with("3:cpuset:", "3:cpuset:", "0::/\n");
	len = strlen(t);
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, len, false, path, sizeof(path), &v2), 0);
	CU_ASSERT(strlen(path) > 511 && !strcmp(path + strlen(path) - 16, "3:cpuset:/victim"));
	CU_ASSERT(!strncmp(path, "/deleg/ppp", 10));
	/* v2: "0::" at byte 511 of the v2 line. */
	t = line_with("0::", "0::", "3:cpuset:/\n");
	len = strlen(t);
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, len, true, path, sizeof(path), &v2), 0);
	CU_ASSERT(v2 && !strcmp(path + strlen(path) - 10, "0::/victim"));
	/* ... and "0::" inside the v1 line, where v2 has no cpuset. */
	t = line_with("3:cpuset:", "0::", "");
	len = strlen(t);
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, len, true, path, sizeof(path), &v2), 0);
	CU_ASSERT(!v2 && !strncmp(path, "/deleg/", 7));

	/* A path too long for the buffer: refused, not cut. */
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, len, false, path, 64, &v2), -ENAMETOOLONG);
	memcpy(big, "3:cpuset:/", 10);
	memset(big + 10, 'a', sizeof(big) - 12);
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = '\0';
	for (size_t i = 200; i < sizeof(big) - 2; i += 200)
		big[i] = '/';
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(big, strlen(big), false, path, sizeof(path), &v2),
			-ENAMETOOLONG);

	/* Not the kernel's text, or a path out of the hierarchy: refused. */
	t = "3:cpuset:/a\n3:cpuset:/b\n";
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, strlen(t), false, path, sizeof(path), &v2),
			-EINVAL);
	t = "3:cpuset:/a";
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, strlen(t), false, path, sizeof(path), &v2),
			-EINVAL);
	t = "3:cpuset:/../../victim\n";
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, strlen(t), false, path, sizeof(path), &v2),
			-EINVAL);
	t = "3:cpuset:/a/./b\n";
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, strlen(t), false, path, sizeof(path), &v2),
			-EINVAL);
	t = "3:cpuset:/a//b\n";
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, strlen(t), false, path, sizeof(path), &v2),
			-EINVAL);
	t = "3:cpuset:a\n";
	CU_ASSERT_EQUAL(util_cgroup_cpuset_path(t, strlen(t), false, path, sizeof(path), &v2),
			-EINVAL);
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

static void read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (fd >= 0)
		close(fd);
}

/*
 * util_cpuset_set_mems() writes only the process's own cgroup: given a
 * directory that is not (as a misread /proc/PID/cgroup would), it refuses
 * with -ESTALE and the other cgroup keeps its cpuset.mems; a path with
 * ".." is refused before anything is opened.  Root, on this host's
 * cpuset hierarchy; passes saying so where there is none to write.
 */
static void test_set_mems_own(void)
{
	char a[UTIL_CGROUP_DIR_MAX], b[UTIL_CGROUP_DIR_MAX], f[UTIL_CGROUP_DIR_MAX + 32];
	char mnt[64], before[UTIL_NODELIST_MAX], after[UTIL_NODELIST_MAX], cpus[256] = "";
	struct util_cpuset self, cs;
	int status;
	pid_t child;

	if (geteuid() || util_cpuset_get(getpid(), &self) || !self.dir[0] ||
	    self.mnt_len >= sizeof(mnt)) {
		printf("\n  (no cpuset hierarchy this test may write: skipped) ");
		return;
	}
	memcpy(mnt, self.dir, self.mnt_len);
	mnt[self.mnt_len] = '\0';
	snprintf(a, sizeof(a), "%s/memmig-test-own-%d", mnt, (int)getpid());
	snprintf(b, sizeof(b), "%s/memmig-test-other-%d", mnt, (int)getpid());
	if (mkdir(a, 0755) || mkdir(b, 0755)) {
		printf("\n  (cannot make cgroups under %s: skipped) ", mnt);
		rmdir(a);
		return;
	}
	if (!self.v2) {	/* v1: a cgroup's tasks need its cpus and mems */
		snprintf(f, sizeof(f), "%s/cpuset.cpus", mnt);
		read_str(f, cpus, sizeof(cpus));
		snprintf(f, sizeof(f), "%s/cpuset.cpus", a);
		CU_ASSERT_EQUAL(write_str(f, cpus), 0);
		snprintf(f, sizeof(f), "%s/cpuset.mems", a);
		CU_ASSERT_EQUAL(write_str(f, "0"), 0);
	}
	snprintf(f, sizeof(f), "%s/cpuset.mems", b);
	read_str(f, before, sizeof(before));
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	CU_ASSERT_FATAL(child > 0);
	snprintf(f, sizeof(f), "%s/cgroup.procs", a);
	{
		char pid[16];

		snprintf(pid, sizeof(pid), "%d", (int)child);
		CU_ASSERT_EQUAL(write_str(f, pid), 0);
	}
	CU_ASSERT_EQUAL(util_cpuset_get(child, &cs), 0);
	CU_ASSERT_STRING_EQUAL(cs.dir, a);
	CU_ASSERT_EQUAL(util_cpuset_set_mems(&cs, "0"), 0);	/* its own */

	/* The other cgroup, as a misread path would name it. */
	snprintf(cs.dir, sizeof(cs.dir), "%s", b);
	CU_ASSERT_EQUAL(util_cpuset_set_mems(&cs, "0"), -ESTALE);
	CU_ASSERT((size_t)snprintf(cs.dir, sizeof(cs.dir), "%s/../%s", a,
				   b + self.mnt_len + 1) < sizeof(cs.dir));
	CU_ASSERT_EQUAL(util_cpuset_set_mems(&cs, "0"), -EINVAL);
	snprintf(f, sizeof(f), "%s/cpuset.mems", b);
	read_str(f, after, sizeof(after));
	CU_ASSERT_STRING_EQUAL(after, before);

	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	CU_ASSERT_EQUAL(rmdir(a), 0);
	CU_ASSERT_EQUAL(rmdir(b), 0);
}

static CU_TestInfo tests[] = {
	{ "node lists: membership, refusing what does not parse", test_nodelist_has },
	{ "node lists: adding a node, ranges joined", test_nodelist_add },
	{ "per-node usage from numa_maps", test_usage },
	{ "moved and arrived: new and freed memory do not count", test_usage_moved },
	{ "this process's cpuset", test_cpuset_self },
	{ "the cgroup path: whole lines, refused past PATH_MAX or with ..", test_cgroup_path },
	{ "cpuset.mems written in the process's own cgroup only", test_set_mems_own },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "cpuset and usage", .pTests = tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
