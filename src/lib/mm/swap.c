/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Giving a copy its source mapping's attributes, then swapping it in. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lib/core/memmig-private.h"
#include "lib/mm/nodemem.h"
#include "lib/mm/swap.h"

/* THP "always": the kernel would give the destination huge pages anyway. */
static bool thp_mode_always(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return strstr(buf, "[always]") != NULL;
}

int memmig_swap_src_read(struct memmig_swap_src *s)
{
	s->thp_always = thp_mode_always();
	return memmig_vmas_read(0, &s->vmas, &s->nvmas);
}

void memmig_swap_src_free(struct memmig_swap_src *s)
{
	free(s->vmas);
	s->vmas = NULL;
	s->nvmas = 0;
}

int memmig_swap_src_readable(struct memmig_ctx *ctx, const struct memmig_swap_src *s,
			     uint64_t addr, uint64_t len)
{
	for (size_t i = 0; i < s->nvmas; i++) {
		const struct memmig_vma *v = &s->vmas[i];

		if (v->end <= addr || v->start >= addr + len || v->readable)
			continue;
		err(ctx, "copy: %#llx-%#llx is not readable; the kernel strategy "
			 "moves it\n", (unsigned long long)v->start,
		    (unsigned long long)v->end);
		return -EACCES;
	}
	return 0;
}

