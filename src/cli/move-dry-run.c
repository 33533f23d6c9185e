/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli move --dry-run: what a move would move, and how much, without
 * moving anything.  Always in memmig-cli's own process, read-only: the
 * whole process from /proc/PID/numa_maps (util/numa-usage.h), ranges page
 * by page from move_pages(2)'s query (nodes = NULL), which moves nothing.
 * The counts are the pages found on the source nodes (the --from set, else
 * every node) and where each source node's pages would go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/table.h"
#include "util/numa-usage.h"
#include "util/size.h"

#define QUERY_BATCH	1024	/* pages asked of move_pages(2) at once */
#define KINDS		5

static const char *const kinds[KINDS] = { "anon", "heap", "stack", "file", "huge" };

struct dry {
	const struct cli_move_map *map;
	uint64_t pages[UTIL_USAGE_NODES];	/* 4 KiB pages on each node */
	uint64_t kind_pages[KINDS], kind_move[KINDS];
	/* For ranges: the process's mappings (start, kind), ascending. */
	uint64_t *starts;
	unsigned char *kind_of;
	size_t n, cap;
};

static int kind_index(const char *kind)
{
	for (int i = 0; i < KINDS; i++)
		if (!strcmp(kinds[i], kind))
			return i;
	return 0;
}

/* Where pages of node go: a node, or -1 (not a source: left alone). */
static int dest_of(const struct cli_move_map *map, int node)
{
	if (!map->nfrom)
		return map->to[0];
	for (unsigned int i = 0; i < map->nfrom; i++)
		if (map->from[i] == node)
			return map->nto > 1 ? map->to[i] : map->to[0];
	return -1;
}

static void count(struct dry *d, int node, int kind, uint64_t pages)
{
	int to = dest_of(d->map, node);

	if (to < 0)
		return;
	d->pages[node] += pages;
	d->kind_pages[kind] += pages;
	if (to != node)
		d->kind_move[kind] += pages;
}

static int add_whole(const struct util_numa_map *m, void *opaque)
{
	for (unsigned int i = 0; i < m->n; i++)
		count(opaque, m->node[i], kind_index(m->kind), m->pages[i] * (m->page_size / 4096));
	return 0;
}

static int add_start(const struct util_numa_map *m, void *opaque)
{
	struct dry *d = opaque;

	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 256;
		uint64_t *s = realloc(d->starts, cap * sizeof(*s));
		unsigned char *k = s ? realloc(d->kind_of, cap) : NULL;

		if (s)
			d->starts = s;
		if (!k)
			return -ENOMEM;
		d->kind_of = k;
		d->cap = cap;
	}
	d->starts[d->n] = m->start;
	d->kind_of[d->n++] = (unsigned char)kind_index(m->kind);
	return 0;
}

/* The kind of the mapping that holds addr: the last one starting at or
 * below it. */
static int kind_at(const struct dry *d, uint64_t addr)
{
	size_t lo = 0, hi = d->n;

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (d->starts[mid] <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return d->n ? d->kind_of[lo] : 0;
}

/* A range's pages, a batch at a time: each present page counted on its
 * node; absent ones (ENOENT, EFAULT) have nothing to move. */
static int add_range(struct dry *d, int pid, const struct memmig_range *r)
{
	void *pages[QUERY_BATCH];
	int status[QUERY_BATCH];

	for (uint64_t a = r->addr; a < r->addr + r->len; a += QUERY_BATCH * 4096ULL) {
		uint64_t left = (r->addr + r->len - a) / 4096;
		unsigned long n = left < QUERY_BATCH ? (unsigned long)left : QUERY_BATCH;

		for (unsigned long i = 0; i < n; i++)
			pages[i] = (void *)(uintptr_t)(a + i * 4096);
		if (syscall(SYS_move_pages, pid, n, pages, NULL, status, 0) < 0)
			return -errno;
		for (unsigned long i = 0; i < n; i++)
			if (status[i] >= 0 && status[i] < UTIL_USAGE_NODES)
				count(d, status[i], kind_at(d, a + i * 4096), 1);
	}
	return 0;
}

static struct json_object *row(const char *key, struct json_object *id, uint64_t pages)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, key, id);
	json_object_object_add(o, "pages", json_object_new_int64((int64_t)pages));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)(pages * 4096)));
	return o;
}

static struct json_object *plan_json(const struct dry *d, int pid)
{
	struct json_object *o = json_object_new_object();
	struct json_object *nodes = json_object_new_array(), *k = json_object_new_array();
	uint64_t move = 0;

