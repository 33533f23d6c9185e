/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's wire protocol (docs/protocol.md): one JSON object per line.
 * The parser is the daemon's first line of defence and the fuzz target's
 * subject: it bounds every input and never trusts a type.
 */
#ifndef MEMMIG_PROTO_PROTO_H
#define MEMMIG_PROTO_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "memmig.h"

#define PROTO_VERSION		1
#define PROTO_MAX_LINE		(64 * 1024)	/* newline included */
#define PROTO_MAX_RANGES	256
#define PROTO_MAX_NODE		1023
#define PROTO_MAX_THREADS	256
#define PROTO_NAME_MAX		256		/* domain names, bytes + NUL */
#define PROTO_UUID_MAX		37
#define PROTO_NODESET_MAX	256
#define PROTO_SOCKET_DEFAULT	"/run/memmig/memmigd.sock"

enum proto_op {
	PROTO_OP_VERSION,
	PROTO_OP_NODES,
	PROTO_OP_MOVE,
	PROTO_OP_JOBS,
	PROTO_OP_JOB,
	PROTO_OP_CANCEL,
	PROTO_OP_REGISTER,
	PROTO_OP_UNREGISTER,
	PROTO_OP_DOMAINS,
	PROTO_OP_STATUS,
	PROTO_OP_METRICS,
	PROTO_OP_SUBSCRIBE,
	PROTO_OP_TIER_SET,		/* tiering (docs/tiering.md) */
	PROTO_OP_TIER_CLEAR,
	PROTO_OP_TIERS,
	PROTO_OP_TIER,
};

#define PROTO_TIER_MAX_NODES	64	/* TIER_MAX_NODES */

/* tier_set: what was given (PROTO_TIER_* bits); the rest is the default. */
enum {
	PROTO_TIER_SHARE = 1 << 0, PROTO_TIER_FREE = 1 << 1, PROTO_TIER_INTERVAL = 1 << 2,
	PROTO_TIER_RATE = 1 << 3, PROTO_TIER_COLD = 1 << 4, PROTO_TIER_STAY = 1 << 5,
	PROTO_TIER_PAUSE = 1 << 6,
};

struct proto_tier_request {
	unsigned int given;
	int fast[PROTO_TIER_MAX_NODES];
	unsigned int nfast;
	int slow[PROTO_TIER_MAX_NODES];
	unsigned int nslow;
	unsigned int slow_share;	/* % */
	uint64_t fast_free;		/* bytes */
	unsigned int interval_ms;
	uint64_t rate;			/* bytes/s */
	unsigned int cold_intervals;
	unsigned int min_stay;
	unsigned int pause_ms;
	uint64_t id;			/* tier_clear, tier */
};

struct proto_request {
	enum proto_op op;
	bool has_tag;
	int64_t tag;
	/* move: pid > 0 or domain[0] != 0; register: both */
	int pid;
	char domain[PROTO_NAME_MAX];
	int to_node;
	int strategy;			/* enum memmig_strategy */
	unsigned int threads;		/* 0: the daemon's default */
	unsigned int nranges;		/* 0: every mapping */
	struct memmig_range ranges[PROTO_MAX_RANGES];
	unsigned int nfrom_nodes;	/* 0: pages on any node */
	int from_nodes[PROTO_MAX_NODE + 1];
	/* job, cancel */
	uint64_t job;
	/* register */
	char uuid[PROTO_UUID_MAX];
	char nodeset[PROTO_NODESET_MAX];
	/* tier_set, tier_clear, tier */
	struct proto_tier_request tier;
};

/*
 * Parses one line (without its newline; len bytes, not NUL-terminated).
 * Returns 0, or -EMSGSIZE, -EBADMSG (not a JSON object), -EOPNOTSUPP
 * (unknown op) or -EINVAL (a member missing, of the wrong type, out of
 * range, or unknown), with a message for people in err.  The tag is set
 * whenever it could be read, even on error.
 */
int proto_request_parse(const char *line, size_t len,
			struct proto_request *req, char *err, size_t errlen);
/* The request as a JSON object (new reference), for clients. */
struct json_object *proto_request_to_json(const struct proto_request *req);

/* {"ok": true} with the request's tag, to add members to. */
struct json_object *proto_reply_ok(const struct proto_request *req);
/* {"ok": false, "error": "EPERM", "errno": 1, "message": ...}; req may be
 * NULL (no tag). */
struct json_object *proto_reply_error(const struct proto_request *req, int err,
				      const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Every double memmig prints, 6 significant digits (docs/json.md): its
 * clocks are not finer, and json-c's default 17 digits print binary noise.
 */
#define PROTO_DOUBLE_FORMAT	"%.6g"
/* json_object_to_json_string_ext() with PROTO_DOUBLE_FORMAT; the string
 * lives as long as o. */
const char *proto_json_string(struct json_object *o, int flags);
/* The reply as one line with its newline, malloc'd; *len its length. */
char *proto_reply_line(struct json_object *reply, size_t *len);

/* "EPERM" for 1 (strerrorname_np), "OK" for 0, "E<n>" when unnamed. */
const char *proto_errno_name(int err, char *buf, size_t len);
/* Why uid/gid may not move pid (EPERM), in one wording for memmigd's
 * reply and memmig-cli's in-process move; the process's real, effective
 * and saved ids when known (ids NULL: not read). */
void proto_perm_message(char *buf, size_t len, unsigned int uid, unsigned int gid, int pid,
			const unsigned int *uids, const unsigned int *gids);
/* The errno for a name from a reply, or 0 when unknown. */
int proto_errno_value(const char *name);

/* The op's name on the wire ("move"). */
const char *proto_op_name(enum proto_op op);

/* "auto", "kernel", "copy"; -1 when unknown. */
const char *proto_strategy_name(int strategy);
int proto_strategy_parse(const char *name);

#endif
