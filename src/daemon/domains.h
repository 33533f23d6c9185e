/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvirt domains memmigd knows: registered by the libvirt hook
 * (contrib/libvirt/hooks/qemu) and, when memmigd is built with libvirt,
 * found through libvirtd, whose lifecycle and metadata-change events it
 * follows on a thread of its own.  A memmig placement element set in a
 * domain's metadata asks for a move (docs/libvirt.md).
 */
#ifndef MEMMIGD_DOMAINS_H
#define MEMMIGD_DOMAINS_H

#include <stddef.h>

#include <json-c/json.h>

/* The metadata namespace: <placement node="N"/> under it asks for a move. */
#define MEMMIG_LIBVIRT_NS_URI	"http://memmig.org/xmlns/libvirt/placement/1"
#define MEMMIG_LIBVIRT_NS_KEY	"memmig"
/* Where memmigd reports the outcome: <status node="N" result="OK" .../>. */
#define MEMMIG_LIBVIRT_STATUS_URI "http://memmig.org/xmlns/libvirt/status/1"
#define MEMMIG_LIBVIRT_STATUS_KEY "memmigstatus"
/* <tier fast="0" slow="2" .../> under it tiers the domain; removed, ends it. */
#define MEMMIG_LIBVIRT_TIER_URI	"http://memmig.org/xmlns/libvirt/tier/1"
#define MEMMIG_LIBVIRT_TIER_KEY	"memmigtier"
/* Where memmigd reports what came of it: <tier-status action="set" .../>. */
#define MEMMIG_LIBVIRT_TIER_STATUS_URI "http://memmig.org/xmlns/libvirt/tier-status/1"
#define MEMMIG_LIBVIRT_TIER_STATUS_KEY "memmigtierstatus"

struct domains;
struct state;
struct tiers_policy;

/*
 * Asks the daemon to move a domain's QEMU process to a node, as root, with
 * the kernel strategy; returns 0 (job queued) or -errno.  Called on the
 * libvirt thread.
 */
typedef int (*domains_move_fn)(void *opaque, const char *name, int pid,
			       int to_node);

/*
 * Asks the daemon to tier a domain's QEMU process under p (checked as a
 * move is), as root, or to end its tiering (p NULL); 0 with the tiering's
 * *id, or -errno with a sentence in msg.  Called on the libvirt thread.
 */
typedef int (*domains_tier_fn)(void *opaque, const char *name, int pid,
			       const struct tiers_policy *p, unsigned long long *id,
			       char *msg, size_t len);

/*
 * uri: libvirt connection URI (NULL: no libvirt; "" the default,
 * qemu:///system).  libvirtd being down is not an error: memmigd keeps
 * trying to connect in the background and logs it.  move and tier may
 * be NULL (nothing to ask: -EOPNOTSUPP).  st (may be NULL): memmigd's
 * state file, where a widened nodeset is kept until it is narrowed or
 * restored, and from which those a killed memmigd left are dealt with at
 * the first connect.
 */
int domains_new(const char *uri, domains_move_fn move, domains_tier_fn tier,
		void *opaque, struct state *st, struct domains **out);
void domains_free(struct domains *d);

int domains_register(struct domains *d, const char *name, const char *uuid,
		     int pid, const char *nodeset);
/* -ENOENT if unknown. */
int domains_unregister(struct domains *d, const char *name);
/* The domain's QEMU pid: the registry first, then libvirtd; -ENOENT. */
int domains_resolve(struct domains *d, const char *name, int *pid);
/*
 * Before a domain's move, on a thread that may wait for libvirtd: widens
 * the domain's live memory nodeset to take to_node (docs/libvirt.md, "The
 * rebalance"), so that move_pages may put pages there; the job's end
 * (domains_job_done()) narrows it to to_node, or restores it if the move
 * failed.  0 (widened, or nothing to agree with: no libvirt, no nodeset)
 * or -errno with msg (-EBUSY: a rebalance of the domain is under way).
 */
int domains_rebalance_begin(struct domains *d, const char *name, int pid,
			    int to_node, char *msg, size_t len);
/* {"domains": [...]} members as an array (new reference). */
struct json_object *domains_list_json(struct domains *d);
/*
 * Told of each domain registered (by the hook or found through libvirtd)
 * or forgotten: state "registered" or "unregistered"; on the thread that
 * changed the registry, its lock held (fn must not call back in).  opaque
 * is domains_new()'s.
 */
typedef void (*domains_event_fn)(void *opaque, const char *name, int pid,
				 const char *state);
void domains_set_event_fn(struct domains *d, domains_event_fn fn);
/* libvirtd: -1 not used, 0 not connected now, 1 connected. */
int domains_libvirt_state(struct domains *d);
/* Why libvirtd is not connected now ("" when it is). */
void domains_libvirt_why(struct domains *d, char *buf, size_t len);
/*
 * A domain's job ended (result 0 or -errno, bytes moved): recorded in the
 * list and, with libvirt, in the domain's metadata as
 * <status node="N" result="OK" .../> under the status namespace.
 */
void domains_job_done(struct domains *d, const char *name, int to_node,
		      int result, unsigned long long bytes_moved);

#endif
