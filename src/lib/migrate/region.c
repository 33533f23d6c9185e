/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Regions: checked descriptions of memory to migrate, in any process. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/migrate/migrate-private.h"
#include "lib/migrate/placement.h"
#include "lib/mm/proc.h"
#include "lib/mm/smaps.h"

static const char *const backing_names[] = {
	[MEMMIG_BACKING_AUTO] = "auto",	    [MEMMIG_BACKING_ANON] = "anonymous",
	[MEMMIG_BACKING_SHMEM] = "shmem",   [MEMMIG_BACKING_HUGETLB] = "hugetlb",
	[MEMMIG_BACKING_FILE] = "file",	    [MEMMIG_BACKING_DAX] = "dax",
};

const char *memmig_backing_name(int backing)
{
	if (backing < 0 || backing > MEMMIG_BACKING_DAX)
		return "special";
	return backing_names[backing];
}

/* May this process move pid's pages?  Asks the kernel with a query
 * (through procfd, the caller's pin, when it is >= 0: memmig_pin). */
static int region_probe(int pid, int procfd, uint64_t addr)
{
	struct memmig_pin pin = { .procfd = procfd };
	int status, rc = memmig_pin_call_before(&pin);
	void *page = (void *)(uintptr_t)addr;

	if (!rc)
		rc = (int)memmig_pin_call_after(&pin, memmig_sys_move_pages(pid, 1, &page,
									   NULL, &status, 0));
	return rc < 0 ? rc : 0;
}

/* What a read or a probe of another process answered, in the library's
 * words: -ESRCH when it is gone; -EPERM, not the -EACCES of its /proc
 * files, when this process may not move it (memmigd says EPERM too). */
static int region_err(int pid, int procfd, int rc)
{
	rc = memmig_proc_err_at(pid, procfd, rc);
	return rc == -EACCES && pid ? -EPERM : rc;
}

static int region_check(struct memmig_ctx *ctx, struct memmig_region_desc *d,
			const struct memmig_vma *vmas, size_t nvmas)
{
	int backing = memmig_vmas_backing(vmas, nvmas, d->addr, d->len);

	if (backing == -EFAULT) {
		err(ctx, "region %#llx+%#llx of pid %d: not all of it is mapped\n",
		    (unsigned long long)d->addr, (unsigned long long)d->len, d->pid);
		return -EFAULT;
	}
	if (backing < 0) {
		err(ctx, "region %#llx+%#llx of pid %d: spans mappings of different "
			 "kinds, or special (I/O, PFN) mappings\n",
		    (unsigned long long)d->addr, (unsigned long long)d->len, d->pid);
		return -EINVAL;
	}
	if (d->backing != MEMMIG_BACKING_AUTO && d->backing != backing) {
		err(ctx, "region %#llx: registered as %s but the mapping is %s\n",
		    (unsigned long long)d->addr, memmig_backing_name(d->backing),
		    memmig_backing_name(backing));
		return -EINVAL;
	}
	d->backing = backing;
	return 0;
}

/*
 * Device memory gets its descriptor table at registration (lazy: a 1 GiB
 * chunk's descriptors on first use), when one file maps the region
 * linearly; the offsets are the file's or the device's.
 */
static int region_table(struct memmig_region *r, const struct memmig_vma *v, size_t n)
{
	const struct memmig_region_desc *d = &r->desc;
	const struct memmig_vma *first = NULL;
	struct memmig_desc_opts o = { .sz = sizeof(o), .len = d->len,
				      .flags = MEMMIG_DESC_LAZY };

	for (size_t i = 0; i < n; i++) {
		if (v[i].end <= d->addr || v[i].start >= d->addr + d->len)
			continue;
		if (!first)
			first = &v[i];
		else if (v[i].inode != first->inode || v[i].dev_major != first->dev_major ||
			 v[i].dev_minor != first->dev_minor ||
			 v[i].offset - first->offset != v[i].start - first->start)
			return 0;	/* not one linear file range: no table */
	}
	if (!first)
		return 0;
	o.base = first->offset + (d->addr - first->start);
	/* The device, as the kernel encodes a dev_t (MKDEV). */
	o.node = first->dev_major << 20 | first->dev_minor;
	return memmig_desc_table_new(r->ctx, &o, &r->table);
}

