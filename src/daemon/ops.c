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
#include <unistd.h>

#include "config.h"
#include "daemon/memmigd.h"
#include "proto/nodes-json.h"

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
	case -ENOENT:
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

/*
 * Checks a move for a client: 0 with *mv (not yet planned) and
 * spec->procfd, or -errno with msg.  The process is pinned by an fd on
 * /proc/PID from the permission check to the job's start, so that a pid
 * reused meanwhile fails (ESRCH) instead of moving someone else's memory.
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
	spec->procfd = auth_target_open(pid);
	if (spec->procfd < 0) {
		move_error(spec->procfd, pid, req->to_node, msg, len);
		return spec->procfd;
	}
	rc = auth_may_move(c, spec->procfd, pid, msg, len);
	if (!rc)
		rc = jobs_admit(d->jobs, c->uid, msg, len);
	if (!rc) {
		rc = memmig_move_new(d->ctx, &o, mv);
		if (rc)
			move_error(rc, pid, req->to_node, msg, len);
	}
	if (rc)
		close(spec->procfd);
	return rc;
}

/* A plan that ended (rc): the job queued, or -errno with msg.  Takes mv
 * and spec->procfd in every case. */
static int queue_planned(struct memmigd *d, int rc, struct memmig_move *mv,
			 const struct job_spec *spec, struct json_object **job,
			 char *msg, size_t len)
{
	if (!rc && !auth_target_alive(spec->procfd))
		rc = -ESRCH;
	if (rc) {
		memmig_move_unref(mv);
		close(spec->procfd);
		move_error(rc, spec->pid, spec->to_node, msg, len);
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
	struct proto_request req = { .op = PROTO_OP_MOVE, .pid = pid, .to_node = to_node,
				     .strategy = MEMMIG_STRATEGY_KERNEL };
	struct client_cred root = { .pid = getpid() };
	struct memmig_move *mv;
	struct job_spec spec;
	char msg[512];
	int rc;

	snprintf(req.domain, sizeof(req.domain), "%s", name);
	rc = check_move(opaque, &root, pid, &req, &spec, &mv, msg, sizeof(msg));
	if (!rc) {
		spec.domain = name;
		/* The libvirt watcher's own thread: it may plan. */
		rc = queue_planned(opaque, memmig_move_plan(mv), mv, &spec, NULL,
				   msg, sizeof(msg));
	}
	if (rc)
		util_log(LOG_ERR, "domain %s: %s", name, msg);
	return rc;
}

static struct json_object *op_jobs(struct memmigd *d, const struct client_cred *c,
				   const struct proto_request *req)
{
	struct json_object *o = proto_reply_ok(req);

	json_object_object_add(o, "jobs", jobs_list_json(d->jobs, c->uid));
	return o;
}

static struct json_object *job_reply(const struct proto_request *req, int rc,
				     struct json_object *job, uid_t uid)
{
	struct json_object *o;

	if (rc == -ESRCH)
		return proto_reply_error(req, rc, "no job %llu", (unsigned long long)req->job);
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

	return job_reply(req, rc, job, c->uid);
}

static struct json_object *op_cancel(struct memmigd *d, const struct client_cred *c,
				     const struct proto_request *req)
{
	struct json_object *job = NULL;
	int rc = jobs_cancel(d->jobs, req->job, c->uid, &job);

	return job_reply(req, rc, job, c->uid);
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
	else
		o = op_table[req->op].fn(d, c, req);
	if (!taken)
		free(req);	/* else the plan's, until its reply */
	return o;
}
