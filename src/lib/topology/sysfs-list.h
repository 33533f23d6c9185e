/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sysfs attributes and the kernel's list format ("0-3,8,10-11"). */
#ifndef MEMMIG_SYSFS_LIST_H
#define MEMMIG_SYSFS_LIST_H

#include <stdbool.h>

#include "memmig.h"

#define LONG_BITS (8 * sizeof(unsigned long))
#define BITMAP_LONGS(n) (((n) + LONG_BITS - 1) / LONG_BITS)

void memmig_bit_set(unsigned long *bits, unsigned int i);
bool memmig_bit_test(const unsigned long *bits, unsigned int i);
/* One decimal number below limit at *s, advancing *s; no sign, no
 * overflow: -EINVAL or -ERANGE. */
int memmig_parse_uint(const char **s, unsigned int limit, unsigned int *out);
/* A whole attribute as a new string; bounded. */
int memmig_sysfs_read(const char *path, char **out);
/* Parses a list into a zeroed bitmap of limit bits: -ERANGE for ids at or
 * beyond limit, -EINVAL for anything else unexpected. */
int memmig_list_parse(const char *s, unsigned long *bits, unsigned int limit);
/* Reads a list attribute into a new bitmap of limit bits. */
int memmig_sysfs_read_list(struct memmig_ctx *ctx, const char *path,
			   unsigned int limit, unsigned long **out);
/* The set bits as a new ascending array (NULL when empty). */
int memmig_bitmap_to_array(const unsigned long *bits, unsigned int limit,
			   int **out, unsigned int *count);

#endif
