/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's wire protocol (docs/protocol.md): the request parser, its
 * inverse for clients, and the reply builders.  The parser is strict: a
 * member of the wrong type, out of range or unknown to the op is an error
 * that names it, so that a client's mistake never turns into a different
 * request than the one it meant.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/json-scan.h"
#include "memmig.h"
#include "proto/proto.h"

/* The deepest valid request is object > ranges array > range object. */
#define PROTO_MAX_DEPTH 8

static const char *const strategy_names[] = {
	[MEMMIG_STRATEGY_AUTO] = "auto",
	[MEMMIG_STRATEGY_KERNEL] = "kernel",
	[MEMMIG_STRATEGY_COPY] = "copy",
};

/* Bits of the members an op accepts; "op" and "tag" always are. */
enum {
	M_PID = 1 << 0, M_DOMAIN = 1 << 1, M_TO_NODE = 1 << 2,
	M_RANGES = 1 << 3, M_STRATEGY = 1 << 4, M_THREADS = 1 << 5,
	M_JOB = 1 << 6, M_NAME = 1 << 7, M_UUID = 1 << 8, M_NODESET = 1 << 9,
	M_FROM_NODES = 1 << 10, M_FAST = 1 << 11, M_SLOW = 1 << 12, M_SHARE = 1 << 13,
	M_FREE = 1 << 14, M_INTERVAL = 1 << 15, M_RATE = 1 << 16, M_COLD = 1 << 17,
	M_STAY = 1 << 18, M_PAUSE = 1 << 19, M_TIER = 1 << 20,
};
#define M_TIER_POLICY (M_FAST | M_SLOW | M_SHARE | M_FREE | M_INTERVAL | M_RATE | M_COLD | \
		       M_STAY | M_PAUSE)

static const struct {
	const char *name;
	unsigned int members;	/* accepted */
	unsigned int required;
} ops[] = {
	[PROTO_OP_VERSION] = { "version", 0, 0 },
	[PROTO_OP_NODES] = { "nodes", 0, 0 },
	[PROTO_OP_MOVE] = { "move", M_PID | M_DOMAIN | M_TO_NODE | M_RANGES |
			    M_STRATEGY | M_THREADS | M_FROM_NODES, M_TO_NODE },
	[PROTO_OP_JOBS] = { "jobs", 0, 0 },
	[PROTO_OP_JOB] = { "job", M_JOB, M_JOB },
	[PROTO_OP_CANCEL] = { "cancel", M_JOB, M_JOB },
	[PROTO_OP_REGISTER] = { "register", M_NAME | M_UUID | M_PID | M_NODESET,
				M_NAME | M_PID },
	[PROTO_OP_UNREGISTER] = { "unregister", M_NAME, M_NAME },
	[PROTO_OP_DOMAINS] = { "domains", 0, 0 },
	[PROTO_OP_STATUS] = { "status", 0, 0 },
	[PROTO_OP_METRICS] = { "metrics", 0, 0 },
	[PROTO_OP_SUBSCRIBE] = { "subscribe", 0, 0 },
	[PROTO_OP_TIER_SET] = { "tier_set", M_PID | M_DOMAIN | M_TIER_POLICY, M_FAST | M_SLOW },
	[PROTO_OP_TIER_CLEAR] = { "tier_clear", M_TIER | M_PID | M_DOMAIN, 0 },
	[PROTO_OP_TIERS] = { "tiers", 0, 0 },
	[PROTO_OP_TIER] = { "tier", M_TIER, M_TIER },
};

static const struct {
	const char *name;
	unsigned int bit;
} members[] = {
	{ "pid", M_PID }, { "domain", M_DOMAIN }, { "to_node", M_TO_NODE },
	{ "ranges", M_RANGES }, { "strategy", M_STRATEGY },
	{ "threads", M_THREADS }, { "job", M_JOB }, { "name", M_NAME },
	{ "uuid", M_UUID }, { "nodeset", M_NODESET }, { "from_nodes", M_FROM_NODES },
	{ "fast", M_FAST }, { "slow", M_SLOW }, { "slow_share", M_SHARE },
	{ "fast_free", M_FREE }, { "interval_ms", M_INTERVAL }, { "rate", M_RATE },
	{ "cold_intervals", M_COLD }, { "min_stay", M_STAY }, { "pause_ms", M_PAUSE },
	{ "tier", M_TIER },
	/* The names the report used before one name per concept
	 * (docs/json.md): accepted, after the names above. */
	{ "target_node", M_TO_NODE }, { "workers", M_THREADS },
};