/* self: d's process is this one (pid 0 or getpid(), which the caller
 * asked once for all its regions). */
static int region_alloc(struct memmig_ctx *ctx, const struct memmig_region_desc *d,
			bool self, int procfd, struct memmig_region **out)
{
	struct memmig_region *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->refcount = 1;
	r->ctx = memmig_ctx_ref(ctx);
	r->desc = *d;
	r->self = self;
	r->procfd = r->self ? -1 : procfd;
	*out = r;
	return 0;
}

/* The mappings of pid, read for regions: -EPERM (said) when this process
 * may not read them. */
static int read_vmas(struct memmig_ctx *ctx, int pid, int procfd, struct memmig_vma **vmas,
		     size_t *n)
{
	int rc = region_err(pid, procfd, memmig_vmas_read_at(pid, procfd, vmas, n));

	if (rc == -EPERM)
		err(ctx, "pid %d: not permitted to read its mappings (needs "
			 "CAP_SYS_PTRACE or the same user)\n", pid);
	else if (rc < 0)
		err(ctx, "pid %d: cannot read its mappings: %s\n", pid, strerror(-rc));
	return rc;
}

static int desc_check(struct memmig_ctx *ctx, const struct memmig_region_desc *d, int procfd)
{
	if (!d->len || (d->addr | d->len) % MEMMIG_PAGE_SIZE || d->addr + d->len < d->addr ||
	    d->pid < 0 || d->backing < MEMMIG_BACKING_AUTO ||
	    d->backing > MEMMIG_BACKING_DAX) {
		err(ctx, "region %#llx+%#llx: address and length must be page "
			 "aligned and non-empty\n",
		    (unsigned long long)d->addr, (unsigned long long)d->len);
		return -EINVAL;
	}
	if (d->pid && (procfd >= 0 ? !memmig_proc_pinned(procfd) :
		       kill(d->pid, 0) && errno == ESRCH)) {
		err(ctx, "pid %d: no such process\n", d->pid);
		return -ESRCH;
	}
	return 0;
}

/* memmig_region_new() of a checked description on mappings read already
 * (a move's ranges: one read of smaps for all of them, not one each). */
static int region_new_in(struct memmig_ctx *ctx, struct memmig_region_desc d, int procfd,
			 const struct memmig_vma *vmas, size_t nvmas, struct memmig_region **out)
{
	int rc = region_check(ctx, &d, vmas, nvmas);

	if (!rc && d.pid) {
		rc = region_err(d.pid, procfd, region_probe(d.pid, procfd, d.addr));
		if (rc == -EPERM)
			err(ctx, "pid %d: not permitted to move its pages (needs "
				 "CAP_SYS_NICE or the same user)\n", d.pid);
	}
	if (!rc)
		rc = region_alloc(ctx, &d, d.pid == 0 || d.pid == getpid(), procfd, out);
	if (!rc && d.backing == MEMMIG_BACKING_DAX && (*out)->self) {
		rc = region_table(*out, vmas, nvmas);
		if (rc) {
			memmig_region_unref(*out);
			*out = NULL;
		}
	}
	/* Ended after its mappings were read: the check or the probe failed
	 * in its own words. */
	return region_err(d.pid, procfd, rc);
}

int memmig_region_new(struct memmig_ctx *ctx, const struct memmig_region_desc *desc,
		      struct memmig_region **out)
{
	struct memmig_region_desc d = { .sz = sizeof(d) };
	struct memmig_vma *vmas = NULL;
	size_t nvmas = 0;
	int rc;

	if (!ctx || !out || memmig_struct_in(&d, sizeof(d), desc) < 0)
		return -EINVAL;
	rc = desc_check(ctx, &d, -1);
	if (!rc)
		rc = read_vmas(ctx, d.pid, -1, &vmas, &nvmas);
	if (!rc)
		rc = region_new_in(ctx, d, -1, vmas, nvmas, out);
	free(vmas);
	return rc;
}

