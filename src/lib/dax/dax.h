/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* DAX files: telling them apart, and mapping one as a migration target. */
#ifndef MEMMIG_DAX_H
#define MEMMIG_DAX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct memmig_ctx;
struct memmig_vma;

/*
 * Is the file behind a shared mapping of pid (0: this process) device DAX
 * or a file on a DAX file system?  Asks its path, then
 * /proc/PID/map_files (an unlinked file; needs CAP_CHECKPOINT_RESTORE).
 */
/* A read-only fd of the file behind a mapping of this process, or -errno. */
int memmig_dax_vma_open(const struct memmig_vma *v);

enum memmig_dax_kind {
	MEMMIG_DAX_NONE = 0,	/* a file without DAX: page cache + msync */
	MEMMIG_DAX_DEV,		/* device DAX */
	MEMMIG_DAX_FS,		/* a file mapped with MAP_SYNC */
};

/* The target of a migration to DAX, mapped whole. */
struct memmig_dax_target {
	int fd;
	int kind;		/* enum memmig_dax_kind */
	uint64_t align;		/* device DAX: its alignment; else 4 KiB */
	uint8_t *base;		/* [offset, offset + len) of the target, at an
				 * address congruent with the source modulo
				 * 2 MB; NULL once the strategy owns it */
	uint64_t offset, len;
	uint64_t ino;		/* the target file, as /proc/self/smaps names */
	unsigned int dev_major, dev_minor;	/* it, for the verification */
};

/*
 * Opens, checks, sizes and maps path (see memmig_migrate_opts.target_path)
 * for the range [addr, addr + len) of this process: 0, or -errno with
 * nothing left behind (a file it created is removed again).
 */
int memmig_dax_target_open(struct memmig_ctx *ctx, const char *path,
			   uint64_t offset, uint64_t addr, uint64_t len,
			   struct memmig_dax_target *t);
/* Unmaps what is left of the mapping (t->base) and closes the file. */
void memmig_dax_target_close(struct memmig_dax_target *t);
/* Copy flags for the target: pmem stores where the mapping is DAX. */
unsigned int memmig_dax_target_copy_flags(const struct memmig_dax_target *t);
/*
 * The persistence point of [p, p + len) of the target, after its copy:
 * the store fence for DAX (MAP_SYNC committed the file's metadata at
 * fault time, the copy flushed the lines), msync(MS_SYNC) otherwise.
 */
int memmig_dax_target_persist(const struct memmig_dax_target *t, void *p,
			      size_t len);

#endif
