/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DAX files.  Device DAX is a character device of the "dax" class; a file
 * on a DAX file system says so in statx (STATX_ATTR_DAX, Linux 5.8).  A
 * migration target is mapped whole before anything is copied, so that
 * every refusal (no such path, too small, misaligned, full) comes first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/dax/dax.h"
#include "lib/core/memmig-private.h"
#include "lib/mm/nodemem.h"
#include "lib/mm/smaps.h"

#ifndef STATX_ATTR_DAX
#define STATX_ATTR_DAX 0x00200000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif

#define DAX_SMALL_ALIGN MEMMIG_PAGE_SIZE
/* Congruence with the source: 2 MB pieces of the target then line up
 * with the source's huge pages, for huge faults and whole-PMD moves. */
#define DAX_CONGRUENCE (2ULL << 20)

/* A number from /sys/dev/char/MAJ:MIN/<attr>, or 0. */
static uint64_t chr_attr(dev_t rdev, const char *attr)
{
	char path[96];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/%s", major(rdev),
		 minor(rdev), attr);
	f = fopen(path, "re");
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

int memmig_dax_vma_open(const struct memmig_vma *v)
{
	char path[96];
	struct stat st;
	int fd;

	if (v->path[0] == '/' && !strstr(v->path, " (deleted)")) {
		fd = open(v->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !fstat(fd, &st) && st.st_ino == v->inode)
			return fd;
		if (fd >= 0)
			close(fd);
	}
	memmig_vma_map_files_path(path, sizeof(path), 0, v);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * Maps [off, off + len) of fd at an address congruent with addr modulo
 * align (device DAX refuses a mapping whose ends are not aligned).
 */
static uint8_t *map_congruent(int fd, uint64_t off, uint64_t len, uint64_t addr,
			      uint64_t align, int flags, int *err)
{
	uint8_t *at = memmig_window_congruent(len, addr, align, err);

	if (!at)
		return NULL;
	if (mmap(at, len, PROT_READ | PROT_WRITE, flags | MAP_FIXED, fd,
		 (off_t)off) == MAP_FAILED) {
		*err = -errno;
		munmap(at, len);
		return NULL;
	}
	return at;
}

static int target_devdax(struct memmig_ctx *ctx, const char *path, dev_t rdev,
			 uint64_t offset, uint64_t addr, uint64_t len,
			 struct memmig_dax_target *t)
{
	uint64_t size = chr_attr(rdev, "size");
	int rc = 0;

	t->kind = MEMMIG_DAX_DEV;
	/* "align" came with Linux 5.10; before, device DAX of pmem was 2 MB. */
	t->align = chr_attr(rdev, "align");
	if (!t->align)
		t->align = DAX_CONGRUENCE;
	if ((offset | addr | len) & (t->align - 1)) {
		err(ctx, "%s: device DAX maps in %#llx units: offset %#llx, range "
			 "%#llx+%#llx\n", path, (unsigned long long)t->align,
		    (unsigned long long)offset, (unsigned long long)addr,
		    (unsigned long long)len);
		return -EINVAL;
	}
	if (offset > size || len > size - offset) {
		err(ctx, "%s: %#llx bytes at %#llx do not fit its %#llx\n", path,
		    (unsigned long long)len, (unsigned long long)offset,
		    (unsigned long long)size);
		return -ENOSPC;
	}
	t->fd = open(path, O_RDWR | O_CLOEXEC);
	if (t->fd < 0)
		return -errno;
	t->base = map_congruent(t->fd, offset, len, addr,
				t->align > DAX_CONGRUENCE ? t->align : DAX_CONGRUENCE,
				MAP_SHARED, &rc);
	return rc;
}

/* A file, made if missing, or an unnamed one in a directory. */
static int target_file_open(const char *path, const struct stat *st, bool exists,
			    bool *created)
{
	int fd;

	*created = false;
	if (exists && S_ISDIR(st->st_mode))
		fd = open(path, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	else if (exists)
		fd = open(path, O_RDWR | O_CLOEXEC);
	else {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		*created = fd >= 0;
	}
	return fd < 0 ? -errno : fd;
}

static int target_file(struct memmig_ctx *ctx, const char *path,
		       const struct stat *st, bool exists, uint64_t offset,
		       uint64_t addr, uint64_t len, struct memmig_dax_target *t)
{
	struct stat fst;
	bool created;
	int rc = 0;

	t->align = DAX_SMALL_ALIGN;
	t->fd = target_file_open(path, st, exists, &created);
	if (t->fd < 0) {
		err(ctx, "%s: cannot open or create it: %s\n", path, strerror(-t->fd));
		return t->fd;
	}
	if (fstat(t->fd, &fst))
		rc = -errno;
	else if ((uint64_t)fst.st_size < offset + len && ftruncate(t->fd, (off_t)(offset + len)))
		rc = -errno;
	/* Blocks first: a full file system says ENOSPC here, not SIGBUS in
	 * the middle of a copy. */
	if (!rc)
		rc = -posix_fallocate(t->fd, (off_t)offset, (off_t)len);
	if (rc == -EOPNOTSUPP)
		rc = 0;
	if (rc)
		err(ctx, "%s: cannot size it to %#llx bytes: %s\n", path,
		    (unsigned long long)(offset + len), strerror(-rc));
	if (!rc) {
		t->kind = MEMMIG_DAX_FS;
		t->base = map_congruent(t->fd, offset, len, addr, DAX_CONGRUENCE,
					MAP_SHARED_VALIDATE | MAP_SYNC, &rc);
	}
	if (rc == -EOPNOTSUPP) {
		warn(ctx, "%s: not on a DAX file system (MAP_SYNC: %s): falling "
			  "back to MAP_SHARED and msync(MS_SYNC) after each unit\n",
		     path, strerror(EOPNOTSUPP));
		t->kind = MEMMIG_DAX_NONE;
		rc = 0;
		t->base = map_congruent(t->fd, offset, len, addr, DAX_CONGRUENCE,
					MAP_SHARED, &rc);
	}
	if (rc && created)
		unlink(path);
	return rc;
}

int memmig_dax_target_open(struct memmig_ctx *ctx, const char *path,
			   uint64_t offset, uint64_t addr, uint64_t len,
			   struct memmig_dax_target *t)
{
	struct stat st;
	bool exists;
	int rc;

	*t = (struct memmig_dax_target){ .fd = -1, .offset = offset, .len = len };
	if (!path || !*path || offset % DAX_SMALL_ALIGN || offset + len < offset) {
		err(ctx, "target path: empty, or offset %#llx not page aligned\n",
		    (unsigned long long)offset);
		return -EINVAL;
	}
	exists = !stat(path, &st);
	if (!exists && errno != ENOENT)
		return -errno;
	if (exists && S_ISCHR(st.st_mode)) {
		if (!memmig_chr_is_dax(st.st_rdev)) {
			err(ctx, "%s: a character device that is not device DAX\n", path);
			return -ENODEV;
		}
		rc = target_devdax(ctx, path, st.st_rdev, offset, addr, len, t);
	} else if (exists && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		err(ctx, "%s: neither device DAX, a file nor a directory\n", path);
		return -EINVAL;
	} else {
		rc = target_file(ctx, path, &st, exists, offset, addr, len, t);
	}
	if (!rc && fstat(t->fd, &st))
		rc = -errno;
	if (rc) {
		memmig_dax_target_close(t);
		return rc;
	}
	t->ino = st.st_ino;
	t->dev_major = major(st.st_dev);
	t->dev_minor = minor(st.st_dev);
	info(ctx, "target %s: %s, %#llx bytes at %#llx mapped at %p\n", path,
	     t->kind == MEMMIG_DAX_DEV ? "device DAX" :
	     t->kind == MEMMIG_DAX_FS ? "MAP_SYNC (DAX)" : "not DAX, msync",
	     (unsigned long long)len, (unsigned long long)offset, t->base);
	return 0;
}

void memmig_dax_target_close(struct memmig_dax_target *t)
{
	if (t->base)
		munmap(t->base, t->len);
	if (t->fd >= 0)
		close(t->fd);
	t->base = NULL;
	t->fd = -1;
}

unsigned int memmig_dax_target_copy_flags(const struct memmig_dax_target *t)
{
	return t->kind == MEMMIG_DAX_NONE ? 0 : MEMMIG_COPY_PMEM;
}

int memmig_dax_target_persist(const struct memmig_dax_target *t, void *p, size_t len)
{
	memmig_copy_drain();
	if (t->kind == MEMMIG_DAX_NONE && msync(p, len, MS_SYNC))
		return -errno;
	return 0;
}
