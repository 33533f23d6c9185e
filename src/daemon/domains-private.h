/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the registry (domains.c), the QEMU pid lookup (domains-pid.c), the
 * metadata elements (domains-xml.c) and the libvirt watcher
 * (domains-libvirt.c) share.  Only the registry touches the table; the
 * watcher goes through the functions below, which take the lock.
 */
#ifndef MEMMIGD_DOMAINS_PRIVATE_H
#define MEMMIGD_DOMAINS_PRIVATE_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "daemon/domains.h"
#include "daemon/memmigd.h"	/* util_log() */
#include "proto/proto.h"
#include "util/numa-usage.h"

#define DOMAINS_MAX		1024	/* entries: the hook cannot grow us without bound */
#define DOMAINS_XML_MAX		4096	/* a metadata element we are willing to read */
#define DOMAINS_PIDFILE_DIR	"/run/libvirt/qemu"

enum domain_source {
	DOMAIN_SOURCE_HOOK,
	DOMAIN_SOURCE_LIBVIRT,
};

/* ---- registry (domains.c), for the watcher ---- */
/*
 * Adds a domain libvirtd told us about.  A live entry (the hook's, say)
 * is left alone unless replace is set; one whose process is gone is
 * replaced.  0 or -errno (-ENOSPC when full).
 */
int domains_add(struct domains *d, const char *name, const char *uuid, int pid,
		const char *nodeset, enum domain_source src, bool replace);
/* A stop event: drops the entry if its process is gone (a quick restart
 * may have registered the new one already); 0 or -ENOENT. */
int domains_forget(struct domains *d, const char *name);
/* Asks the daemon for a move (the placement element); 0 or -errno. */
int domains_request_move(struct domains *d, const char *name, int to_node);
/* Asks the daemon to tier the domain under p (the tier element), or to
 * end its tiering (p NULL): 0 with the tiering's *id, or -errno with msg. */
int domains_request_tier(struct domains *d, const char *name, const struct tiers_policy *p,
			 unsigned long long *id, char *msg, size_t len);

/* ---- the rebalance around a domain's move (rebalance.c) ---- */
enum rebalance_state {
	REBALANCE_NONE,		/* no nodeset to agree with */
	REBALANCE_MOVING,	/* widened (if needed); memmig's job runs */
	REBALANCE_NARROWING,	/* the job ended; the watcher narrows or restores */
	REBALANCE_DONE,		/* narrowed to the target */
	REBALANCE_ROLLED_BACK,	/* the move failed: the nodeset is restored */
	REBALANCE_FAILED,	/* libvirt refused the narrow or the restore */
};

/* One step's bytes that changed node: by the kernel, by memmig. */
struct rebalance_step {
	unsigned long long kernel, memmig;
};

struct rebalance {
	enum rebalance_state state;
	int pid, to_node, result;
	char nodeset_before[PROTO_NODESET_MAX];	/* libvirt's live nodeset */
	char mode[16];				/* its numatune mode */
	char nodeset_widened[PROTO_NODESET_MAX]; /* "": it had the target */
	char nodeset_after[PROTO_NODESET_MAX];
	char uuid[PROTO_UUID_MAX];		/* "": not in the state file */
	/* resident bytes on the target and elsewhere after the widen: the
	 * move's kernel share is what arrived there from the other nodes
	 * beyond what memmig moved */
	struct util_numa_mark target_mark;
	struct rebalance_step widen, move, narrow;
	char message[512];
};

const char *rebalance_state_name(enum rebalance_state s);
struct json_object *rebalance_json(const struct rebalance *rb);
/* The registry's copy: 0, -ENOENT (no domain) or -EBUSY (claim: one is
 * in progress). */
int domains_rebalance_claim(struct domains *d, const char *name,
			    const struct rebalance *rb);
int domains_rebalance_get(struct domains *d, const char *name, struct rebalance *rb);
void domains_rebalance_put(struct domains *d, const char *name,
			   const struct rebalance *rb);
/* On the watcher thread, after the job ended: narrows or restores. */
void domains_rebalance_end(struct domains *d, const char *name);
/* On the watcher thread, at each connect: the nodesets a killed memmigd
 * left widened are narrowed (every page on the target already) or
 * restored. */
void domains_rebalance_recover(struct domains *d);
struct domains_libvirt *domains_watcher(struct domains *d);
struct state *domains_state(struct domains *d);

/* ---- QEMU processes (domains-pid.c) ---- */
bool domains_name_valid(const char *name);
/* The process's start time in clock ticks after boot (field 22 of
 * /proc/PID/stat): with the pid, it names one process for good.  -ESRCH
 * when there is none, or only a zombie. */
int domains_pid_starttime(int pid, unsigned long long *out);
/* Whether cmdline (NUL-separated, len bytes) is QEMU's for domain name:
 * "-name guest=NAME,..." (commas doubled) or "-name NAME". */
bool domains_cmdline_is_domain(const char *cmdline, size_t len,
			       const char *name);
/* The running QEMU of a domain of qemu:///system from libvirt's pid file,
 * checked against its command line; -ENOENT when there is none. */
int domains_pidfile_resolve(const char *dir, const char *name, int *pid);

