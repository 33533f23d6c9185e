/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libvirt watcher: a thread of its own runs libvirt's default event
 * loop, so that no libvirt call (each one a round trip to libvirtd, which
 * may be down or hung) ever runs on memmigd's loop thread.  It keeps a
 * connection up (reconnecting with backoff when libvirtd stops or
 * restarts), adds and drops domains on lifecycle events, turns a memmig
 * placement element set in a domain's live metadata into a move, and
 * writes the move's outcome back as the status element; a tier element
 * into the domain's tiering (set at the change and whenever a running
 * domain is found, ended when removed), its outcome written back as the
 * tier-status element.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "daemon/domains-private.h"
#include "proto/proto.h"
#include "daemon/tier-policy.h"

#define RETRY_MIN_S		1
#define RETRY_MAX_S		30
#define PENDING_MAX		64	/* status elements waiting for libvirtd */
#define KEEPALIVE_S		5	/* a hung libvirtd: dropped after ~20 s */
#define KEEPALIVE_COUNT		3

struct status_msg {
	struct status_msg *next;
	char name[PROTO_NAME_MAX];
	int node, result;
	unsigned long long bytes;
	time_t when;
};

struct domains_libvirt {
	struct domains *d;
	char *uri;			/* NULL: libvirt's default */
	pthread_t thread;
	int wake_timer, retry_timer;

	pthread_mutex_t lock;		/* the four below */
	struct status_msg *pending;	/* oldest first */
	bool stopping;
	char down_why[200];		/* why not connected (memmigd status) */
	/* Set and cleared by the watcher thread only, under the lock: the
	 * rebalance's threads take a reference (conn_get()). */
	virConnectPtr conn;

	/* the watcher thread only */
	int cb_lifecycle, cb_metadata;
	unsigned int retry_s;
	bool down_logged;
	bool connected;			/* read by memmigd status (atomic) */
};

static const char *lv_error(void)
{
	const char *m = virGetLastErrorMessage();

	return m ? m : "unknown error";
}

/* libvirt prints every error on stderr by default; we log our own. */
static void quiet(void *opaque, virErrorPtr err)
{
	(void)opaque;
	(void)err;
}

static void schedule_retry(struct domains_libvirt *lv)
{
	virEventUpdateTimeout(lv->retry_timer, lv->retry_s * 1000);
	if (lv->retry_s < RETRY_MAX_S)
		lv->retry_s = lv->retry_s * 2 > RETRY_MAX_S ? RETRY_MAX_S : lv->retry_s * 2;
}

/* A reference on the connection for a thread other than the watcher's;
 * NULL when libvirtd is not connected. */
static virConnectPtr conn_get(struct domains_libvirt *lv)
{
	virConnectPtr conn;

	pthread_mutex_lock(&lv->lock);
	conn = lv->conn;
	if (conn && virConnectRef(conn) < 0)
		conn = NULL;
	pthread_mutex_unlock(&lv->lock);
	return conn;
}

/* The domain through a referenced connection: 0, -ENOTCONN, -ENOENT. */
static int lookup(struct domains_libvirt *lv, const char *name, virConnectPtr *conn,
		  virDomainPtr *dom, char *err, size_t errlen)
{
	*conn = conn_get(lv);
	if (!*conn) {
		snprintf(err, errlen, "libvirtd is not connected");
		return -ENOTCONN;
	}
	*dom = virDomainLookupByName(*conn, name);
	if (!*dom) {
		snprintf(err, errlen, "%s", lv_error());
		virConnectClose(*conn);
		return -ENOENT;
	}
	return 0;
}

static void mode_name(int mode, char *buf, size_t len)
{
	static const char *const names[] = {
		[VIR_DOMAIN_NUMATUNE_MEM_STRICT] = "strict",
		[VIR_DOMAIN_NUMATUNE_MEM_PREFERRED] = "preferred",
		[VIR_DOMAIN_NUMATUNE_MEM_INTERLEAVE] = "interleave",
		[VIR_DOMAIN_NUMATUNE_MEM_RESTRICTIVE] = "restrictive",
	};

	if (mode >= 0 && mode < (int)(sizeof(names) / sizeof(names[0])))
		snprintf(buf, len, "%s", names[mode]);
	else
		snprintf(buf, len, "mode %d", mode);
}

