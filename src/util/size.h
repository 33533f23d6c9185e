/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The util layer: below libmemmig and the tools alike, prefix util_. */
#ifndef MEMMIG_UTIL_SIZE_H
#define MEMMIG_UTIL_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* "4096", "0x1000", "2K", "2MiB", "1G": -EINVAL or -ERANGE on bad input. */
int util_size_parse(const char *s, size_t *out);
/* Exact, for what is read back (options, configuration): "2 MiB" for
 * exact binary multiples, else "168 B". */
const char *util_size_format(size_t v, char *buf, size_t buflen);
/* For people, the one format of every human output: IEC units, three
 * significant digits ("2.02 GiB", "80.1 MiB", "512 B"); JSON keeps the
 * exact bytes. */
const char *util_size_human(uint64_t v, char *buf, size_t buflen);

#endif
