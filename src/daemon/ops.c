/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operations of docs/protocol.md: one handler per op, found through a
 * table, each turning a parsed request into its reply.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "daemon/conn.h"
#include "daemon/memmigd.h"
#include "daemon/state.h"
#include "daemon/tiers.h"
#include "proto/nodes-json.h"
#include "util/cpuset.h"

typedef struct json_object *(*op_fn)(struct memmigd *d, const struct client_cred *c,
				     const struct proto_request *req);

static struct json_object *op_version(struct memmigd *d, const struct client_cred *c,
				      const struct proto_request *req)
{
	struct json_object *o = proto_reply_ok(req);
	bool libvirt = false;

#ifdef HAVE_LIBVIRT
	libvirt = !d->opts.no_libvirt;
#endif
	json_object_object_add(o, "version", json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(o, "protocol", json_object_new_int(PROTO_VERSION));
	json_object_object_add(o, "libvirt", json_object_new_boolean(libvirt));
	return o;
}

static struct json_object *op_nodes(struct memmigd *d, const struct client_cred *c,
				    const struct proto_request *req)
{
	struct json_object *o, *nodes;
	int rc = nodes_json(d->ctx, &nodes);

	if (rc)
		return proto_reply_error(req, rc, "reading the nodes: %s", strerror(-rc));
	o = proto_reply_ok(req);
	json_object_object_foreach(nodes, key, val)
		json_object_object_add(o, key, json_object_get(val));
	json_object_put(nodes);
	return o;
}

/* Why a move was refused, in the client's words. */
static void move_error(int rc, int pid, int to_node, char *msg, size_t len)
{
	switch (rc) {
	case -ESRCH:
		snprintf(msg, len, "no process %d", pid);
		break;
	case -ENOENT:	/* in the words of every missing node */
		if (!util_node_has_memory(to_node, msg, len))
			snprintf(msg, len, "no node %d with memory", to_node);
		break;
	case -EFAULT:
		snprintf(msg, len, "a range is not mapped in pid %d", pid);
		break;
	case -EINVAL:
		snprintf(msg, len, "pid %d: a range is unaligned, empty or not movable", pid);
		break;
	default:
		snprintf(msg, len, "pid %d: %s", pid, strerror(-rc));
	}
}

/* The move's notify: its plan or its run ended, on its own thread. */
static void wake_loop(struct memmig_move *mv, void *opaque)
{
	struct memmigd *d = opaque;
	uint64_t one = 1;

	if (write(d->wake_fd, &one, sizeof(one)) != sizeof(one))
		util_log(LOG_WARNING, "waking the loop: a move may wait");
}

/* A tiered process's pages move by its tiering's policy, which would
 * undo a move: 0, or -EBUSY with what to do. */
static int check_untiered(struct memmigd *d, int pid, char *msg, size_t len)
{
	uint64_t tier = tiers_of_pid(d->tiers, pid);

	if (!tier)
		return 0;
	snprintf(msg, len, "pid %d is tiered (tiering %llu), which moves its pages by its "
		 "policy: clear it first (memmig-cli tier clear %llu)", pid,
		 (unsigned long long)tier, (unsigned long long)tier);
	return -EBUSY;
}

/*
 * Checks a move for a client: 0 with *mv (not yet planned) and
 * spec->pin, or -errno with msg.  The process is pinned by an fd on
 * /proc/PID from the permission check to the job's end, so that a pid
 * reused meanwhile fails (ESRCH) instead of moving someone else's memory;
 * the move reads the process through it, and asks the client's rule again
 * through it (memmig_move_opts.check) as it runs.
 */
static int check_move(struct memmigd *d, const struct client_cred *c, int pid,
		      const struct proto_request *req, struct job_spec *spec,
		      struct memmig_move **mv, char *msg, size_t len)
{
	struct memmig_move_opts o = {
		.sz = sizeof(o), .pid = pid, .ranges = req->nranges ? req->ranges : NULL,
		.nranges = req->nranges, .target_node = req->to_node,
		.strategy = MEMMIG_STRATEGY_KERNEL, .workers = req->threads,
		/* memmigd's privilege is not the client's: shared pages (libc's,
		 * every process's) move only for root, as move_pages(2) has it. */
		.flags = c->uid != 0 ? MEMMIG_MIGRATE_OWN_PAGES : 0,
		.notify = wake_loop, .opaque = d,
		.from_nodes = req->nfrom_nodes ? req->from_nodes : NULL,
		.nfrom_nodes = req->nfrom_nodes,
	};
	int rc;

	*spec = (struct job_spec){
		.pid = pid, .to_node = req->to_node, .strategy = o.strategy,
		.threads = req->threads, .uid = c->uid,
	};
	/* memmigd's own rule, whatever the process: it never copies. */
	if (req->strategy == MEMMIG_STRATEGY_COPY) {
		snprintf(msg, len, "the copy strategy only moves the caller's own memory: "
			 "memmigd moves another process's with \"kernel\"");
		return -EINVAL;
	}
	rc = auth_pin_new(c, pid, &spec->pin, msg, len);
	if (rc) {
		if (rc == -ESRCH)
			move_error(rc, pid, req->to_node, msg, len);
		return rc;
	}
	o.procfd = spec->pin->procfd;
	o.check = auth_pin_check_fn;
	o.check_opaque = spec->pin;
	rc = check_untiered(d, pid, msg, len);
	/* A domain's cpuset is checked after its nodeset is widened (plans.c). */
	if (!rc && !req->domain[0])
		rc = util_cpuset_check_at(pid, spec->pin->procfd, req->to_node, msg, len);
	if (!rc)
		rc = jobs_admit(d->jobs, c->uid, msg, len);
	if (!rc) {
		rc = memmig_move_new(d->ctx, &o, mv);
		if (rc)
			move_error(rc, pid, req->to_node, msg, len);
	}
	if (rc) {
		auth_pin_free(spec->pin);
		spec->pin = NULL;
	}
	return rc;
}

/* A plan that ended (rc): the job queued, or -errno with msg.  Takes mv
 * and spec->pin in every case. */
static int queue_planned(struct memmigd *d, int rc, struct memmig_move *mv,
			 const struct job_spec *spec, struct json_object **job,
			 char *msg, size_t len)
{
	/* The plan read the process: the one pinned, and still the client's
	 * to move, or what it read is not the client's to learn. */
	if (!rc)
		rc = auth_pin_check(spec->pin);
	if (rc) {
		memmig_move_unref(mv);
		if (rc == -EPERM && auth_pin_denied(spec->pin, msg, len))
			;	/* the rule's own words */
		else
			move_error(rc, spec->pid, spec->to_node, msg, len);
		auth_pin_free(spec->pin);
		return rc;
	}
	/* Again: a tiering may have started while the move was planned. */
	rc = check_untiered(d, spec->pid, msg, len);
	if (rc) {
		memmig_move_unref(mv);
		auth_pin_free(spec->pin);
		return rc;
	}
	rc = jobs_submit(d->jobs, mv, spec, job);
	if (rc)
		snprintf(msg, len, "%s", rc == -EBUSY ? "too many jobs (another client's came first)" :
			 "memmigd is stopping");
	return rc;
}

/* A move whose plan ended with rc: queued, and the reply (plan_done_fn). */
static struct json_object *move_planned(struct memmigd *d, const struct proto_request *req,
					int rc, struct memmig_move *mv,
					const struct job_spec *spec)
{
	struct json_object *o, *job;
	char msg[512];

	rc = queue_planned(d, rc, mv, spec, &job, msg, sizeof(msg));
	if (rc)
		return proto_reply_error(req, rc, "%s", msg);
	o = proto_reply_ok(req);
	json_object_object_add(o, "job", job);
	return o;
}

/*
 * A move request: checked here, planned on the move's thread when the
 * client's connection can wait for the reply (NULL returned, the reply
 * comes from plans_collect()), else planned here.
 */
static struct json_object *op_move(struct memmigd *d, const struct client_cred *c,
				   struct proto_request *req, struct conn *conn, bool *taken)
{
	const char *domain = req->domain[0] ? req->domain : NULL;
	struct memmig_move *mv;
	struct job_spec spec;
	char msg[512];
	int pid = req->pid, rc;

	if (domain && domains_resolve(d->domains, domain, &pid))
		return proto_reply_error(req, ENOENT, "no domain \"%s\"", domain);
	rc = check_move(d, c, pid, req, &spec, &mv, msg, sizeof(msg));
	if (rc)
		return proto_reply_error(req, rc, "%s", msg);
	if (conn && !plans_start(d, c, req, conn, mv, &spec, move_planned)) {
		*taken = true;
		return NULL;
	}
	spec.domain = domain;
	return move_planned(d, req, memmig_move_plan(mv), mv, &spec);
}

int ops_domain_move(void *opaque, const char *name, int pid, int to_node)
{
	struct memmigd *d = opaque;
	struct proto_request req = { .op = PROTO_OP_MOVE, .pid = pid, .to_node = to_node,
				     .strategy = MEMMIG_STRATEGY_KERNEL };
	struct client_cred root = { .pid = getpid() };
	struct memmig_move *mv;
	struct job_spec spec;
	char msg[512];
	int rc;

	snprintf(req.domain, sizeof(req.domain), "%s", name);
	/* The libvirt watcher's own thread: it may wait for libvirtd, and plan. */
	rc = domains_rebalance_begin(d->domains, name, pid, to_node, msg, sizeof(msg));
	if (rc) {
		util_log(LOG_ERR, "%s", msg);	/* it names the domain */
	} else {
		rc = check_move(d, &root, pid, &req, &spec, &mv, msg, sizeof(msg));
		if (!rc)
			rc = util_cpuset_check_at(pid, spec.pin->procfd, to_node, msg, sizeof(msg));
		if (!rc) {
			spec.domain = name;
			rc = queue_planned(d, memmig_move_plan(mv), mv, &spec, NULL,
					   msg, sizeof(msg));
		} else if (spec.pin) {	/* checked, then refused by the cpuset */
			memmig_move_unref(mv);
			auth_pin_free(spec.pin);
		}
		if (rc) {
			util_log(LOG_ERR, "domain %s: %s", name, msg);
			/* widened, not moving: restore */
			domains_job_done(d->domains, name, to_node, rc, 0);
		}
	}
	/* Logged above (every one: libvirt asked, not a client). */
	metrics_request(d->metrics, PROTO_OP_MOVE);
	if (rc)
		metrics_refused(d->metrics, metrics_refuse_reason(-rc));
	return rc;
}

static struct json_object *op_jobs(struct memmigd *d, const struct client_cred *c,
				   const struct proto_request *req)
{
	struct json_object *o = proto_reply_ok(req);

	json_object_object_add(o, "jobs", jobs_list_json(d->jobs, c->uid));
	return o;
}

/* ISO 8601, UTC: "2026-12-04T03:00:00Z". */
static const char *utc_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%lld", (long long)t);
	return buf;
}

