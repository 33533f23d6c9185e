/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A process's resident bytes per node (numa-usage.h): the sum over its
 * /proc/PID/numa_maps lines of N<node>=<pages> times the line's
 * kernelpagesize_kB.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/numa-usage.h"

static void add_line(char *line, struct util_numa_usage *u)
{
	unsigned long long pages[16];
	int nodes[16], n = 0;
	unsigned long long kb = 4;
	char *save, *tok;

	for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		char *end;

		if (tok[0] == 'N' && tok[1] >= '0' && tok[1] <= '9' && n < 16) {
			long node = strtol(tok + 1, &end, 10);

			if (*end == '=' && node >= 0 && node < UTIL_USAGE_NODES) {
				nodes[n] = (int)node;
				pages[n++] = strtoull(end + 1, NULL, 10);
			}
		} else if (!strncmp(tok, "kernelpagesize_kB=", 18)) {
			kb = strtoull(tok + 18, NULL, 10);
		}
	}
	for (int i = 0; i < n; i++)
		u->bytes[nodes[i]] += pages[i] * kb * 1024;
}

int util_numa_usage_read(int pid, struct util_numa_usage *u)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int ret = 0;
	FILE *f;

	memset(u, 0, sizeof(*u));
	snprintf(path, sizeof(path), "/proc/%d/numa_maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	/* getline: a mapping's path may be long, and its N fields follow it. */
	while (getline(&line, &cap, f) > 0)
		add_line(line, u);
	if (ferror(f))
		ret = -EIO;
	free(line);
	fclose(f);
	return ret;
}

uint64_t util_numa_usage_moved(const struct util_numa_usage *before,
			       const struct util_numa_usage *after)
{
	uint64_t gained = 0, lost = 0;

	for (int n = 0; n < UTIL_USAGE_NODES; n++)
		if (after->bytes[n] > before->bytes[n])
			gained += after->bytes[n] - before->bytes[n];
		else
			lost += before->bytes[n] - after->bytes[n];
	return gained < lost ? gained : lost;
}

uint64_t util_numa_usage_on(const struct util_numa_usage *u, int node)
{
	return node >= 0 && node < UTIL_USAGE_NODES ? u->bytes[node] : 0;
}

void util_numa_usage_mark(const struct util_numa_usage *u, int node,
			  struct util_numa_mark *m)
{
	m->on = util_numa_usage_on(u, node);
	m->off = 0;
	for (int n = 0; n < UTIL_USAGE_NODES; n++)
		if (n != node)
			m->off += u->bytes[n];
}

uint64_t util_numa_usage_arrived(const struct util_numa_usage *u, int node,
				 const struct util_numa_mark *m)
{
	struct util_numa_mark now;
	uint64_t gained, lost;

	util_numa_usage_mark(u, node, &now);
	gained = now.on > m->on ? now.on - m->on : 0;
	lost = m->off > now.off ? m->off - now.off : 0;
	return gained < lost ? gained : lost;
}

uint64_t util_numa_usage_kernel_share(const struct util_numa_usage *u, int node,
				      const struct util_numa_mark *m, uint64_t memmig,
				      uint64_t narrow)
{
	uint64_t arrived = util_numa_usage_arrived(u, node, m);

	return arrived > memmig + narrow ? arrived - memmig - narrow : 0;
}
