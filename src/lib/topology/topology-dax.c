/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* DAX devices for the topology snapshot, through libdaxctl. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <daxctl/libdaxctl.h>

#include "lib/topology/topology-private.h"

/* libdaxctl prints to stderr by default; the library must not. */
__attribute__((format(printf, 6, 0))) static void
dax_log(struct daxctl_ctx *dctx, int priority, const char *file, int line,
	const char *fn, const char *format, va_list args)
{
	struct memmig_ctx *ctx = daxctl_get_userdata(dctx);

	if (ctx && ctx->log_fn && priority <= memmig_ctx_get_log_priority(ctx))
		ctx->log_fn(ctx, ctx->log_data, priority, file, line, fn,
			    format, args);
}

/*
 * Whether a DAX device is CXL memory, as sysfs shows it: one of the devices
 * above it (the CXL root, the nvdimm bridge of a CXL pmem region) is on
 * the kernel's CXL bus.
 */
static bool dax_on_cxl(const char *name)
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
	const char *name = daxctl_dev_get_devname(dev);

	memset(d, 0, sizeof(*d));
	d->sz = sizeof(*d);
	if ((size_t)snprintf(d->dev, sizeof(d->dev), "%s", name ? name : "?") >=
	    sizeof(d->dev))
		warn(ctx, "DAX device name %s truncated\n", name);
	d->size = daxctl_dev_get_size(dev);
	d->align = daxctl_dev_get_align(dev);
	d->target_node = daxctl_dev_get_target_node(dev);
	if (d->target_node < 0)
		d->target_node = -1;
	/* A memory object exists only while the kmem driver owns the device. */
	d->mode = daxctl_dev_get_memory(dev) ? 1 : 0;
	d->region_id = daxctl_region_get_id(region);
	d->flags = name && dax_on_cxl(name) ? MEMMIG_DAX_F_CXL : 0;
}

/* Appends one device, growing the array geometrically. */
static int dax_push(struct memmig_dax_info **v, unsigned int *n,
		    unsigned int *cap, const struct memmig_dax_info *d)
{
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
	struct daxctl_ctx *dctx;
	struct daxctl_dev *dev;
	int rc;

	*out = NULL;
	*count = 0;
	rc = daxctl_new(&dctx);
	if (rc < 0 || !dctx) {
		/* e.g. no kernel modules directory in a container */
		warn(ctx, "libdaxctl unavailable (%d): no DAX devices listed\n",
		     rc);
		return 0;
	}
	daxctl_set_userdata(dctx, ctx);
	daxctl_set_log_fn(dctx, dax_log);
	daxctl_set_log_priority(dctx, memmig_ctx_get_log_priority(ctx));

	rc = 0;
	daxctl_region_foreach(dctx, region) {
		daxctl_dev_foreach(region, dev) {
			dax_info_fill(ctx, region, dev, &d);
			dbg(ctx, "%s: region %d size %llu align %llu node %d mode %d%s\n",
			    d.dev, d.region_id, (unsigned long long)d.size,
			    (unsigned long long)d.align, d.target_node, d.mode,
			    d.flags & MEMMIG_DAX_F_CXL ? " cxl" : "");
			rc = dax_push(&v, &n, &cap, &d);
			if (rc < 0)
				goto out;
		}
	}
out:
	daxctl_unref(dctx);
	if (rc < 0) {
		free(v);
		return rc;
	}
	*out = v;
	*count = n;
	return 0;
}