	for (int n = 0; n < UTIL_USAGE_NODES; n++) {
		struct json_object *r;

		if (!d->pages[n])
			continue;
		r = row("node", json_object_new_int(n), d->pages[n]);
		json_object_object_add(r, "to_node", json_object_new_int(dest_of(d->map, n)));
		json_object_array_add(nodes, r);
		if (dest_of(d->map, n) != n)
			move += d->pages[n];
	}
	for (int i = 0; i < KINDS; i++) {
		struct json_object *r;

		if (!d->kind_pages[i])
			continue;
		r = row("kind", json_object_new_string(kinds[i]), d->kind_pages[i]);
		json_object_object_add(r, "pages_to_move",
				       json_object_new_int64((int64_t)d->kind_move[i]));
		json_object_array_add(k, r);
	}
	json_object_object_add(o, "dry_run", json_object_new_boolean(1));
	json_object_object_add(o, "pid", json_object_new_int(pid));
	json_object_object_add(o, "pages_to_move", json_object_new_int64((int64_t)move));
	json_object_object_add(o, "bytes_to_move", json_object_new_int64((int64_t)(move * 4096)));
	json_object_object_add(o, "nodes", nodes);
	json_object_object_add(o, "kinds", k);
	return o;
}

static const struct cli_col node_cols[] = {
	{ "node", 0, true }, { "to node", 0, false }, { "pages", 0, true }, { "size", 0, true },
};
static const struct cli_col kind_cols[] = {
	{ "kind", 0, false }, { "pages", 0, true }, { "size", 0, true },
	{ "pages to move", 0, true },
};

static void print_plan(struct json_object *plan)
{
	struct json_object *nodes = NULL, *k = NULL;
	struct cli_table *t;
	char b[32];

	json_object_object_get_ex(plan, "nodes", &nodes);
	json_object_object_get_ex(plan, "kinds", &k);
	printf("dry run of pid %lld: would move %lld pages (%s); nothing moved\n\n",
	       (long long)cli_json_int(plan, "pid", 0),
	       (long long)cli_json_int(plan, "pages_to_move", 0),
	       util_size_human((uint64_t)cli_json_int(plan, "bytes_to_move", 0), b, sizeof(b)));
	t = cli_table_new(node_cols, sizeof(node_cols) / sizeof(node_cols[0]));
	for (size_t i = 0; i < json_object_array_length(nodes); i++) {
		struct json_object *r = json_object_array_get_idx(nodes, i);
		long long n = cli_json_int(r, "node", -1), to = cli_json_int(r, "to_node", -1);

		cli_table_cell(t, "%lld", n);
		cli_table_cell(t, n == to ? "%lld (stays)" : "%lld", to);
		cli_table_cell(t, "%lld", (long long)cli_json_int(r, "pages", 0));
		cli_table_cell(t, "%s", util_size_human((uint64_t)cli_json_int(r, "bytes", 0),
							b, sizeof(b)));
	}
	cli_table_print(t, stdout);
	putchar('\n');
	t = cli_table_new(kind_cols, sizeof(kind_cols) / sizeof(kind_cols[0]));
	for (size_t i = 0; i < json_object_array_length(k); i++) {
		struct json_object *r = json_object_array_get_idx(k, i);

		cli_table_cell(t, "%s", cli_json_str(r, "kind", "?"));
		cli_table_cell(t, "%lld", (long long)cli_json_int(r, "pages", 0));
		cli_table_cell(t, "%s", util_size_human((uint64_t)cli_json_int(r, "bytes", 0),
							b, sizeof(b)));
		cli_table_cell(t, "%lld", (long long)cli_json_int(r, "pages_to_move", 0));
	}
	cli_table_print(t, stdout);
}

int cli_move_dry_run(int pid, const struct memmig_range *ranges, unsigned int nranges,
		     const struct cli_move_map *map, bool json)
{
	struct dry *d = calloc(1, sizeof(*d));
	int rc = d ? 0 : -ENOMEM;

	if (d)
		d->map = map;
	if (!rc && !nranges)
		rc = util_numa_maps_each(pid, add_whole, d);
	else if (!rc)
		rc = util_numa_maps_each(pid, add_start, d);
	for (unsigned int i = 0; !rc && i < nranges; i++)
		rc = add_range(d, pid, &ranges[i]);
	if (rc == -EACCES || rc == -EPERM) {
		char msg[256];

		/* What the move itself would say (cmd-move.c). */
		proto_perm_message(msg, sizeof(msg), getuid(), getgid(), pid, NULL, NULL);
		cli_json_error_errno(-EPERM);
		cli_error("move: --dry-run: %s\n", msg);
	} else if (rc < 0) {
		cli_json_error_errno(rc);
		cli_error("move: --dry-run: pid %d: %s\n", pid, strerror(-rc));
	} else {
		struct json_object *plan = plan_json(d, pid);

		if (json)
			cli_json_print(plan);
		else {
			print_plan(plan);
			json_object_put(plan);
		}
	}
	if (d) {
		free(d->starts);
		free(d->kind_of);
	}
	free(d);
	return rc < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
