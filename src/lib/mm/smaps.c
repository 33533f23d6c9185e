/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Parsing /proc/PID/smaps: ranges, backing kinds (DAX too) and VMA flags. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "memmig.h"
#include "lib/mm/proc.h"
#include "lib/mm/smaps.h"

/* "55960a643000-55960a645000 rw-p 00000000 fe:00 247134   /usr/bin/cat" */
static bool parse_header(const char *line, struct memmig_vma *v)
{
	char perms[5];
	int pos = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &v->start, &v->end, perms, &v->offset, &v->dev_major,
		   &v->dev_minor, &v->inode, &pos) < 7)
		return false;
	v->readable = perms[0] == 'r';
	v->writable = perms[1] == 'w';
	v->executable = perms[2] == 'x';
	v->shared = perms[3] == 's';
	snprintf(v->path, sizeof(v->path), "%s", line + pos);
	v->path[strcspn(v->path, "\n")] = '\0';
	return true;
}

static bool has_flag(const char *vmflags, const char *flag)
{
	for (const char *p = vmflags; (p = strstr(p, flag)); p += 2)
		if ((p == vmflags || p[-1] == ' ') && (p[2] == ' ' || p[2] == '\n' || !p[2]))
			return true;
	return false;
}

/*
 * The VmFlags a private anonymous copy keeps (memmig_swap_attrs() gives it
 * them, or they come with any anonymous mapping, or they are userfaultfd
 * registrations, which the registering party owns) -- every other one,
 * known or not, is reported in odd, and the copy refuses the mapping.
 */
static const char keepable[] =
	" rd wr ex mr mw me lo lf sr rr dc ac nr wf dd sd hg nh mg um uw ui ";

static void odd_flag(const char *vmflags, char odd[4])
{
	char tok[8] = "", key[12];
	int used;

	odd[0] = '\0';
	for (const char *p = vmflags; sscanf(p, " %7s%n", tok, &used) == 1; p += used) {
		snprintf(key, sizeof(key), " %s ", tok);
		if (!strstr(keepable, key)) {
			/* Codes are two letters: a longer token is cut. */
			memcpy(odd, tok, 3);
			odd[3] = '\0';
			return;
		}
	}
}

/*
 * Shared mappings of tmpfs (device major 0), memfd and SysV segments are
 * shmem; other shared or private file mappings are page cache.  DAX is
 * asked first: /dev/dax nodes live on devtmpfs, major 0 too.  "sf"
 * (VM_SYNC) is a MAP_SYNC mapping, which only DAX files can have.
 */
static int classify(int pid, int procfd, const struct memmig_vma *v, const char *vmflags)
{
	if (has_flag(vmflags, "io") || has_flag(vmflags, "pf") ||
	    !strncmp(v->path, "[v", 2))
		return MEMMIG_BACKING_SPECIAL;
	if (has_flag(vmflags, "ht"))
		return MEMMIG_BACKING_HUGETLB;
	if (v->shared && v->inode &&
	    (has_flag(vmflags, "sf") || memmig_vma_is_dax_at(pid, procfd, v)))
		return MEMMIG_BACKING_DAX;
	if (v->shared)
		return v->dev_major == 0 || v->inode == 0 ? MEMMIG_BACKING_SHMEM :
							    MEMMIG_BACKING_FILE;
	return v->inode == 0 ? MEMMIG_BACKING_ANON : MEMMIG_BACKING_FILE;
}

int memmig_vmas_read(int pid, struct memmig_vma **out, size_t *count)
{
	return memmig_vmas_read_at(pid, -1, out, count);
}

int memmig_vmas_read_at(int pid, int procfd, struct memmig_vma **out, size_t *count)
{
	struct memmig_vma *v = NULL, cur = { 0 };
	size_t n = 0, cap = 0;
	bool open_vma = false;
	char line[512];
	FILE *f;
	int rc = 0;

	f = memmig_proc_fopen(pid, procfd, "smaps");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmFlags:", 8)) {
			if (!open_vma)
				continue;
			cur.thp_advised = has_flag(line + 8, "hg");
			cur.nohuge = has_flag(line + 8, "nh");
			cur.locked = has_flag(line + 8, "lo");
			cur.dontfork = has_flag(line + 8, "dc");
			cur.dontdump = has_flag(line + 8, "dd");
			cur.mergeable = has_flag(line + 8, "mg");
			cur.lock_onfault = has_flag(line + 8, "lf");
			cur.wipeonfork = has_flag(line + 8, "wf");
			cur.seq_read = has_flag(line + 8, "sr");
			cur.rand_read = has_flag(line + 8, "rr");
			cur.noreserve = has_flag(line + 8, "nr");
			cur.softdirty = has_flag(line + 8, "sd");
			odd_flag(line + 8, cur.odd);
			cur.backing = classify(pid, procfd, &cur, line + 8);
			if (n == cap) {
				struct memmig_vma *nv;

				cap = cap ? cap * 2 : 64;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					rc = -ENOMEM;
					break;
				}
				v = nv;
			}
			v[n++] = cur;
			open_vma = false;
		} else if (!strncmp(line, "ProtectionKey:", 14)) {
			cur.pkey = atoi(line + 14);
		} else if (strchr(line, '-') && line[0] != ' ' &&
			   parse_header(line, &cur)) {
			open_vma = true;
			cur.pkey = 0;
		}
		/* A header of over 511 bytes (a long path) continues on the
		 * next fgets(): its tail parses as nothing and is skipped. */
	}
	if (!rc && ferror(f))
		rc = -EIO;
	fclose(f);
	if (rc) {
		free(v);
		return rc;
	}
	if (!n && pid) {
		free(v);
		return -ESRCH; /* a zombie or kernel thread has no mappings */
	}
	*out = v;
	*count = n;
	return 0;
}