/* No job id here: what a client may know of it (an earlier memmigd's
 * job is its owner's, and root's, to hear of). */
static struct json_object *job_gone(struct memmigd *d, const struct proto_request *req,
				    uid_t uid)
{
	unsigned long long id = req->job;
	struct state_job lost;

	if (state_job_lost(d->state, req->job, &lost) && (uid == 0 || uid == lost.uid)) {
		char when[80] = "", c[24], s[24];

		if (lost.created)
			snprintf(when, sizeof(when), " (created %s%s%s)",
				 utc_time(lost.created, c, sizeof(c)), lost.started ? ", started " : "",
				 lost.started ? utc_time(lost.started, s, sizeof(s)) : "");
		return proto_reply_error(req, ESRCH, "memmigd restarted; job %llu (pid %d to "
					 "node %d) was lost %s%s; its pages are where the kernel "
					 "left them", id, lost.pid, lost.to_node,
					 lost.running ? "mid-move" : "before it started", when);
	}
	if (state_job_before(d->state, req->job))
		return proto_reply_error(req, ESRCH, "no job %llu: memmigd restarted since "
					 "it was given, and keeps no record of it", id);
	return proto_reply_error(req, ESRCH, "no job %llu", id);
}

static struct json_object *job_reply(struct memmigd *d, const struct proto_request *req,
				     int rc, struct json_object *job, uid_t uid)
{
	struct json_object *o;

	if (rc == -ESRCH)
		return job_gone(d, req, uid);
	if (rc == -EPERM)
		return proto_reply_error(req, rc, "job %llu is not uid %u's",
					 (unsigned long long)req->job, uid);
	o = proto_reply_ok(req);
	json_object_object_add(o, "job", job);
	return o;
}

