/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A fixed set of threads that take tasks of one batch at a time. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "lib/migrate/pool.h"

struct memmig_pool {
	pthread_mutex_t lock;
	pthread_cond_t more;	/* a batch came, or stop */
	pthread_cond_t idle;	/* the batch's last task ended */
	pthread_t *threads;
	unsigned int nthreads;	/* started */
	bool stop;
	/* The batch: tasks [next, n) are left, busy are running. */
	void (*fn)(void *arg);
	char *args;
	size_t argsz, n, next, busy;
};

/* Lock held: takes the next task and runs it unlocked; false when none. */
static bool take_one(struct memmig_pool *p)
{
	size_t i;

	if (p->next >= p->n)
		return false;
	i = p->next++;
	p->busy++;
	pthread_mutex_unlock(&p->lock);
	p->fn(p->args + i * p->argsz);
	pthread_mutex_lock(&p->lock);
	if (--p->busy == 0 && p->next >= p->n)
		pthread_cond_broadcast(&p->idle);
	return true;
}

static void *pool_thread(void *arg)
{
	struct memmig_pool *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stop)
		if (!take_one(p))
			pthread_cond_wait(&p->more, &p->lock);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int memmig_pool_new(unsigned int nthreads, struct memmig_pool **out)
{
	struct memmig_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->threads = calloc(nthreads ? nthreads : 1, sizeof(*p->threads));
	if (!p->threads) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->more, NULL);
	pthread_cond_init(&p->idle, NULL);
	while (p->nthreads < nthreads &&
	       !pthread_create(&p->threads[p->nthreads], NULL, pool_thread, p))
		p->nthreads++;
	*out = p;
	return 0;
}

void memmig_pool_run(struct memmig_pool *p, void (*fn)(void *arg), void *args,
		     size_t argsz, size_t n)
{
	if (!p) {
		for (size_t i = 0; i < n; i++)
			fn((char *)args + i * argsz);
		return;
	}
	pthread_mutex_lock(&p->lock);
	p->fn = fn;
	p->args = args;
	p->argsz = argsz;
	p->n = n;
	p->next = 0;
	p->busy = 0;
	/* One piece is the caller's: nobody to wake. */
	if (n > 1)
		pthread_cond_broadcast(&p->more);
	while (take_one(p))
		;
	while (p->busy)
		pthread_cond_wait(&p->idle, &p->lock);
	p->n = 0;
	pthread_mutex_unlock(&p->lock);
}

void memmig_pool_free(struct memmig_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->more);
	pthread_mutex_unlock(&p->lock);
	for (unsigned int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->more);
	pthread_cond_destroy(&p->idle);
	free(p->threads);
	free(p);
}