int memmig_maps_read(int pid, struct memmig_vma **out, size_t *count)
{
	return memmig_maps_read_at(pid, -1, out, count);
}

int memmig_maps_read_at(int pid, int procfd, struct memmig_vma **out, size_t *count)
{
	struct memmig_vma *v = NULL, cur;
	size_t n = 0, cap = 0;
	char line[512];
	int rc = 0;
	FILE *f;

	f = memmig_proc_fopen(pid, procfd, "maps");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!rc && fgets(line, sizeof(line), f)) {
		memset(&cur, 0, sizeof(cur));
		/* The tail of a header over 511 bytes parses as nothing. */
		if (!parse_header(line, &cur))
			continue;
		if (n == cap) {
			struct memmig_vma *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv)
				rc = -ENOMEM;
			else
				v = nv;
		}
		if (!rc)
			v[n++] = cur;
	}
	if (!rc && ferror(f))
		rc = -EIO;
	fclose(f);
	if (!rc && !n && pid)
		rc = -ESRCH;	/* a zombie has no mappings */
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*count = n;
	return 0;
}

int memmig_vmas_backing(const struct memmig_vma *v, size_t n, uint64_t addr,
			uint64_t len)
{
	uint64_t at = addr, end = addr + len;
	int backing = -EFAULT;

	for (size_t i = 0; i < n && at < end; i++) {
		if (v[i].end <= at)
			continue;
		if (v[i].start > at)
			return -EFAULT;	/* a hole before this mapping */
		if (v[i].backing == MEMMIG_BACKING_SPECIAL)
			return -EINVAL;
		if (backing >= 0 && v[i].backing != backing)
			return -EINVAL;
		backing = v[i].backing;
		at = v[i].end;
	}
	return at >= end ? backing : -EFAULT;
}

/* DAX: a device DAX character device, or a file with STATX_ATTR_DAX. */
bool memmig_chr_is_dax(dev_t rdev)
{
	char path[96], link[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/subsystem", major(rdev),
		 minor(rdev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = '\0';
	return n >= 4 && !strcmp(link + n - 4, "/dax");
}

static bool statx_is_dax(int dirfd, const char *path, int flags)
{
	struct statx stx;

	if (statx(dirfd, path, flags, STATX_TYPE, &stx))
		return false;
	if (S_ISCHR(stx.stx_mode))
		return memmig_chr_is_dax(makedev(stx.stx_rdev_major, stx.stx_rdev_minor));
	return S_ISREG(stx.stx_mode) && (stx.stx_attributes & STATX_ATTR_DAX);
}

void memmig_vma_map_files_path(char *buf, size_t len, int pid, const struct memmig_vma *v)
{
	if (pid)
		snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid,
			 v->start, v->end);
	else
		snprintf(buf, len, "/proc/self/map_files/%" PRIx64 "-%" PRIx64,
			 v->start, v->end);
}

bool memmig_vma_is_dax(int pid, const struct memmig_vma *v)
{
	return memmig_vma_is_dax_at(pid, -1, v);
}

bool memmig_vma_is_dax_at(int pid, int procfd, const struct memmig_vma *v)
{
	char path[96];

	if (v->path[0] != '/')
		return false;
	/* The path may name another file by now: only if it is the mapped
	 * inode does it say anything. */
	if (!strstr(v->path, " (deleted)")) {
		struct stat st;

		if (!stat(v->path, &st) && st.st_ino == v->inode)
			return statx_is_dax(AT_FDCWD, v->path, 0);
	}
	if (procfd >= 0) {
		snprintf(path, sizeof(path), "map_files/%" PRIx64 "-%" PRIx64, v->start, v->end);
		return statx_is_dax(procfd, path, 0);
	}
	memmig_vma_map_files_path(path, sizeof(path), pid, v);
	return statx_is_dax(AT_FDCWD, path, 0);
}
