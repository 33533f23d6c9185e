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
	size_t next;		/* units [first, next) are claimed */
	size_t at;		/* the worker's unit */
	bool stop;
	int *rc;		/* per unit: its result */
	bool *ready;		/* per unit: rc is its result */
	memmig_prep_fn claim, prepare;
	void *arg;
};

/*
 * Claims the next unit within the window and prepares it, unlocked while
 * it does: a populate takes ~100 us a unit.  Called locked; false when
 * there is none to claim.
 */
static bool prep_one(struct memmig_prep *p)
{
	size_t i = p->next;
	int rc;

	if (i >= p->last || i >= p->at + p->window)
		return false;
	p->next++;
	rc = p->claim(p->arg, i);
	if (!rc) {
		pthread_mutex_unlock(&p->lock);
		rc = p->prepare(p->arg, i);
		pthread_mutex_lock(&p->lock);
	}
	p->rc[i - p->first] = rc;
	p->ready[i - p->first] = true;
	pthread_cond_broadcast(&p->cond);
	return true;
}

static void *prep_main(void *arg)
{
	struct memmig_prep *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stop && p->next < p->last)
		if (!prep_one(p))
			pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void prep_free(struct memmig_prep *p)
{
	free(p->rc);
	free(p->ready);
	free(p);
}

int memmig_prep_start(size_t first, size_t last, size_t window, memmig_prep_fn claim,
		      memmig_prep_fn prepare, void *arg, struct memmig_prep **out)
{
	struct memmig_prep *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->rc = malloc((last - first) * sizeof(*p->rc));
	p->ready = calloc(last - first, sizeof(*p->ready));
	if (!p->rc || !p->ready) {
		prep_free(p);
		return -ENOMEM;
	}
	p->first = p->next = p->at = first;
	p->last = last;
	p->window = window ? window : 1;	/* the worker's own unit, at least */
	p->claim = claim;
	p->prepare = prepare;
	p->arg = arg;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (pthread_create(&p->thread, NULL, prep_main, p)) {
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->cond);
		prep_free(p);
		return -EAGAIN;
	}
	*out = p;
	return 0;
}

/* While unit i is not ready, the worker prepares what the helper has not
 * claimed (unit i itself, where the helper is behind) rather than idle. */
int memmig_prep_wait(struct memmig_prep *p, size_t i)
{
	int rc;

	pthread_mutex_lock(&p->lock);
	p->at = i;
	pthread_cond_broadcast(&p->cond);
	while (!p->ready[i - p->first])
		if (!prep_one(p))
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
	prep_free(p);
}
