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

/* Whether a v1 line's controller list ("cpu,cpuset") has cpuset. */
static bool has_cpuset(const char *list, size_t len)
{
	for (const char *p = list; p < list + len;) {
		size_t n = strcspn(p, ",:");

		if (n == 6 && !strncmp(p, "cpuset", 6))
			return true;
		p += n + 1;
	}
	return false;
}

/* The cgroup directory holding pid's cpuset settings, or "" for none. */
static void find_cgroup(int pid, struct util_cpuset *cs)
{
	char path[64], line[UTIL_CGROUP_PATH_MAX], v1[UTIL_CGROUP_PATH_MAX] = "";
	char v2[UTIL_CGROUP_PATH_MAX] = "", ctl[256] = "";
	bool have_v2 = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *rel = strchr(line, ':'), *p;

		if (!rel || !(p = strchr(rel + 1, ':')))
			continue;
		p[strcspn(p, "\n")] = '\0';
		if (!strncmp(line, "0::", 3)) {
			snprintf(v2, sizeof(v2), "%s", p + 1);
			have_v2 = true;
		} else if (has_cpuset(rel + 1, (size_t)(p - rel - 1))) {
			snprintf(v1, sizeof(v1), "%s", p + 1);
		}
	}
	fclose(f);
	/* v2 only where the unified hierarchy has the cpuset controller. */
	if (have_v2 && !read_line(CGROUP_V2_ROOT "/cgroup.controllers", ctl, sizeof(ctl)) &&
	    strstr(ctl, "cpuset")) {
		snprintf(cs->dir, sizeof(cs->dir), "%s%s", CGROUP_V2_ROOT,
			 strcmp(v2, "/") ? v2 : "");
		cs->v2 = true;
		cs->root = !strcmp(v2, "/");
	} else if (v1[0]) {
		snprintf(cs->dir, sizeof(cs->dir), "%s%s", CGROUP_V1_ROOT,
			 strcmp(v1, "/") ? v1 : "");
		cs->root = !strcmp(v1, "/");
	}
}

int util_cpuset_get(int pid, struct util_cpuset *cs)
{
	char path[UTIL_CGROUP_PATH_MAX + 32], line[UTIL_NODELIST_MAX + 32];
	bool found = false;
	FILE *f;

	memset(cs, 0, sizeof(*cs));
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
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
	find_cgroup(pid, cs);
	if (cs->dir[0]) {
		snprintf(path, sizeof(path), "%s/cpuset.mems", cs->dir);
		if (read_line(path, cs->mems, sizeof(cs->mems)))
			cs->dir[0] = '\0';	/* no cpuset file there after all */
	}
	return 0;
}

int util_cpuset_set_mems(const struct util_cpuset *cs, const char *mems)
{
	char path[UTIL_CGROUP_PATH_MAX + 32];
	size_t len = strlen(mems);
	ssize_t n;
	int fd;

	if (!cs->dir[0])
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/cpuset.mems", cs->dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, mems, len);
	n = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
	close(fd);
	return (int)n;
}

int util_cpuset_check(int pid, int node, char *msg, size_t len)
{
	char mem[UTIL_NODELIST_MAX];
	struct util_cpuset cs;

	/* A node without memory, or a process or file we cannot read: the
	 * move itself says what is wrong, naming the node. */
	if (!read_line("/sys/devices/system/node/has_memory", mem, sizeof(mem)) &&
	    !util_nodelist_has(mem, node))
		return 0;
	if (util_cpuset_get(pid, &cs) || util_nodelist_has(cs.allowed, node))
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
