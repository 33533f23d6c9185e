/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The listening socket: its directory (/run/memmig, 0755, made if
 * missing: systemd's RuntimeDirectory= makes it too), a stale socket from
 * a daemon that died removed -- but never a live one's -- then bound as
 * 0660, in --group when given, so that the group's members may connect.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/memmigd.h"

static int make_dir(const char *path)
{
	char buf[sizeof(((struct sockaddr_un *)0)->sun_path)], *dir;

	snprintf(buf, sizeof(buf), "%s", path);
	dir = dirname(buf);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		util_log(LOG_ERR, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

/* A socket file that nobody listens on is a dead daemon's: remove it. */
static int remove_stale(const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, rc;

	if (lstat(sa->sun_path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		util_log(LOG_ERR, "%s exists and is not a socket", sa->sun_path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) ? -errno : 0;
	close(fd);
	if (!rc) {
		util_log(LOG_ERR, "%s: another memmigd is listening there", sa->sun_path);
		return -EADDRINUSE;
	}
	if (rc != -ECONNREFUSED)
		return rc;
	util_log(LOG_INFO, "removing the stale socket %s", sa->sun_path);
	return unlink(sa->sun_path) ? -errno : 0;
}

static int group_id(const char *name, gid_t *gid)
{
	struct group gr, *res = NULL;
	char buf[4096];
	int rc = getgrnam_r(name, &gr, buf, sizeof(buf), &res);

	if (rc || !res) {
		util_log(LOG_ERR, "group '%s': %s", name, rc ? strerror(rc) : "no such group");
		return rc ? -rc : -ENOENT;
	}
	*gid = gr.gr_gid;
	return 0;
}

int sock_listen(const char *path, const char *group, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	gid_t gid = (gid_t)-1;
	bool bound;
	mode_t old;
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (group[0] && (rc = group_id(group, &gid)))
		return rc;
	rc = make_dir(path);
	if (!rc)
		rc = remove_stale(&sa);
	if (rc)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Created 0660 at once: no moment in which others may connect. */
	old = umask(0117);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old);
	bound = !rc;
	if (!rc && chmod(path, 0660))
		rc = -errno;
	if (!rc && gid != (gid_t)-1 && chown(path, (uid_t)-1, gid))
		rc = -errno;
	if (!rc && listen(fd, 128))
		rc = -errno;
	if (rc) {
		util_log(LOG_ERR, "%s: %s", path, strerror(-rc));
		if (bound)
			unlink(path);
		close(fd);
		return rc;
	}
	*out = fd;
	return 0;
}

void sock_remove(const char *path)
{
	if (unlink(path) && errno != ENOENT)
		util_log(LOG_WARNING, "%s: %s", path, strerror(errno));
}