int memmig_region_new_ranges(struct memmig_ctx *ctx, int pid, int procfd,
			     const struct memmig_range *r, unsigned int n,
			     struct memmig_region **list, unsigned int *made)
{
	struct memmig_vma *vmas = NULL;
	size_t nvmas = 0;
	int rc = 0;

	*made = 0;
	for (unsigned int i = 0; !rc && i < n; i++) {
		struct memmig_region_desc d = {
			.sz = sizeof(d), .pid = pid, .addr = r[i].addr, .len = r[i].len,
		};

		rc = desc_check(ctx, &d, procfd);
		if (!rc && !vmas)
			rc = read_vmas(ctx, pid, procfd, &vmas, &nvmas);
		if (!rc)
			rc = region_new_in(ctx, d, procfd, vmas, nvmas, &list[i]);
		if (!rc)
			(*made)++;
	}
	free(vmas);
	return rc;
}

struct memmig_region *memmig_region_ref(struct memmig_region *r)
{
	if (r)
		__atomic_add_fetch(&r->refcount, 1, __ATOMIC_RELAXED);
	return r;
}

void memmig_region_unref(struct memmig_region *r)
{
	if (r && __atomic_sub_fetch(&r->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
		memmig_desc_table_unref(r->table);
		memmig_ctx_unref(r->ctx);
		free(r);
	}
}

int memmig_region_get_desc(const struct memmig_region *r,
			   struct memmig_region_desc *out)
{
	if (!r)
		return -EINVAL;
	return memmig_struct_out(out, &r->desc, sizeof(r->desc));
}

int memmig_region_get_table(const struct memmig_region *r,
			    struct memmig_desc_table **out)
{
	if (!r || !out)
		return -EINVAL;
	if (!r->table)
		return -ENOENT;
	*out = memmig_desc_table_ref(r->table);
	return 0;
}

int memmig_region_list_pid(struct memmig_ctx *ctx, int pid,
			   struct memmig_region ***out, unsigned int *count)
{
	return memmig_region_list_at(ctx, pid, -1, out, count);
}

int memmig_region_list_at(struct memmig_ctx *ctx, int pid, int procfd,
			  struct memmig_region ***out, unsigned int *count)
{
	struct memmig_region **list = NULL;
	struct memmig_vma *vmas = NULL;
	size_t nvmas = 0, n = 0;
	bool self;
	int rc;

	if (!ctx || !out || !count || pid < 0)
		return -EINVAL;
	self = !pid || pid == getpid();
	if (self)
		procfd = -1;
	rc = memmig_vmas_read_at(pid, procfd, &vmas, &nvmas);
	if (rc < 0)
		return region_err(pid, procfd, rc);
	list = calloc(nvmas ? nvmas : 1, sizeof(*list));
	if (!list)
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < nvmas; i++) {
		struct memmig_region_desc d = {
			.sz = sizeof(d), .pid = pid, .addr = vmas[i].start,
			.len = vmas[i].end - vmas[i].start, .backing = vmas[i].backing,
		};

		/* Guard pages and special mappings have nothing to move;
		 * another process's DAX only that process can move. */
		if (vmas[i].backing == MEMMIG_BACKING_SPECIAL || !vmas[i].readable ||
		    (vmas[i].backing == MEMMIG_BACKING_DAX && !self))
			continue;
		rc = region_alloc(ctx, &d, self, procfd, &list[n]);
		if (!rc)
			n++;
		if (!rc && d.backing == MEMMIG_BACKING_DAX && list[n - 1]->self)
			rc = region_table(list[n - 1], &vmas[i], 1);
	}
	if (!rc && pid && n)
		rc = region_probe(pid, procfd, list[0]->desc.addr);
	free(vmas);
	if (rc < 0) {
		memmig_region_list_free(list, n);
		return region_err(pid, procfd, rc);
	}
	*out = list;
	*count = n;
	return 0;
}

void memmig_region_list_free(struct memmig_region **list, unsigned int count)
{
	for (unsigned int i = 0; list && i < count; i++)
		memmig_region_unref(list[i]);
	free(list);
}
