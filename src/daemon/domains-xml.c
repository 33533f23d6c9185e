/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two metadata elements memmigd reads and writes.  libvirt hands back
 * an element as it stored it; this strict parser accepts exactly one empty
 * placement element (any prefix, xmlns declarations) and refuses the
 * rest, so a typo never turns into a move to some other node.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/domains-private.h"
#include "proto/proto.h"

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

/* node="N": decimal, 0..PROTO_MAX_NODE, nothing else. */
static int parse_node(const char *v, const char *end, int *node)
{
	int n = 0;

	if (v == end || end - v > 4)
		return -EINVAL;
	for (; v < end; v++) {
		if (*v < '0' || *v > '9')
			return -EINVAL;
		n = n * 10 + (*v - '0');
	}
	if (n > PROTO_MAX_NODE)
		return -EINVAL;
	*node = n;
	return 0;
}

int domains_placement_parse(const char *xml, int *node)
{
	const char *p, *tag, *tag_end, *local, *a, *a_end, *v, *v_end;
	int n = -1;

	if (strnlen(xml, DOMAINS_XML_MAX + 1) > DOMAINS_XML_MAX)
		return -EINVAL;
	p = skip_ws(xml);
	if (*p++ != '<')
		return -EINVAL;
	tag = p;
	tag_end = qname(p, &local);
	if (!tag_end || !is(local, tag_end, "placement"))
		return -EINVAL;
	p = tag_end;

	for (;;) {
		const char *q = skip_ws(p);
		char quote;

		if (*q == '/' || *q == '>')
			break;
		if (q == p)	/* attributes are separated by white space */
			return -EINVAL;
		a = q;
		a_end = qname(a, &local);
		if (!a_end)
			return -EINVAL;
		q = skip_ws(a_end);
		if (*q++ != '=')
			return -EINVAL;
		q = skip_ws(q);
		quote = *q++;
		if (quote != '"' && quote != '\'')
			return -EINVAL;
		v = q;
		v_end = strchr(v, quote);
		if (!v_end || memchr(v, '<', v_end - v))
			return -EINVAL;
		p = v_end + 1;

		if (is(a, a_end, "node")) {
			if (n >= 0 || parse_node(v, v_end, &n))
				return -EINVAL;
		} else if (!(is(a, a_end, "xmlns") ||
			     (a_end - a > 6 && !strncmp(a, "xmlns:", 6)))) {
			return -EINVAL;	/* unknown: refuse, do not guess */
		}
	}

	p = skip_ws(p);
	if (*p == '/') {
		if (*++p != '>')
			return -EINVAL;
		p++;
	} else {
		/* <placement ...></placement>: nothing inside */
		p = skip_ws(p + 1);
		if (p[0] != '<' || p[1] != '/' ||
		    strncmp(p + 2, tag, tag_end - tag))
			return -EINVAL;
		p = skip_ws(p + 2 + (tag_end - tag));
		if (*p++ != '>')
			return -EINVAL;
	}
	if (*skip_ws(p) || n < 0)
		return -EINVAL;
	*node = n;
	return 0;
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

int domains_status_format(char *buf, size_t len, int node, int result,
			  unsigned long long bytes, time_t when)
{
	char ebuf[32], tbuf[32], nbuf[24];
	struct tm tm;
	int n;

	if (!gmtime_r(&when, &tm) ||
	    !strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return -EINVAL;
	/* node < 0: the placement element named none we could read */
	nbuf[0] = '\0';
	if (node >= 0)
		snprintf(nbuf, sizeof(nbuf), " node=\"%d\"", node);
	n = snprintf(buf, len, "<status%s result=\"%s\" bytes=\"%llu\" time=\"%s\"/>",
		     nbuf, domains_errno_name(result, ebuf, sizeof(ebuf)), bytes, tbuf);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}
