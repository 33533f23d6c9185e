/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The metadata elements memmigd reads (placement, tier) and writes (the
 * status of moves and of tierings).  libvirt hands back an element as it
 * stored it; one strict parser accepts exactly one empty element (any
 * prefix, xmlns declarations) with the attributes it takes and refuses
 * the rest, so a typo never turns into a move to some other node.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "daemon/domains-private.h"
#include "proto/proto.h"
#include "daemon/tier-policy.h"
#include "util/cpuset.h"

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && ((c >= '0' && c <= '9') || c == '-' || c == '.'));
}

/* A QName (prefix:local); *local points after the prefix. */
static const char *qname(const char *p, const char **local)
{
	const char *s = p;

	*local = p;
	if (!name_char(*p, true))
		return NULL;
	while (name_char(*p, false) || (*p == ':' && *local == s && p > s)) {
		if (*p == ':') {
			if (!name_char(p[1], true))
				return NULL;
			*local = p + 1;
		}
		p++;
	}
	return p;
}

static bool is(const char *s, const char *end, const char *word)
{
	return (size_t)(end - s) == strlen(word) && !strncmp(s, word, end - s);
}

#define BAD(...)	(snprintf(err, len, __VA_ARGS__), -EINVAL)
#define SHOWN		64	/* a value's characters a message quotes */

/*
 * An element's attributes, each given to attr(): it returns the
 * attribute's index (0..31, for the check that none comes twice),
 * -ENOENT for a name the element does not take, or -EINVAL with err.
 */
typedef int (*attr_fn)(void *opaque, const char *a, const char *a_end,
		       const char *v, const char *v_end, char *err, size_t len);

/*
 * Exactly one empty element named element (any prefix): attributes
 * separated by white space, quoted values without '<', xmlns
 * declarations passed over, no text, nothing after it.
 */
static int element_parse(const char *xml, const char *element, attr_fn attr,
			 void *opaque, char *err, size_t len)
{
	const char *p, *tag, *tag_end, *local, *a, *a_end, *v, *v_end;
	unsigned int seen = 0;

	if (strnlen(xml, DOMAINS_XML_MAX + 1) > DOMAINS_XML_MAX)
		return BAD("longer than %d bytes", DOMAINS_XML_MAX);
	p = skip_ws(xml);
	if (*p++ != '<')
		return BAD("not an element");
	tag = p;
	tag_end = qname(p, &local);
	if (!tag_end || !is(local, tag_end, element))
		return BAD("not a <%s> element", element);
	p = tag_end;

	for (;;) {
		const char *q = skip_ws(p);
		char quote;
		int i;

		if (*q == '/' || *q == '>')
			break;
		if (q == p)	/* attributes are separated by white space */
			return BAD("malformed <%s> element", element);
		a = q;
		a_end = qname(a, &local);
		if (!a_end)
			return BAD("malformed <%s> element", element);
		q = skip_ws(a_end);
		if (*q++ != '=')
			return BAD("malformed <%s> element", element);
		q = skip_ws(q);
		quote = *q++;
		if (quote != '"' && quote != '\'')
			return BAD("attribute %.*s: a quoted value", (int)(a_end - a), a);
		v = q;
		v_end = strchr(v, quote);
		if (!v_end || memchr(v, '<', v_end - v))
			return BAD("attribute %.*s: a quoted value", (int)(a_end - a), a);
		p = v_end + 1;

		if (is(a, a_end, "xmlns") || (a_end - a > 6 && !strncmp(a, "xmlns:", 6)))
			continue;
		i = attr(opaque, a, a_end, v, v_end, err, len);
		if (i == -ENOENT)	/* unknown: refuse, do not guess */
			return BAD("<%s> has no attribute %.*s", element, (int)(a_end - a), a);
		if (i < 0)
			return i;
		if (seen & 1U << i)
			return BAD("attribute %.*s given twice", (int)(a_end - a), a);
		seen |= 1U << i;
	}

	p = skip_ws(p);
	if (*p == '/') {
		if (*++p != '>')
			return BAD("malformed <%s> element", element);
		p++;
	} else {
		/* <placement ...></placement>: nothing inside */
		p = skip_ws(p + 1);
		if (p[0] != '<' || p[1] != '/' ||
		    strncmp(p + 2, tag, tag_end - tag))
			return BAD("<%s> holds something: it must be empty", element);
		p = skip_ws(p + 2 + (tag_end - tag));
		if (*p++ != '>')
			return BAD("malformed <%s> element", element);
	}
	if (*skip_ws(p))
		return BAD("something follows the <%s> element", element);
	return 0;
}