__attribute__((format(printf, 4, 5)))
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -code;
}

/* An integer in [min, max]; doubles ("1.0", "1e3") are not integers. */
static int get_int(struct json_object *v, const char *what, int64_t min,
		   int64_t max, int64_t *out, char *err, size_t errlen)
{
	int64_t x;

	if (!json_object_is_type(v, json_type_int))
		return fail(err, errlen, EINVAL, "%s: an integer, not %s", what,
			    json_type_to_name(json_object_get_type(v)));
	x = json_object_get_int64(v);
	/* json-c saturates what does not fit: INT64_MAX may be a bigger value. */
	if (x < min || x > max || (x == INT64_MAX && json_object_get_uint64(v) != INT64_MAX))
		return fail(err, errlen, EINVAL, "%s: %s is out of range %" PRId64 "..%" PRId64,
			    what, json_object_to_json_string(v), min, max);
	*out = x;
	return 0;
}

/* An address or length: a non-negative integer or a "0x..." string. */
static int get_u64(struct json_object *v, const char *what, uint64_t *out,
		   char *err, size_t errlen)
{
	const char *s, *p;
	char shown[24];
	uint64_t x = 0;

	if (json_object_is_type(v, json_type_int)) {
		/* Saturated: 2^64 and above read as UINT64_MAX, which no page
		 * alignment check lets through. */
		if (json_object_get_int64(v) < 0)
			return fail(err, errlen, EINVAL, "%s: negative", what);
		*out = json_object_get_uint64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return fail(err, errlen, EINVAL, "%s: an integer or a \"0x...\" string, not %s",
			    what, json_type_to_name(json_object_get_type(v)));
	s = json_object_get_string(v);
	utf8_prefix(shown, sizeof(shown), s, 20);
	if (strncmp(s, "0x", 2) || !s[2] || json_object_get_string_len(v) > 18)
		return fail(err, errlen, EINVAL, "%s: \"%s\" is not a \"0x...\" number of at most 16 digits",
			    what, shown);
	for (p = s + 2; *p; p++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' :
			*p >= 'a' && *p <= 'f' ? *p - 'a' + 10 :
			*p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;

		if (d < 0)
			return fail(err, errlen, EINVAL, "%s: \"%s\" is not hexadecimal", what, shown);
		x = x << 4 | (uint64_t)d;
	}
	*out = x;
	return 0;
}

/* A string of 1..size-1 bytes without control characters, copied. */
static int get_str(struct json_object *v, const char *what, char *dst,
		   size_t size, char *err, size_t errlen)
{
	const char *s;
	int len;

	if (!json_object_is_type(v, json_type_string))
		return fail(err, errlen, EINVAL, "%s: a string, not %s", what,
			    json_type_to_name(json_object_get_type(v)));
	s = json_object_get_string(v);
	len = json_object_get_string_len(v);
	if (len <= 0 || (size_t)len >= size)
		return fail(err, errlen, EINVAL, "%s: 1 to %zu bytes, not %d", what, size - 1, len);
	for (int i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return fail(err, errlen, EINVAL, "%s: control character at byte %d", what, i);
	memcpy(dst, s, (size_t)len + 1);
	return 0;
}

static int parse_ranges(struct json_object *v, struct proto_request *req,
			char *err, size_t errlen)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t n;

	if (!json_object_is_type(v, json_type_array))
		return fail(err, errlen, EINVAL, "ranges: an array, not %s",
			    json_type_to_name(json_object_get_type(v)));
	n = json_object_array_length(v);
	if (n < 1 || n > PROTO_MAX_RANGES)
		return fail(err, errlen, EINVAL, "ranges: 1 to %d ranges, not %zu",
			    PROTO_MAX_RANGES, n);
	for (size_t i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(v, i), *a, *l;
		struct memmig_range *pr = &req->ranges[i];
		char what[32];
		int rc;

		if (!json_object_is_type(r, json_type_object))
			return fail(err, errlen, EINVAL, "ranges[%zu]: an object, not %s", i,
				    json_type_to_name(json_object_get_type(r)));
		if (json_object_object_length(r) != 2 ||
		    !json_object_object_get_ex(r, "addr", &a) ||
		    !json_object_object_get_ex(r, "len", &l))
			return fail(err, errlen, EINVAL, "ranges[%zu]: exactly \"addr\" and \"len\"", i);
		snprintf(what, sizeof(what), "ranges[%zu].addr", i);
		rc = get_u64(a, what, &pr->addr, err, errlen);
		if (rc)
			return rc;
		snprintf(what, sizeof(what), "ranges[%zu].len", i);
		rc = get_u64(l, what, &pr->len, err, errlen);
		if (rc)
			return rc;
		/* One reason each, in memmig-cli's words for --range. */
		if (pr->addr % page || pr->len % page)
			return fail(err, errlen, EINVAL, "ranges[%zu]: %#" PRIx64 " is not page-aligned",
				    i, pr->addr % page ? pr->addr : pr->len);
		if (!pr->len || pr->addr + pr->len < pr->addr)
			return fail(err, errlen, EINVAL,
				    "ranges[%zu]: %#" PRIx64 "+%#" PRIx64 " is empty or wraps", i,
				    pr->addr, pr->len);
	}
	req->nranges = (unsigned int)n;
	return 0;
}

/* A list of 1 to max node ids, each up to PROTO_MAX_NODE, none twice. */
static int parse_nodes(struct json_object *v, const char *key, int *out, unsigned int *nout,
		       unsigned int max, char *err, size_t errlen)
{
	size_t n;

	if (!json_object_is_type(v, json_type_array))
		return fail(err, errlen, EINVAL, "%s: an array, not %s", key,
			    json_type_to_name(json_object_get_type(v)));
	n = json_object_array_length(v);
	if (n < 1 || n > max)
		return fail(err, errlen, EINVAL, "%s: 1 to %u nodes, not %zu", key, max, n);
	for (size_t i = 0; i < n; i++) {
		char what[32];
		int64_t x;
		int rc;

		snprintf(what, sizeof(what), "%s[%zu]", key, i);
		rc = get_int(json_object_array_get_idx(v, i), what, 0, PROTO_MAX_NODE, &x,
			     err, errlen);
		if (rc)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (out[j] == (int)x)
				return fail(err, errlen, EINVAL, "%s: node %d twice", key, (int)x);
		out[i] = (int)x;
	}
	*nout = (unsigned int)n;
	return 0;
}

/* A tier_set member: an integer in [min, max], its bit in given. */
static int tier_int(struct json_object *v, const char *key, int64_t min, int64_t max,
		    unsigned int bit, struct proto_request *req, int64_t *x,
		    char *err, size_t errlen)
{
	req->tier.given |= bit;
	return get_int(v, key, min, max, x, err, errlen);
}

static int parse_tier_member(const char *key, struct json_object *v, unsigned int bit,
			     struct proto_request *req, char *err, size_t errlen)
{
	struct proto_tier_request *t = &req->tier;
	int64_t x = 0;
	int rc;

	switch (bit) {
	case M_FAST:
		return parse_nodes(v, key, t->fast, &t->nfast, PROTO_TIER_MAX_NODES, err, errlen);
	case M_SLOW:
		return parse_nodes(v, key, t->slow, &t->nslow, PROTO_TIER_MAX_NODES, err, errlen);
	case M_SHARE:
		rc = tier_int(v, key, 1, 100, PROTO_TIER_SHARE, req, &x, err, errlen);
		t->slow_share = (unsigned int)x;
		return rc;
	case M_FREE:
		rc = tier_int(v, key, 1, INT64_MAX, PROTO_TIER_FREE, req, &x, err, errlen);
		t->fast_free = (uint64_t)x;
		return rc;
	case M_INTERVAL:
		rc = tier_int(v, key, 100, 3600000, PROTO_TIER_INTERVAL, req, &x, err, errlen);
		t->interval_ms = (unsigned int)x;
		return rc;
	case M_RATE:
		rc = tier_int(v, key, 0, INT64_MAX, PROTO_TIER_RATE, req, &x, err, errlen);
		t->rate = (uint64_t)x;
		return rc;
	case M_COLD:
		rc = tier_int(v, key, 1, 8, PROTO_TIER_COLD, req, &x, err, errlen);
		t->cold_intervals = (unsigned int)x;
		return rc;
	case M_STAY:
		rc = tier_int(v, key, 0, 1000, PROTO_TIER_STAY, req, &x, err, errlen);
		t->min_stay = (unsigned int)x;
		return rc;
	case M_PAUSE:
		rc = tier_int(v, key, 1, 10000, PROTO_TIER_PAUSE, req, &x, err, errlen);
		t->pause_ms = (unsigned int)x;
		return rc;
	case M_TIER:
		rc = get_int(v, key, 1, INT64_MAX, &x, err, errlen);
		t->id = (uint64_t)x;
		return rc;
	}
	return fail(err, errlen, EINVAL, "%s: not handled", key);
}

/* nodeset: a cpuset-style list ("0-1,3"), checked for its characters only. */
static int check_nodeset(const char *s, char *err, size_t errlen)
{
	char shown[44];

	utf8_prefix(shown, sizeof(shown), s, 40);
	if (strspn(s, "0123456789,-^") != strlen(s))
		return fail(err, errlen, EINVAL, "nodeset: \"%s\" is not a list like \"0-1,3\"", shown);
	return 0;
}

static int parse_member(const char *key, struct json_object *v, unsigned int bit,
			struct proto_request *req, char *err, size_t errlen)
{
	int64_t x;
	int rc;

	switch (bit) {
	case M_PID:
		rc = get_int(v, key, 1, INT32_MAX, &x, err, errlen);
		req->pid = (int)x;
		return rc;
	case M_DOMAIN:
	case M_NAME:
		return get_str(v, key, req->domain, sizeof(req->domain), err, errlen);
	case M_TO_NODE:
		rc = get_int(v, key, 0, PROTO_MAX_NODE, &x, err, errlen);
		req->to_node = (int)x;
		return rc;
	case M_RANGES:
		return parse_ranges(v, req, err, errlen);
	case M_FROM_NODES:
		return parse_nodes(v, key, req->from_nodes, &req->nfrom_nodes, PROTO_MAX_NODE + 1,
				   err, errlen);
	case M_STRATEGY:
		if (!json_object_is_type(v, json_type_string))
			return fail(err, errlen, EINVAL, "strategy: a string, not %s",
				    json_type_to_name(json_object_get_type(v)));
		req->strategy = proto_strategy_parse(json_object_get_string(v));
		if (req->strategy < 0) {
			char shown[24];

			utf8_prefix(shown, sizeof(shown), json_object_get_string(v), 20);
			return fail(err, errlen, EINVAL, "strategy: \"auto\", \"kernel\" or \"copy\", "
				    "not \"%s\"", shown);
		}
		return 0;
	case M_THREADS:
		rc = get_int(v, key, 1, PROTO_MAX_THREADS, &x, err, errlen);
		req->threads = (unsigned int)x;
		return rc;
	case M_JOB:
		rc = get_int(v, key, 1, INT64_MAX, &x, err, errlen);
		req->job = (uint64_t)x;
		return rc;
	case M_UUID:
		return get_str(v, key, req->uuid, sizeof(req->uuid), err, errlen);
	case M_NODESET:
		rc = get_str(v, key, req->nodeset, sizeof(req->nodeset), err, errlen);
		return rc ? rc : check_nodeset(req->nodeset, err, errlen);
	}
	return parse_tier_member(key, v, bit, req, err, errlen);
}

static unsigned int member_bit(const char *key)
{
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
		if (!strcmp(key, members[i].name))
			return members[i].bit;
	return 0;
}

static int parse_op(struct json_object *o, struct proto_request *req,
		    char *err, size_t errlen)
{
	struct json_object *v;
	const char *name;
	char shown[44];

	if (!json_object_object_get_ex(o, "op", &v))
		return fail(err, errlen, EINVAL, "no \"op\"");
	if (!json_object_is_type(v, json_type_string))
		return fail(err, errlen, EINVAL, "op: a string, not %s",
			    json_type_to_name(json_object_get_type(v)));
	name = json_object_get_string(v);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(name, ops[i].name)) {
			req->op = (enum proto_op)i;
			return 0;
		}
	utf8_prefix(shown, sizeof(shown), name, 40);
	return fail(err, errlen, EOPNOTSUPP, "unknown op \"%s\"", shown);
}

