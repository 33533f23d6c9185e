/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Copying size-prefixed structs across the ABI. */
#include <errno.h>
#include <string.h>

#include "lib/core/memmig-private.h"

#define SZ_MIN (sizeof(size_t) + 1)

int memmig_struct_out(void *out, const void *ours, size_t ours_sz)
{
	size_t sz;

	if (!out)
		return -EINVAL;
	memcpy(&sz, out, sizeof(sz));
	if (sz < SZ_MIN)
		return -EINVAL;
	memcpy((char *)out + sizeof(size_t), (const char *)ours + sizeof(size_t),
	       (sz < ours_sz ? sz : ours_sz) - sizeof(size_t));
	return 0;
}

int memmig_struct_in(void *ours, size_t ours_sz, const void *in)
{
	size_t sz;

	if (!in)
		return -EINVAL;
	memcpy(&sz, in, sizeof(sz));
	if (sz < SZ_MIN)
		return -EINVAL;
	memcpy((char *)ours + sizeof(size_t), (const char *)in + sizeof(size_t),
	       (sz < ours_sz ? sz : ours_sz) - sizeof(size_t));
	return 0;
}
