/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The registry of libvirt domains: what the hook registered and what the
 * libvirt watcher found.  The daemon's loop thread and the watcher's
 * thread both use it, so every entry point takes the lock; nothing slow
 * (no libvirt call, no callback) runs under it.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/domains-private.h"
#include "proto/proto.h"

struct domain_ent {
	char name[PROTO_NAME_MAX];
	char uuid[PROTO_UUID_MAX];
	char nodeset[PROTO_NODESET_MAX];
	int pid;
	unsigned long long start;	/* the pid's start time: reuse check */
	enum domain_source src;
	/* the last job for this domain, if any */
	bool has_job;
	int job_node, job_result;
	unsigned long long job_bytes;
	time_t job_time;
	int placement;			/* node of the last successful move, or -1 */
	struct rebalance rb;		/* the last rebalance (state NONE: none) */
};

struct domains {
	pthread_mutex_t lock;
	struct domain_ent *ents;
	unsigned int n, cap;
	domains_move_fn move;
	domains_tier_fn tier;
	void *opaque;
	struct state *state;		/* NULL: none */
	struct domains_libvirt *lv;	/* NULL: no watcher */
	domains_event_fn event;		/* NULL: none; under lock */
};

static struct domain_ent *find(struct domains *d, const char *name)
{
	for (unsigned int i = 0; i < d->n; i++)
		if (!strcmp(d->ents[i].name, name))
			return &d->ents[i];
	return NULL;
}

/* Lock held: subscribers hear of it (memmigd's events). */
static void tell(struct domains *d, const struct domain_ent *e, const char *state)
{
	if (d->event)
		d->event(d->opaque, e->name, e->pid, state);
}

static void drop(struct domains *d, struct domain_ent *e)
{
	tell(d, e, "unregistered");
	*e = d->ents[--d->n];
}

static struct domain_ent *slot(struct domains *d)
{
	struct domain_ent *ents;
	unsigned int cap;

	if (d->n == d->cap) {
		if (d->cap == DOMAINS_MAX)
			return NULL;
		cap = d->cap ? 2 * d->cap : 16;
		if (cap > DOMAINS_MAX)
			cap = DOMAINS_MAX;
		ents = realloc(d->ents, cap * sizeof(*ents));
		if (!ents)
			return NULL;
		d->ents = ents;
		d->cap = cap;
	}
	return &d->ents[d->n++];
}

/* 8-4-4-4-12 hex digits, as libvirt prints it. */
static bool uuid_valid(const char *s)
{
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
			return false;
	}
	return s[36] == '\0';
}

/* A cpuset list as libvirt writes one: "0-1,3", "^2" exclusions allowed. */
static bool nodeset_valid(const char *s)
{
	size_t len = strnlen(s, PROTO_NODESET_MAX);

	return len < PROTO_NODESET_MAX && strspn(s, "0123456789,-^") == len;
}

/* Whether the entry's process still runs (not a reused pid). */
static bool alive(const struct domain_ent *e)
{
	unsigned long long start;

	return !domains_pid_starttime(e->pid, &start) && start == e->start;
}

static int fill(struct domain_ent *e, const char *name, const char *uuid,
		int pid, unsigned long long start, const char *nodeset,
		enum domain_source src)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->uuid, sizeof(e->uuid), "%s", uuid ? uuid : "");
	snprintf(e->nodeset, sizeof(e->nodeset), "%s", nodeset ? nodeset : "");
	e->pid = pid;
	e->start = start;
	e->src = src;
	e->placement = -1;
	return 0;
}

static int add(struct domains *d, const char *name, const char *uuid, int pid,
	       const char *nodeset, enum domain_source src, bool replace)
{
	unsigned long long start;
	struct domain_ent *e;
	int ret;

	if (!domains_name_valid(name) || pid <= 0 ||
	    (uuid && *uuid && !uuid_valid(uuid)) ||
	    (nodeset && !nodeset_valid(nodeset)))
		return -EINVAL;
	ret = domains_pid_starttime(pid, &start);
	if (ret)
		return ret;

	pthread_mutex_lock(&d->lock);
	e = find(d, name);
	if (e && !replace && alive(e)) {
		ret = -EEXIST;
	} else if (e) {
		fill(e, name, uuid, pid, start, nodeset, src);
	} else {
		e = slot(d);
		ret = e ? fill(e, name, uuid, pid, start, nodeset, src) : -ENOSPC;
	}
	if (!ret)
		tell(d, e, "registered");
	pthread_mutex_unlock(&d->lock);
	return ret;
}