static int parse_object(struct json_object *o, struct proto_request *req,
			char *err, size_t errlen)
{
	unsigned int seen = 0, missing;
	struct json_object *tag;
	int64_t t;
	int rc;

	/* The tag first: an error reply repeats it whenever it is readable. */
	if (json_object_object_get_ex(o, "tag", &tag)) {
		rc = get_int(tag, "tag", INT64_MIN, INT64_MAX, &t, err, errlen);
		if (rc)
			return rc;
		req->tag = t;
		req->has_tag = true;
	}
	rc = parse_op(o, req, err, errlen);
	if (rc)
		return rc;
	json_object_object_foreach(o, key, v) {
		unsigned int bit;

		if (!strcmp(key, "op") || !strcmp(key, "tag"))
			continue;
		bit = member_bit(key);
		if (!(bit & ops[req->op].members)) {
			char shown[44];

			utf8_prefix(shown, sizeof(shown), key, 40);
			return fail(err, errlen, EINVAL, "op %s has no member \"%s\"",
				    ops[req->op].name, shown);
		}
		if (seen & bit)
			return fail(err, errlen, EINVAL, "\"%s\": given twice, under two names",
				    key);
		rc = parse_member(key, v, bit, req, err, errlen);
		if (rc)
			return rc;
		seen |= bit;
	}
	missing = ops[req->op].required & ~seen;
	if (missing)
		for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
			if (missing & members[i].bit)
				return fail(err, errlen, EINVAL, "op %s needs \"%s\"",
					    ops[req->op].name, members[i].name);
	if ((req->op == PROTO_OP_MOVE || req->op == PROTO_OP_TIER_SET) &&
	    !(seen & M_PID) == !(seen & M_DOMAIN))
		return fail(err, errlen, EINVAL, "%s needs \"pid\" or \"domain\", not %s",
			    ops[req->op].name, seen & M_PID ? "both" : "neither");
	if (req->op == PROTO_OP_TIER_CLEAR && !!(seen & M_PID) + !!(seen & M_DOMAIN) +
	    !!(seen & M_TIER) != 1)
		return fail(err, errlen, EINVAL, "tier_clear needs one of \"tier\", \"pid\" "
			    "and \"domain\"");
	if (req->op == PROTO_OP_TIER_SET && (seen & M_SHARE) && (seen & M_FREE))
		return fail(err, errlen, EINVAL, "tier_set takes \"slow_share\" or \"fast_free\", "
			    "not both");
	return 0;
}

