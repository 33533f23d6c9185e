/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whether a process is gone: a read of a process that ends under it fails
 * in that read's own words (ENOENT, EINVAL, EIO, an empty or short file),
 * and the library answers -ESRCH for all of them.
 *
 * A process may come with its caller's pin on it: procfd, an fd on its
 * /proc/PID directory (memmig_move_opts.procfd; -1: none).  Its files are
 * then read through that fd, which names that process and no later one
 * with its pid: once the process is reaped, every lookup in it fails
 * (ENOENT, answered -ESRCH).  Without a pin, /proc/PID by path (pid 0:
 * /proc/self).
 */
#ifndef MEMMIG_PROC_H
#define MEMMIG_PROC_H

#include <stdbool.h>
#include <stdio.h>

/* pid ended or is ending (a zombie, or exiting: its memory may be gone). */
bool memmig_proc_gone(int pid);
/* The same of a pinned process (procfd >= 0), else of pid. */
bool memmig_proc_gone_at(int pid, int procfd);
/* rc, or -ESRCH when it is an error and pid (> 0) is gone. */
int memmig_proc_err(int pid, int rc);
int memmig_proc_err_at(int pid, int procfd, int rc);
/* open(2) of one of the process's files ("smaps", "pagemap", ...),
 * O_CLOEXEC added; -1 with errno (ESRCH for a pinned process that ended). */
int memmig_proc_open(int pid, int procfd, const char *name, int flags);
/*
 * The process's move lock, which every whole-process move takes while it
 * runs (memmigd's jobs, memmig-cli -l, any program embedding libmemmig),
 * so that two moves of one process never run at once: an flock(2) on its
 * /proc/PID/mem.  Opening that file takes ptrace's attach access, so only
 * those who may do anything to the process can hold it: no other user can
 * keep a move from running.  It is released when its holder dies.  An fd
 * (close it to release), -EBUSY (another move holds it), or another
 * -errno: no lock to be had here (Yama's ptrace_scope, say).
 */
int memmig_proc_move_lock(int pid, int procfd);
/* The same as a stdio stream ("re"), or NULL with errno. */
FILE *memmig_proc_fopen(int pid, int procfd, const char *name);
/*
 * Whether the pinned process has not been reaped (true without a pin,
 * procfd < 0): while it has not, its pid is its own, so a system call
 * that takes the pid (move_pages(2), migrate_pages(2)) reaches it and no
 * other.  One lookup in its /proc directory.
 */
bool memmig_proc_pinned(int procfd);

#endif