static struct json_object *op_job(struct memmigd *d, const struct client_cred *c,
				  const struct proto_request *req)
{
	struct json_object *job = NULL;
	int rc = jobs_get_json(d->jobs, req->job, c->uid, &job);

	return job_reply(d, req, rc, job, c->uid);
}

static struct json_object *op_cancel(struct memmigd *d, const struct client_cred *c,
				     const struct proto_request *req)
{
	struct json_object *job = NULL;
	int rc = jobs_cancel(d->jobs, req->job, c->uid, &job);

	return job_reply(d, req, rc, job, c->uid);
}

/* domains_event_fn: every subscriber may hear of domains, as the domains
 * op shows them to all. */
void ops_domain_event(void *opaque, const char *name, int pid, const char *state)
{
	struct memmigd *d = opaque;
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "state", json_object_new_string(state));
	json_object_object_add(o, "pid", json_object_new_int(pid));
	events_post(d->events, EVENTS_ANYONE, "domain", "domain", o);
}

static struct json_object *op_register(struct memmigd *d, const struct client_cred *c,
				       const struct proto_request *req)
{
	int rc = domains_register(d->domains, req->domain, req->uuid, req->pid, req->nodeset);

	if (rc)
		return proto_reply_error(req, rc, "register %s: %s", req->domain, strerror(-rc));
	util_log(LOG_INFO, "domain %s registered: pid %d, nodeset %s", req->domain, req->pid,
	     req->nodeset[0] ? req->nodeset : "-");
	return proto_reply_ok(req);
}

