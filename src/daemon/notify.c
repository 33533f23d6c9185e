/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * systemd's two protocols, spoken without libsystemd (one datagram and
 * three environment variables do not justify a dependency):
 *
 * - sd_notify: "READY=1", "STOPPING=1", "STATUS=..." as one datagram to
 *   the AF_UNIX socket named by $NOTIFY_SOCKET ('@' first: the abstract
 *   namespace).  Type=notify in memmigd.service.
 * - socket activation: with $LISTEN_PID our pid and $LISTEN_FDS 1, fd 3
 *   is the listening socket memmigd.socket made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/memmigd.h"

#define LISTEN_FDS_START 3

int notify_send(const char *fmt, ...)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char msg[512];
	size_t plen;
	socklen_t salen;
	va_list ap;
	int fd, rc = 0;

	if (!path || !path[0])
		return 0;
	plen = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || plen >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, plen);
	/* Abstract: a NUL first, and the length counts only the name's bytes. */
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen + (path[0] == '/'));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
		rc = -errno;
	close(fd);
	if (rc)
		util_log(LOG_WARNING, "telling systemd \"%s\": %s", msg, strerror(-rc));
	return rc;
}

/* Whether fd is a listening stream socket of AF_UNIX. */
static bool unix_listener(int fd)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	int v = 0;
	socklen_t vl = sizeof(v);
	struct stat st;

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode))
		return false;
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl) || !v)
		return false;
	vl = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl) || v != SOCK_STREAM)
		return false;
	return !getsockname(fd, (struct sockaddr *)&sa, &len) && sa.sun_family == AF_UNIX;
}

int notify_listen_fd(int *out)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	char *end;
	long p, n;

	*out = -1;
	if (!pid || !fds)
		return 0;
	/* Ours, or meant for a process further up: either way not again
	 * for the children (libmemmig's threads do not exec, but be clean). */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	errno = 0;
	p = strtol(pid, &end, 10);
	if (errno || *end || p != getpid())
		return 0;
	n = strtol(fds, &end, 10);
	if (errno || *end || n != 1) {
		util_log(LOG_ERR, "socket activation: LISTEN_FDS=%s: memmigd takes one socket", fds);
		return -EINVAL;
	}
	if (!unix_listener(LISTEN_FDS_START)) {
		util_log(LOG_ERR, "socket activation: fd 3 is not a listening AF_UNIX stream socket");
		return -ENOTSOCK;
	}
	if (fcntl(LISTEN_FDS_START, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	*out = LISTEN_FDS_START;
	return 1;
}
