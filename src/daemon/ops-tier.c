/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tiering ops (docs/protocol.md): tier_set, tier_clear, tiers, tier,
 * and a libvirt domain's tier element (docs/libvirt.md), root's.  A
 * policy is checked as a move is: the client may move the process's
 * memory, every node exists with memory and the process's cpuset allows
 * it, and the process is pinned by an fd on /proc/PID, through which the
 * tiering reads it and asks the rule again before each interval
 * (tiers.c): a tiering ends with EPERM once its owner may no longer move
 * the process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/domains.h"
#include "daemon/memmigd.h"
#include "daemon/tiers.h"
#include "util/cpuset.h"

/* The policy a request asks for: its members over the defaults. */
static void policy_from(const struct proto_tier_request *t, struct tiers_policy *p)
{
	tiers_policy_defaults(p);
	memcpy(p->fast, t->fast, t->nfast * sizeof(int));
	p->nfast = t->nfast;
	memcpy(p->slow, t->slow, t->nslow * sizeof(int));
	p->nslow = t->nslow;
	if (t->given & PROTO_TIER_FREE) {
		p->fast_free = t->fast_free;
		p->slow_share = 0;
	}
	if (t->given & PROTO_TIER_SHARE)
		p->slow_share = t->slow_share;
	if (t->given & PROTO_TIER_INTERVAL)
		p->interval_ms = t->interval_ms;
	if (t->given & PROTO_TIER_RATE)
		p->rate = t->rate;
	if (t->given & PROTO_TIER_COLD)
		p->cold_intervals = t->cold_intervals;
	if (t->given & PROTO_TIER_STAY)
		p->min_stay = t->min_stay;
	if (t->given & PROTO_TIER_PAUSE)
		p->pause_ms = t->pause_ms;
}

/* Every node of the policy has memory and the process may use it. */
static int check_nodes(const struct auth_pin *pin, const struct tiers_policy *p, char *msg,
		       size_t len)
{
	int rc = 0;

	for (unsigned int i = 0; !rc && i < p->nfast + p->nslow; i++) {
		int node = i < p->nfast ? p->fast[i] : p->slow[i - p->nfast];

		/* ENOENT, as a move's missing node. */
		rc = util_node_has_memory(node, msg, len);
		if (!rc)
			rc = util_cpuset_check_at(pin->pid, pin->procfd, node, msg, len);
	}
	return rc;
}

/*
 * Checks spec->policy, and that c may move spec->pid's memory to its
 * nodes, then starts its tiering (or gives the running one the policy):
 * 0 with *tier, or -errno with msg.
 */
static int tier_start(struct memmigd *d, const struct client_cred *c, struct tiers_spec *spec,
		      struct json_object **tier, char *msg, size_t len)
{
	int rc = tiers_policy_check(&spec->policy, msg, len);
	uint64_t job;

	if (rc)
		return rc;
	rc = auth_pin_new(c, spec->pid, &spec->pin, msg, len);
	if (rc)
		return rc;
	rc = check_nodes(spec->pin, &spec->policy, msg, len);
	if (!rc && (job = jobs_moving(d->jobs, spec->pid))) {
		snprintf(msg, len, "pid %d is being moved by job %llu: tier it once that job "
			 "ended", spec->pid, (unsigned long long)job);
		rc = -EBUSY;
	}
	if (rc) {
		auth_pin_free(spec->pin);
		return rc;
	}
	/* As for a move: another user's pages shared with this process stay. */
	spec->flags = c->uid != 0 ? MEMMIG_MIGRATE_OWN_PAGES : 0;
	return tiers_set(d->tiers, spec, tier, msg, len);
}

struct json_object *op_tier_set(struct memmigd *d, const struct client_cred *c,
				const struct proto_request *req)
{
	const char *domain = req->domain[0] ? req->domain : NULL;
	struct tiers_spec spec = { .pid = req->pid, .domain = domain, .uid = c->uid };
	struct json_object *o, *tier = NULL;
	char msg[512];
	int rc;

	if (domain && domains_resolve(d->domains, domain, &spec.pid))
		return proto_reply_error(req, ENOENT, "no domain \"%s\"", domain);
	policy_from(&req->tier, &spec.policy);
	rc = tier_start(d, c, &spec, &tier, msg, sizeof(msg));
	if (rc)
		return proto_reply_error(req, rc, "%s", msg);
	o = proto_reply_ok(req);
	json_object_object_add(o, "tier", tier);
	return o;
}

int ops_domain_tier(void *opaque, const char *name, int pid, const struct tiers_policy *p,
		    unsigned long long *id, char *msg, size_t len)
{
	struct memmigd *d = opaque;
	struct client_cred root = { .pid = getpid() };
	struct tiers_spec spec = { .pid = pid, .domain = name };
	struct json_object *tier = NULL, *v;
	int rc;

	/* The libvirt watcher's thread, for the domain's metadata: root's
	 * request, checked as a client's would be. */
	if (p) {
		spec.policy = *p;
		rc = tier_start(d, &root, &spec, &tier, msg, len);
	} else {
		rc = tiers_clear(d->tiers, 0, pid, 0, &tier, msg, len);
	}
	if (!rc && json_object_object_get_ex(tier, "id", &v))
		*id = (unsigned long long)json_object_get_uint64(v);
	json_object_put(tier);
	metrics_request(d->metrics, p ? PROTO_OP_TIER_SET : PROTO_OP_TIER_CLEAR);
	if (rc)
		metrics_refused(d->metrics, metrics_refuse_reason(-rc));
	return rc;
}

struct json_object *op_tier_clear(struct memmigd *d, const struct client_cred *c,
				  const struct proto_request *req)
{
	struct json_object *o, *tier = NULL;
	int pid = req->pid, rc;
	char msg[256];

	if (req->domain[0] && domains_resolve(d->domains, req->domain, &pid))
		return proto_reply_error(req, ENOENT, "no domain \"%s\"", req->domain);
	rc = tiers_clear(d->tiers, req->tier.id, pid, c->uid, &tier, msg, sizeof(msg));
	/* By domain: the answer names the domain, never the pid behind it
	 * (another user's domain's pid is not theirs to learn). */
	if (rc && req->domain[0])
		return proto_reply_error(req, rc, "domain \"%s\" is not tiered", req->domain);
	if (rc)
		return proto_reply_error(req, rc, "%s", msg);
	o = proto_reply_ok(req);
	json_object_object_add(o, "tier", tier);
	return o;
}

struct json_object *op_tiers(struct memmigd *d, const struct client_cred *c,
			     const struct proto_request *req)
{
	struct json_object *o = proto_reply_ok(req);

	json_object_object_add(o, "tiers", tiers_list_json(d->tiers, c->uid));
	return o;
}

struct json_object *op_tier(struct memmigd *d, const struct client_cred *c,
			    const struct proto_request *req)
{
	struct json_object *o, *tier = NULL;
	int rc = tiers_get_json(d->tiers, req->tier.id, c->uid, &tier);

	/* Another user's is not there, in the same words (no oracle). */
	if (rc)
		return proto_reply_error(req, rc, "no tiering %llu",
					 (unsigned long long)req->tier.id);
	o = proto_reply_ok(req);
	json_object_object_add(o, "tier", tier);
	return o;
}
