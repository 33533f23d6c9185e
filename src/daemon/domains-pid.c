/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A libvirt domain's QEMU process without asking libvirtd: libvirt's pid
 * file, and the process's command line to be sure the pid still names that
 * domain's QEMU (a pid file can outlive its process, and pids are reused).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/domains-private.h"
#include "proto/proto.h"

/* libvirt puts -name second; a bounded read of the start is enough. */
#define CMDLINE_MAX	(64 * 1024)

bool domains_name_valid(const char *name)
{
	size_t len = strnlen(name, PROTO_NAME_MAX);

	if (!len || len == PROTO_NAME_MAX || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	/* It becomes a file name: no '/', and no control characters. */
	for (size_t i = 0; i < len; i++)
		if (name[i] == '/' || (unsigned char)name[i] < 0x20)
			return false;
	return true;
}

/* Reads at most len - 1 bytes of a file; returns the count or -errno. */
static ssize_t read_file(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while (got < len - 1) {
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (!n)
			break;
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}

int domains_pid_starttime(int pid, unsigned long long *out)
{
	char path[64], buf[1024], *p;
	ssize_t n;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	/* comm may hold anything, ')' included: fields follow the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EIO;
	/* A zombie QEMU (no init reaping it) is gone all the same. */
	if (p[2] == 'Z' || p[2] == 'X')
		return -ESRCH;
	/* field 3 (state) is the first after ')'; starttime is field 22 */
	for (int field = 2; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EIO;
	}
	*out = strtoull(p + 1, NULL, 10);
	return 0;
}

/* Whether arg, a -name value, names the domain: "guest=NAME,opt=..." or
 * "NAME", where QEMU's option syntax doubles a comma in NAME. */
static bool name_arg_is(const char *arg, const char *end, const char *name)
{
	if (end - arg > 6 && !strncmp(arg, "guest=", 6))
		arg += 6;
	while (arg < end) {
		if (*arg == ',') {
			if (arg + 1 < end && arg[1] == ',')
				arg++;
			else
				break;	/* the next option */
		}
		if (*name++ != *arg++)
			return false;
	}
	return !*name;
}

bool domains_cmdline_is_domain(const char *cmdline, size_t len,
			       const char *name)
{
	const char *p = cmdline, *end = cmdline + len, *next;
	bool after_name = false;

	for (; p < end; p = next + 1) {
		next = memchr(p, '\0', end - p);
		if (!next)
			next = end;
		if (after_name)
			return name_arg_is(p, next, name);
		after_name = !strcmp(p, "-name") && next < end;
	}
	return false;
}

int domains_pidfile_resolve(const char *dir, const char *name, int *pid)
{
	char path[PROTO_NAME_MAX + 128], buf[32], *end, *cmd;
	ssize_t n;
	long p;

	if (!domains_name_valid(name))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s.pid", dir, name);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ENOENT : (int)n;
	errno = 0;
	p = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || p <= 0 || p > INT32_MAX)
		return -ENOENT;

	cmd = malloc(CMDLINE_MAX);
	if (!cmd)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", p);
	n = read_file(path, cmd, CMDLINE_MAX);
	/* A stale pid file, or its pid now names another process. */
	if (n <= 0 || !domains_cmdline_is_domain(cmd, n, name)) {
		free(cmd);
		return -ENOENT;
	}
	free(cmd);
	*pid = p;
	return 0;
}