int memmig_swap_src_keepable(struct memmig_ctx *ctx, const struct memmig_swap_src *s,
			     uint64_t addr, uint64_t len)
{
	for (size_t i = 0; i < s->nvmas; i++) {
		const struct memmig_vma *v = &s->vmas[i];

		if (v->end <= addr || v->start >= addr + len || (!v->odd[0] && !v->pkey))
			continue;
		if (v->odd[0])
			err(ctx, "copy: %#llx-%#llx has VmFlags \"%s\", which a copy cannot "
				 "be given; the kernel strategy moves it\n",
			    (unsigned long long)v->start, (unsigned long long)v->end, v->odd);
		else
			err(ctx, "copy: %#llx-%#llx has protection key %d, which a copy "
				 "cannot be given; the kernel strategy moves it\n",
			    (unsigned long long)v->start, (unsigned long long)v->end, v->pkey);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The source mapping that holds addr, or NULL (unmapped since). */
static const struct memmig_vma *vma_at(const struct memmig_swap_src *s, uint64_t addr)
{
	for (size_t i = 0; i < s->nvmas; i++)
		if (s->vmas[i].start <= addr && addr < s->vmas[i].end)
			return &s->vmas[i];
	return NULL;
}

/* The length of the piece of [at, end) that one source mapping holds. */
static uint64_t piece_len(const struct memmig_vma *v, uint64_t at, uint64_t end)
{
	return (v->end < end ? v->end : end) - at;
}

const struct memmig_vma *memmig_swap_vma(const struct memmig_swap_src *s,
					 uint64_t addr, uint64_t len)
{
	const struct memmig_vma *v = vma_at(s, addr);

	return v && v->end >= addr + len ? v : NULL;
}

int memmig_swap_advise(const struct memmig_swap_src *s, uint64_t src,
		       uint64_t len, uint8_t *dst)
{
	uint64_t end = src + len, l;

	for (uint64_t at = src; at < end; at += l) {
		const struct memmig_vma *v = vma_at(s, at);
		int advice;

		if (!v)
			return -EFAULT;
		l = piece_len(v, at, end);
		advice = v->thp_advised ? MADV_HUGEPAGE : v->nohuge ? MADV_NOHUGEPAGE : -1;
		if (advice >= 0 && madvise(dst + (at - src), l, advice))
			return -errno;
	}
	return 0;
}

bool memmig_swap_takes_thp(const struct memmig_swap_src *s, uint64_t src,
			   uint64_t len)
{
	uint64_t end = src + len, l;

	for (uint64_t at = src; at < end; at += l) {
		const struct memmig_vma *v = vma_at(s, at);

		if (!v || v->nohuge || !(v->thp_advised || s->thp_always))
			return false;
		l = piece_len(v, at, end);
	}
	return true;
}

/* madvise(d, l, advice) when the source mapping has it. */
static int advise_if(bool has, uint8_t *d, uint64_t l, int advice)
{
	return has && madvise(d, l, advice) ? -errno : 0;
}

static int dest_attrs(const struct memmig_vma *v, uint8_t *d, uint64_t l)
{
	int prot = (v->readable ? PROT_READ : 0) | (v->writable ? PROT_WRITE : 0) |
		   (v->executable ? PROT_EXEC : 0);
	int rc;

	if (prot != (PROT_READ | PROT_WRITE) && mprotect(d, l, prot))
		return -errno;
	if (v->locked && (v->lock_onfault ? mlock2(d, l, MLOCK_ONFAULT) : mlock(d, l)))
		return -errno;
	/* A child forked after the move must read zeros, as before it. */
	rc = advise_if(v->wipeonfork, d, l, MADV_WIPEONFORK);
	if (!rc)
		rc = advise_if(v->seq_read, d, l, MADV_SEQUENTIAL);
	if (!rc)
		rc = advise_if(v->rand_read, d, l, MADV_RANDOM);
	if (rc)
		return rc;
	if (v->dontfork && madvise(d, l, MADV_DONTFORK))
		return -errno;
	if (v->dontdump && madvise(d, l, MADV_DONTDUMP))
		return -errno;
	if (v->mergeable && madvise(d, l, MADV_MERGEABLE))
		return -errno;
	return 0;
}

int memmig_swap_account(const struct memmig_swap_src *s, uint8_t *dst, uint64_t src,
			uint64_t len, bool dst_noreserve, int node)
{
	uint64_t end = src + len, l;
	int rc = 0;

	for (uint64_t at = src; !rc && at < end; at += l) {
		const struct memmig_vma *v = vma_at(s, at);
		uint8_t *d = dst + (at - src);

		if (!v)
			return -EFAULT;
		l = piece_len(v, at, end);
		if (v->noreserve == dst_noreserve)
			continue;
		if (mmap(d, l, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
			 (v->noreserve ? MAP_NORESERVE : 0), -1, 0) == MAP_FAILED)
			return -errno;
		rc = memmig_bind(d, l, node, 0);
	}
	return rc;
}

bool memmig_swap_noreserve(const struct memmig_swap_src *s, uint64_t addr)
{
	const struct memmig_vma *v = vma_at(s, addr);

	return v && v->noreserve;
}

int memmig_swap_attrs(const struct memmig_swap_src *s, uint8_t *dst, uint64_t src,
		      uint64_t len)
{
	uint64_t end = src + len, l;
	int rc = 0;

	for (uint64_t at = src; !rc && at < end; at += l) {
		const struct memmig_vma *v = vma_at(s, at);

		if (!v)
			return -EFAULT;
		l = piece_len(v, at, end);
		rc = dest_attrs(v, dst + (at - src), l);
	}
	return rc;
}

int memmig_swap_move(const struct memmig_swap_src *s, uint64_t from, uint64_t to,
		     uint64_t src, uint64_t len, uint64_t *moved)
{
	uint64_t end = src + len, l;

	if (moved)
		*moved = 0;
	for (uint64_t at = src; at < end; at += l) {
		const struct memmig_vma *v = vma_at(s, at);

		if (!v)
			return -EFAULT;
		l = piece_len(v, at, end);
		if (mremap((void *)(uintptr_t)(from + (at - src)), l, l,
			   MREMAP_MAYMOVE | MREMAP_FIXED,
			   (void *)(uintptr_t)(to + (at - src))) == MAP_FAILED)
			return -errno;
		if (moved)
			*moved += l;
	}
	return 0;
}

int memmig_swap_in(const struct memmig_swap_src *s, uint8_t *dst, uint64_t src,
		   uint64_t len)
{
	int rc = memmig_swap_attrs(s, dst, src, len);

	return rc ? rc : memmig_swap_move(s, (uintptr_t)dst, src, src, len, NULL);
}
