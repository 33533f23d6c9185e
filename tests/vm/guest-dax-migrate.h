/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* guest-dax's migrations (guest-dax-migrate.c). */
#ifndef MEMMIG_GUEST_DAX_MIGRATE_H
#define MEMMIG_GUEST_DAX_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>

#include <memmig.h>

/*
 * DRAM to a file of dir (a DAX mount) and back, to node 2, and to a tmpfs
 * file (the MAP_SYNC fallback).  Returns the number of failed checks
 * (each printed as it happens): guest-check.h's count is per file.
 */
int dax_migrate_fsdax(const char *dir);
/* The same through device DAX, with a region of len bytes: dev is
 * /dev/daxX.Y; live: and the live migrations of guest RAM to it
 * (dax_live_cases()). */
int dax_migrate_devdax(const char *dev, size_t len, bool live);

/* Whether memmig can leave poison markers (UFFDIO_POISON, Linux 6.6): the
 * copy of a page that could not be read then faults as a memory error;
 * without them the page stays where it was. */
bool dax_poison_markers(struct memmig_ctx *ctx);

/* guest-dax-table.c: the DAX region's descriptor table and poisoned pages;
 * the number of failed checks. */
int dax_table_case(struct memmig_ctx *ctx, const char *dir);
/* The same for a device DAX region (no poisoned pages); dev is
 * /dev/daxX.Y. */
int dax_devdax_table_case(struct memmig_ctx *ctx, const char *dev);

/* guest-dax-live.c: a written guest RAM slot live to target (a DAX
 * directory or device); with dir, RAM in a MAP_SYNC file of dir to node 2.
 * The number of failed checks. */
int dax_live_cases(struct memmig_ctx *ctx, const char *target, const char *dir);

#endif
