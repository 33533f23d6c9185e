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
#include <time.h>

#include "daemon/domains.h"
#include "daemon/memmigd.h"	/* util_log() */

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
const char *domains_errno_name(int err, char *buf, size_t len);

/* ---- the watcher (domains-libvirt.c, or the stubs without libvirt) ---- */
struct domains_libvirt;

#ifdef HAVE_LIBVIRT
/* Starts the thread (uri "": libvirt's default); libvirtd being down is
 * not an error. */
int domains_libvirt_start(struct domains *d, const char *uri,
			  struct domains_libvirt **out);
void domains_libvirt_stop(struct domains_libvirt *lv);
/* Queues the status element for the watcher to write: never blocks. */
void domains_libvirt_status(struct domains_libvirt *lv, const char *name,
			    int to_node, int result, unsigned long long bytes);
/* Whether the watcher is connected to libvirtd now. */
bool domains_libvirt_connected(struct domains_libvirt *lv);
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
#endif

#endif
