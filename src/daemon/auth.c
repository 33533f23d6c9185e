/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who may move whose memory: the rule move_pages(2) applies through
 * ptrace_may_access(PTRACE_MODE_READ_REALCREDS), applied for the client by
 * the root daemon, with the client's credentials as of its connect()
 * (SO_PEERCRED).  Root may move anything.  Another client needs the
 * target's real, effective and saved uid and gid (all six equal to its
 * own), a dumpable target, and a target without permitted capabilities
 * (the kernel's cap_ptrace_access_check() lets a caller whose permitted
 * set covers the target's: memmigd cannot know the client's as of its
 * connect -- /proc/PID/status says what they are now, after an exec of a
 * setuid program maybe -- so it counts none).
 *
 * The client's CAP_SYS_PTRACE is not honoured, unlike in the kernel: from
 * here it cannot be told whether it holds in the target's user namespace,
 * and a container's root would otherwise move the host's processes.
 *
 * The target is read through one fd on /proc/PID: once that process ends,
 * reads through the fd fail (ESRCH) even if its pid is reused, so a check
 * can never pass on one process and apply to another.
 *
 * The rule holds for as long as memmigd acts for the client, not only at
 * the request: a request's pin (struct auth_pin) keeps the client's
 * credentials and that fd, and the rule is applied again on the pinned
 * process when a queued job starts, before each region of a job's move
 * and each system call it makes on the process, and before and after each
 * interval of a tiering (jobs.c, tiers.c, libmemmig's memmig_move_opts
 * .check).  The process may have exec'd a setuid program since, or made
 * itself not dumpable; the first refusal stays (a process that is root's
 * for a moment may have been read or moved meanwhile), and ends the work
 * with EPERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/memmigd.h"
#include "proto/proto.h"

struct proc_ids {
	uid_t uid[4];		/* real, effective, saved, fs */
	gid_t gid[4];
	uint64_t cap_prm;
};

/* /proc/PID/status through dirfd: Uid, Gid, CapPrm. */
static int read_status(int dirfd, struct proc_ids *ids)
{
	char buf[4096], *p;
	unsigned int found = 0;
	ssize_t n;
	int fd = openat(dirfd, "status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n ? -errno : -ESRCH;
	buf[n] = 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (sscanf(p, "Uid: %u %u %u %u", &ids->uid[0], &ids->uid[1],
			   &ids->uid[2], &ids->uid[3]) == 4)
			found |= 1;
		else if (sscanf(p, "Gid: %u %u %u %u", &ids->gid[0], &ids->gid[1],
				&ids->gid[2], &ids->gid[3]) == 4)
			found |= 2;
		else if (sscanf(p, "CapPrm: %" SCNx64, &ids->cap_prm) == 1)
			found |= 4;
	}
	return found == 7 ? 0 : -EIO;
}

int auth_peer(int fd, struct client_cred *out)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	/* Recorded by the kernel at connect(): nothing of the client's pid
	 * is read afterwards (it may be another program by now). */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len))
		return -errno;
	*out = (struct client_cred){ .pid = uc.pid, .uid = uc.uid, .gid = uc.gid };
	return 0;
}

