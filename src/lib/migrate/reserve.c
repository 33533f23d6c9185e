/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-node reserves of prefaulted 2 MB chunks.  The kernel zeroes every new
 * anonymous page; a VMM that reserves ahead moves that cost out of the
 * migration.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lib/migrate/migrate-private.h"
#include "lib/mm/nodemem.h"

/* Free memory a reserve leaves on its node, as the copy strategy does. */
#define RESERVE_MARGIN (64ULL << 20)

static struct memmig_reserve_pool *pool_of(struct memmig_ctx *ctx, int node,
					   bool create)
{
	struct memmig_reserve_pool *p;

	for (size_t i = 0; i < ctx->npools; i++)
		if (ctx->pools[i].node == node)
			return &ctx->pools[i];
	if (!create)
		return NULL;
	p = realloc(ctx->pools, (ctx->npools + 1) * sizeof(*p));
	if (!p)
		return NULL;
	ctx->pools = p;
	p = &ctx->pools[ctx->npools++];
	*p = (struct memmig_reserve_pool){ .node = node };
	return p;
}

static void pool_release(struct memmig_reserve_pool *p)
{
	for (size_t i = p->next; i < p->n; i++)
		munmap(p->chunks[i], MEMMIG_UNIT_SIZE);
	free(p->chunks);
	p->chunks = NULL;
	p->n = p->cap = p->next = 0;
}

static int pool_add(struct memmig_reserve_pool *p, uint8_t *area, size_t n)
{
	/* Drop the taken ones first, so that the array does not only grow. */
	memmove(p->chunks, p->chunks + p->next, (p->n - p->next) * sizeof(*p->chunks));
	p->n -= p->next;
	p->next = 0;
	if (p->n + n > p->cap) {
		size_t cap = p->n + n;
		void **c = realloc(p->chunks, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		p->chunks = c;
		p->cap = cap;
	}
	for (size_t i = 0; i < n; i++)
		p->chunks[p->n++] = area + i * MEMMIG_UNIT_SIZE;
	return 0;
}

int memmig_ctx_reserve(struct memmig_ctx *ctx, int node, uint64_t len)
{
	struct memmig_reserve_pool *p;
	uint64_t n = len / MEMMIG_UNIT_SIZE + (len % MEMMIG_UNIT_SIZE != 0);
	uint8_t *area;
	int rc = 0;

	if (!ctx)
		return -EINVAL;
	if (memmig_node_free(node) < 0)
		return -ENOENT;
	if (!len) {
		pthread_mutex_lock(&ctx->lock);
		p = pool_of(ctx, node, false);
		if (p)
			pool_release(p);
		pthread_mutex_unlock(&ctx->lock);
		return 0;
	}
	if (n > SIZE_MAX / MEMMIG_UNIT_SIZE)
		return -EINVAL;
	/* Populating more than the node has would wake the OOM killer
	 * (MPOL_BIND), which picks the biggest process: likely this one. */
	if (memmig_node_free(node) < (long long)(n * MEMMIG_UNIT_SIZE + RESERVE_MARGIN))
		return -ENOMEM;
	/* Charged, as the memory it stands in for: a swap moves the charge
	 * with the mapping (MAP_NORESERVE sources do not take from it). */
	area = memmig_map_on_node(n * MEMMIG_UNIT_SIZE, node, true, false, &rc);
	if (!area)
		return rc;
	rc = memmig_populate(area, n * MEMMIG_UNIT_SIZE);
	if (!rc) {
		pthread_mutex_lock(&ctx->lock);
		p = pool_of(ctx, node, true);
		rc = p ? pool_add(p, area, n) : -ENOMEM;
		pthread_mutex_unlock(&ctx->lock);
	}
	if (rc < 0) {
		err(ctx, "reserve of %llu bytes on node %d: %d\n",
		    (unsigned long long)len, node, rc);
		munmap(area, n * MEMMIG_UNIT_SIZE);
	}
	return rc;
}

uint64_t memmig_ctx_reserved(struct memmig_ctx *ctx, int node)
{
	struct memmig_reserve_pool *p;
	uint64_t bytes = 0;

	if (!ctx)
		return 0;
	pthread_mutex_lock(&ctx->lock);
	p = pool_of(ctx, node, false);
	if (p)
		bytes = (uint64_t)(p->n - p->next) * MEMMIG_UNIT_SIZE;
	pthread_mutex_unlock(&ctx->lock);
	return bytes;
}

void *memmig_reserve_take(struct memmig_ctx *ctx, int node, size_t max, size_t *n)
{
	struct memmig_reserve_pool *p;
	uint8_t *run = NULL;

	*n = 0;
	pthread_mutex_lock(&ctx->lock);
	p = pool_of(ctx, node, false);
	/* In address order, and a run at once: workers taking turns would
	 * interleave single chunks, and each break in a run costs the swap
	 * one more mremap. */
	if (p && p->next < p->n) {
		run = p->chunks[p->next++];
		for (*n = 1; *n < max && p->next < p->n &&
		     p->chunks[p->next] == run + *n * MEMMIG_UNIT_SIZE; (*n)++)
			p->next++;
	}
	pthread_mutex_unlock(&ctx->lock);
	return run;
}

void memmig_reserve_put(struct memmig_ctx *ctx, int node, void *run, size_t n)
{
	struct memmig_reserve_pool *p;
	int rc;

	if (!n)
		return;
	pthread_mutex_lock(&ctx->lock);
	p = pool_of(ctx, node, true);
	rc = p ? pool_add(p, run, n) : -ENOMEM;
	pthread_mutex_unlock(&ctx->lock);
	if (rc < 0)
		munmap(run, n * MEMMIG_UNIT_SIZE);
}

void memmig_reserve_free_all(struct memmig_ctx *ctx)
{
	for (size_t i = 0; i < ctx->npools; i++)
		pool_release(&ctx->pools[i]);
	free(ctx->pools);
	ctx->pools = NULL;
	ctx->npools = 0;
}