int proto_request_parse(const char *line, size_t len, struct proto_request *req,
			char *err, size_t errlen)
{
	struct json_tokener *tok;
	struct json_object *o;
	size_t end, keys;
	int rc;

	memset(req, 0, sizeof(*req));
	req->strategy = MEMMIG_STRATEGY_AUTO;
	if (errlen)
		err[0] = 0;
	if (len >= PROTO_MAX_LINE)
		return fail(err, errlen, EMSGSIZE, "the line is longer than %d bytes", PROTO_MAX_LINE);
	/* json-c would stop at a NUL and call the rest garbage or a prefix. */
	if (memchr(line, 0, len))
		return fail(err, errlen, EBADMSG, "NUL byte at offset %zu",
			    (size_t)((const char *)memchr(line, 0, len) - line));
	/* What json-c lets through: bad UTF-8, \u0000, lone surrogates,
	 * integers it would saturate; and the members, to find one named
	 * twice (json-c keeps the last). */
	rc = json_scan(line, len, &keys, err, errlen);
	if (rc)
		return rc;
	tok = json_tokener_new_ex(PROTO_MAX_DEPTH);
	if (!tok)
		return fail(err, errlen, ENOMEM, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, line, (int)len);
	if (!o) {
		enum json_tokener_error je = json_tokener_get_error(tok);

		rc = fail(err, errlen, EBADMSG, "not JSON: %s at offset %zu",
			  je == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(je),
			  json_tokener_get_parse_end(tok));
		json_tokener_free(tok);
		return rc;
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	/* The line is not NUL-terminated: bounded by len, not strspn(). */
	while (end < len && (line[end] == ' ' || line[end] == '\t' || line[end] == '\r'))
		end++;
	if (end < len) {
		rc = fail(err, errlen, EBADMSG, "more after the JSON value at offset %zu", end);
	} else if (!json_object_is_type(o, json_type_object)) {
		rc = fail(err, errlen, EBADMSG, "not a JSON object but %s",
			  json_type_to_name(json_object_get_type(o)));
	} else if (json_count_keys(o) != keys) {
		rc = fail(err, errlen, EBADMSG, "a member is named twice in one object");
	} else {
		rc = parse_object(o, req, err, errlen);
	}
	json_object_put(o);
	return rc;
}

static struct json_object *hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_new_string(buf);
}

