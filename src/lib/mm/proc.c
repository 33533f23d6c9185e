/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whether a process is gone, from /proc/PID/stat. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/mm/proc.h"

#define PF_EXITING_FLAG 0x4u	/* the kernel's PF_EXITING */

/* A zombie still answers kill(pid, 0) and has a /proc/PID, but no memory
 * (move_pages answers EINVAL): its state and flags say so. */
bool memmig_proc_gone(int pid)
{
	char path[64], buf[1024], state = 0, *p;
	unsigned int flags = 0;
	FILE *f;
	bool read;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
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

int memmig_proc_err(int pid, int rc)
{
	if (rc >= 0 || rc == -ESRCH || rc == -ENOMEM || rc == -ECANCELED || pid <= 0)
		return rc;
	return memmig_proc_gone(pid) ? -ESRCH : rc;
}
