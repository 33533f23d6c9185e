/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A process's cgroup cpuset (cpuset.h).  The kernel enforces
 * Mems_allowed_list (/proc/PID/status), whatever the cgroup version; the
 * cgroup that sets it comes from /proc/PID/cgroup: v2's "0::PATH" under a
 * unified mount with the cpuset controller, else v1's "N:cpuset:PATH".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "util/cpuset.h"

#define CGROUP_V2_ROOT	"/sys/fs/cgroup"
#define CGROUP_V1_ROOT	"/sys/fs/cgroup/cpuset"

int util_nodemap_parse(const char *s, struct util_nodemap *m)
{
	memset(m, 0, sizeof(*m));
	while (*s && *s != '\n') {
		char *end;
		unsigned long a, b;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		a = b = strtoul(s, &end, 10);
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				return -EINVAL;
			b = strtoul(end + 1, &end, 10);
		}
		if (a > b || b >= UTIL_NODES_MAX)
			return -EINVAL;
		for (unsigned long n = a; n <= b; n++)
			m->w[n / 64] |= 1ULL << (n % 64);
		if (*end == ',')
			end++;
		else if (*end && *end != '\n')
			return -EINVAL;
		s = end;
	}
	return 0;
}

bool util_nodemap_has(const struct util_nodemap *m, int n)
{
	return n >= 0 && n < UTIL_NODES_MAX && (m->w[n / 64] >> (n % 64) & 1);
}

/* "0-2,4": ranges of consecutive nodes joined. */
static int nodemap_format(const struct util_nodemap *m, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (int n = 0; n < UTIL_NODES_MAX; n++) {
		int last = n;
		int w;

		if (!util_nodemap_has(m, n))
			continue;
		while (last + 1 < UTIL_NODES_MAX && util_nodemap_has(m, last + 1))
			last++;
		w = last == n ? snprintf(out + used, len - used, "%s%d", used ? "," : "", n) :
			snprintf(out + used, len - used, "%s%d-%d", used ? "," : "", n, last);
		if (w < 0 || (size_t)w >= len - used)
			return -ENOSPC;
		used += w;
		n = last;
	}
	return 0;
}


bool util_nodelist_has(const char *list, int node)
{
	struct util_nodemap m;

	return !util_nodemap_parse(list, &m) && util_nodemap_has(&m, node);
}

bool util_nodelist_same(const char *a, const char *b)
{
	struct util_nodemap ma, mb;

	return !util_nodemap_parse(a, &ma) && !util_nodemap_parse(b, &mb) &&
	       !memcmp(&ma, &mb, sizeof(ma));
}

int util_nodelist_add(const char *a, int node, char *out, size_t len)
{
	struct util_nodemap m;

	if (node < 0 || node >= UTIL_NODES_MAX || util_nodemap_parse(a, &m))
		return -EINVAL;
	m.w[node / 64] |= 1ULL << (node % 64);
	return nodemap_format(&m, out, len);
}

/* The first line of a small file, without its newline; 0 or -errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	else
		buf[strcspn(buf, "\n")] = '\0';
	if (ferror(f))
		ret = -EIO;
	fclose(f);
	return ret;
}

int util_node_has_memory(int node, char *msg, size_t len)
{
	char has[UTIL_NODELIST_MAX], dir[64];

	if (read_line("/sys/devices/system/node/has_memory", has, sizeof(has)) || !has[0] ||
	    util_nodelist_has(has, node))
		return 0;	/* nothing to check against, or it has memory */
	snprintf(dir, sizeof(dir), "/sys/devices/system/node/node%d", node);
	snprintf(msg, len, "node %d %s (nodes with memory: %s)", node,
		 node < 0 || access(dir, F_OK) ? "does not exist" : "has no memory", has);
	return -ENOENT;
}

/* Whether a v1 line's controller list ("cpu,cpuset") has cpuset. */
static bool has_cpuset(const char *list, size_t len)
{
	for (const char *p = list; p < list + len;) {
		size_t n = strcspn(p, ",:");

		if (n > (size_t)(list + len - p))
			n = (size_t)(list + len - p);
		if (n == 6 && !strncmp(p, "cpuset", 6))
			return true;
		p += n + 1;
	}
	return false;
}

/* An absolute path of named components: no "", "." or "..". */
static bool path_plain(const char *p, size_t len)
{
	if (!len || p[0] != '/')
		return false;
	if (len == 1)
		return true;	/* the root */
	for (size_t i = 1; i <= len;) {
		size_t n = 0;

		while (i + n < len && p[i + n] != '/')
			n++;
		if (!n || (n == 1 && p[i] == '.') || (n == 2 && p[i] == '.' && p[i + 1] == '.'))
			return false;
		i += n + 1;
	}
	return true;
}