/* libvirt's live nodeset of a domain ("" when it reports none), and its
 * mode (mode may be NULL). */
static int get_nodeset(virDomainPtr dom, char *buf, size_t len, char *mode, size_t modelen)
{
	virTypedParameterPtr params = NULL;
	int nparams = 0, ret = -EIO;

	buf[0] = '\0';
	if (mode)
		mode[0] = '\0';
	if (!virDomainGetNumaParameters(dom, NULL, &nparams, VIR_DOMAIN_AFFECT_LIVE) &&
	    nparams > 0 && (params = calloc(nparams, sizeof(*params))) &&
	    !virDomainGetNumaParameters(dom, params, &nparams, VIR_DOMAIN_AFFECT_LIVE)) {
		const char *s = NULL;

		int m;

		if (virTypedParamsGetString(params, nparams, VIR_DOMAIN_NUMA_NODESET, &s) == 1 && s)
			snprintf(buf, len, "%s", s);
		if (mode && virTypedParamsGetInt(params, nparams, VIR_DOMAIN_NUMA_MODE, &m) == 1)
			mode_name(m, mode, modelen);
		ret = 0;
	} else if (!nparams) {
		ret = 0;
	}
	if (params) {
		virTypedParamsClear(params, nparams);
		free(params);
	}
	return ret;
}

int domains_libvirt_nodeset(struct domains_libvirt *lv, const char *name,
			    char *buf, size_t len, char *mode, size_t modelen,
			    char *err, size_t errlen)
{
	virConnectPtr conn;
	virDomainPtr dom;
	int ret = lookup(lv, name, &conn, &dom, err, errlen);

	if (ret)
		return ret;
	ret = get_nodeset(dom, buf, len, mode, modelen);
	if (ret)
		snprintf(err, errlen, "%s", lv_error());
	virDomainFree(dom);
	virConnectClose(conn);
	return ret;
}

int domains_libvirt_uuid(struct domains_libvirt *lv, const char *name, char *uuid,
			 size_t len, char *err, size_t errlen)
{
	char buf[VIR_UUID_STRING_BUFLEN];
	virConnectPtr conn;
	virDomainPtr dom;
	int ret = lookup(lv, name, &conn, &dom, err, errlen);

	if (ret)
		return ret;
	if (virDomainGetUUIDString(dom, buf) < 0) {
		snprintf(err, errlen, "%s", lv_error());
		ret = -EIO;
	} else {
		snprintf(uuid, len, "%s", buf);
	}
	virDomainFree(dom);
	virConnectClose(conn);
	return ret;
}

int domains_libvirt_name(struct domains_libvirt *lv, const char *uuid, char *name,
			 size_t len, char *err, size_t errlen)
{
	virConnectPtr conn = conn_get(lv);
	virDomainPtr dom;
	int ret = 0;

	if (!conn) {
		snprintf(err, errlen, "libvirtd is not connected");
		return -ENOTCONN;
	}
	dom = virDomainLookupByUUIDString(conn, uuid);
	if (!dom || virDomainIsActive(dom) != 1 || !virDomainGetName(dom)) {
		snprintf(err, errlen, "%s", dom ? "not running" : lv_error());
		ret = -ENOENT;
	} else {
		snprintf(name, len, "%s", virDomainGetName(dom));
	}
	if (dom)
		virDomainFree(dom);
	virConnectClose(conn);
	return ret;
}

int domains_libvirt_set_nodeset(struct domains_libvirt *lv, const char *name,
				const char *nodeset, char *err, size_t errlen)
{
	virTypedParameterPtr params = NULL;
	int nparams = 0, maxparams = 0, ret;
	virConnectPtr conn;
	virDomainPtr dom;

	ret = lookup(lv, name, &conn, &dom, err, errlen);
	if (ret)
		return ret;
	if (virTypedParamsAddString(&params, &nparams, &maxparams, VIR_DOMAIN_NUMA_NODESET,
				    nodeset) < 0 ||
	    virDomainSetNumaParameters(dom, params, nparams, VIR_DOMAIN_AFFECT_LIVE) < 0) {
		snprintf(err, errlen, "%s", lv_error());
		ret = -EIO;
	}
	virTypedParamsFree(params, nparams);
	virDomainFree(dom);
	virConnectClose(conn);
	return ret;
}

/* The registry entry for a running domain: its pid from libvirt's pid
 * file, uuid and nodeset from libvirtd. */