int domains_register(struct domains *d, const char *name, const char *uuid,
		     int pid, const char *nodeset)
{
	/* The hook speaks for the domain as it starts: it always wins. */
	return add(d, name, uuid, pid, nodeset, DOMAIN_SOURCE_HOOK, true);
}

int domains_add(struct domains *d, const char *name, const char *uuid, int pid,
		const char *nodeset, enum domain_source src, bool replace)
{
	int ret = add(d, name, uuid, pid, nodeset, src, replace);

	return ret == -EEXIST ? 0 : ret;
}

int domains_unregister(struct domains *d, const char *name)
{
	struct domain_ent *e;

	pthread_mutex_lock(&d->lock);
	e = find(d, name);
	if (e)
		drop(d, e);
	pthread_mutex_unlock(&d->lock);
	return e ? 0 : -ENOENT;
}

int domains_forget(struct domains *d, const char *name)
{
	struct domain_ent *e;
	int ret = -ENOENT;

	pthread_mutex_lock(&d->lock);
	e = find(d, name);
	if (e && !alive(e)) {
		drop(d, e);
		ret = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

int domains_resolve(struct domains *d, const char *name, int *pid)
{
	struct domain_ent *e;
	int p = 0, ret;

	if (!domains_name_valid(name))
		return -ENOENT;
	pthread_mutex_lock(&d->lock);
	e = find(d, name);
	if (e) {
		/* A QEMU that died without its hook running (libvirtd
		 * killed): its pid may name another process by now. */
		if (alive(e)) {
			p = e->pid;
		} else {
			util_log(LOG_INFO, "domain %s: pid %d is gone, forgetting it",
				    name, e->pid);
			drop(d, e);
		}
	}
	pthread_mutex_unlock(&d->lock);
	if (p) {
		*pid = p;
		return 0;
	}

	/* Not registered (no hook installed, or memmigd started after the
	 * domain): libvirt's pid file, checked, needs no call to libvirtd. */
	ret = domains_pidfile_resolve(DOMAINS_PIDFILE_DIR, name, &p);
	if (ret)
		return ret;
	domains_add(d, name, NULL, p, NULL, DOMAIN_SOURCE_LIBVIRT, false);
	*pid = p;
	return 0;
}

int domains_request_move(struct domains *d, const char *name, int to_node)
{
	int pid, ret;

	ret = domains_resolve(d, name, &pid);
	if (ret)
		return ret;
	return d->move ? d->move(d->opaque, name, pid, to_node) : -EOPNOTSUPP;
}

int domains_request_tier(struct domains *d, const char *name, const struct tiers_policy *p,
			 unsigned long long *id, char *msg, size_t len)
{
	int pid, ret;

	ret = domains_resolve(d, name, &pid);
	if (ret) {
		snprintf(msg, len, "no QEMU process found: %s", strerror(-ret));
		return ret;
	}
	if (!d->tier) {
		snprintf(msg, len, "memmigd does not tier here");
		return -EOPNOTSUPP;
	}
	return d->tier(d->opaque, name, pid, p, id, msg, len);
}

static struct json_object *str_or_null(const char *s)
{
	return *s ? json_object_new_string(s) : NULL;
}

static struct json_object *ent_json(const struct domain_ent *e)
{
	struct json_object *o = json_object_new_object();
	char ebuf[32];

	json_object_object_add(o, "name", json_object_new_string(e->name));
	json_object_object_add(o, "uuid", str_or_null(e->uuid));
	json_object_object_add(o, "pid", json_object_new_int(e->pid));
	json_object_object_add(o, "nodeset", str_or_null(e->nodeset));
	json_object_object_add(o, "placement", e->placement < 0 ? NULL :
			       json_object_new_int(e->placement));
	json_object_object_add(o, "source", json_object_new_string(
			       e->src == DOMAIN_SOURCE_HOOK ? "hook" : "libvirt"));
	json_object_object_add(o, "rebalance", e->rb.state == REBALANCE_NONE ? NULL :
			       rebalance_json(&e->rb));
	if (e->has_job) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "to_node", json_object_new_int(e->job_node));
		json_object_object_add(j, "result", json_object_new_string(
				       domains_errno_name(e->job_result, ebuf, sizeof(ebuf))));
		json_object_object_add(j, "bytes_moved",
				       json_object_new_uint64(e->job_bytes));
		json_object_object_add(j, "time", json_object_new_int64(e->job_time));
		json_object_object_add(o, "last_job", j);
	} else {
		json_object_object_add(o, "last_job", NULL);
	}
	return o;
}