static struct json_object *node_array(const int *nodes, unsigned int n)
{
	struct json_object *a = json_object_new_array();

	for (unsigned int i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_int(nodes[i]));
	return a;
}

static void tier_to_json(struct json_object *o, const struct proto_request *req)
{
	const struct proto_tier_request *t = &req->tier;
	static const struct {
		unsigned int bit;
		const char *key;
		size_t off;
		bool u64;
	} opt[] = {
		{ PROTO_TIER_SHARE, "slow_share", offsetof(struct proto_tier_request, slow_share), 0 },
		{ PROTO_TIER_FREE, "fast_free", offsetof(struct proto_tier_request, fast_free), 1 },
		{ PROTO_TIER_INTERVAL, "interval_ms", offsetof(struct proto_tier_request, interval_ms), 0 },
		{ PROTO_TIER_RATE, "rate", offsetof(struct proto_tier_request, rate), 1 },
		{ PROTO_TIER_COLD, "cold_intervals", offsetof(struct proto_tier_request, cold_intervals), 0 },
		{ PROTO_TIER_STAY, "min_stay", offsetof(struct proto_tier_request, min_stay), 0 },
		{ PROTO_TIER_PAUSE, "pause_ms", offsetof(struct proto_tier_request, pause_ms), 0 },
	};

	if (t->id)
		json_object_object_add(o, "tier", json_object_new_int64((int64_t)t->id));
	if (req->pid > 0)
		json_object_object_add(o, "pid", json_object_new_int(req->pid));
	if (req->domain[0])
		json_object_object_add(o, "domain", json_object_new_string(req->domain));
	if (req->op != PROTO_OP_TIER_SET)
		return;
	json_object_object_add(o, "fast", node_array(t->fast, t->nfast));
	json_object_object_add(o, "slow", node_array(t->slow, t->nslow));
	for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++) {
		const char *p = (const char *)t + opt[i].off;

		if (!(t->given & opt[i].bit))
			continue;
		json_object_object_add(o, opt[i].key, opt[i].u64 ?
				       json_object_new_uint64(*(const uint64_t *)(const void *)p) :
				       json_object_new_int64(*(const unsigned int *)(const void *)p));
	}
}