static void add_domain(struct domains_libvirt *lv, virDomainPtr dom)
{
	char uuid[VIR_UUID_STRING_BUFLEN] = "", nodeset[PROTO_NODESET_MAX] = "";
	const char *name = virDomainGetName(dom);
	int pid, ret;

	if (!name)
		return;
	ret = domains_pidfile_resolve(DOMAINS_PIDFILE_DIR, name, &pid);
	if (ret) {
		/* A remote or session URI has no pid file here: nothing we
		 * could move. */
		util_log(LOG_WARNING, "libvirt: domain %s: no QEMU pid (%s)", name, strerror(-ret));
		return;
	}
	virDomainGetUUIDString(dom, uuid);
	get_nodeset(dom, nodeset, sizeof(nodeset), NULL, 0);
	ret = domains_add(lv->d, name, uuid, pid, nodeset, DOMAIN_SOURCE_LIBVIRT, false);
	if (ret)
		util_log(LOG_WARNING, "libvirt: domain %s: not added: %s", name, strerror(-ret));
}

/* A status element into the live metadata, under its own namespace. */
static void set_status(virDomainPtr dom, const char *name, const char *xml,
		       const char *key, const char *uri)
{
	if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, xml, key, uri,
				 VIR_DOMAIN_AFFECT_LIVE))
		util_log(LOG_WARNING, "libvirt: domain %s: cannot write the %s element: %s",
			 name, key, lv_error());
}

static void write_status(struct domains_libvirt *lv, const struct status_msg *m)
{
	char xml[256];
	virDomainPtr dom;

	/* The job's end: narrow (or restore) the nodeset first, so that the
	 * status element says what the domain ended with. */
	domains_rebalance_end(lv->d, m->name);
	if (domains_status_format(xml, sizeof(xml), m->node, m->result, m->bytes, m->when))
		return;
	dom = virDomainLookupByName(lv->conn, m->name);
	if (!dom)
		return;	/* stopped meanwhile: nothing to report on */
	/* Under the status namespace: on_metadata() ignores it, so this
	 * never asks for another move. */
	set_status(dom, m->name, xml, MEMMIG_LIBVIRT_STATUS_KEY, MEMMIG_LIBVIRT_STATUS_URI);
	virDomainFree(dom);
}

/* Writes the queued status elements (connected) or keeps them for later. */
static void flush_status(struct domains_libvirt *lv)
{
	struct status_msg *m;

	while (lv->conn) {
		pthread_mutex_lock(&lv->lock);
		m = lv->pending;
		if (m)
			lv->pending = m->next;
		pthread_mutex_unlock(&lv->lock);
		if (!m)
			break;
		write_status(lv, m);
		free(m);
	}
}

static void on_wake(int timer, void *opaque)
{
	struct domains_libvirt *lv = opaque;

	virEventUpdateTimeout(timer, -1);
	flush_status(lv);
}

/*
 * A running domain's tier element, acted on: its tiering set, or ended
 * when the live definition has none (removed_ends: a change of the tier
 * namespace; a domain found without one is left alone).  What came of it
 * is logged and written back as the tier-status element, at once: the
 * tiering's start or end is known here, unlike a job's end.
 */
static void apply_tier(struct domains_libvirt *lv, virDomainPtr dom, bool removed_ends)
{
	const char *name = virDomainGetName(dom);
	char msg[512] = "", xml[768], ebuf[32], *elem;
	unsigned long long id = 0;
	struct tiers_policy p;
	bool set = true;
	int ret;

	if (!name)
		return;
	elem = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, MEMMIG_LIBVIRT_TIER_URI,
				    VIR_DOMAIN_AFFECT_LIVE);
	if (!elem) {
		/* Another failure (libvirtd gone) is no removal. */
		if (!removed_ends || virGetLastErrorCode() != VIR_ERR_NO_DOMAIN_METADATA)
			return;
		set = false;
		ret = domains_request_tier(lv->d, name, NULL, &id, msg, sizeof(msg));
	} else {
		ret = domains_tier_parse(elem, &p, msg, sizeof(msg));
		if (ret)
			util_log(LOG_WARNING, "libvirt: domain %s: refusing tier element %.200s",
				 name, elem);
		else
			ret = domains_request_tier(lv->d, name, &p, &id, msg, sizeof(msg));
		free(elem);
	}
	if (ret)	/* ending what never began is no news */
		util_log(set || ret != -ENOENT ? LOG_WARNING : LOG_INFO,
			 "libvirt: domain %s: tiering not %s: %s (%s)", name, set ? "set" : "ended",
			 msg, domains_errno_name(ret, ebuf, sizeof(ebuf)));
	else
		util_log(LOG_INFO, "libvirt: domain %s: tiering %llu %s from its metadata", name,
			 id, set ? "set" : "ended");
	if (!domains_tier_status_format(xml, sizeof(xml), set ? "set" : "clear", ret, id, msg,
					time(NULL)))
		set_status(dom, name, xml, MEMMIG_LIBVIRT_TIER_STATUS_KEY,
			   MEMMIG_LIBVIRT_TIER_STATUS_URI);
}

