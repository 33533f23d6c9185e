/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Worker threads kept for a whole move: every region's job hands its
 * shares to them instead of starting threads of its own, so a move of a
 * thousand mappings runs on as many threads as it has workers.
 */
#ifndef MEMMIG_POOL_H
#define MEMMIG_POOL_H

#include <stddef.h>

struct memmig_pool;

/*
 * nthreads threads besides the caller's (0: none).  Threads that cannot
 * be started are not an error: the caller runs their tasks.  0 or -ENOMEM.
 */
int memmig_pool_new(unsigned int nthreads, struct memmig_pool **out);
/*
 * Runs fn on each of the n elements of args (argsz bytes each) and
 * returns when all are done; the calling thread takes tasks too.  One
 * batch at a time per pool.  pool may be NULL: all on the caller.
 */
void memmig_pool_run(struct memmig_pool *pool, void (*fn)(void *arg),
		     void *args, size_t argsz, size_t n);
void memmig_pool_free(struct memmig_pool *pool);

#endif