static struct json_object *op_unregister(struct memmigd *d, const struct client_cred *c,
					 const struct proto_request *req)
{
	int rc = domains_unregister(d->domains, req->domain);

	if (rc)
		return proto_reply_error(req, rc, "no domain \"%s\"", req->domain);
	util_log(LOG_INFO, "domain %s unregistered", req->domain);
	return proto_reply_ok(req);
}

static struct json_object *op_domains(struct memmigd *d, const struct client_cred *c,
				      const struct proto_request *req)
{
	struct json_object *o = proto_reply_ok(req);

	json_object_object_add(o, "domains", domains_list_json(d->domains));
	return o;
}

/* What the counters do not keep, in root's view (the --metrics-file's). */
void ops_metrics_now(struct memmigd *d, struct metrics_now *now)
{
	*now = (struct metrics_now){ .clients = d->clients,
				     .subscribers = events_subscribers(d->events),
				     .libvirt = domains_libvirt_state(d->domains),
				     .tiers = d->tiers, .viewer = 0 };
	jobs_count(d->jobs, &now->jobs_queued, &now->jobs_running);
}

static double uptime_s(const struct memmigd *d)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - d->started.tv_sec) + (t.tv_nsec - d->started.tv_nsec) / 1e9;
}

static void add_uint(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static struct json_object *status_limits(const struct memmigd *d)
{
	const struct { const char *key; uint64_t v; } limits[] = {
		{ "max_jobs", d->opts.max_jobs },
		{ "max_jobs_per_node", d->opts.max_jobs_per_node },
		{ "max_clients", MEMMIGD_MAX_CLIENTS },
		{ "root_clients", MEMMIGD_ROOT_CLIENTS },
		{ "max_clients_per_user", MEMMIGD_USER_CLIENTS },
		{ "keep_finished_per_user", MEMMIGD_KEEP_FINISHED },
		{ "keep_finished", MEMMIGD_KEEP_FINISHED_ALL },
		{ "idle_timeout_s", d->opts.idle_timeout_s },
		{ "bytes_line_max", PROTO_MAX_LINE },
		{ "bytes_reply_backlog", CONN_OUT_HIGH },
		{ "max_subscribers", EVENTS_MAX_SUBSCRIBERS },
		{ "root_subscribers", EVENTS_ROOT_SUBSCRIBERS },
		{ "max_subscribers_per_user", EVENTS_USER_SUBSCRIBERS },
		{ "max_events_queued", EVENTS_MAX_QUEUED },
		{ "bytes_event_max", EVENTS_MAX_EVENT },
		{ "bytes_subscriber_backlog", EVENTS_MAX_BACKLOG },
		{ "max_failed_ranges", MEMMIG_REPORT_MAX_FAILED_RANGES },
		{ "max_tiers", TIERS_MAX },
		{ "root_tiers", TIERS_ROOT },
		{ "max_tiers_per_user", TIERS_MAX_PER_USER },
		{ "keep_ended_tiers_per_user", TIERS_KEEP_ENDED },
		{ "keep_ended_tiers", TIERS_KEEP_ENDED_ALL },
	};
	struct json_object *l = json_object_new_object();

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		add_uint(l, limits[i].key, limits[i].v);
	return l;
}

static struct json_object *op_status(struct memmigd *d, const struct client_cred *c,
				     const struct proto_request *req)
{
	static const char *const libvirt[] = { "off", "disconnected", "connected" };
	struct json_object *o = op_version(d, c, req), *jobs = json_object_new_object();
	struct metrics_now now;

	ops_metrics_now(d, &now);
	json_object_object_add(o, "pid", json_object_new_int(getpid()));
	json_object_object_add(o, "uptime_s", json_object_new_double(uptime_s(d)));
	json_object_object_add(o, "libvirt_state", json_object_new_string(libvirt[now.libvirt + 1]));
	if (now.libvirt >= 0) {
		char why[200];

		domains_libvirt_why(d->domains, why, sizeof(why));
		json_object_object_add(o, "libvirt_uri", d->opts.libvirt_uri[0] ?
				       json_object_new_string(d->opts.libvirt_uri) : NULL);
		json_object_object_add(o, "libvirt_error", why[0] ?
				       json_object_new_string(why) : NULL);
	}
	json_object_object_add(o, "socket", json_object_new_string(d->opts.socket));
	json_object_object_add(o, "socket_activated", json_object_new_boolean(d->activated));
	json_object_object_add(o, "metrics_file", d->opts.metrics_file[0] ?
			       json_object_new_string(d->opts.metrics_file) : NULL);
	add_uint(o, "clients", now.clients);
	add_uint(o, "subscribers", now.subscribers);
	add_uint(jobs, "queued", now.jobs_queued);
	add_uint(jobs, "running", now.jobs_running);
	json_object_object_add(o, "jobs", jobs);
	add_uint(o, "tiers", tiers_running(d->tiers));
	json_object_object_add(o, "limits", status_limits(d));
	return o;
}

/* The text exposition, and the same families as JSON for memmig-cli: the
 * client's view, where another user's tierings are root's to see. */
static struct json_object *op_metrics(struct memmigd *d, const struct client_cred *c,
				      const struct proto_request *req)
{
	struct json_object *o;
	struct metrics_now now;
	char *text;

	ops_metrics_now(d, &now);
	now.viewer = c->uid;
	text = metrics_text(d->metrics, &now);
	if (!text)
		return proto_reply_error(req, ENOMEM, "out of memory");
	o = proto_reply_ok(req);
	json_object_object_add(o, "text", json_object_new_string(text));
	json_object_object_add(o, "metrics", metrics_json(d->metrics, &now));
	free(text);
	return o;
}

/* The connection receives an event line per event from now on, between
 * the replies to its next requests if it sends any. */
static struct json_object *op_subscribe(struct memmigd *d, const struct proto_request *req,
					struct conn *conn)
{
	const char *why;
	int sndbuf;

	if (!conn)
		return proto_reply_error(req, EINVAL, "no connection to send events to");
	if (conn->subscribed)
		return proto_reply_ok(req);
	if (events_subscribe(d->events, conn->cred.uid, &why))
		return proto_reply_error(req, EBUSY, "%s", why);
	conn->subscribed = true;
	/* The kernel's buffer for a subscriber that does not read is bounded
	 * too: EVENTS_SNDBUF (doubled by the kernel) besides ours. */
	sndbuf = EVENTS_SNDBUF;
	if (setsockopt(conn->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)))
		util_log(LOG_DEBUG, "subscriber's SO_SNDBUF: %s", strerror(errno));
	return proto_reply_ok(req);
}