static int on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event,
			int detail, void *opaque)
{
	struct domains_libvirt *lv = opaque;
	const char *name = virDomainGetName(dom);

	(void)conn;
	(void)detail;
	if (!name)
		return 0;
	if (event == VIR_DOMAIN_EVENT_STARTED) {
		add_domain(lv, dom);
		apply_tier(lv, dom, false);
	} else if (event == VIR_DOMAIN_EVENT_STOPPED)
		domains_forget(lv->d, name);
	return 0;
}

static void status_now(struct domains_libvirt *lv, const char *name, int node,
		       int result)
{
	struct status_msg m = { .node = node, .result = result, .when = time(NULL) };

	snprintf(m.name, sizeof(m.name), "%s", name);
	write_status(lv, &m);
}

static void on_metadata(virConnectPtr conn, virDomainPtr dom, int type,
			const char *nsuri, void *opaque)
{
	struct domains_libvirt *lv = opaque;
	const char *name = virDomainGetName(dom);
	int node, ret;
	bool tier;
	char *xml;

	(void)conn;
	/* Only the placement and tier namespaces ask for something: our
	 * own status elements (and anyone else's metadata) come through
	 * here too. */
	if (type != VIR_DOMAIN_METADATA_ELEMENT || !nsuri || !name)
		return;
	tier = !strcmp(nsuri, MEMMIG_LIBVIRT_TIER_URI);
	if ((!tier && strcmp(nsuri, MEMMIG_LIBVIRT_NS_URI)) || virDomainIsActive(dom) != 1)
		return;
	if (tier) {
		add_domain(lv, dom);	/* known before it is resolved */
		apply_tier(lv, dom, true);
		return;
	}
	xml = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT,
				   MEMMIG_LIBVIRT_NS_URI, VIR_DOMAIN_AFFECT_LIVE);
	if (!xml)
		return;	/* removed, or only the persistent config changed */
	ret = domains_placement_parse(xml, &node);
	if (ret) {
		util_log(LOG_WARNING, "libvirt: domain %s: ignoring placement element %.200s "
			    "(want <placement node=\"N\"/>)", name, xml);
		free(xml);
		status_now(lv, name, -1, ret);
		return;
	}
	free(xml);
	add_domain(lv, dom);	/* known before it is resolved */
	ret = domains_request_move(lv->d, name, node);
	util_log(ret ? LOG_WARNING : LOG_INFO,
	     "libvirt: domain %s: placement node %d requested: %s",
	     name, node, ret ? strerror(-ret) : "job queued");
	if (ret)
		status_now(lv, name, node, ret);
}

static void disconnect(struct domains_libvirt *lv)
{
	virConnectPtr conn;

	if (!lv->conn)
		return;
	if (lv->cb_lifecycle >= 0)
		virConnectDomainEventDeregisterAny(lv->conn, lv->cb_lifecycle);
	if (lv->cb_metadata >= 0)
		virConnectDomainEventDeregisterAny(lv->conn, lv->cb_metadata);
	lv->cb_lifecycle = lv->cb_metadata = -1;
	/* Closed outside the lock: the loop thread takes it to queue a
	 * status, and a close may wait for libvirtd. */
	pthread_mutex_lock(&lv->lock);
	conn = lv->conn;
	lv->conn = NULL;
	__atomic_store_n(&lv->connected, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lv->lock);
	virConnectClose(conn);
}

