/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sysfs attributes and the kernel's list format ("0-3,8,10-11"). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/core/memmig-private.h"
#include "lib/topology/sysfs-list.h"

/* A cpulist of 64K CPUs printed one by one still fits. */
#define ATTR_MAX (1u << 20)

void memmig_bit_set(unsigned long *bits, unsigned int i)
{
	bits[i / LONG_BITS] |= 1UL << (i % LONG_BITS);
}

bool memmig_bit_test(const unsigned long *bits, unsigned int i)
{
	return bits[i / LONG_BITS] & (1UL << (i % LONG_BITS));
}

/*
 * Reads a whole sysfs attribute as a string.  Grows the buffer because a
 * cpulist can exceed a page on large machines; bounded all the same.
 */
int memmig_sysfs_read(const char *path, char **out)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nb;
	int fd, rc = 0;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		free(buf);
		return rc;
	}
	for (;;) {
		if (len + 1 == cap) {
			if (cap >= ATTR_MAX) {
				rc = -EFBIG;
				break;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

/* One decimal number below limit; no sign, no overflow. */
int memmig_parse_uint(const char **s, unsigned int limit, unsigned int *out)
{
	const char *p = *s;
	unsigned long v = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v >= limit)
			return -ERANGE;
	}
	*s = p;
	*out = (unsigned int)v;
	return 0;
}

/*
 * Parses a kernel list as sysfs prints it ("0-3,8,10-11\n"; "\n" for an
 * empty set) into a bitmap of limit bits, which must be zeroed.  Ids at or
 * beyond limit give -ERANGE, anything else unexpected -EINVAL.
 */
int memmig_list_parse(const char *s, unsigned long *bits, unsigned int limit)
{
	unsigned int a, b;
	int rc;

	while (isspace((unsigned char)*s))
		s++;
	while (*s) {
		rc = memmig_parse_uint(&s, limit, &a);
		if (rc < 0)
			return rc;
		b = a;
		if (*s == '-') {
			s++;
			rc = memmig_parse_uint(&s, limit, &b);
			if (rc < 0)
				return rc;
			if (b < a)
				return -EINVAL;
		}
		for (unsigned int i = a; i <= b; i++)
			memmig_bit_set(bits, i);
		if (*s == ',' && isdigit((unsigned char)s[1])) {
			s++;
			continue;
		}
		while (isspace((unsigned char)*s))
			s++;
		if (*s)
			return -EINVAL;
	}
	return 0;
}

/* Reads a list attribute into a new bitmap of limit bits. */
int memmig_sysfs_read_list(struct memmig_ctx *ctx, const char *path,
			   unsigned int limit, unsigned long **out)
{
	unsigned long *bits = calloc(BITMAP_LONGS(limit), sizeof(*bits));
	char *text = NULL;
	int rc;

	if (!bits)
		return -ENOMEM;
	rc = memmig_sysfs_read(path, &text);
	if (rc < 0) {
		free(bits);
		return rc;
	}
	rc = memmig_list_parse(text, bits, limit);
	if (rc < 0) {
		err(ctx, "%s: cannot parse \"%.64s\"\n", path, text);
		free(bits);
	} else {
		*out = bits;
	}
	free(text);
	return rc;
}

/* The set bits of a bitmap as an ascending array (NULL when empty).  A
 * word at a time: the CPU bitmaps are 65536 bits, with a handful set. */
int memmig_bitmap_to_array(const unsigned long *bits, unsigned int limit,
			   int **out, unsigned int *count)
{
	unsigned int n = 0, k = 0, words = BITMAP_LONGS(limit);
	unsigned long last = limit % LONG_BITS ? (1UL << (limit % LONG_BITS)) - 1 : ~0UL;
	int *v;

	for (unsigned int w = 0; w < words; w++)
		n += (unsigned int)__builtin_popcountl(bits[w] & (w + 1 < words ? ~0UL : last));
	*out = NULL;
	*count = n;
	if (!n)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (unsigned int w = 0; w < words; w++) {
		unsigned long b = bits[w] & (w + 1 < words ? ~0UL : last);

		for (; b; b &= b - 1)
			v[k++] = (int)(w * LONG_BITS + (unsigned int)__builtin_ctzl(b));
	}
	*out = v;
	return 0;
}