/*
 * Refusals said in the log with who, what and why, at most
 * REFUSALS_LOGGED per REFUSALS_WINDOW_S seconds, then how many were not
 * said: a client looping on bad requests cannot fill the journal.  Loop
 * thread only.
 */
#define REFUSALS_LOGGED		20
#define REFUSALS_WINDOW_S	60

void ops_refused(struct memmigd *d, const struct client_cred *c, const char *what, int err,
		 const char *msg)
{
	static time_t window;
	static unsigned int said, unsaid;
	time_t now = time(NULL);
	char name[16], safe[200];
	size_t i;

	if (now - window >= REFUSALS_WINDOW_S) {
		if (unsaid)
			util_log(LOG_NOTICE, "%u more refused requests in %d s were not logged",
				 unsaid, REFUSALS_WINDOW_S);
		window = now;
		said = unsaid = 0;
	}
	metrics_refused(d->metrics, metrics_refuse_reason(err));
	if (said >= REFUSALS_LOGGED) {
		unsaid++;
		return;
	}
	said++;
	/* The message may quote the client: no control characters in the log. */
	for (i = 0; msg[i] && i < sizeof(safe) - 1; i++)
		safe[i] = (unsigned char)msg[i] < 0x20 || msg[i] == 0x7f ? '?' : msg[i];
	safe[i] = '\0';
	util_log(LOG_NOTICE, "refused: client pid %d uid %u: %s: %s (%s): %s", c->pid, c->uid,
		 what, proto_errno_name(err, name, sizeof(name)),
		 metrics_refuse_name(metrics_refuse_reason(err)), safe);
}

