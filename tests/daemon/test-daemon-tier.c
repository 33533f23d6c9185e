/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tiering ops through memmigd as root, on its socket: who may tier
 * whom and what a refusal says.  A client running as nobody cannot set
 * tiering on root's process or pid 1 (EPERM, before its nodes are even
 * looked at), nor read or end a tiering it does not have (ENOENT), and
 * lists none; a pid that does not exist is ESRCH; a node without memory
 * is ENOENT (as for a move) naming the nodes that have some; a bad member is EINVAL from
 * the parser.  A fully valid tier_set needs two nodes with memory: on a
 * host with one it cannot pass, and where there are two it either starts
 * or, on a kernel without CONFIG_MEM_SOFT_DIRTY, is ENOENT saying so.
 * Whether root's tiering started or not, nobody's tier and tier_clear of
 * it (by id, pid or domain) get the answer, word for word but the number,
 * of an id or pid nobody tiers, and nobody's metrics have none of root's
 * tierings (root's have it).  The caps (TIERS_MAX_PER_USER, root's share,
 * the ended ones kept per user) need many tierings that start: the
 * multi-node tier has them (tests/vm/guest-tier-users.sh).
 * Needs root (to be root, and to become nobody); skips otherwise.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

#define NOBODY	65534

static struct tc_daemon d;
static char has_memory[256];	/* /sys/devices/system/node/has_memory */
static int node_a = -1, node_b = -1;	/* two nodes with memory, if any */
static int no_node;		/* a node id without memory */

static void read_nodes(void)
{
	FILE *f = fopen("/sys/devices/system/node/has_memory", "re");

	if (!f || !fgets(has_memory, sizeof(has_memory), f))
		strcpy(has_memory, "0");
	if (f)
		fclose(f);
	has_memory[strcspn(has_memory, "\n")] = 0;
	/* "0", "0-1", "0,2": enough for the first two and a free id. */
	for (char *p = has_memory; *p; ) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long x = a; x <= b; x++) {
			if (node_a < 0)
				node_a = (int)x;
			else if (node_b < 0)
				node_b = (int)x;
			no_node = (int)x + 1;
		}
		p = *end ? end + 1 : end;
	}
}

/* reply's error is want and its message holds says (NULL: any). */
static bool says(struct json_object *r, const char *want, const char *says)
{
	const char *m = tc_str(r, "message");

	printf("  %s: %s\n", tc_error(r), m ? m : "(no message)");
	return !strcmp(tc_error(r), want) && (!says || (m && strstr(m, says)));
}

static int tiers_listed(struct tc_conn *c)
{
	struct json_object *r = tc_call(c, "{\"op\":\"tiers\"}");
	struct json_object *a = tc_get(r, "tiers");
	int n = a && json_object_is_type(a, json_type_array) ?
		(int)json_object_array_length(a) : -1;

	json_object_put(r);
	return n;
}

/* r's message with each decimal n in it written N. */
static void message_without(struct json_object *r, long long n, char *out, size_t len)
{
	const char *m = tc_str(r, "message");
	char num[24];
	size_t k = 0, nl;

	snprintf(num, sizeof(num), "%lld", n);
	nl = strlen(num);
	for (const char *p = m ? m : ""; *p && k + 2 < len; p++) {
		bool edge = p == m || !isdigit((unsigned char)p[-1]);

		if (edge && !strncmp(p, num, nl) && !isdigit((unsigned char)p[nl])) {
			out[k++] = 'N';
			p += nl - 1;
		} else {
			out[k++] = *p;
		}
	}
	out[k] = 0;
}

/* nobody's two answers, a about something of root's (number na), b about
 * something nobody tiers (nb): the same error and the same words. */
static bool same_answer(struct json_object *a, long long na, struct json_object *b, long long nb)
{
	char ma[512], mb[512];

	message_without(a, na, ma, sizeof(ma));
	message_without(b, nb, mb, sizeof(mb));
	printf("  root's:   %s: %s\n  untiered: %s: %s\n", tc_error(a), ma, tc_error(b), mb);
	return !strcmp(tc_error(a), "ENOENT") && !strcmp(tc_error(a), tc_error(b)) &&
	       !strcmp(ma, mb);
}

/* The metrics op's text, as c sees it (malloc'd, "" when none). */
static char *metrics_text(struct tc_conn *c)
{
	struct json_object *r = tc_call(c, "{\"op\":\"metrics\"}");
	char *t = strdup(tc_str(r, "text") ? tc_str(r, "text") : "");

	json_object_put(r);
	return t;
}

/* Whether text has a sample labelled key="v". */
static bool labelled(const char *text, const char *key, long long v)
{
	char l[64];

	snprintf(l, sizeof(l), "%s=\"%lld\"", key, v);
	return strstr(text, l) != NULL;
}

static int become_nobody(void *unused)
{
	return tc_drop_to(NOBODY, NOBODY) || prctl(PR_SET_DUMPABLE, 1) ? -1 : 0;
}