int auth_target_open(int pid)
{
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

bool auth_target_alive(int procfd)
{
	struct proc_ids ids;

	return read_status(procfd, &ids) == 0;
}

int auth_may_move(const struct client_cred *c, int procfd, int pid,
		  char *msg, size_t len)
{
	struct proc_ids ids;
	struct stat st;
	int rc;

	rc = read_status(procfd, &ids);
	if (rc) {
		snprintf(msg, len, "pid %d: %s", pid, strerror(-rc));
		return rc;
	}
	if (c->uid == 0)
		return 0;
	for (int i = 0; i < 3; i++)
		if (ids.uid[i] != c->uid || ids.gid[i] != c->gid) {
			unsigned int u[3] = { ids.uid[0], ids.uid[1], ids.uid[2] };
			unsigned int g[3] = { ids.gid[0], ids.gid[1], ids.gid[2] };

			proto_perm_message(msg, len, c->uid, c->gid, pid, u, g);
			return -EPERM;
		}
	/*
	 * The files in /proc/PID (not the directory itself) belong to the
	 * process's euid/egid only while it is dumpable; otherwise to root
	 * (task_dump_owner()).  The uids are not 0 here, so root as owner
	 * means not dumpable.
	 */
	if (fstatat(procfd, "status", &st, 0)) {
		snprintf(msg, len, "pid %d: %s", pid, strerror(errno));
		return -ESRCH;
	}
	if (st.st_uid != ids.uid[1] || st.st_gid != ids.gid[1]) {
		snprintf(msg, len, "pid %d is not dumpable: only root may move it", pid);
		return -EPERM;
	}
	if (ids.cap_prm) {
		snprintf(msg, len, "pid %d holds capabilities (%#" PRIx64 "): only root may "
			 "move it", pid, ids.cap_prm);
		return -EPERM;
	}
	/* The checks passed on the process behind procfd, which still lives. */
	if (!auth_target_alive(procfd)) {
		snprintf(msg, len, "pid %d: %s", pid, strerror(ESRCH));
		return -ESRCH;
	}
	return 0;
}

int auth_pin_new(const struct client_cred *c, int pid, struct auth_pin **out, char *msg,
		 size_t len)
{
	struct auth_pin *p = calloc(1, sizeof(*p));
	int rc;

	if (!p) {
		snprintf(msg, len, "pid %d: %s", pid, strerror(ENOMEM));
		return -ENOMEM;
	}
	*p = (struct auth_pin){ .cred = *c, .pid = pid, .procfd = auth_target_open(pid) };
	pthread_mutex_init(&p->lock, NULL);
	rc = p->procfd < 0 ? p->procfd : auth_may_move(c, p->procfd, pid, msg, len);
	if (p->procfd < 0)
		snprintf(msg, len, "pid %d: %s", pid, strerror(-rc));
	if (rc) {
		auth_pin_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int auth_pin_check(struct auth_pin *p)
{
	char why[sizeof(p->why)];
	struct stat st;
	int rc;

	pthread_mutex_lock(&p->lock);
	rc = p->denied;
	pthread_mutex_unlock(&p->lock);
	if (rc)
		return rc;
	/* Root may move any process: only that the pinned one still lives is
	 * left to see, by a lookup in its directory (which fails once it is
	 * reaped), not by reading its status: this runs before each call. */
	if (p->procfd >= 0 && p->cred.uid == 0)
		rc = fstatat(p->procfd, "stat", &st, 0) ? -ESRCH : 0;
	else
		rc = p->procfd < 0 ? -ESRCH :
		     auth_may_move(&p->cred, p->procfd, p->pid, why, sizeof(why));
	if (rc == -ESRCH)
		snprintf(why, sizeof(why), "pid %d: %s", p->pid, strerror(ESRCH));
	if (!rc)
		return 0;
	pthread_mutex_lock(&p->lock);
	if (!p->denied) {
		p->denied = rc;
		snprintf(p->why, sizeof(p->why), "%s", why);
	}
	rc = p->denied;
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int auth_pin_check_fn(void *pin)
{
	return auth_pin_check(pin);
}

int auth_pin_denied(struct auth_pin *p, char *why, size_t len)
{
	int rc;

	pthread_mutex_lock(&p->lock);
	rc = p->denied;
	if (why && len)
		snprintf(why, len, "%s", rc ? p->why : "");
	pthread_mutex_unlock(&p->lock);
	return rc;
}

bool auth_pin_alive(const struct auth_pin *p)
{
	return p->procfd >= 0 && auth_target_alive(p->procfd);
}

void auth_pin_release(struct auth_pin *p)
{
	if (p && p->procfd >= 0) {
		close(p->procfd);
		p->procfd = -1;
	}
}

void auth_pin_free(struct auth_pin *p)
{
	if (!p)
		return;
	auth_pin_release(p);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
