/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A process's mappings and resident bytes per node (numa-usage.h), from
 * its /proc/PID/numa_maps: each line's N<node>=<pages> times the line's
 * kernelpagesize_kB.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/numa-usage.h"

/* The kernel writes a path's space, tab, newline and backslash as \ooo
 * (seq_file's escape): back to themselves, in place. */
static void unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* One line, cut up in place ("7f00 default file=/x anon=3 N0=3 ..."). */
static void parse_line(char *line, struct util_numa_map *m)
{
	char *save, *tok = strtok_r(line, " \n", &save);

	memset(m, 0, sizeof(*m));
	m->kind = "anon";
	m->path = "";
	m->page_size = 4096;
	m->start = tok ? strtoull(tok, NULL, 16) : 0;
	while (tok && (tok = strtok_r(NULL, " \n", &save))) {
		char *end;

		if (tok[0] == 'N' && tok[1] >= '0' && tok[1] <= '9') {
			long node = strtol(tok + 1, &end, 10);

			if (*end == '=' && node >= 0 && node < UTIL_USAGE_NODES &&
			    m->n < UTIL_NUMA_MAP_NODES) {
				m->node[m->n] = (int)node;
				m->pages[m->n++] = strtoull(end + 1, NULL, 10);
			}
		} else if (!strncmp(tok, "kernelpagesize_kB=", 18)) {
			m->page_size = strtoull(tok + 18, NULL, 10) * 1024;
		} else if (!strncmp(tok, "file=", 5)) {
			m->kind = "file";
			m->path = tok + 5;
			unescape(tok + 5);
		} else if (!strcmp(tok, "heap") || !strcmp(tok, "stack") || !strcmp(tok, "huge")) {
			m->kind = tok;
		}
	}
	/* A hugetlbfs file is "huge" and "file=" both: its pages say more. */
	if (m->page_size > 4096 && !strcmp(m->kind, "file"))
		m->kind = "huge";
}

int util_numa_maps_each(int pid, int (*fn)(const struct util_numa_map *m, void *opaque),
			void *opaque)
{
	struct util_numa_map m;
	char path[64], *line = NULL;
	size_t cap = 0;
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/numa_maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	/* getline: a mapping's path may be long, and its N fields follow it. */
	while (!ret && getline(&line, &cap, f) > 0) {
		parse_line(line, &m);
		ret = fn(&m, opaque);
	}
	if (!ret && ferror(f))
		ret = -EIO;
	free(line);
	fclose(f);
	return ret;
}

static int add_map(const struct util_numa_map *m, void *opaque)
{
	struct util_numa_usage *u = opaque;

	for (unsigned int i = 0; i < m->n; i++)
		u->bytes[m->node[i]] += m->pages[i] * m->page_size;
	return 0;
}

int util_numa_usage_read(int pid, struct util_numa_usage *u)
{
	memset(u, 0, sizeof(*u));
	return util_numa_maps_each(pid, add_map, u);
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