static int stay(void *unused)
{
	return 0;
}

/* What nobody tries; runs in a child that became nobody.  Its exit status
 * is its number of failed checks.  root_tier: root's tiering, or 0. */
static int as_nobody(pid_t root_proc, pid_t own_proc, pid_t gone, int64_t root_tier)
{
	struct tc_conn *c = tc_connect(d.sock);
	struct json_object *r, *r2;
	char enodev[320], *text;
	long long id;

	CHECK(c, "nobody connects (group nogroup)");
	if (!c)
		return 1;
	snprintf(enodev, sizeof(enodev), "node %d does not exist (nodes with memory: %s)",
		 no_node, has_memory);
	r = tc_call(c, "{\"op\":\"tier_set\",\"pid\":%d,\"fast\":[%d],\"slow\":[%d]}",
		    root_proc, node_a, no_node);
	CHECK(says(r, "EPERM", NULL), "nobody tiers root's process: %s", tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[%d],\"slow\":[%d],"
		    "\"slow_share\":50}", node_a, no_node);
	CHECK(says(r, "EPERM", NULL), "nobody tiers pid 1: %s", tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"tier_set\",\"pid\":%d,\"fast\":[%d],\"slow\":[%d]}", gone,
		    node_a, no_node);
	CHECK(says(r, "ESRCH", NULL), "nobody tiers a pid that does not exist: %s",
	      tc_error(r));
	json_object_put(r);
	/* Its own process: the nodes are what is wrong. */
	r = tc_call(c, "{\"op\":\"tier_set\",\"pid\":%d,\"fast\":[%d],\"slow\":[%d],\"tag\":5}",
		    own_proc, node_a, no_node);
	CHECK(says(r, "ENOENT", enodev) && tc_int(r, "tag") == 5,
	      "nobody tiers its own process onto node %d: %s", no_node, tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"tier_set\",\"pid\":%d,\"fast\":[1023],\"slow\":[%d]}",
		    own_proc, node_a);
	CHECK(says(r, "ENOENT", "node 1023 does not exist"), "fast node 1023: %s",
	      tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"tier_set\",\"pid\":%d,\"fast\":[%d],\"slow\":[%d]}", own_proc,
		    node_a, node_a);
	CHECK(says(r, "EINVAL", "both fast and slow"), "the same node fast and slow: %s",
	      tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"tier_set\",\"pid\":%d,\"fast\":[%d],\"slow\":[%d],"
		    "\"slow_share\":101}", own_proc, node_a, no_node);
	CHECK(says(r, "EINVAL", "slow_share: 101 is out of range"), "slow_share 101: %s",
	      tc_error(r));
	json_object_put(r);
	/* Nothing nobody may read or end, nor learn of: root's tiering (or
	 * root's process, tiered or not) is as one nobody tiers. */
	CHECK(tiers_listed(c) == 0, "nobody lists no tiering: %d", tiers_listed(c));
	id = root_tier ? root_tier : 1;
	r = tc_call(c, "{\"op\":\"tier\",\"tier\":%lld}", id);
	r2 = tc_call(c, "{\"op\":\"tier\",\"tier\":%lld}", id + 1000);
	CHECK(same_answer(r, id, r2, id + 1000), "nobody reads tiering %lld: %s", id, tc_error(r));
	json_object_put(r);
	json_object_put(r2);
	r = tc_call(c, "{\"op\":\"tier_clear\",\"tier\":%lld}", id);
	r2 = tc_call(c, "{\"op\":\"tier_clear\",\"tier\":%lld}", id + 1000);
	CHECK(same_answer(r, id, r2, id + 1000), "nobody ends tiering %lld: %s", id, tc_error(r));
	json_object_put(r);
	json_object_put(r2);
	r = tc_call(c, "{\"op\":\"tier_clear\",\"pid\":%d}", root_proc);
	r2 = tc_call(c, "{\"op\":\"tier_clear\",\"pid\":%d}", gone);
	CHECK(same_answer(r, root_proc, r2, gone), "nobody ends root's process's tiering: %s",
	      tc_error(r));
	json_object_put(r);
	json_object_put(r2);
	/* Root's domain by its name: as one not tiered, without its pid. */
	r = tc_call(c, "{\"op\":\"tier_clear\",\"domain\":\"rootvm\"}");
	snprintf(enodev, sizeof(enodev), "%d", root_proc);
	CHECK(says(r, "ENOENT", "domain \"rootvm\" is not tiered") &&
		      !strstr(tc_str(r, "message"), enodev),
	      "tier_clear of root's domain: %s", tc_error(r));
	json_object_put(r);
	/* nobody's metrics: none of root's tierings. */
	text = metrics_text(c);
	CHECK(strstr(text, "\nmemmigd_tiers 0\n") && !labelled(text, "pid", root_proc) &&
	      !(root_tier && labelled(text, "tier", root_tier)),
	      "nobody's metrics show no tiering of root's (pid %d, tiering %lld)", root_proc,
	      (long long)root_tier);
	free(text);
	r = tc_call(c, "{\"op\":\"tier_clear\",\"domain\":\"none\"}");
	CHECK(says(r, "ENOENT", "no domain \"none\""), "tier_clear of a domain that is not: %s",
	      tc_error(r));
	json_object_put(r);
	tc_close(c);
	return (int)tc_fails;
}