struct json_object *domains_list_json(struct domains *d)
{
	struct json_object *a = json_object_new_array();

	pthread_mutex_lock(&d->lock);
	for (unsigned int i = 0; i < d->n;) {
		/* Never list a QEMU that is gone (stopped while libvirtd was
		 * unreachable, or without its hook running). */
		if (!alive(&d->ents[i])) {
			drop(d, &d->ents[i]);
			continue;
		}
		json_object_array_add(a, ent_json(&d->ents[i++]));
	}
	pthread_mutex_unlock(&d->lock);
	return a;
}

void domains_job_done(struct domains *d, const char *name, int to_node,
		      int result, unsigned long long bytes_moved)
{
	struct domain_ent *e;

	pthread_mutex_lock(&d->lock);
	e = find(d, name);
	if (e) {
		e->has_job = true;
		e->job_node = to_node;
		e->job_result = result;
		e->job_bytes = bytes_moved;
		e->job_time = time(NULL);
		if (!result)
			e->placement = to_node;
		/* The watcher narrows or restores the nodeset next. */
		if (e->rb.state == REBALANCE_MOVING) {
			e->rb.state = REBALANCE_NARROWING;
			e->rb.result = result;
			e->rb.move.memmig = bytes_moved;
		}
	}
	pthread_mutex_unlock(&d->lock);
	if (d->lv)
		domains_libvirt_status(d->lv, name, to_node, result, bytes_moved);
}

static bool rebalancing(const struct domain_ent *e)
{
	return e->rb.state == REBALANCE_MOVING || e->rb.state == REBALANCE_NARROWING;
}

int domains_rebalance_claim(struct domains *d, const char *name,
			    const struct rebalance *rb)
{
	struct domain_ent *e;
	int ret = -ENOENT;

	pthread_mutex_lock(&d->lock);
	e = find(d, name);
	if (e && rebalancing(e)) {
		ret = -EBUSY;
	} else if (e) {
		e->rb = *rb;
		ret = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return ret;
}

int domains_rebalance_get(struct domains *d, const char *name, struct rebalance *rb)
{
	struct domain_ent *e;

	pthread_mutex_lock(&d->lock);
	e = find(d, name);
	if (e)
		*rb = e->rb;
	pthread_mutex_unlock(&d->lock);
	return e ? 0 : -ENOENT;
}

void domains_rebalance_put(struct domains *d, const char *name,
			   const struct rebalance *rb)
{
	struct domain_ent *e;

	pthread_mutex_lock(&d->lock);
	e = find(d, name);
	if (e)
		e->rb = *rb;
	pthread_mutex_unlock(&d->lock);
}

struct domains_libvirt *domains_watcher(struct domains *d)
{
	return d->lv;
}

struct state *domains_state(struct domains *d)
{
	return d->state;
}

int domains_new(const char *uri, domains_move_fn move, domains_tier_fn tier,
		void *opaque, struct state *st, struct domains **out)
{
	struct domains *d;
	int ret;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	d->move = move;
	d->tier = tier;
	d->opaque = opaque;
	d->state = st;
	if (uri) {
		ret = domains_libvirt_start(d, uri, &d->lv);
		/* The default URI on a build without libvirt: the hook still
		 * registers domains; an explicit URI is an error. */
		if (ret == -EOPNOTSUPP && !*uri) {
			util_log(LOG_INFO, "built without libvirt: domains come from the hook only");
		} else if (ret) {
			domains_free(d);
			return ret;
		}
	}
	*out = d;
	return 0;
}

void domains_free(struct domains *d)
{
	if (!d)
		return;
	/* The watcher calls into the registry: stop it first. */
	if (d->lv)
		domains_libvirt_stop(d->lv);
	pthread_mutex_destroy(&d->lock);
	free(d->ents);
	free(d);
}

int domains_libvirt_state(struct domains *d)
{
	return d->lv ? domains_libvirt_connected(d->lv) : -1;
}

void domains_libvirt_why(struct domains *d, char *buf, size_t len)
{
	if (d->lv)
		domains_libvirt_down_why(d->lv, buf, len);
	else
		snprintf(buf, len, "not used");
}

void domains_set_event_fn(struct domains *d, domains_event_fn fn)
{
	pthread_mutex_lock(&d->lock);
	d->event = fn;
	pthread_mutex_unlock(&d->lock);
}
