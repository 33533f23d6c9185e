/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sizes with binary suffixes, shared by the library and the tools. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/size.h"

int util_size_parse(const char *s, size_t *out)
{
	unsigned long long v, mult = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return -ERANGE;
	switch (*end) {
	case 'k': case 'K': mult = 1ULL << 10; end++; break;
	case 'm': case 'M': mult = 1ULL << 20; end++; break;
	case 'g': case 'G': mult = 1ULL << 30; end++; break;
	case 't': case 'T': mult = 1ULL << 40; end++; break;
	}
	if (*end == 'i' && mult > 1)
		end++;
	if ((*end == 'B' || *end == 'b'))
		end++;
	if (*end)
		return -EINVAL;
	if (v > SIZE_MAX / mult)
		return -ERANGE;
	*out = (size_t)(v * mult);
	return 0;
}

const char *util_size_format(size_t v, char *buf, size_t buflen)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned int u = 0;

	while (u < 4 && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, buflen, "%zu %s", v, units[u]);
	return buf;
}

const char *util_size_human(uint64_t v, char *buf, size_t buflen)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double d = (double)v;
	unsigned int u = 0;

	while (d >= 1024 && u < 6) {
		d /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, buflen, "%llu B", (unsigned long long)v);
	else	/* three significant digits ("1010 KiB" keeps its four) */
		snprintf(buf, buflen, d < 9.995 ? "%.2f %s" : d < 99.95 ? "%.1f %s" : "%.0f %s",
			 d, units[u]);
	return buf;
}
