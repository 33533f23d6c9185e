/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whether a process is gone, and its /proc files (proc.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/mm/proc.h"

#define PF_EXITING_FLAG 0x4u	/* the kernel's PF_EXITING */

int memmig_proc_open(int pid, int procfd, const char *name, int flags)
{
	char path[64];
	int fd;

	if (procfd >= 0) {
		fd = openat(procfd, name, flags | O_CLOEXEC);
		/* The pinned process was reaped: its directory is empty. */
		if (fd < 0 && errno == ENOENT)
			errno = ESRCH;
		return fd;
	}
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	else
		snprintf(path, sizeof(path), "/proc/self/%s", name);
	return open(path, flags | O_CLOEXEC);
}

int memmig_proc_move_lock(int pid, int procfd)
{
	int fd = memmig_proc_open(pid, procfd, "mem", O_RDONLY);

	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int e = errno;

		close(fd);
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	return fd;
}

/*
 * A /proc file through stdio, read a page at a time: fdopen() buffers by
 * the file's st_blksize, 1 KiB in /proc, where the kernel hands out up to a
 * page of text per read(2).  The smaps of a small process took 96 reads,
 * each a costly system call in a VM; a stream of our own takes stdio's
 * BUFSIZ buffer, so each read(2) gets what the kernel has ready.
 */
static ssize_t proc_read(void *cookie, char *buf, size_t len)
{
	ssize_t n;

	do
		n = read((int)(intptr_t)cookie, buf, len);
	while (n < 0 && errno == EINTR);
	return n;
}

static int proc_close(void *cookie)
{
	return close((int)(intptr_t)cookie);
}

FILE *memmig_proc_fopen(int pid, int procfd, const char *name)
{
	static const cookie_io_functions_t io = { .read = proc_read, .close = proc_close };
	int fd = memmig_proc_open(pid, procfd, name, O_RDONLY);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fopencookie((void *)(intptr_t)fd, "r", io);
	if (!f) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return f;
}

bool memmig_proc_pinned(int procfd)
{
	struct stat st;

	/* A lookup in a reaped process's directory fails (the kernel's
	 * proc_pident_lookup() finds no task), a zombie's still succeeds:
	 * its pid is not free yet. */
	return procfd < 0 || !fstatat(procfd, "stat", &st, 0);
}

/* A zombie still answers kill(pid, 0) and has a /proc/PID, but no memory
 * (move_pages answers EINVAL): its state and flags say so. */
bool memmig_proc_gone_at(int pid, int procfd)
{
	char buf[1024], state = 0, *p;
	unsigned int flags = 0;
	FILE *f;
	bool read;

	f = memmig_proc_fopen(pid, procfd, "stat");
	if (!f)
		return errno == ENOENT || errno == ESRCH;
	read = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	/* comm may hold anything: the fields follow the last ')'. */
	p = read ? strrchr(buf, ')') : NULL;
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2)
		return !read;
	return state == 'Z' || state == 'X' || (flags & PF_EXITING_FLAG);
}

bool memmig_proc_gone(int pid)
{
	return memmig_proc_gone_at(pid, -1);
}

int memmig_proc_err_at(int pid, int procfd, int rc)
{
	if (rc >= 0 || rc == -ESRCH || rc == -ENOMEM || rc == -ECANCELED || pid <= 0)
		return rc;
	return memmig_proc_gone_at(pid, procfd) ? -ESRCH : rc;
}

int memmig_proc_err(int pid, int rc)
{
	return memmig_proc_err_at(pid, -1, rc);
}