/* Root's own tier_set: ENOENT (no such node) here; with two nodes, started or ENOENT
 * (no soft-dirty bits).  Returns the tiering's id, or 0. */
static int64_t as_root(struct tc_conn *c, pid_t root_proc)
{
	struct json_object *r;
	int64_t id = 0;

	r = tc_call(c, "{\"op\":\"tier_set\",\"pid\":%d,\"fast\":[%d],\"slow\":[%d]}",
		    root_proc, node_a, no_node);
	CHECK(says(r, "ENOENT", "does not exist (nodes with memory: "),
	      "root tiers onto node %d: %s", no_node, tc_error(r));
	json_object_put(r);
	if (node_b < 0) {
		printf("one node with memory (%s): a valid tier_set cannot pass here\n",
		       has_memory);
		return 0;
	}
	r = tc_call(c, "{\"op\":\"tier_set\",\"pid\":%d,\"fast\":[%d],\"slow\":[%d]}",
		    root_proc, node_a, node_b);
	if (!strcmp(tc_error(r), "OK")) {
		struct json_object *t = tc_get(r, "tier"), *v = NULL;

		id = tc_int(t, "id");
		CHECK(id > 0, "root's tiering has an id: %lld", (long long)id);
		/* Its own figures (docs/json.md): none of a change seen yet. */
		CHECK(json_object_object_get_ex(t, "react_s", &v) && !v &&
		      json_object_is_type(tc_get(t, "bounce_pct"), json_type_double) &&
		      json_object_is_type(tc_get(t, "cpu_pct_per_gib"), json_type_double),
		      "a new tiering says bounce_pct, cpu_pct_per_gib and react_s null");
	} else {
		CHECK(says(r, "ENOENT", "CONFIG_MEM_SOFT_DIRTY"),
		      "root's valid tier_set: %s", tc_error(r));
	}
	json_object_put(r);
	return id;
}

int main(void)
{
	static const char *const opts[] = { "--group", "nogroup", NULL };
	pid_t root_proc, own_proc, gone, child;
	struct json_object *r;
	struct tc_conn *c;
	int64_t root_tier;
	int status, rc;
	char *text;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("SKIP: needs root, to be root and to become nobody\n");
		return TC_SKIP;
	}
	read_nodes();
	printf("nodes with memory: %s; node %d has none\n", has_memory, no_node);
	/* A pid that was and is no more (reaped). */
	gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	root_proc = tc_child_ready(stay, NULL);
	own_proc = tc_child_ready(become_nobody, NULL);
	if (root_proc < 0 || own_proc < 0 || tc_daemon_start(&d, opts)) {
		printf("FAIL: two processes and memmigd\n");
		return 1;
	}
	c = tc_connect(d.sock);
	r = tc_call(c, "{\"op\":\"register\",\"name\":\"rootvm\",\"pid\":%d}", root_proc);
	CHECK(says(r, "OK", NULL), "root registers a domain: %s", tc_error(r));
	json_object_put(r);
	root_tier = as_root(c, root_proc);
	child = fork();
	if (child == 0) {
		if (tc_drop_to(NOBODY, NOBODY)) {
			printf("FAIL: could not become nobody\n");
			_exit(1);
		}
		_exit(as_nobody(root_proc, own_proc, gone, root_tier));
	}
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "nobody's checks: %d failed",
	      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	/* Root sees its own, in the metrics too, and ends it. */
	CHECK(tiers_listed(c) == (root_tier ? 1 : 0), "root lists %d tierings",
	      tiers_listed(c));
	text = metrics_text(c);
	CHECK(!root_tier || (labelled(text, "tier", root_tier) && labelled(text, "pid", root_proc)),
	      "root's metrics show its tiering %lld", (long long)root_tier);
	free(text);
	if (root_tier) {
		r = tc_call(c, "{\"op\":\"tier_clear\",\"tier\":%lld}", (long long)root_tier);
		CHECK(says(r, "OK", NULL), "root ends its tiering: %s", tc_error(r));
		json_object_put(r);
	}
	tc_close(c);
	kill(root_proc, SIGKILL);
	kill(own_proc, SIGKILL);
	waitpid(root_proc, NULL, 0);
	waitpid(own_proc, NULL, 0);
	rc = tc_daemon_stop(&d);
	CHECK(rc == 0, "memmigd exit status %d", rc);
	return tc_summary();
}