/* Why the connection is down, for memmigd status ("" once connected). */
static void set_down_why(struct domains_libvirt *lv, const char *why)
{
	pthread_mutex_lock(&lv->lock);
	snprintf(lv->down_why, sizeof(lv->down_why), "%s", why);
	pthread_mutex_unlock(&lv->lock);
}

static void on_close(virConnectPtr conn, int reason, void *opaque)
{
	static const char *const reasons[] = {
		[VIR_CONNECT_CLOSE_REASON_ERROR] = "connection lost: an error",
		[VIR_CONNECT_CLOSE_REASON_EOF] = "connection lost: libvirtd closed it",
		[VIR_CONNECT_CLOSE_REASON_KEEPALIVE] = "connection lost: libvirtd stopped answering",
		[VIR_CONNECT_CLOSE_REASON_CLIENT] = "connection closed",
	};
	struct domains_libvirt *lv = opaque;

	(void)conn;
	set_down_why(lv, reason >= 0 && reason < (int)(sizeof(reasons) / sizeof(reasons[0])) &&
		     reasons[reason] ? reasons[reason] : "connection lost");
	util_log(LOG_WARNING, "libvirt: connection to libvirtd lost (reason %d), reconnecting",
		    reason);
	/* Not here: the connection is torn down from the timer, outside
	 * libvirt's own close path. */
	lv->retry_s = RETRY_MIN_S;
	virEventUpdateTimeout(lv->retry_timer, 0);
}

static void scan(struct domains_libvirt *lv)
{
	virDomainPtr *doms = NULL;
	int n;

	n = virConnectListAllDomains(lv->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	for (int i = 0; i < n; i++) {
		add_domain(lv, doms[i]);
		apply_tier(lv, doms[i], false);
		virDomainFree(doms[i]);
	}
	free(doms);
}

static int connect_now(struct domains_libvirt *lv)
{
	virConnectPtr conn = virConnectOpen(lv->uri);

	if (!conn)
		return -1;
	pthread_mutex_lock(&lv->lock);
	lv->conn = conn;
	pthread_mutex_unlock(&lv->lock);
	if (virConnectRegisterCloseCallback(lv->conn, on_close, lv, NULL) < 0)
		goto fail;
	/* Without keepalive a hung libvirtd would never be noticed. */
	virConnectSetKeepAlive(lv->conn, KEEPALIVE_S, KEEPALIVE_COUNT);
	lv->cb_lifecycle = virConnectDomainEventRegisterAny(lv->conn, NULL,
			VIR_DOMAIN_EVENT_ID_LIFECYCLE,
			VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), lv, NULL);
	if (lv->cb_lifecycle < 0)
		goto fail;
	lv->cb_metadata = virConnectDomainEventRegisterAny(lv->conn, NULL,
			VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
			VIR_DOMAIN_EVENT_CALLBACK(on_metadata), lv, NULL);
	if (lv->cb_metadata < 0)
		goto fail;
	return 0;
fail:
	virConnectUnregisterCloseCallback(lv->conn, on_close);
	disconnect(lv);
	return -1;
}

static void on_retry(int timer, void *opaque)
{
	struct domains_libvirt *lv = opaque;

	virEventUpdateTimeout(timer, -1);
	if (lv->conn) {
		if (virConnectIsAlive(lv->conn) == 1)
			return;
		virConnectUnregisterCloseCallback(lv->conn, on_close);
		disconnect(lv);
	}
	if (connect_now(lv)) {
		/* Said once per outage, not at every try. */
		set_down_why(lv, lv_error());
		if (!lv->down_logged)
			util_log(LOG_WARNING, "libvirt: cannot connect to %s: %s; retrying in the background",
				    lv->uri ? lv->uri : "the default URI", lv_error());
		lv->down_logged = true;
		schedule_retry(lv);
		return;
	}
	util_log(LOG_INFO, "libvirt: connected to %s", lv->uri ? lv->uri : "the default URI");
	set_down_why(lv, "");
	__atomic_store_n(&lv->connected, true, __ATOMIC_RELAXED);
	lv->down_logged = false;
	lv->retry_s = RETRY_MIN_S;
	scan(lv);
	domains_rebalance_recover(lv->d);
	flush_status(lv);
}

static bool stopping(struct domains_libvirt *lv)
{
	bool s;

	pthread_mutex_lock(&lv->lock);
	s = lv->stopping;
	pthread_mutex_unlock(&lv->lock);
	return s;
}

