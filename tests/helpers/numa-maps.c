/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where this process's pages are, as the kernel's /proc/self/numa_maps says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numa-maps.h"

uint64_t numa_maps_pages(const void *addr, size_t len, int node)
{
	uintptr_t from = (uintptr_t)addr, to = from + len;
	char line[1024], key[16];
	uint64_t total = 0;
	FILE *f = fopen("/proc/self/numa_maps", "re");

	snprintf(key, sizeof(key), " N%d=", node);
	while (f && fgets(line, sizeof(line), f)) {
		uintptr_t start = strtoull(line, NULL, 16);
		char *n = strstr(line, key), *k = strstr(line, "kernelpagesize_kB=");
		uint64_t kb = k ? strtoull(k + strlen("kernelpagesize_kB="), NULL, 10) : 4;

		if (start >= from && start < to && n)
			total += strtoull(n + strlen(key), NULL, 10) * (kb / 4);
	}
	if (f)
		fclose(f);
	return total;
}