/* One of pid's /proc files, opened: through procfd, its /proc/PID
 * directory, when it is >= 0 (the caller's pin on the process). */
static int proc_open(int pid, int procfd, const char *name)
{
	char path[64];

	if (procfd >= 0)
		return openat(procfd, name, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int util_cgroup_cpuset_path(const char *text, size_t len, bool v2_cpuset, char *path,
			    size_t path_len, bool *v2)
{
	const char *v1p = NULL, *v2p = NULL, *pick;
	size_t v1n = 0, v2n = 0, n;

	if (len && text[len - 1] != '\n')
		return -EINVAL;	/* the kernel ends every line */
	for (size_t at = 0; at < len;) {
		const char *line = text + at, *nl = memchr(line, '\n', len - at);
		const char *c1, *c2, *end = nl;	/* nl: found, the text ends in one */

		at = (size_t)(nl - text) + 1;
		c1 = memchr(line, ':', (size_t)(end - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		if (!c2)
			continue;
		if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
			if (v2p)
				return -EINVAL;
			v2p = c2 + 1;
			v2n = (size_t)(end - v2p);
		} else if (has_cpuset(c1 + 1, (size_t)(c2 - c1 - 1))) {
			if (v1p)
				return -EINVAL;
			v1p = c2 + 1;
			v1n = (size_t)(end - v1p);
		}
	}
	/* v2 only where the unified hierarchy has the cpuset controller. */
	*v2 = v2p && v2_cpuset;
	pick = *v2 ? v2p : v1p;
	n = *v2 ? v2n : v1n;
	if (!pick)
		return -ENOENT;
	if (n >= path_len)
		return -ENAMETOOLONG;
	if (!path_plain(pick, n))
		return -EINVAL;
	memcpy(path, pick, n);
	path[n] = '\0';
	return 0;
}

/* The whole of a file of /proc, fd, closed here (malloc'd, NUL-terminated,
 * *len its bytes); -EFBIG past max bytes. */
static int read_all(int fd, size_t max, char **out, size_t *len)
{
	size_t used = 0, cap = 4096;
	char *buf = malloc(cap);
	int ret = 0;

	if (fd < 0 || !buf) {
		ret = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (cap - used < 2) {
			char *p = cap * 2 > max + 2 ? NULL : realloc(buf, cap * 2);

			if (!p) {
				ret = cap * 2 > max + 2 ? -EFBIG : -ENOMEM;
				goto out;
			}
			buf = p;
			cap *= 2;
		}
		n = read(fd, buf + used, cap - used - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto out;
		}
		if (!n)
			break;
		used += (size_t)n;
	}
	buf[used] = '\0';
	*out = buf;
	*len = used;
	buf = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

/* The cgroup directory holding pid's cpuset settings: cs->dir, or "" for
 * none; 0 or -errno (util_cgroup_cpuset_path()'s). */
static int find_cgroup(int pid, int procfd, struct util_cpuset *cs)
{
	char ctl[256] = "", *text = NULL, *rel = malloc(UTIL_CGROUP_PATH_MAX);
	bool v2_cpuset, v2;
	size_t len = 0;
	int ret;

	if (!rel)
		return -ENOMEM;
	/* A line per hierarchy, each at most a path's length. */
	ret = read_all(proc_open(pid, procfd, "cgroup"), 64 * (UTIL_CGROUP_PATH_MAX + 64), &text,
		       &len);
	if (ret) {
		free(rel);
		return ret == -ENOENT ? -ESRCH : ret;
	}
	v2_cpuset = !read_line(CGROUP_V2_ROOT "/cgroup.controllers", ctl, sizeof(ctl)) &&
		    strstr(ctl, "cpuset");
	ret = util_cgroup_cpuset_path(text, len, v2_cpuset, rel, UTIL_CGROUP_PATH_MAX, &v2);
	free(text);
	if (!ret) {
		const char *mnt = v2 ? CGROUP_V2_ROOT : CGROUP_V1_ROOT;
		bool root = !strcmp(rel, "/");

		snprintf(cs->dir, sizeof(cs->dir), "%s%s", mnt, root ? "" : rel);
		cs->mnt_len = strlen(mnt);
		cs->v2 = v2;
		cs->root = root;
	}
	free(rel);
	return ret == -ENOENT ? 0 : ret;
}

/*
 * The cgroup's directory (O_PATH), reached from the hierarchy's mount one
 * component at a time, following no link: only a directory of that
 * cgroup file system, below its mount.  -errno.
 */
static int open_cgroup(const struct util_cpuset *cs)
{
	char mnt[64];
	const char *p = cs->dir + cs->mnt_len;
	struct statfs sf;
	int fd;

	if (!cs->dir[0] || cs->mnt_len >= sizeof(mnt))
		return -ENOENT;
	memcpy(mnt, cs->dir, cs->mnt_len);
	mnt[cs->mnt_len] = '\0';
	if (strcmp(mnt, CGROUP_V1_ROOT) && strcmp(mnt, CGROUP_V2_ROOT))
		return -EINVAL;
	if (*p && !path_plain(p, strlen(p)))
		return -EINVAL;
	fd = open(mnt, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sf) || (sf.f_type != CGROUP_SUPER_MAGIC &&
				 sf.f_type != CGROUP2_SUPER_MAGIC)) {
		close(fd);
		return -ENOENT;	/* no cgroup file system mounted there */
	}
	while (*p) {
		char name[NAME_MAX + 1];
		size_t n;
		int next;

		p++;	/* the '/' */
		n = strcspn(p, "/");
		if (n > NAME_MAX) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return -errno;
		fd = next;
	}
	return fd;
}

/* The first line of a file in the cgroup's directory, without its newline. */
static int read_cgroup_line(const struct util_cpuset *cs, const char *file, char *buf,
			    size_t len)
{
	int dfd = open_cgroup(cs), fd;
	ssize_t n;

	if (dfd < 0)
		return dfd;
	fd = openat(dfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Whether pid is among the processes of the cgroup (dfd's cgroup.procs). */
static int cgroup_has(int dfd, int pid)
{
	int fd = openat(dfd, "cgroup.procs", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char line[32];
	bool found = false;
	FILE *f;

	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -errno;
	}
	while (!found && fgets(line, sizeof(line), f))
		found = strtol(line, NULL, 10) == pid;
	fclose(f);
	return found ? 0 : -ESTALE;
}

int util_cpuset_get(int pid, struct util_cpuset *cs)
{
	return util_cpuset_get_at(pid, -1, cs);
}

int util_cpuset_get_at(int pid, int procfd, struct util_cpuset *cs)
{
	char line[UTIL_NODELIST_MAX + 32];
	bool found = false;
	FILE *f;
	int fd, ret;

	memset(cs, 0, sizeof(*cs));
	cs->pid = pid;
	fd = proc_open(pid, procfd, "status");
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (!found && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Mems_allowed_list:", 18)) {
			char *v = line + 18 + strspn(line + 18, " \t");

			v[strcspn(v, "\n")] = '\0';
			snprintf(cs->allowed, sizeof(cs->allowed), "%s", v);
			found = true;
		}
	fclose(f);
	if (!found)
		return -EIO;
	ret = find_cgroup(pid, procfd, cs);
	if (ret) {
		cs->dir[0] = '\0';
		return ret;
	}
	if (cs->dir[0] && read_cgroup_line(cs, "cpuset.mems", cs->mems, sizeof(cs->mems)))
		cs->dir[0] = '\0';	/* no cpuset file there after all */
	return 0;
}

int util_cpuset_set_mems(const struct util_cpuset *cs, const char *mems)
{
	size_t len = strlen(mems);
	ssize_t n;
	int dfd, fd, ret;

	if (!cs->dir[0])
		return -ENOENT;
	dfd = open_cgroup(cs);
	if (dfd < 0)
		return dfd;
	/* The process's own cgroup, still: none other is this call's to change. */
	ret = cgroup_has(dfd, cs->pid);
	fd = ret ? -1 : openat(dfd, "cpuset.mems", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (!ret && fd < 0)
		ret = -errno;
	close(dfd);
	if (ret)
		return ret;
	n = write(fd, mems, len);
	n = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
	close(fd);
	return (int)n;
}

int util_cpuset_check(int pid, int node, char *msg, size_t len)
{
	return util_cpuset_check_at(pid, -1, node, msg, len);
}

int util_cpuset_check_at(int pid, int procfd, int node, char *msg, size_t len)
{
	char mem[UTIL_NODELIST_MAX];
	struct util_cpuset cs;

	/* A node without memory, or a process or file we cannot read: the
	 * move itself says what is wrong, naming the node. */
	if (!read_line("/sys/devices/system/node/has_memory", mem, sizeof(mem)) &&
	    !util_nodelist_has(mem, node))
		return 0;
	if (util_cpuset_get_at(pid, procfd, &cs) || util_nodelist_has(cs.allowed, node))
		return 0;
	if (cs.dir[0])
		snprintf(msg, len, "pid %d may not use node %d: its cpuset %s has cpuset.mems "
			 "'%s' (allowed: %s); widen it (memmig-cli move --update-cpuset, or "
			 "virsh numatune --live for a libvirt domain) and move again",
			 pid, node, cs.dir, cs.mems[0] ? cs.mems : "inherited", cs.allowed);
	else
		snprintf(msg, len, "pid %d may not use node %d: its cpuset allows nodes %s only",
			 pid, node, cs.allowed);
	return -EACCES;
}
