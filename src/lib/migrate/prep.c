/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A worker's destinations prepared ahead on a helper thread (prep.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "lib/migrate/prep.h"

struct memmig_prep {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a result came, the worker moved, or stop */
	pthread_t thread;
	size_t first, last, window;
	size_t done;		/* units [first, done) have their result */
	size_t at;		/* the worker's unit */
	bool stop;
	int *rc;		/* per unit: the helper's result */
	memmig_prep_fn fn;
	void *arg;
};

static void *prep_main(void *arg)
{
	struct memmig_prep *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stop && p->done < p->last) {
		size_t i = p->done;

		if (i >= p->at + p->window) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		/* Unlocked: a populate takes ~100 us a unit. */
		p->rc[i - p->first] = p->fn(p->arg, i);
		pthread_mutex_lock(&p->lock);
		p->done++;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int memmig_prep_start(size_t first, size_t last, size_t window,
		      memmig_prep_fn fn, void *arg, struct memmig_prep **out)
{
	struct memmig_prep *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p || !(p->rc = malloc((last - first) * sizeof(*p->rc)))) {
		free(p);
		return -ENOMEM;
	}
	p->first = p->done = p->at = first;
	p->last = last;
	p->window = window;
	p->fn = fn;
	p->arg = arg;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (pthread_create(&p->thread, NULL, prep_main, p)) {
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->cond);
		free(p->rc);
		free(p);
		return -EAGAIN;
	}
	*out = p;
	return 0;
}

int memmig_prep_wait(struct memmig_prep *p, size_t i)
{
	int rc;

	pthread_mutex_lock(&p->lock);
	p->at = i;
	pthread_cond_broadcast(&p->cond);
	while (p->done <= i)
		pthread_cond_wait(&p->cond, &p->lock);
	rc = p->rc[i - p->first];
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void memmig_prep_stop(struct memmig_prep *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->rc);
	free(p);
}