static void *watcher(void *arg)
{
	struct domains_libvirt *lv = arg;

	while (!stopping(lv))
		if (virEventRunDefaultImpl() < 0)
			break;
	if (lv->conn) {
		virConnectUnregisterCloseCallback(lv->conn, on_close);
		disconnect(lv);
	}
	/* Removed timers never fire again, even though the default loop
	 * only frees them on its next run. */
	virEventRemoveTimeout(lv->wake_timer);
	virEventRemoveTimeout(lv->retry_timer);
	return NULL;
}

static int init_status;

static void init_once(void)
{
	virSetErrorFunc(NULL, quiet);
	init_status = virInitialize() < 0 || virEventRegisterDefaultImpl() < 0 ? -EIO : 0;
}

int domains_libvirt_start(struct domains *d, const char *uri,
			  struct domains_libvirt **out)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct domains_libvirt *lv;
	int ret;

	pthread_once(&once, init_once);
	if (init_status)
		return init_status;
	lv = calloc(1, sizeof(*lv));
	if (!lv)
		return -ENOMEM;
	lv->d = d;
	lv->cb_lifecycle = lv->cb_metadata = -1;
	lv->retry_s = RETRY_MIN_S;
	pthread_mutex_init(&lv->lock, NULL);
	if (*uri && !(lv->uri = strdup(uri))) {
		ret = -ENOMEM;
		goto fail;
	}
	/* The first try happens on the watcher thread: connecting may take
	 * a while, and memmigd must not wait for it. */
	lv->wake_timer = virEventAddTimeout(-1, on_wake, lv, NULL);
	lv->retry_timer = virEventAddTimeout(0, on_retry, lv, NULL);
	if (lv->wake_timer < 0 || lv->retry_timer < 0) {
		ret = -ENOMEM;
		goto fail_timers;
	}
	/* Set before the thread runs: its callbacks may end in
	 * domains_job_done(), which reads it. */
	*out = lv;
	ret = -pthread_create(&lv->thread, NULL, watcher, lv);
	if (ret) {
		*out = NULL;
		goto fail_timers;
	}
	return 0;

fail_timers:
	if (lv->wake_timer >= 0)
		virEventRemoveTimeout(lv->wake_timer);
	if (lv->retry_timer >= 0)
		virEventRemoveTimeout(lv->retry_timer);
fail:
	pthread_mutex_destroy(&lv->lock);
	free(lv->uri);
	free(lv);
	return ret;
}

void domains_libvirt_stop(struct domains_libvirt *lv)
{
	struct status_msg *m;

	pthread_mutex_lock(&lv->lock);
	lv->stopping = true;
	pthread_mutex_unlock(&lv->lock);
	/* Wakes the loop out of its poll; it then sees stopping. */
	virEventUpdateTimeout(lv->wake_timer, 0);
	pthread_join(lv->thread, NULL);
	while ((m = lv->pending)) {
		lv->pending = m->next;
		free(m);
	}
	pthread_mutex_destroy(&lv->lock);
	free(lv->uri);
	free(lv);
}

void domains_libvirt_status(struct domains_libvirt *lv, const char *name,
			    int to_node, int result, unsigned long long bytes)
{
	struct status_msg *m, **tail;
	unsigned int n = 0;

	m = calloc(1, sizeof(*m));
	if (!m)
		return;
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->node = to_node;
	m->result = result;
	m->bytes = bytes;
	m->when = time(NULL);

	pthread_mutex_lock(&lv->lock);
	for (tail = &lv->pending; *tail; tail = &(*tail)->next)
		n++;
	*tail = m;
	/* libvirtd down for long: keep the newest reports only. */
	if (n >= PENDING_MAX) {
		m = lv->pending;
		lv->pending = m->next;
		free(m);
	}
	pthread_mutex_unlock(&lv->lock);
	virEventUpdateTimeout(lv->wake_timer, 0);
}

bool domains_libvirt_connected(struct domains_libvirt *lv)
{
	return __atomic_load_n(&lv->connected, __ATOMIC_RELAXED);
}

void domains_libvirt_down_why(struct domains_libvirt *lv, char *buf, size_t len)
{
	pthread_mutex_lock(&lv->lock);
	snprintf(buf, len, "%s", lv->down_why[0] || lv->connected ? lv->down_why :
		 "connecting");
	pthread_mutex_unlock(&lv->lock);
}