struct json_object *proto_request_to_json(const struct proto_request *req)
{
	struct json_object *o = json_object_new_object(), *ranges;
	const char *name_key = req->op == PROTO_OP_MOVE ? "domain" : "name";

	json_object_object_add(o, "op", json_object_new_string(ops[req->op].name));
	if (req->has_tag)
		json_object_object_add(o, "tag", json_object_new_int64(req->tag));
	switch (req->op) {
	case PROTO_OP_MOVE:
	case PROTO_OP_REGISTER:
		if (req->pid > 0)
			json_object_object_add(o, "pid", json_object_new_int(req->pid));
		if (req->domain[0])
			json_object_object_add(o, name_key, json_object_new_string(req->domain));
		if (req->op == PROTO_OP_REGISTER) {
			if (req->uuid[0])
				json_object_object_add(o, "uuid", json_object_new_string(req->uuid));
			if (req->nodeset[0])
				json_object_object_add(o, "nodeset", json_object_new_string(req->nodeset));
			break;
		}
		json_object_object_add(o, "to_node", json_object_new_int(req->to_node));
		if (req->nranges) {
			ranges = json_object_new_array();
			for (unsigned int i = 0; i < req->nranges; i++) {
				struct json_object *r = json_object_new_object();

				json_object_object_add(r, "addr", hex(req->ranges[i].addr));
				json_object_object_add(r, "len", json_object_new_uint64(req->ranges[i].len));
				json_object_array_add(ranges, r);
			}
			json_object_object_add(o, "ranges", ranges);
		}
		json_object_object_add(o, "strategy",
				       json_object_new_string(proto_strategy_name(req->strategy)));
		if (req->threads)
			json_object_object_add(o, "threads", json_object_new_int((int)req->threads));
		if (req->nfrom_nodes)
			json_object_object_add(o, "from_nodes",
					       node_array(req->from_nodes, req->nfrom_nodes));
		break;
	case PROTO_OP_JOB:
	case PROTO_OP_CANCEL:
		json_object_object_add(o, "job", json_object_new_int64((int64_t)req->job));
		break;
	case PROTO_OP_UNREGISTER:
		json_object_object_add(o, "name", json_object_new_string(req->domain));
		break;
	case PROTO_OP_TIER_SET:
	case PROTO_OP_TIER_CLEAR:
	case PROTO_OP_TIER:
		tier_to_json(o, req);
		break;
	default:
		break;
	}
	return o;
}

