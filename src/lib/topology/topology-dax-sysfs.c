/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * DAX devices as sysfs lists them, where libdaxctl cannot be loaded: a
 * statically linked memmig-cli (which has no dynamic loader to load it
 * with), or a host without the library.  The same attributes libdaxctl
 * reads: the device's size, align and target_node, its region's id, and
 * the kmem driver bound for a device onlined as system RAM.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/topology/sysfs-list.h"
#include "lib/topology/topology-private.h"

#define DAX_DEVICES "/sys/bus/dax/devices"

/* A decimal or 0x attribute of dir; def when absent or not a number. */
static long long attr_num(const char *dir, const char *name, long long def)
{
	char path[PATH_MAX], *text = NULL, *end;
	long long v = def;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) < sizeof(path) &&
	    memmig_sysfs_read(path, &text) == 0) {
		v = strtoll(text, &end, 0);
		if (end == text)
			v = def;
	}
	free(text);
	return v;
}

/* Bound to the kmem driver: onlined as system RAM. */
static bool dev_kmem(const char *dir)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t n;
	const char *base;

	if ((size_t)snprintf(path, sizeof(path), "%s/driver", dir) >= sizeof(path))
		return false;
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	base = strrchr(link, '/');
	return !strcmp(base ? base + 1 : link, "kmem");
}

static void dev_fill(const char *name, struct memmig_dax_info *d)
{
	char dir[PATH_MAX], region[PATH_MAX];
	const char *dot = strchr(name, '.');
	long long id, align;

	memset(d, 0, sizeof(*d));
	d->sz = sizeof(*d);
	snprintf(d->dev, sizeof(d->dev), "%s", name);
	/* The region's attributes are its device's, under dax_region/
	 * (names from readdir: both paths fit). */
	if ((size_t)snprintf(dir, sizeof(dir), DAX_DEVICES "/%s", name) >= sizeof(dir) ||
	    (size_t)snprintf(region, sizeof(region), "%s/../dax_region", dir) >= sizeof(region))
		return;
	d->size = (uint64_t)attr_num(dir, "size", 0);
	/* Kernels before the device's own align: its region's. */
	align = attr_num(dir, "align", -1);
	d->align = (uint64_t)(align >= 0 ? align : attr_num(region, "align", 0));
	d->target_node = (int)attr_num(dir, "target_node", -1);
	if (d->target_node < 0)
		d->target_node = -1;
	d->mode = dev_kmem(dir);
	/* Without the attribute, the name's: dax<region>.<instance>. */
	id = attr_num(region, "id", dot && !strncmp(name, "dax", 3) ? atoi(name + 3) : -1);
	d->region_id = id >= 0 && id <= INT_MAX ? (int)id : -1;
	d->flags = memmig_topo_dax_on_cxl(name) ? MEMMIG_DAX_F_CXL : 0;
}

static int by_name(const void *a, const void *b)
{
	const struct memmig_dax_info *x = a, *y = b;

	return strverscmp(x->dev, y->dev);
}

int memmig_topo_dax_scan_sysfs(struct memmig_ctx *ctx, struct memmig_dax_info **out,
			       unsigned int *count)
{
	DIR *dir = opendir(DAX_DEVICES);
	struct memmig_dax_info *v = NULL;
	unsigned int n = 0, cap = 0;
	struct dirent *e;
	int rc = 0;

	*out = NULL;
	*count = 0;
	while (dir && !rc && (e = readdir(dir))) {
		struct memmig_dax_info d;

		if (e->d_name[0] == '.')
			continue;
		dev_fill(e->d_name, &d);
		rc = memmig_topo_dax_push(ctx, &v, &n, &cap, &d);
	}
	if (dir)
		closedir(dir);
	if (rc < 0) {
		free(v);
		return rc;
	}
	/* In name order, region then instance (readdir's is the directory's). */
	if (n)
		qsort(v, n, sizeof(*v), by_name);
	*out = v;	/* NULL when none was pushed */
	*count = n;
	return 0;
}
