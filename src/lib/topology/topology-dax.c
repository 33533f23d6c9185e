/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DAX devices for the topology snapshot, through libdaxctl, loaded when a
 * host has DAX devices at all: linked, it brought eight libraries (libkmod,
 * libudev, libcrypto, ...) into every process of ours, and their loading
 * was most of what starting memmig-cli cost in a guest.  Where it cannot
 * be loaded, sysfs says the same (topology-dax-sysfs.c).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <daxctl/libdaxctl.h>

#include "lib/topology/topology-private.h"

/* The calls we make, from libdaxctl.so.1. */
static struct {
	bool ok;
	__typeof__(daxctl_new) *new_;
	__typeof__(daxctl_unref) *unref;
	__typeof__(daxctl_set_userdata) *set_userdata;
	__typeof__(daxctl_get_userdata) *get_userdata;
	__typeof__(daxctl_set_log_fn) *set_log_fn;
	__typeof__(daxctl_set_log_priority) *set_log_priority;
	__typeof__(daxctl_region_get_first) *region_first;
	__typeof__(daxctl_region_get_next) *region_next;
	__typeof__(daxctl_region_get_id) *region_id;
	__typeof__(daxctl_dev_get_first) *dev_first;
	__typeof__(daxctl_dev_get_next) *dev_next;
	__typeof__(daxctl_dev_get_devname) *devname;
	__typeof__(daxctl_dev_get_size) *size;
	__typeof__(daxctl_dev_get_align) *align;
	__typeof__(daxctl_dev_get_target_node) *target_node;
	__typeof__(daxctl_dev_get_memory) *memory;
	const char *why;	/* not ok: why, said where it failed */
} dx;

/*
 * Not in a process without a program interpreter (AT_BASE 0): a statically
 * linked one (memmig-cli), where glibc's dlopen would bring a second libc
 * in.  sysfs lists the devices there.
 */
static void dx_load(void)
{
	void *h = getauxval(AT_BASE) ? dlopen("libdaxctl.so.1", RTLD_NOW | RTLD_LOCAL) : NULL;
	bool ok = h != NULL;

#define SYM(field, name) (ok = ok && (*(void **)&dx.field = dlsym(h, #name)) != NULL)
	SYM(new_, daxctl_new);
	SYM(unref, daxctl_unref);
	SYM(set_userdata, daxctl_set_userdata);
	SYM(get_userdata, daxctl_get_userdata);
	SYM(set_log_fn, daxctl_set_log_fn);
	SYM(set_log_priority, daxctl_set_log_priority);
	SYM(region_first, daxctl_region_get_first);
	SYM(region_next, daxctl_region_get_next);
	SYM(region_id, daxctl_region_get_id);
	SYM(dev_first, daxctl_dev_get_first);
	SYM(dev_next, daxctl_dev_get_next);
	SYM(devname, daxctl_dev_get_devname);
	SYM(size, daxctl_dev_get_size);
	SYM(align, daxctl_dev_get_align);
	SYM(target_node, daxctl_dev_get_target_node);
	SYM(memory, daxctl_dev_get_memory);
#undef SYM
	dx.ok = ok;
	/* dlerror() is the loading thread's: read here, not by a later scan. */
	if (!ok)
		dx.why = !getauxval(AT_BASE) ? "statically linked" : dlerror();
}

/* Whether the kernel lists any DAX device: none, no libdaxctl needed. */
static bool dax_devices_exist(void)
{
	DIR *d = opendir("/sys/bus/dax/devices");
	struct dirent *e;
	bool any = false;

	while (d && !any && (e = readdir(d)))
		any = e->d_name[0] != '.';
	if (d)
		closedir(d);
	return any;
}

/* libdaxctl prints to stderr by default; the library must not. */
__attribute__((format(printf, 6, 0))) static void
dax_log(struct daxctl_ctx *dctx, int priority, const char *file, int line,
	const char *fn, const char *format, va_list args)
{
	struct memmig_ctx *ctx = dx.get_userdata(dctx);

	if (ctx && ctx->log_fn && priority <= memmig_ctx_get_log_priority(ctx))
		ctx->log_fn(ctx, ctx->log_data, priority, file, line, fn,
			    format, args);
}

/*
 * Whether a DAX device is CXL memory, as sysfs shows it: one of the devices
 * above it (the CXL root, the nvdimm bridge of a CXL pmem region) is on
 * the kernel's CXL bus.
 */