struct json_object *proto_reply_ok(const struct proto_request *req)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(1));
	if (req && req->has_tag)
		json_object_object_add(o, "tag", json_object_new_int64(req->tag));
	return o;
}

struct json_object *proto_reply_error(const struct proto_request *req, int err,
				      const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char msg[1024], name[16];
	va_list ap;

	if (err < 0)
		err = -err;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Whatever went into it, cut anywhere: the reply is UTF-8 JSON. */
	utf8_sanitize(msg);
	json_object_object_add(o, "ok", json_object_new_boolean(0));
	if (req && req->has_tag)
		json_object_object_add(o, "tag", json_object_new_int64(req->tag));
	json_object_object_add(o, "error",
			       json_object_new_string(proto_errno_name(err, name, sizeof(name))));
	json_object_object_add(o, "errno", json_object_new_int(err));
	json_object_object_add(o, "message", json_object_new_string(msg));
	return o;
}

static void set_double_format(void)
{
	json_c_set_serialization_double_format(PROTO_DOUBLE_FORMAT, JSON_C_OPTION_GLOBAL);
}

const char *proto_json_string(struct json_object *o, int flags)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, set_double_format);
	return json_object_to_json_string_ext(o, flags);
}

char *proto_reply_line(struct json_object *reply, size_t *len)
{
	const char *s = proto_json_string(reply, JSON_C_TO_STRING_PLAIN |
					  JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);
	char *line = malloc(n + 2);

	if (!line)
		return NULL;
	memcpy(line, s, n);
	line[n] = '\n';
	line[n + 1] = 0;
	*len = n + 1;
	return line;
}

const char *proto_errno_name(int err, char *buf, size_t len)
{
	const char *name;

	if (err < 0)
		err = -err;
	if (!err)
		return "OK";
	name = strerrorname_np(err);
	if (name)
		return name;
	snprintf(buf, len, "E%d", err);
	return buf;
}

int proto_errno_value(const char *name)
{
	/* errnos are below 134 on Linux; "E<n>" is what we print unnamed. */
	for (int e = 1; e < 256; e++) {
		const char *n = strerrorname_np(e);

		if (n && !strcmp(n, name))
			return e;
	}
	if (name[0] == 'E' && name[1] >= '1' && name[1] <= '9' &&
	    strspn(name + 1, "0123456789") == strlen(name + 1) && strlen(name) < 6)
		return atoi(name + 1);
	return 0;
}

const char *proto_op_name(enum proto_op op)
{
	return (size_t)op < sizeof(ops) / sizeof(ops[0]) ? ops[op].name : "?";
}

const char *proto_strategy_name(int strategy)
{
	/* Only a bug passes another value: name it rather than crash. */
	if (strategy < 0 || strategy >= (int)(sizeof(strategy_names) / sizeof(strategy_names[0])))
		return "unknown";
	return strategy_names[strategy];
}

int proto_strategy_parse(const char *name)
{
	for (int i = 0; i < (int)(sizeof(strategy_names) / sizeof(strategy_names[0])); i++)
		if (!strcmp(name, strategy_names[i]))
			return i;
	return -1;
}

void proto_perm_message(char *buf, size_t len, unsigned int uid, unsigned int gid, int pid,
			const unsigned int *uids, const unsigned int *gids)
{
	char ids[96] = "";

	if (uids && gids)
		snprintf(ids, sizeof(ids), " (uid %u/%u/%u gid %u/%u/%u)", uids[0], uids[1],
			 uids[2], gids[0], gids[1], gids[2]);
	snprintf(buf, len, "uid %u gid %u may not move pid %d%s: the same rule as move_pages(2)",
		 uid, gid, pid, ids);
}
