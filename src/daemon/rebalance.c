/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A domain's move the way libvirt would place it, but fast: libvirt keeps
 * a domain's memory on its <numatune> nodeset through the cgroup's
 * cpuset.mems, where move_pages(2) cannot put pages (EACCES), and a later
 * change of that nodeset makes the kernel migrate the memory itself,
 * slowly.  So:
 *   1. widen: the live nodeset gets the target node (libvirt writes
 *      cpuset.mems; the kernel moves nothing, every page's node stays
 *      allowed);
 *   2. move: memmig's job moves the pages;
 *   3. narrow: the nodeset becomes the target alone; with every page there
 *      already, the kernel has nothing left to move.
 * libvirt changes a running domain's nodeset in numatune mode
 * "restrictive" only (cpuset.mems alone); in "strict" QEMU also binds its
 * memory with mbind(2), so a domain in that mode moves within its nodeset
 * only, and its nodeset stays.
 * A move that fails or is cancelled restores the nodeset it found.  Each
 * step's bytes that changed node are measured from /proc/PID/numa_maps
 * and split between the kernel and memmig (the job's report).
 * A widened nodeset is kept in memmigd's state file until the narrow or
 * the restore: a memmigd killed in between leaves it there, and the next
 * one, once connected, narrows it if every page is on the target already
 * and restores it otherwise -- only if the domain still runs in the same
 * QEMU with the nodeset memmigd set.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/domains-private.h"
#include "daemon/state.h"
#include "proto/job-json.h"
#include "util/cpuset.h"
#include "util/numa-usage.h"
#include "util/size.h"

const char *rebalance_state_name(enum rebalance_state s)
{
	static const char *const names[] = {
		[REBALANCE_NONE] = "none", [REBALANCE_MOVING] = "moving",
		[REBALANCE_NARROWING] = "narrowing", [REBALANCE_DONE] = "done",
		[REBALANCE_ROLLED_BACK] = "rolled-back", [REBALANCE_FAILED] = "failed",
	};

	return names[s];
}

static struct json_object *step_json(const struct rebalance_step *st)
{
	return proto_rebalance_step_json(st->kernel, st->memmig);
}

static struct json_object *str_or_null(const char *s)
{
	return *s ? json_object_new_string(s) : NULL;
}

struct json_object *rebalance_json(const struct rebalance *rb)
{
	struct json_object *o = json_object_new_object();
	char ebuf[32];

	json_object_object_add(o, "state", json_object_new_string(rebalance_state_name(rb->state)));
	json_object_object_add(o, "to_node", json_object_new_int(rb->to_node));
	json_object_object_add(o, "mode", str_or_null(rb->mode));
	json_object_object_add(o, "nodeset_before", str_or_null(rb->nodeset_before));
	json_object_object_add(o, "nodeset_widened", str_or_null(rb->nodeset_widened));
	json_object_object_add(o, "nodeset_after", str_or_null(rb->nodeset_after));
	json_object_object_add(o, "result", rb->state < REBALANCE_DONE ? NULL :
			       json_object_new_string(domains_errno_name(rb->result, ebuf,
									 sizeof(ebuf))));
	json_object_object_add(o, "widen", step_json(&rb->widen));
	json_object_object_add(o, "move", step_json(&rb->move));
	json_object_object_add(o, "narrow", step_json(&rb->narrow));
	json_object_object_add(o, "message", str_or_null(rb->message));
	return o;
}

/* Whether libvirt changes this domain's nodeset while it runs. */
static bool settable(const struct rebalance *rb)
{
	return !strcmp(rb->mode, "restrictive");
}

/* Sets the nodeset and measures what the kernel moved meanwhile. */
static int set_measured(struct domains_libvirt *lv, struct rebalance *rb, const char *name,
			const char *nodeset, struct rebalance_step *st,
			struct util_numa_usage *after, char *err, size_t len)
{
	struct util_numa_usage before;
	int ret, have;

	have = !util_numa_usage_read(rb->pid, &before);
	ret = domains_libvirt_set_nodeset(lv, name, nodeset, err, len);
	if (!ret && have && !util_numa_usage_read(rb->pid, after))
		st->kernel = util_numa_usage_moved(&before, after);
	return ret;
}

/* The widened nodeset into the state file, until the narrow or restore. */
static void keep_widened(struct domains *d, struct domains_libvirt *lv, const char *name,
			 struct rebalance *rb)
{
	struct state_rebalance sr = { .pid = rb->pid, .to_node = rb->to_node };
	char err[200];

	if (!domains_state(d) ||
	    domains_libvirt_uuid(lv, name, rb->uuid, sizeof(rb->uuid), err, sizeof(err)))
		return;
	snprintf(sr.uuid, sizeof(sr.uuid), "%s", rb->uuid);
	snprintf(sr.before, sizeof(sr.before), "%s", rb->nodeset_before);
	snprintf(sr.widened, sizeof(sr.widened), "%s", rb->nodeset_widened);
	state_rebalance_set(domains_state(d), &sr);
}

int domains_rebalance_begin(struct domains *d, const char *name, int pid,
			    int to_node, char *msg, size_t len)
{
	struct domains_libvirt *lv = domains_watcher(d);
	struct rebalance rb = { .state = REBALANCE_MOVING, .pid = pid, .to_node = to_node };
	struct util_numa_usage *u;
	char err[200] = "";
	int ret;

	if (!lv)
		return 0;
	ret = domains_libvirt_nodeset(lv, name, rb.nodeset_before, sizeof(rb.nodeset_before),
				      rb.mode, sizeof(rb.mode), err, sizeof(err));
	/* Not connected, or no nodeset: nothing to agree with (a cpuset
	 * that excludes the node then refuses the move, saying so). */
	if (ret == -ENOTCONN || (!ret && !rb.nodeset_before[0]))
		return 0;
	if (ret) {
		snprintf(msg, len, "domain %s: reading its nodeset from libvirt: %s", name, err);
		return ret;
	}
	if (!settable(&rb) && !util_nodelist_has(rb.nodeset_before, to_node)) {
		snprintf(msg, len, "domain %s: its numatune mode '%s' keeps its memory on nodes '%s', "
			 "and libvirt changes a running domain's nodeset in mode 'restrictive' only: "
			 "move it within '%s', or give it <memory mode='restrictive'/> "
			 "(virsh numatune %s --mode restrictive --config, then restart it)",
			 name, rb.mode, rb.nodeset_before, rb.nodeset_before, name);
		return -EPERM;
	}
	if (!util_nodelist_has(rb.nodeset_before, to_node) &&
	    util_nodelist_add(rb.nodeset_before, to_node, rb.nodeset_widened,
			      sizeof(rb.nodeset_widened))) {
		snprintf(msg, len, "domain %s: nodeset '%s' unreadable", name, rb.nodeset_before);
		return -EINVAL;
	}
	ret = domains_rebalance_claim(d, name, &rb);
	if (ret) {
		snprintf(msg, len, ret == -EBUSY ? "domain %s: a rebalance of it is under way" :
			 "no domain \"%s\"", name);
		return ret;
	}
	u = malloc(sizeof(*u));
	if (!u)
		ret = -ENOMEM;
	else if (rb.nodeset_widened[0])
		ret = set_measured(lv, &rb, name, rb.nodeset_widened, &rb.widen, u, err,
				   sizeof(err));
	else
		util_numa_usage_read(pid, u);
	if (u)
		util_numa_usage_mark(u, to_node, &rb.target_mark);
	free(u);
	if (ret) {
		snprintf(msg, len, "domain %s: libvirt refused to widen its nodeset from '%s' to "
			 "'%s': %s", name, rb.nodeset_before, rb.nodeset_widened, err);
		rb.state = REBALANCE_FAILED;
		rb.result = ret;
		snprintf(rb.nodeset_after, sizeof(rb.nodeset_after), "%s", rb.nodeset_before);
		snprintf(rb.message, sizeof(rb.message), "%s", msg);
		domains_rebalance_put(d, name, &rb);
		return ret;
	}
	if (rb.nodeset_widened[0])
		keep_widened(d, lv, name, &rb);
	util_log(LOG_INFO, "domain %s: nodeset '%s'%s%s for the move to node %d", name,
		 rb.nodeset_before, rb.nodeset_widened[0] ? " widened to '" : " kept",
		 rb.nodeset_widened[0] ? rb.nodeset_widened : "", to_node);
	domains_rebalance_put(d, name, &rb);
	return 0;
}

void domains_rebalance_end(struct domains *d, const char *name)
{
	struct domains_libvirt *lv = domains_watcher(d);
	char target[16], err[200] = "";
	const char *want, *what;
	struct util_numa_usage *u;
	struct rebalance rb;
	char kb[32];
	int ret;

	if (!lv || domains_rebalance_get(d, name, &rb) || rb.state != REBALANCE_NARROWING)
		return;
	snprintf(target, sizeof(target), "%d", rb.to_node);
	/* Moved: the target alone.  Failed or cancelled: what it was (the
	 * kernel then moves back what memmig moved: the domain asked for
	 * that nodeset). */
	want = rb.result ? rb.nodeset_before : target;
	what = rb.result ? "restore" : "narrow";
	u = malloc(sizeof(*u));
	if (!u) {
		ret = -ENOMEM;
	} else if (settable(&rb) && (!rb.result || rb.nodeset_widened[0])) {
		ret = set_measured(lv, &rb, name, want, &rb.narrow, u, err, sizeof(err));
	} else {
		/* Failed and never widened: nothing to undo.  Not settable:
		 * the move stayed within the nodeset, which stays. */
		want = rb.nodeset_before;
		ret = 0;
	}
	if (u && !ret && !rb.result && !util_numa_usage_read(rb.pid, u))
		rb.move.kernel = util_numa_usage_kernel_share(u, rb.to_node, &rb.target_mark,
							      rb.move.memmig, rb.narrow.kernel);
	free(u);
	if (ret) {
		rb.state = REBALANCE_FAILED;
		snprintf(rb.message, sizeof(rb.message), "libvirt refused to %s the nodeset to '%s': %s",
			 what, want, err);
		util_log(LOG_ERR, "domain %s: %s", name, rb.message);
	} else {
		if (rb.uuid[0])
			state_rebalance_end(domains_state(d), rb.uuid);
		rb.state = rb.result ? REBALANCE_ROLLED_BACK : REBALANCE_DONE;
		snprintf(rb.nodeset_after, sizeof(rb.nodeset_after), "%s", want);
		if (!settable(&rb))
			snprintf(rb.message, sizeof(rb.message), "numatune mode '%s': libvirt keeps "
				 "the nodeset '%s' of a running domain", rb.mode, want);
		else
			snprintf(rb.message, sizeof(rb.message), rb.result ?
				 "the move failed: nodeset restored to '%s', the kernel moved %s back" :
				 "nodeset narrowed to '%s': the kernel moved %s at the narrow",
				 want, util_size_human(rb.narrow.kernel, kb, sizeof(kb)));
		util_log(LOG_INFO, "domain %s: %s", name, rb.message);
	}
	domains_rebalance_put(d, name, &rb);
}

/* What a killed memmigd left: one domain's nodeset widened for a move.
 * Kept in the file only when libvirtd could not be asked. */
static void recover_one(struct domains *d, struct domains_libvirt *lv,
			const struct state_rebalance *r)
{
	struct rebalance rb = { .state = REBALANCE_MOVING, .to_node = r->to_node,
				.result = -EINTR };
	char name[PROTO_NAME_MAX], now[PROTO_NODESET_MAX], target[16], err[200] = "";
	char kb[32];
	struct util_numa_usage *u = NULL;
	const char *want;
	bool claimed;
	int ret;

	ret = domains_libvirt_name(lv, r->uuid, name, sizeof(name), err, sizeof(err));
	if (ret == -ENOTCONN)
		return;
	if (ret) {
		util_log(LOG_INFO, "domain %s: its nodeset, widened for a move to node %d by a "
			 "memmigd that was killed, went with it: %s", r->uuid, r->to_node, err);
		goto done;
	}
	if (domains_pidfile_resolve(DOMAINS_PIDFILE_DIR, name, &rb.pid) || rb.pid != r->pid) {
		util_log(LOG_INFO, "domain %s: restarted since a killed memmigd widened its nodeset "
			 "for a move to node %d: its nodeset is its own again", name, r->to_node);
		goto done;
	}
	ret = domains_libvirt_nodeset(lv, name, now, sizeof(now), rb.mode, sizeof(rb.mode),
				      err, sizeof(err));
	if (ret) {
		util_log(LOG_WARNING, "domain %s: reading its nodeset, to end the move a killed "
			 "memmigd left: %s (tried again at the next connect)", name, err);
		return;
	}
	if (!util_nodelist_same(now, r->widened)) {
		util_log(LOG_INFO, "domain %s: a killed memmigd widened its nodeset to '%s' for a "
			 "move to node %d; it is '%s' now, set since by someone else: left as it is",
			 name, r->widened, r->to_node, now);
		goto done;
	}
	snprintf(rb.nodeset_before, sizeof(rb.nodeset_before), "%s", r->before);
	snprintf(rb.nodeset_widened, sizeof(rb.nodeset_widened), "%s", r->widened);
	/* Another move of it, started since the connect, ends it itself. */
	ret = domains_rebalance_claim(d, name, &rb);
	if (ret == -EBUSY)
		goto done;
	claimed = !ret;
	u = malloc(sizeof(*u));
	if (u && !util_numa_usage_read(rb.pid, u))
		util_numa_usage_mark(u, r->to_node, &rb.target_mark);
	else
		rb.target_mark.off = 1;	/* unknown: restore */
	/* Every page there already: the move had ended, the narrow had not. */
	if (!rb.target_mark.off)
		rb.result = 0;
	snprintf(target, sizeof(target), "%d", r->to_node);
	want = rb.result ? r->before : target;
	ret = u ? set_measured(lv, &rb, name, want, &rb.narrow, u, err, sizeof(err)) : -ENOMEM;
	free(u);
	if (ret) {
		rb.state = REBALANCE_FAILED;
		snprintf(rb.message, sizeof(rb.message), "memmigd was killed during a move to node "
			 "%d; libvirt refused to set the nodeset '%s' at the restart: %s "
			 "(tried again at the next connect to libvirtd)", r->to_node, want, err);
	} else {
		rb.state = rb.result ? REBALANCE_ROLLED_BACK : REBALANCE_DONE;
		snprintf(rb.nodeset_after, sizeof(rb.nodeset_after), "%s", want);
		snprintf(rb.message, sizeof(rb.message), rb.result ?
			 "memmigd was killed during a move to node %d: nodeset restored to '%s' at the "
			 "restart, the kernel moved %s back" :
			 "memmigd was killed after a move to node %d: nodeset narrowed to '%s' at the "
			 "restart, the kernel moved %s", r->to_node, want,
			 util_size_human(rb.narrow.kernel, kb, sizeof(kb)));
	}
	util_log(ret ? LOG_ERR : LOG_INFO, "domain %s: %s", name, rb.message);
	if (claimed)
		domains_rebalance_put(d, name, &rb);
	if (ret)
		return;
done:
	state_rebalance_end(domains_state(d), r->uuid);
}

void domains_rebalance_recover(struct domains *d)
{
	struct state_rebalance *left;
	unsigned int n;

	if (!domains_state(d) || !domains_watcher(d))
		return;
	left = calloc(STATE_REBALANCE_MAX, sizeof(*left));
	if (!left)
		return;
	n = state_rebalances_left(domains_state(d), left, STATE_REBALANCE_MAX);
	for (unsigned int i = 0; i < n; i++)
		recover_one(d, domains_watcher(d), &left[i]);
	free(left);
}