/* A decimal from min to max: digits only, no sign, no leading zero. */
static int parse_u64(const char *v, const char *end, uint64_t min, uint64_t max,
		     uint64_t *out)
{
	uint64_t n = 0;

	if (v == end || (*v == '0' && end - v > 1))
		return -EINVAL;
	for (; v < end; v++) {
		if (*v < '0' || *v > '9' || n > (UINT64_MAX - (uint64_t)(*v - '0')) / 10)
			return -EINVAL;
		n = n * 10 + (uint64_t)(*v - '0');
	}
	if (n < min || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

/* node="N": decimal, 0..PROTO_MAX_NODE, nothing else. */
static int placement_attr(void *opaque, const char *a, const char *a_end,
			  const char *v, const char *v_end, char *err, size_t len)
{
	uint64_t n;

	if (!is(a, a_end, "node"))
		return -ENOENT;
	if (parse_u64(v, v_end, 0, PROTO_MAX_NODE, &n))
		return BAD("node=\"%.*s\": a node from 0 to %d", SHOWN < (int)(v_end - v) ?
			   SHOWN : (int)(v_end - v), v, PROTO_MAX_NODE);
	*(int *)opaque = (int)n;
	return 0;
}

int domains_placement_parse(const char *xml, int *node)
{
	char err[128];
	int n = -1;

	if (element_parse(xml, "placement", placement_attr, &n, err, sizeof(err)) || n < 0)
		return -EINVAL;
	*node = n;
	return 0;
}

/* The <tier> element's attributes; the numbers' ranges are the policy's. */
enum tier_attr {
	TA_FAST, TA_SLOW, TA_SHARE, TA_FREE, TA_INTERVAL, TA_RATE, TA_COLD, TA_STAY,
	TA_PAUSE,
};

static const struct {
	const char *name;
	uint64_t min, max;
	const char *what;
} tier_attrs[] = {
	[TA_FAST] = { "fast", 0, 0, "nodes like 0-1,3 (at most 64, each up to 1023)" },
	[TA_SLOW] = { "slow", 0, 0, "nodes like 2,3 (at most 64, each up to 1023)" },
	[TA_SHARE] = { "slow-share", 1, 100, "a percentage from 1 to 100" },
	[TA_FREE] = { "fast-free", 1, UINT64_MAX, "bytes, a decimal from 1" },
	[TA_INTERVAL] = { "interval-ms", MEMMIG_TIER_INTERVAL_MIN_MS, MEMMIG_TIER_INTERVAL_MAX_MS,
			  "milliseconds from 100 to 3600000" },
	[TA_RATE] = { "rate", 0, UINT64_MAX, "bytes per second (0: no limit)" },
	[TA_COLD] = { "cold", 1, MEMMIG_TIER_COLD_MAX, "intervals from 1 to 8" },
	[TA_STAY] = { "stay", 0, 1000, "intervals from 0 to 1000" },
	[TA_PAUSE] = { "pause-ms", 1, 10000, "milliseconds from 1 to 10000" },
};

struct tier_parse {
	struct tiers_policy *p;
	unsigned int given;	/* 1 << enum tier_attr */
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* "0-1,3": the kernel's list syntax, nodes 0..PROTO_MAX_NODE, at most
 * MEMMIG_TIER_MAX_NODES of them; no empty item, no leading zero. */
static int parse_nodes(const char *v, const char *end, int *out, unsigned int *n)
{
	char list[UTIL_NODELIST_MAX];
	size_t vlen = (size_t)(end - v);
	struct util_nodemap m;

	_Static_assert(PROTO_MAX_NODE < UTIL_NODES_MAX, "a node map holds every node");
	if (!vlen || vlen >= sizeof(list) || end[-1] == ',')
		return -EINVAL;
	memcpy(list, v, vlen);
	list[vlen] = '\0';
	if (strspn(list, "0123456789,-") != vlen)
		return -EINVAL;
	for (size_t i = 0; i + 1 < vlen; i++)
		if (list[i] == '0' && (!i || !is_digit(list[i - 1])) && is_digit(list[i + 1]))
			return -EINVAL;
	if (util_nodemap_parse(list, &m))
		return -EINVAL;
	*n = 0;
	for (int node = 0; node <= PROTO_MAX_NODE; node++) {
		if (!util_nodemap_has(&m, node))
			continue;
		if (*n == MEMMIG_TIER_MAX_NODES)
			return -EINVAL;
		out[(*n)++] = node;
	}
	return 0;
}

static int tier_attr(void *opaque, const char *a, const char *a_end,
		     const char *v, const char *v_end, char *err, size_t len)
{
	struct tier_parse *tp = opaque;
	struct tiers_policy *p = tp->p;
	unsigned int i;
	uint64_t x = 0;
	int rc;

	for (i = 0; i < sizeof(tier_attrs) / sizeof(tier_attrs[0]); i++)
		if (is(a, a_end, tier_attrs[i].name))
			break;
	if (i == sizeof(tier_attrs) / sizeof(tier_attrs[0]))
		return -ENOENT;
	if (i == TA_FAST)
		rc = parse_nodes(v, v_end, p->fast, &p->nfast);
	else if (i == TA_SLOW)
		rc = parse_nodes(v, v_end, p->slow, &p->nslow);
	else
		rc = parse_u64(v, v_end, tier_attrs[i].min, tier_attrs[i].max, &x);
	if (rc)
		return BAD("%s=\"%.*s\": %s", tier_attrs[i].name,
			   SHOWN < (int)(v_end - v) ? SHOWN : (int)(v_end - v), v,
			   tier_attrs[i].what);
	switch (i) {
	case TA_SHARE: p->slow_share = (unsigned int)x; break;
	case TA_FREE: p->fast_free = x; break;
	case TA_INTERVAL: p->interval_ms = (unsigned int)x; break;
	case TA_RATE: p->rate = x; break;
	case TA_COLD: p->cold_intervals = (unsigned int)x; break;
	case TA_STAY: p->min_stay = (unsigned int)x; break;
	case TA_PAUSE: p->pause_ms = (unsigned int)x; break;
	}
	tp->given |= 1U << i;
	return (int)i;
}

int domains_tier_parse(const char *xml, struct tiers_policy *out, char *err, size_t len)
{
	struct tiers_policy p;
	struct tier_parse tp = { .p = &p };
	int rc;

	tiers_policy_defaults(&p);
	rc = element_parse(xml, "tier", tier_attr, &tp, err, len);
	if (rc)
		return rc;
	if (!(tp.given & 1U << TA_FAST) || !(tp.given & 1U << TA_SLOW))
		return BAD("<tier> needs fast=\"NODES\" and slow=\"NODES\"");
	if ((tp.given & 1U << TA_SHARE) && (tp.given & 1U << TA_FREE))
		return BAD("give slow-share or fast-free, not both");
	if (tp.given & 1U << TA_FREE)
		p.slow_share = 0;	/* the watermark instead of the default share */
	rc = tiers_policy_check(&p, err, len);
	if (!rc)
		*out = p;
	return rc;
}

const char *domains_errno_name(int err, char *buf, size_t len)
{
	const char *s;

	if (!err)
		return "OK";
	s = strerrorname_np(err < 0 ? -err : err);
	if (s)
		return s;
	snprintf(buf, len, "E%d", err < 0 ? -err : err);
	return buf;
}

/* ISO 8601, UTC. */
static int iso_time(time_t when, char *buf, size_t len)
{
	struct tm tm;

	return gmtime_r(&when, &tm) && strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) ?
	       0 : -EINVAL;
}

int domains_status_format(char *buf, size_t len, int node, int result,
			  unsigned long long bytes, time_t when)
{
	char ebuf[32], tbuf[32], nbuf[24];
	int n;

	if (iso_time(when, tbuf, sizeof(tbuf)))
		return -EINVAL;
	/* node < 0: the placement element named none we could read */
	nbuf[0] = '\0';
	if (node >= 0)
		snprintf(nbuf, sizeof(nbuf), " node=\"%d\"", node);
	n = snprintf(buf, len, "<status%s result=\"%s\" bytes=\"%llu\" time=\"%s\"/>",
		     nbuf, domains_errno_name(result, ebuf, sizeof(ebuf)), bytes, tbuf);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

/* s as an attribute value (& < > " escaped), cut to fit len. */
static void xml_escape(const char *s, char *out, size_t len)
{
	size_t used = 0;

	for (; *s; s++) {
		const char *e = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" :
				*s == '>' ? "&gt;" : *s == '"' ? "&quot;" : NULL;
		size_t n = e ? strlen(e) : 1;

		if (used + n >= len)
			break;
		memcpy(out + used, e ? e : s, n);
		used += n;
	}
	out[used] = '\0';
}

int domains_tier_status_format(char *buf, size_t len, const char *action, int result,
			       unsigned long long id, const char *msg, time_t when)
{
	char ebuf[32], tbuf[32], esc[512], what[sizeof(esc) + 16] = "";
	int n;

	if (iso_time(when, tbuf, sizeof(tbuf)))
		return -EINVAL;
	/* what came of it: the tiering's id, or why not */
	if (!result) {
		snprintf(what, sizeof(what), " tier=\"%llu\"", id);
	} else if (msg && *msg) {
		xml_escape(msg, esc, sizeof(esc));
		snprintf(what, sizeof(what), " message=\"%s\"", esc);
	}
	n = snprintf(buf, len, "<tier-status action=\"%s\" result=\"%s\"%s time=\"%s\"/>",
		     action, domains_errno_name(result, ebuf, sizeof(ebuf)), what, tbuf);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}
