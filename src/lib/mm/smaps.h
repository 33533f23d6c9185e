/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A process's mappings, from /proc/PID/smaps. */
#ifndef MEMMIG_SMAPS_H
#define MEMMIG_SMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Mappings that no strategy may touch get this backing. */
#define MEMMIG_BACKING_SPECIAL (-1)

struct memmig_vma {
	uint64_t start, end;
	bool shared;
	bool readable;
	bool writable;
	bool executable;
	bool thp_advised;	/* VmFlags hg: MADV_HUGEPAGE */
	bool nohuge;		/* nh: MADV_NOHUGEPAGE */
	bool locked;		/* lo: mlock */
	bool dontfork;		/* dc: MADV_DONTFORK */
	bool dontdump;		/* dd: MADV_DONTDUMP */
	bool mergeable;		/* mg: MADV_MERGEABLE */
	bool lock_onfault;	/* lf: mlock2(MLOCK_ONFAULT) */
	bool wipeonfork;	/* wf: MADV_WIPEONFORK */
	bool seq_read;		/* sr: MADV_SEQUENTIAL */
	bool rand_read;		/* rr: MADV_RANDOM */
	bool noreserve;		/* nr: MAP_NORESERVE, no commit charge */
	bool softdirty;		/* sd: soft-dirty as a whole (new, or merged
				 * with a new mapping): every page reads as
				 * written */
	int pkey;		/* ProtectionKey: pkey_mprotect(), 0 none */
	/* The first VmFlags code a private anonymous copy cannot be given
	 * (gd, ss, sl, dp, ...; one this code does not know), or "". */
	char odd[4];
	int backing;		/* enum memmig_backing or MEMMIG_BACKING_SPECIAL */
	uint64_t offset;	/* in the file, of start */
	uint64_t inode;
	unsigned int dev_major, dev_minor;
	char path[128];
};

/* Reads pid's mappings (0: this process); -ESRCH, -EACCES, -ENOMEM. */
int memmig_vmas_read(int pid, struct memmig_vma **out, size_t *count);
/* The same through procfd, the caller's pin on the process (proc.h), when
 * it is >= 0. */
int memmig_vmas_read_at(int pid, int procfd, struct memmig_vma **out, size_t *count);

/* Only the ranges and the header's fields, from /proc/PID/maps: no page
 * table walk (smaps counts every page); backing and VmFlags unset. */
int memmig_maps_read(int pid, struct memmig_vma **out, size_t *count);
int memmig_maps_read_at(int pid, int procfd, struct memmig_vma **out, size_t *count);

/*
 * The backing of [addr, addr + len) if the mappings cover all of it with
 * one backing; -EFAULT for a hole, -EINVAL for mixed backings or special
 * mappings (I/O, PFN maps, vdso).
 */
int memmig_vmas_backing(const struct memmig_vma *v, size_t n, uint64_t addr,
			uint64_t len);

/* Whether a mapping is DAX (device DAX, or a file on a DAX file system),
 * asked of the inode it maps (by its path, or /proc/PID/map_files). */
bool memmig_vma_is_dax(int pid, const struct memmig_vma *v);
bool memmig_vma_is_dax_at(int pid, int procfd, const struct memmig_vma *v);
/* A character device of the dax class. */
bool memmig_chr_is_dax(dev_t rdev);
/* /proc/PID/map_files/START-END (pid 0: self). */
void memmig_vma_map_files_path(char *buf, size_t len, int pid, const struct memmig_vma *v);

#endif