/* ---- metadata elements (domains-xml.c) ---- */
/* <placement node="N"/> (a prefix and xmlns attributes allowed); 0 or
 * -EINVAL. */
int domains_placement_parse(const char *xml, int *node);
/* <status node="N" result="OK" bytes="B" time="ISO 8601 UTC"/> (no node
 * when node < 0); 0 or -ENOSPC. */
int domains_status_format(char *buf, size_t len, int node, int result,
			  unsigned long long bytes, time_t when);
/*
 * <tier fast="0" slow="2" .../> (docs/libvirt.md: slow-share or
 * fast-free, interval-ms, rate, cold, stay, pause-ms), read over
 * tiers_policy_defaults() and checked by tiers_policy_check(): 0 with *p,
 * or -EINVAL with a sentence in err.
 */
int domains_tier_parse(const char *xml, struct tiers_policy *p, char *err, size_t len);
/* <tier-status action="set" result="OK" tier="ID" time="..."/>, or with
 * message="..." (escaped, cut) instead of tier when result is an error;
 * 0 or -ENOSPC. */
int domains_tier_status_format(char *buf, size_t len, const char *action, int result,
			       unsigned long long id, const char *msg, time_t when);
const char *domains_errno_name(int err, char *buf, size_t len);

/* ---- the watcher (domains-libvirt.c, or the stubs without libvirt) ---- */
struct domains_libvirt;

#ifdef HAVE_LIBVIRT
/* Starts the thread (uri "": libvirt's default); libvirtd being down is
 * not an error. */
int domains_libvirt_start(struct domains *d, const char *uri,
			  struct domains_libvirt **out);
void domains_libvirt_stop(struct domains_libvirt *lv);
/* The domain's live memory nodeset ("" none) and numatune mode ("strict",
 * "restrictive", ...: libvirt changes a live nodeset in mode restrictive
 * only): 0, -ENOTCONN, -ENOENT or -EIO with libvirt's message in err. */
int domains_libvirt_nodeset(struct domains_libvirt *lv, const char *name,
			    char *buf, size_t len, char *mode, size_t modelen,
			    char *err, size_t errlen);
/* The domain's uuid, and the name of a running domain by its uuid:
 * 0, -ENOTCONN, -ENOENT (none, or not running) with err. */
int domains_libvirt_uuid(struct domains_libvirt *lv, const char *name, char *uuid,
			 size_t len, char *err, size_t errlen);
int domains_libvirt_name(struct domains_libvirt *lv, const char *uuid, char *name,
			 size_t len, char *err, size_t errlen);
/* Sets it, live (virDomainSetNumaParameters): 0 or -errno with err. */
int domains_libvirt_set_nodeset(struct domains_libvirt *lv, const char *name,
				const char *nodeset, char *err, size_t errlen);
/* Queues the status element for the watcher to write: never blocks. */
void domains_libvirt_status(struct domains_libvirt *lv, const char *name,
			    int to_node, int result, unsigned long long bytes);
/* Whether the watcher is connected to libvirtd now. */
bool domains_libvirt_connected(struct domains_libvirt *lv);
/* Why it is not: libvirt's last error, or how the connection ended. */
void domains_libvirt_down_why(struct domains_libvirt *lv, char *buf, size_t len);
#else
static inline int domains_libvirt_start(struct domains *d, const char *uri,
					struct domains_libvirt **out)
{
	(void)d; (void)uri; (void)out;
	return -EOPNOTSUPP;
}
static inline void domains_libvirt_stop(struct domains_libvirt *lv)
{
	(void)lv;
}
static inline int domains_libvirt_nodeset(struct domains_libvirt *lv, const char *name,
					  char *buf, size_t len, char *mode, size_t modelen,
					  char *err, size_t errlen)
{
	(void)lv; (void)name; (void)buf; (void)len; (void)mode; (void)modelen;
	(void)err; (void)errlen;
	return -ENOTCONN;
}
static inline int domains_libvirt_uuid(struct domains_libvirt *lv, const char *name,
				       char *uuid, size_t len, char *err, size_t errlen)
{
	(void)lv; (void)name; (void)uuid; (void)len; (void)err; (void)errlen;
	return -ENOTCONN;
}
static inline int domains_libvirt_name(struct domains_libvirt *lv, const char *uuid,
				       char *name, size_t len, char *err, size_t errlen)
{
	(void)lv; (void)uuid; (void)name; (void)len; (void)err; (void)errlen;
	return -ENOTCONN;
}
static inline int domains_libvirt_set_nodeset(struct domains_libvirt *lv, const char *name,
					      const char *nodeset, char *err, size_t errlen)
{
	(void)lv; (void)name; (void)nodeset; (void)err; (void)errlen;
	return -ENOTCONN;
}
static inline void domains_libvirt_status(struct domains_libvirt *lv,
					  const char *name, int to_node,
					  int result, unsigned long long bytes)
{
	(void)lv; (void)name; (void)to_node; (void)result; (void)bytes;
}
static inline bool domains_libvirt_connected(struct domains_libvirt *lv)
{
	(void)lv;
	return false;
}
static inline void domains_libvirt_down_why(struct domains_libvirt *lv, char *buf,
					    size_t len)
{
	(void)lv;
	snprintf(buf, len, "built without libvirt");
}
#endif

#endif