bool memmig_topo_dax_on_cxl(const char *name)
{
	char path[PATH_MAX], link[PATH_MAX], *real, *slash;
	bool cxl = false;

	snprintf(path, sizeof(path), "/sys/bus/dax/devices/%s", name);
	real = realpath(path, NULL);
	while (real && !cxl && (slash = strrchr(real, '/')) && slash > real &&
	       strcmp(real, "/sys/devices")) {
		ssize_t n;

		snprintf(path, sizeof(path), "%s/subsystem", real);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			const char *bus;

			link[n] = '\0';
			bus = strrchr(link, '/');
			cxl = !strcmp(bus ? bus + 1 : link, "cxl");
		}
		*slash = '\0';
	}
	free(real);
	return cxl;
}

static void dax_info_fill(struct memmig_ctx *ctx, struct daxctl_region *region,
			  struct daxctl_dev *dev, struct memmig_dax_info *d)
{
	const char *name = dx.devname(dev);

	memset(d, 0, sizeof(*d));
	d->sz = sizeof(*d);
	if ((size_t)snprintf(d->dev, sizeof(d->dev), "%s", name ? name : "?") >=
	    sizeof(d->dev))
		warn(ctx, "DAX device name %s truncated\n", name);
	d->size = dx.size(dev);
	d->align = dx.align(dev);
	d->target_node = dx.target_node(dev);
	if (d->target_node < 0)
		d->target_node = -1;
	/* A memory object exists only while the kmem driver owns the device. */
	d->mode = dx.memory(dev) ? 1 : 0;
	d->region_id = dx.region_id(region);
	d->flags = name && memmig_topo_dax_on_cxl(name) ? MEMMIG_DAX_F_CXL : 0;
}

/* Appends one device, growing the array geometrically (both lists'). */
int memmig_topo_dax_push(struct memmig_ctx *ctx, struct memmig_dax_info **v, unsigned int *n,
			 unsigned int *cap, const struct memmig_dax_info *d)
{
	dbg(ctx, "%s: region %d size %llu align %llu node %d mode %d%s\n",
	    d->dev, d->region_id, (unsigned long long)d->size,
	    (unsigned long long)d->align, d->target_node, d->mode,
	    d->flags & MEMMIG_DAX_F_CXL ? " cxl" : "");
	if (*n == *cap) {
		unsigned int ncap = *cap ? *cap * 2 : 8;
		struct memmig_dax_info *nv = realloc(*v, ncap * sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = *d;
	return 0;
}

int memmig_topo_dax_scan(struct memmig_ctx *ctx, struct memmig_dax_info **out,
			 unsigned int *count)
{
	struct memmig_dax_info *v = NULL, d;
	unsigned int n = 0, cap = 0;
	struct daxctl_region *region;
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct daxctl_ctx *dctx;
	struct daxctl_dev *dev;
	int rc;

	*out = NULL;
	*count = 0;
	if (!dax_devices_exist())
		return 0;
	pthread_once(&once, dx_load);
	if (!dx.ok) {
		dbg(ctx, "libdaxctl.so.1 cannot be loaded (%s): DAX devices from sysfs\n",
		    dx.why ? dx.why : "not found");
		return memmig_topo_dax_scan_sysfs(ctx, out, count);
	}
	rc = dx.new_(&dctx);
	if (rc < 0 || !dctx) {
		/* e.g. no kernel modules directory in a container */
		dbg(ctx, "libdaxctl unavailable (%d): DAX devices from sysfs\n", rc);
		return memmig_topo_dax_scan_sysfs(ctx, out, count);
	}
	dx.set_userdata(dctx, ctx);
	dx.set_log_fn(dctx, dax_log);
	dx.set_log_priority(dctx, memmig_ctx_get_log_priority(ctx));

	rc = 0;
	for (region = dx.region_first(dctx); region; region = dx.region_next(region)) {
		for (dev = dx.dev_first(region); dev; dev = dx.dev_next(dev)) {
			dax_info_fill(ctx, region, dev, &d);
			rc = memmig_topo_dax_push(ctx, &v, &n, &cap, &d);
			if (rc < 0)
				goto out;
		}
	}
out:
	dx.unref(dctx);
	if (rc < 0) {
		free(v);
		return rc;
	}
	*out = v;
	*count = n;
	return 0;
}
