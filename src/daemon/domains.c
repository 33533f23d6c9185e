// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TEMP: an in-memory domain registry without libvirt, so that memmigd
 * links and its tests run on the daemon branch.  The libvirt helper's
 * src/daemon/domains.c replaces it at merge; do not extend this one.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "daemon/domains.h"
#include "shared/proto.h"

struct domain {
	char name[PROTO_NAME_MAX], uuid[PROTO_UUID_MAX], nodeset[PROTO_NODESET_MAX];
	int pid, placement;
	struct domain *next;
};

struct domains {
	pthread_mutex_t lock;
	struct domain *list;
};

int domains_new(const char *uri, domains_move_fn move, void *opaque,
		struct domains **out)
{
	struct domains *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	*out = d;
	return 0;
}

void domains_free(struct domains *d)
{
	if (!d)
		return;
	while (d->list) {
		struct domain *x = d->list;

		d->list = x->next;
		free(x);
	}
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static struct domain **find(struct domains *d, const char *name)
{
	struct domain **p;

	for (p = &d->list; *p; p = &(*p)->next)
		if (!strcmp((*p)->name, name))
			break;
	return p;
}

int domains_register(struct domains *d, const char *name, const char *uuid,
		     int pid, const char *nodeset)
{
	struct domain **p, *x;

	pthread_mutex_lock(&d->lock);
	p = find(d, name);
	x = *p ? *p : calloc(1, sizeof(*x));
	if (!x) {
		pthread_mutex_unlock(&d->lock);
		return -ENOMEM;
	}
	snprintf(x->name, sizeof(x->name), "%s", name);
	snprintf(x->uuid, sizeof(x->uuid), "%s", uuid ? uuid : "");
	snprintf(x->nodeset, sizeof(x->nodeset), "%s", nodeset ? nodeset : "");
	x->pid = pid;
	x->placement = -1;
	if (!*p)
		*p = x;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

int domains_unregister(struct domains *d, const char *name)
{
	struct domain **p, *x;

	pthread_mutex_lock(&d->lock);
	p = find(d, name);
	x = *p;
	if (x)
		*p = x->next;
	pthread_mutex_unlock(&d->lock);
	free(x);
	return x ? 0 : -ENOENT;
}

int domains_resolve(struct domains *d, const char *name, int *pid)
{
	struct domain *x;

	pthread_mutex_lock(&d->lock);
	x = *find(d, name);
	if (x)
		*pid = x->pid;
	pthread_mutex_unlock(&d->lock);
	return x ? 0 : -ENOENT;
}

struct json_object *domains_list_json(struct domains *d)
{
	struct json_object *a = json_object_new_array();

	pthread_mutex_lock(&d->lock);
	for (struct domain *x = d->list; x; x = x->next) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "name", json_object_new_string(x->name));
		json_object_object_add(o, "uuid", json_object_new_string(x->uuid));
		json_object_object_add(o, "pid", json_object_new_int(x->pid));
		json_object_object_add(o, "nodeset", json_object_new_string(x->nodeset));
		json_object_object_add(o, "placement", x->placement < 0 ? NULL :
				       json_object_new_int(x->placement));
		json_object_object_add(o, "source", json_object_new_string("hook"));
		json_object_array_add(a, o);
	}
	pthread_mutex_unlock(&d->lock);
	return a;
}

void domains_job_done(struct domains *d, const char *name, int to_node,
		      int result, unsigned long long bytes_moved)
{
	struct domain *x;

	pthread_mutex_lock(&d->lock);
	x = *find(d, name);
	if (x && !result)
		x->placement = to_node;
	pthread_mutex_unlock(&d->lock);
}
