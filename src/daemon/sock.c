/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The listening socket: its directory (/run/memmig, 0755, made if
 * missing: systemd's RuntimeDirectory= makes it too), a stale socket from
 * a daemon that died removed -- but never a live one's -- then bound as
 * 0660, in --group when given, so that the group's members may connect.
 *
 * The group is set on the path after bind(2).  Issue 34: in a directory
 * another user may write, they could swap the new socket for a link to
 * any file between the two, and chown(2) -- and the chmod(2) there was --
 * would change that file.  So the socket's directory, and every one above
 * it, must be root's (or memmigd's user's) and writable by no one else,
 * or sticky (/tmp: no one else may remove or rename the socket there);
 * memmigd refuses to start otherwise.  And the group is set on the
 * socket itself, opened without following a link and checked to be a
 * socket of memmigd's user, not through its path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

/*
 * The socket's directory and those above it that are missing, as
 * memmigd(8) says: 0755 whatever the umask (clients need to reach the
 * socket), memmigd's user's; check_dirs() then checks the whole path.
 */
static int make_dir(const char *path)
{
	char buf[sizeof(((struct sockaddr_un *)0)->sun_path)], *dir;
	size_t len;

	snprintf(buf, sizeof(buf), "%s", path);
	dir = dirname(buf);
	len = strlen(dir);
	/* Each prefix ending at a '/', then the directory itself. */
	for (size_t i = 1; i <= len; i++) {
		int err;

		if (dir[i] != '/' && dir[i] != '\0')
			continue;
		dir[i] = '\0';
		err = mkdir(dir, 0755) ? errno : 0;
		if (!err && chmod(dir, 0755))
			err = errno;
		if (err && err != EEXIST) {
			util_log(LOG_ERR, "%s: cannot make the socket's directory: %s", dir,
				 strerror(err));
			return -err;
		}
		if (i < len)
			dir[i] = '/';
	}
	return 0;
}

/* Whether a directory's entries are memmigd's alone to change: owned by
 * root or memmigd's user, writable by no one else unless sticky. */
static bool dir_safe(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && (st->st_uid == 0 || st->st_uid == geteuid()) &&
	       (!(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX));
}

/* path and each directory above it that it names, followed through
 * links; -EPERM said.  (A relative path's: check_dirs() checks its
 * resolved one too.) */
static int dirs_safe(const char *path, const char *what)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (size_t i = len;; i--) {
		struct stat st;

		if (i == len || buf[i] == '/') {
			char c = buf[i];

			buf[i] = '\0';
			if (stat(i ? buf : "/", &st)) {
				int err = errno;

				util_log(LOG_ERR, "%s: %s", i ? buf : "/", strerror(err));
				return -err;
			}
			if (!dir_safe(&st)) {
				util_log(LOG_ERR, "%s: the socket's directory %s is %s (mode %04o, "
					 "owner uid %u): another user could swap the socket for a "
					 "link before memmigd sets its group; use a directory of "
					 "root's that only root may write (/run/memmig), or a "
					 "sticky one", what, i ? buf : "/",
					 !S_ISDIR(st.st_mode) ? "not a directory" :
					 st.st_uid != 0 && st.st_uid != geteuid() ?
					 "another user's" : "writable by others",
					 (unsigned int)(st.st_mode & 07777), (unsigned int)st.st_uid);
				return -EPERM;
			}
			buf[i] = c;
		}
		if (!i)
			break;
	}
	return 0;
}

/* The socket's directory and each above it, as named and as resolved. */
static int check_dirs(const char *sock)
{
	char buf[PATH_MAX], real[PATH_MAX], *dir;
	int rc;

	snprintf(buf, sizeof(buf), "%s", sock);
	dir = dirname(buf);
	rc = dirs_safe(dir, sock);
	if (!rc && !realpath(dir, real))
		rc = -errno;
	return rc ?: dirs_safe(real, sock);
}

/*
 * The socket just bound at path, made 0660 in gid (-1: no change): opened
 * without following a link, and only if it is a socket of memmigd's user.
 */
static int own_socket(const char *path, gid_t gid)
{
	char proc[64];
	struct stat st;
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		rc = -errno;
	else if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
		rc = -EEXIST;	/* not the socket bind() made */
	/* Its mode through the fd (a default ACL may override the umask);
	 * without /proc, the umask's 0660 stands. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (!rc && chmod(proc, 0660) && errno != ENOENT)
		rc = -errno;
	if (!rc && gid != (gid_t)-1 && fchownat(fd, "", (uid_t)-1, gid, AT_EMPTY_PATH))
		rc = -errno;
	close(fd);
	return rc;
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
		rc = check_dirs(path);
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
	if (!rc)
		rc = own_socket(path, gid);
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