void ops_account(struct memmigd *d, const struct client_cred *c, int op,
		 struct json_object *reply)
{
	struct json_object *ok, *v;
	int err = 0;

	if (json_object_object_get_ex(reply, "ok", &ok) && !json_object_get_boolean(ok) &&
	    json_object_object_get_ex(reply, "errno", &v))
		err = json_object_get_int(v);
	metrics_request(d->metrics, op);
	if (err) {
		json_object_object_get_ex(reply, "message", &v);
		ops_refused(d, c, op >= 0 ? proto_op_name(op) : "(invalid request)", err,
			    v ? json_object_get_string(v) : "");
	}
}

static const struct {
	op_fn fn;
	bool root_only;
} op_table[] = {
	[PROTO_OP_VERSION] = { op_version, false },
	[PROTO_OP_NODES] = { op_nodes, false },
	[PROTO_OP_MOVE] = { NULL, false },	/* op_move() */
	[PROTO_OP_JOBS] = { op_jobs, false },
	[PROTO_OP_JOB] = { op_job, false },
	[PROTO_OP_CANCEL] = { op_cancel, false },
	[PROTO_OP_REGISTER] = { op_register, true },
	[PROTO_OP_UNREGISTER] = { op_unregister, true },
	[PROTO_OP_DOMAINS] = { op_domains, false },
	[PROTO_OP_STATUS] = { op_status, false },
	[PROTO_OP_METRICS] = { op_metrics, false },
	[PROTO_OP_SUBSCRIBE] = { NULL, false },	/* op_subscribe() */
	[PROTO_OP_TIER_SET] = { op_tier_set, false },
	[PROTO_OP_TIER_CLEAR] = { op_tier_clear, false },
	[PROTO_OP_TIERS] = { op_tiers, false },
	[PROTO_OP_TIER] = { op_tier, false },
};

struct json_object *ops_handle(struct memmigd *d, const struct client_cred *c,
			       const char *line, size_t len, struct conn *conn)
{
	struct proto_request *req = malloc(sizeof(*req));	/* 4 KiB of ranges */
	struct json_object *o;
	bool taken = false;
	char err[256];
	int rc;

	if (!req)
		return proto_reply_error(NULL, ENOMEM, "out of memory");
	rc = proto_request_parse(line, len, req, err, sizeof(err));
	if (rc)
		o = proto_reply_error(req, rc, "%s", err);
	else if (op_table[req->op].root_only && c->uid != 0)
		o = proto_reply_error(req, EPERM, "only root may do that");
	else if (req->op == PROTO_OP_MOVE)
		o = op_move(d, c, req, conn, &taken);
	else if (req->op == PROTO_OP_SUBSCRIBE)
		o = op_subscribe(d, req, conn);
	else
		o = op_table[req->op].fn(d, c, req);
	/* A move planned elsewhere is counted when its reply comes. */
	if (o)
		ops_account(d, c, rc ? -1 : (int)req->op, o);
	if (!taken)
		free(req);	/* else the plan's, until its reply */
	return o;
}
