/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmigd's domain registry without libvirtd: registration rules, the
 * bound, reused pids, the JSON list, the placement and tier element
 * parsers, the status elements, and telling a domain's QEMU by its
 * command line.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/cunit-main.h"
#include "daemon/domains-private.h"
#include "daemon/tier-policy.h"

#define UUID "b4a35103-e366-46c5-b0a4-c74d2412b89f"

static struct domains *d;

static int setup(void)
{
	return domains_new(NULL, NULL, NULL, NULL, NULL, &d);
}

static int teardown(void)
{
	domains_free(d);
	return 0;
}

static struct json_object *entry(const char *name)
{
	struct json_object *a = domains_list_json(d), *o, *v, *found = NULL;

	for (size_t i = 0; i < json_object_array_length(a); i++) {
		o = json_object_array_get_idx(a, i);
		if (json_object_object_get_ex(o, "name", &v) &&
		    !strcmp(json_object_get_string(v), name))
			found = json_object_get(o);
	}
	json_object_put(a);
	return found;
}

static const char *member(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : NULL;
}

static void test_register(void)
{
	struct json_object *o;
	int pid = 0;

	CU_ASSERT_EQUAL(domains_register(d, "vm1", UUID, getpid(), "0-1"), 0);
	CU_ASSERT_EQUAL(domains_resolve(d, "vm1", &pid), 0);
	CU_ASSERT_EQUAL(pid, getpid());
	o = entry("vm1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_STRING_EQUAL(member(o, "uuid"), UUID);
	CU_ASSERT_STRING_EQUAL(member(o, "nodeset"), "0-1");
	CU_ASSERT_STRING_EQUAL(member(o, "source"), "hook");
	CU_ASSERT_PTR_NULL(member(o, "placement"));
	CU_ASSERT_PTR_NULL(member(o, "last_job"));
	json_object_put(o);

	/* Registering again replaces (a restarted domain). */
	CU_ASSERT_EQUAL(domains_register(d, "vm1", UUID, getppid(), NULL), 0);
	CU_ASSERT_EQUAL(domains_resolve(d, "vm1", &pid), 0);
	CU_ASSERT_EQUAL(pid, getppid());
	/* libvirt's view does not override a live hook entry. */
	CU_ASSERT_EQUAL(domains_add(d, "vm1", UUID, getpid(), "0",
				    DOMAIN_SOURCE_LIBVIRT, false), 0);
	CU_ASSERT_EQUAL(domains_resolve(d, "vm1", &pid), 0);
	CU_ASSERT_EQUAL(pid, getppid());

	CU_ASSERT_EQUAL(domains_unregister(d, "vm1"), 0);
	CU_ASSERT_EQUAL(domains_unregister(d, "vm1"), -ENOENT);
	CU_ASSERT_EQUAL(domains_resolve(d, "vm1", &pid), -ENOENT);
}

static void test_register_invalid(void)
{
	CU_ASSERT_EQUAL(domains_register(d, "", UUID, getpid(), NULL), -EINVAL);
	CU_ASSERT_EQUAL(domains_register(d, "a/b", UUID, getpid(), NULL), -EINVAL);
	CU_ASSERT_EQUAL(domains_register(d, "..", UUID, getpid(), NULL), -EINVAL);
	CU_ASSERT_EQUAL(domains_register(d, "a\nb", UUID, getpid(), NULL), -EINVAL);
	CU_ASSERT_EQUAL(domains_register(d, "vm", "not-a-uuid", getpid(), NULL), -EINVAL);
	CU_ASSERT_EQUAL(domains_register(d, "vm", UUID "0", getpid(), NULL), -EINVAL);
	CU_ASSERT_EQUAL(domains_register(d, "vm", UUID, getpid(), "0;1"), -EINVAL);
	CU_ASSERT_EQUAL(domains_register(d, "vm", UUID, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(domains_register(d, "vm", UUID, -5, NULL), -EINVAL);
	CU_ASSERT_EQUAL(domains_register(d, "vm", UUID, 0x7ffffff0, NULL), -ESRCH);
	CU_ASSERT_PTR_NULL(entry("vm"));
}

/* Waits (up to 5 s) until pid is a zombie. */
static bool wait_zombie(int pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(path, "re");
		bool z = false;

		if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
			z = p[1] == ' ' && p[2] == 'Z';
		if (f)
			fclose(f);
		if (z)
			return true;
		usleep(10 * 1000);
	}
	return false;
}

/* A registered process that exited (a zombie, then gone) no longer
 * resolves, even though the entry is still there. */
static void test_dead_pid(void)
{
	int go[2], pid, got;
	char c;

	/* The child lives until it is registered: it exited first, now and
	 * then, and could not be (-ESRCH). */
	CU_ASSERT_FATAL(pipe(go) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid) {
		close(go[1]);
		_exit(read(go[0], &c, 1) < 0);
	}
	close(go[0]);
	CU_ASSERT_EQUAL(domains_register(d, "dead", NULL, pid, NULL), 0);
	CU_ASSERT_EQUAL(domains_register(d, "dead2", NULL, pid, NULL), 0);
	close(go[1]);
	/* A zombie: still in /proc, but not a QEMU that runs. */
	CU_ASSERT(wait_zombie(pid));
	CU_ASSERT_EQUAL(domains_resolve(d, "dead", &got), -ENOENT);
	CU_ASSERT_PTR_NULL(entry("dead2"));	/* not listed either */
	CU_ASSERT_EQUAL(domains_unregister(d, "dead2"), -ENOENT);
	waitpid(pid, NULL, 0);
	CU_ASSERT_PTR_NULL(entry("dead"));
	CU_ASSERT_EQUAL(domains_register(d, "dead", NULL, pid, NULL), -ESRCH);
}

static void test_bounded(void)
{
	char name[32];
	int ret = 0;

	for (int i = 0; i < DOMAINS_MAX && !ret; i++) {
		snprintf(name, sizeof(name), "vm%d", i);
		ret = domains_register(d, name, NULL, getpid(), NULL);
	}
	CU_ASSERT_EQUAL(ret, 0);
	CU_ASSERT_EQUAL(domains_register(d, "one-too-many", NULL, getpid(), NULL), -ENOSPC);
	/* An existing name still re-registers when full. */
	CU_ASSERT_EQUAL(domains_register(d, "vm7", NULL, getpid(), "0"), 0);
	for (int i = 0; i < DOMAINS_MAX; i++) {
		snprintf(name, sizeof(name), "vm%d", i);
		if (domains_unregister(d, name))
			ret = -1;
	}
	CU_ASSERT_EQUAL(ret, 0);
	CU_ASSERT_EQUAL(domains_register(d, "one-too-many", NULL, getpid(), NULL), 0);
	CU_ASSERT_EQUAL(domains_unregister(d, "one-too-many"), 0);
}

static void test_job_done(void)
{
	struct json_object *o, *j, *v;

	CU_ASSERT_EQUAL(domains_register(d, "vmj", UUID, getpid(), "0"), 0);
	domains_job_done(d, "vmj", 2, -ENOMEM, 4096);
	o = entry("vmj");
	CU_ASSERT_PTR_NULL(member(o, "placement"));	/* it failed */
	CU_ASSERT_FATAL(json_object_object_get_ex(o, "last_job", &j) && j);
	CU_ASSERT_STRING_EQUAL(member(j, "result"), "ENOMEM");
	json_object_put(o);

	domains_job_done(d, "vmj", 1, 0, 1 << 20);
	o = entry("vmj");
	CU_ASSERT_STRING_EQUAL(member(o, "placement"), "1");
	CU_ASSERT_FATAL(json_object_object_get_ex(o, "last_job", &j) && j);
	CU_ASSERT_STRING_EQUAL(member(j, "result"), "OK");
	CU_ASSERT(json_object_object_get_ex(j, "bytes_moved", &v) &&
		  json_object_get_uint64(v) == 1 << 20);
	json_object_put(o);
	/* an unknown domain: nothing to record, no crash */
	domains_job_done(d, "nobody", 1, 0, 0);
	CU_ASSERT_EQUAL(domains_unregister(d, "vmj"), 0);
}

static void test_placement_parse(void)
{
	static const struct { const char *xml; int node; } good[] = {
		{ "<placement node=\"0\"/>", 0 },
		{ "<placement node='3'/>", 3 },
		{ "  <placement  node = \"1023\" />\n", 1023 },
		{ "<memmig:placement xmlns:memmig=\"http://memmig.org/xmlns/libvirt/placement/1\" node=\"2\"/>", 2 },
		{ "<placement xmlns=\"x\" node=\"5\"></placement>", 5 },
		{ "<m:placement node=\"6\" ></m:placement >", 6 },
	};
	static const char *const bad[] = {
		"", "placement node=\"1\"/>", "<placement/>", "<placement node=\"\"/>",
		"<placement node=\"1024\"/>", "<placement node=\"-1\"/>",
		"<placement node=\"1x\"/>", "<placement node=\"00001\"/>", "<placement node=\"01\"/>",
		"<placement node=\"1\" node=\"2\"/>", "<placement node=\"1\" cpu=\"2\"/>",
		"<placement node=\"1\"", "<placement node=1/>", "<placement node=\"1/>",
		"<placementx node=\"1\"/>", "<status node=\"1\"/>",
		"<placement node=\"1\"/>junk", "<placement node=\"1\"/><placement node=\"2\"/>",
		"<placement node=\"1\">text</placement>", "<placement node=\"1\"></other>",
		"<placement node=\"1\"x=\"2\"/>", "<a:b:placement node=\"1\"/>",
		"<placement node=\"1\" xmlns:m=\"<\"/>",
	};
	int node;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		node = -1;
		if (domains_placement_parse(good[i].xml, &node) || node != good[i].node)
			CUNIT_FAILF("'%s': node %d, want %d", good[i].xml, node, good[i].node);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (domains_placement_parse(bad[i], &node) != -EINVAL)
			CUNIT_FAILF("'%s' was accepted", bad[i]);
}

static void test_placement_long(void)
{
	size_t len = DOMAINS_XML_MAX + 100;
	char *xml = malloc(len + 1);
	int node;

	CU_ASSERT_PTR_NOT_NULL_FATAL(xml);
	memset(xml, ' ', len);
	strcpy(xml + len - 22, "<placement node=\"1\"/>");
	CU_ASSERT_EQUAL(domains_placement_parse(xml, &node), -EINVAL);
	free(xml);
}

static void test_status_format(void)
{
	char buf[256];

	CU_ASSERT_EQUAL(domains_status_format(buf, sizeof(buf), 1, 0, 12345, 0), 0);
	CU_ASSERT_STRING_EQUAL(buf, "<status node=\"1\" result=\"OK\" bytes=\"12345\" "
			       "time=\"1970-01-01T00:00:00Z\"/>");
	CU_ASSERT_EQUAL(domains_status_format(buf, sizeof(buf), 0, -EPERM, 0, 86400), 0);
	CU_ASSERT_STRING_EQUAL(buf, "<status node=\"0\" result=\"EPERM\" bytes=\"0\" "
			       "time=\"1970-01-02T00:00:00Z\"/>");
	CU_ASSERT_EQUAL(domains_status_format(buf, sizeof(buf), -1, -EINVAL, 0, 0), 0);
	CU_ASSERT_STRING_EQUAL(buf, "<status result=\"EINVAL\" bytes=\"0\" "
			       "time=\"1970-01-01T00:00:00Z\"/>");
	CU_ASSERT_EQUAL(domains_status_format(buf, 20, 0, 0, 0, 0), -ENOSPC);
}

#define TIER_NS "http://memmig.org/xmlns/libvirt/tier/1"

static struct tiers_policy tier_ok(const char *xml)
{
	struct tiers_policy p;
	char err[256] = "";

	memset(&p, 0xa5, sizeof(p));
	if (domains_tier_parse(xml, &p, err, sizeof(err)))
		CUNIT_FAILF("'%s' refused: %s", xml, err);
	return p;
}

static void test_tier_parse(void)
{
	struct tiers_policy p, def;

	tiers_policy_defaults(&def);
	/* The least: fast and slow, the rest the defaults. */
	p = tier_ok("<tier fast=\"0\" slow=\"2\"/>");
	CU_ASSERT_EQUAL(p.nfast, 1);
	CU_ASSERT_EQUAL(p.fast[0], 0);
	CU_ASSERT_EQUAL(p.nslow, 1);
	CU_ASSERT_EQUAL(p.slow[0], 2);
	CU_ASSERT_EQUAL(p.slow_share, def.slow_share);
	CU_ASSERT_EQUAL(p.fast_free, 0);
	CU_ASSERT_EQUAL(p.interval_ms, def.interval_ms);
	CU_ASSERT_EQUAL(p.rate, 0);
	CU_ASSERT_EQUAL(p.cold_intervals, def.cold_intervals);
	CU_ASSERT_EQUAL(p.min_stay, def.min_stay);
	CU_ASSERT_EQUAL(p.pause_ms, def.pause_ms);

	/* Every attribute, a prefix, xmlns, single quotes, an end tag. */
	p = tier_ok("\n <m:tier xmlns:m=\"" TIER_NS "\" fast=\"0-1,3\" slow='2,4-5'\n"
		    "  slow-share=\"75\" interval-ms = \"2500\" rate=\"1048576\" cold=\"8\"\n"
		    "  stay=\"0\" pause-ms=\"10000\"></m:tier >\n");
	CU_ASSERT_EQUAL(p.nfast, 3);
	CU_ASSERT(p.fast[0] == 0 && p.fast[1] == 1 && p.fast[2] == 3);
	CU_ASSERT_EQUAL(p.nslow, 3);
	CU_ASSERT(p.slow[0] == 2 && p.slow[1] == 4 && p.slow[2] == 5);
	CU_ASSERT_EQUAL(p.slow_share, 75);
	CU_ASSERT_EQUAL(p.fast_free, 0);
	CU_ASSERT_EQUAL(p.interval_ms, 2500);
	CU_ASSERT_EQUAL(p.rate, 1048576);
	CU_ASSERT_EQUAL(p.cold_intervals, 8);
	CU_ASSERT_EQUAL(p.min_stay, 0);
	CU_ASSERT_EQUAL(p.pause_ms, 10000);

	/* fast-free: the watermark instead of the default share. */
	p = tier_ok("<tier xmlns=\"" TIER_NS "\" fast=\"1\" slow=\"0\" fast-free=\"1073741824\"/>");
	CU_ASSERT_EQUAL(p.slow_share, 0);
	CU_ASSERT_EQUAL(p.fast_free, 1073741824ULL);
	CU_ASSERT(p.fast[0] == 1 && p.slow[0] == 0);
	p = tier_ok("<tier fast=\"0\" slow=\"1\" fast-free=\"18446744073709551615\"/>");
	CU_ASSERT_EQUAL(p.fast_free, UINT64_MAX);

	/* Each bound, from below and above. */
	CU_ASSERT_EQUAL(tier_ok("<tier fast=\"0\" slow=\"1\" slow-share=\"1\"/>").slow_share, 1);
	CU_ASSERT_EQUAL(tier_ok("<tier fast=\"0\" slow=\"1\" slow-share=\"100\"/>").slow_share, 100);
	CU_ASSERT_EQUAL(tier_ok("<tier fast=\"0\" slow=\"1\" interval-ms=\"100\"/>").interval_ms, 100);
	CU_ASSERT_EQUAL(tier_ok("<tier fast=\"0\" slow=\"1\" interval-ms=\"3600000\"/>").interval_ms,
			3600000);
	CU_ASSERT_EQUAL(tier_ok("<tier fast=\"0\" slow=\"1\" rate=\"0\"/>").rate, 0);
	CU_ASSERT_EQUAL(tier_ok("<tier fast=\"0\" slow=\"1\" rate=\"18446744073709551615\"/>").rate,
			UINT64_MAX);
	CU_ASSERT_EQUAL(tier_ok("<tier fast=\"0\" slow=\"1\" cold=\"1\"/>").cold_intervals, 1);
	CU_ASSERT_EQUAL(tier_ok("<tier fast=\"0\" slow=\"1\" stay=\"1000\"/>").min_stay, 1000);
	CU_ASSERT_EQUAL(tier_ok("<tier fast=\"0\" slow=\"1\" pause-ms=\"1\"/>").pause_ms, 1);
	p = tier_ok("<tier fast=\"0-63\" slow=\"1023\"/>");
	CU_ASSERT(p.nfast == 64 && p.fast[63] == 63 && p.nslow == 1 && p.slow[0] == 1023);
	p = tier_ok("<tier fast=\"3,1-2,1\" slow=\"10-10\"/>");	/* as a set */
	CU_ASSERT(p.nfast == 3 && p.fast[0] == 1 && p.fast[2] == 3 && p.slow[0] == 10);
}

static void test_tier_refused(void)
{
	/* Each with a word of the sentence that says why. */
	static const struct { const char *xml, *why; } bad[] = {
		{ "", "not an element" },
		{ "tier fast=\"0\" slow=\"1\"/>", "not an element" },
		{ "<tiers fast=\"0\" slow=\"1\"/>", "not a <tier>" },
		{ "<placement node=\"1\"/>", "not a <tier>" },
		{ "<a:b:tier fast=\"0\" slow=\"1\"/>", "not a <tier>" },
		{ "<tier/>", "needs fast" },
		{ "<tier fast=\"0\"/>", "needs fast" },
		{ "<tier slow=\"0\"/>", "needs fast" },
		{ "<tier fast=\"0\" slow=\"1\" hot=\"1\"/>", "no attribute hot" },
		{ "<tier fast=\"0\" slow=\"1\" m:cold=\"1\"/>", "no attribute m:cold" },
		{ "<tier fast=\"0\" slow=\"1\" fast=\"2\"/>", "given twice" },
		{ "<tier fast=\"0\" slow=\"1\" cold=\"2\" cold=\"2\"/>", "given twice" },
		{ "<tier fast=\"0\" slow=\"1\" slow-share=\"50\" fast-free=\"4096\"/>", "not both" },
		{ "<tier fast=\"0\" slow=\"0\"/>", "both fast and slow" },
		{ "<tier fast=\"0-2\" slow=\"2-3\"/>", "both fast and slow" },
		{ "<tier fast=\"\" slow=\"1\"/>", "fast=\"\"" },
		{ "<tier fast=\"0,\" slow=\"1\"/>", "fast=" },
		{ "<tier fast=\",0\" slow=\"1\"/>", "fast=" },
		{ "<tier fast=\"0,,1\" slow=\"2\"/>", "fast=" },
		{ "<tier fast=\"1-0\" slow=\"2\"/>", "fast=" },
		{ "<tier fast=\"0-\" slow=\"2\"/>", "fast=" },
		{ "<tier fast=\"01\" slow=\"2\"/>", "fast=" },
		{ "<tier fast=\"0-064\" slow=\"65\"/>", "fast=" },
		{ "<tier fast=\"0 ,1\" slow=\"2\"/>", "fast=" },
		{ "<tier fast=\" 0\" slow=\"2\"/>", "fast=" },
		{ "<tier fast=\"0\n\" slow=\"2\"/>", "fast=" },
		{ "<tier fast=\"x\" slow=\"2\"/>", "fast=" },
		{ "<tier fast=\"-1\" slow=\"2\"/>", "fast=" },
		{ "<tier fast=\"0-64\" slow=\"65\"/>", "at most 64" },	/* 65 nodes */
		{ "<tier fast=\"0\" slow=\"1024\"/>", "slow=" },
		{ "<tier fast=\"0\" slow=\"99999999999999999999\"/>", "slow=" },
		{ "<tier fast=\"0\" slow=\"1\" slow-share=\"0\"/>", "slow-share=" },
		{ "<tier fast=\"0\" slow=\"1\" slow-share=\"101\"/>", "slow-share=" },
		{ "<tier fast=\"0\" slow=\"1\" slow-share=\"075\"/>", "slow-share=" },
		{ "<tier fast=\"0\" slow=\"1\" slow-share=\"-1\"/>", "slow-share=" },
		{ "<tier fast=\"0\" slow=\"1\" slow-share=\"+5\"/>", "slow-share=" },
		{ "<tier fast=\"0\" slow=\"1\" slow-share=\"7%\"/>", "slow-share=" },
		{ "<tier fast=\"0\" slow=\"1\" slow-share=\"\"/>", "slow-share=" },
		{ "<tier fast=\"0\" slow=\"1\" fast-free=\"0\"/>", "fast-free=" },
		{ "<tier fast=\"0\" slow=\"1\" fast-free=\"1.5\"/>", "fast-free=" },
		{ "<tier fast=\"0\" slow=\"1\" fast-free=\"1G\"/>", "fast-free=" },
		{ "<tier fast=\"0\" slow=\"1\" fast-free=\"18446744073709551616\"/>", "fast-free=" },
		{ "<tier fast=\"0\" slow=\"1\" interval-ms=\"99\"/>", "interval-ms=" },
		{ "<tier fast=\"0\" slow=\"1\" interval-ms=\"3600001\"/>", "interval-ms=" },
		{ "<tier fast=\"0\" slow=\"1\" interval-ms=\"2s\"/>", "interval-ms=" },
		{ "<tier fast=\"0\" slow=\"1\" rate=\"-1\"/>", "rate=" },
		{ "<tier fast=\"0\" slow=\"1\" rate=\"1e6\"/>", "rate=" },
		{ "<tier fast=\"0\" slow=\"1\" rate=\"18446744073709551616\"/>", "rate=" },
		{ "<tier fast=\"0\" slow=\"1\" cold=\"0\"/>", "cold=" },
		{ "<tier fast=\"0\" slow=\"1\" cold=\"9\"/>", "cold=" },
		{ "<tier fast=\"0\" slow=\"1\" stay=\"1001\"/>", "stay=" },
		{ "<tier fast=\"0\" slow=\"1\" stay=\" 1\"/>", "stay=" },
		{ "<tier fast=\"0\" slow=\"1\" pause-ms=\"0\"/>", "pause-ms=" },
		{ "<tier fast=\"0\" slow=\"1\" pause-ms=\"10001\"/>", "pause-ms=" },
		{ "<tier fast=\"0\" slow=\"1\">text</tier>", "must be empty" },
		{ "<tier fast=\"0\" slow=\"1\"><tier/></tier>", "must be empty" },
		{ "<tier fast=\"0\" slow=\"1\"></other>", "must be empty" },
		{ "<tier fast=\"0\" slow=\"1\"/><tier fast=\"1\" slow=\"2\"/>", "follows" },
		{ "<tier fast=\"0\" slow=\"1\"/>junk", "follows" },
		{ "<tier fast=\"0\" slow=\"1\"", "malformed" },
		{ "<tier fast=\"0\"slow=\"1\"/>", "malformed" },
		{ "<tier fast=0 slow=\"1\"/>", "quoted" },
		{ "<tier fast=\"0 slow=\"1\"/>", "fast=\"0 slow=\"" },
		{ "<tier fast=\"0\" slow=\"1\" xmlns:m=\"<\"/>", "quoted" },
		{ "<tier fast=\"0\" slow=\"1\" / >", "malformed" },
	};
	struct tiers_policy p, before;
	char err[256];

	tiers_policy_defaults(&before);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = before;
		err[0] = '\0';
		if (domains_tier_parse(bad[i].xml, &p, err, sizeof(err)) != -EINVAL)
			CUNIT_FAILF("'%s' was accepted", bad[i].xml);
		else if (!strstr(err, bad[i].why))
			CUNIT_FAILF("'%s': \"%s\" does not say '%s'", bad[i].xml, err, bad[i].why);
		if (memcmp(&p, &before, sizeof(p)))
			CUNIT_FAILF("'%s': refused, but the policy was changed", bad[i].xml);
	}
}

static void test_tier_long(void)
{
	size_t len = DOMAINS_XML_MAX + 100;
	char *xml = malloc(len + 1), err[128];
	struct tiers_policy p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(xml);
	memset(xml, ' ', len);
	strcpy(xml + len - 25, "<tier fast=\"0\" slow=\"1\"/>");
	CU_ASSERT_EQUAL(domains_tier_parse(xml, &p, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "longer than"));
	free(xml);
}

static void test_tier_status_format(void)
{
	char buf[768], msg[600];

	CU_ASSERT_EQUAL(domains_tier_status_format(buf, sizeof(buf), "set", 0, 7, "ignored", 0), 0);
	CU_ASSERT_STRING_EQUAL(buf, "<tier-status action=\"set\" result=\"OK\" tier=\"7\" "
			       "time=\"1970-01-01T00:00:00Z\"/>");
	CU_ASSERT_EQUAL(domains_tier_status_format(buf, sizeof(buf), "set", -ENOENT, 0,
						   "soft-dirty: no <bits> & \"so\" on", 86400), 0);
	CU_ASSERT_STRING_EQUAL(buf, "<tier-status action=\"set\" result=\"ENOENT\" "
			       "message=\"soft-dirty: no &lt;bits&gt; &amp; &quot;so&quot; on\" "
			       "time=\"1970-01-02T00:00:00Z\"/>");
	CU_ASSERT_EQUAL(domains_tier_status_format(buf, sizeof(buf), "clear", -ENOENT, 0, "", 0), 0);
	CU_ASSERT_STRING_EQUAL(buf, "<tier-status action=\"clear\" result=\"ENOENT\" "
			       "time=\"1970-01-01T00:00:00Z\"/>");
	/* A long message is cut, whole entities only, and still fits. */
	memset(msg, '&', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	CU_ASSERT_EQUAL(domains_tier_status_format(buf, sizeof(buf), "set", -EINVAL, 0, msg, 0), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "&amp;\" time="));
	CU_ASSERT_EQUAL(domains_tier_status_format(buf, 40, "set", 0, 1, NULL, 0), -ENOSPC);
}

#define CMD(s) s, sizeof(s)	/* with the last NUL, as /proc gives it */

static void test_cmdline(void)
{
	CU_ASSERT(domains_cmdline_is_domain(CMD("/usr/bin/qemu-system-x86_64\0-name\0"
						"guest=vm1,debug-threads=on\0-S"), "vm1"));
	CU_ASSERT(domains_cmdline_is_domain(CMD("qemu\0-name\0guest=a,,b,debug-threads=on"), "a,b"));
	CU_ASSERT(domains_cmdline_is_domain(CMD("qemu\0-name\0vm1"), "vm1"));
	CU_ASSERT(!domains_cmdline_is_domain(CMD("qemu\0-name\0guest=vm10,debug-threads=on"), "vm1"));
	CU_ASSERT(!domains_cmdline_is_domain(CMD("qemu\0-name\0guest=vm1"), "vm10"));
	CU_ASSERT(!domains_cmdline_is_domain(CMD("qemu\0-name\0guest=a,b"), "a,b"));
	CU_ASSERT(!domains_cmdline_is_domain(CMD("sleep\0vm1"), "vm1"));
	CU_ASSERT(!domains_cmdline_is_domain(CMD("qemu\0-name"), "vm1"));
	CU_ASSERT(!domains_cmdline_is_domain("", 0, "vm1"));
}

/* libvirt's pid file, checked against the command line. */
static void test_pidfile(void)
{
	char dir[] = "/tmp/test-domains.XXXXXX", path[64];
	int pid = fork(), got = 0;
	FILE *f;

	CU_ASSERT_FATAL(pid >= 0);
	if (!pid) {
		/* argv as QEMU's: ... -name guest=vmp,... (the shell's $0 and
		 * $1; the ";" keeps it from exec'ing sleep in its place) */
		execl("/bin/sh", "sh", "-c", "sleep 30; exit 0", "-name",
		      "guest=vmp,debug-threads=on", (char *)NULL);
		_exit(127);
	}
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	usleep(100 * 1000);
	snprintf(path, sizeof(path), "%s/vmp.pid", dir);
	f = fopen(path, "w");
	fprintf(f, "%d", pid);
	fclose(f);
	CU_ASSERT_EQUAL(domains_pidfile_resolve(dir, "vmp", &got), 0);
	CU_ASSERT_EQUAL(got, pid);
	/* The same pid file under another name: not that domain's QEMU. */
	snprintf(path, sizeof(path), "%s/other.pid", dir);
	f = fopen(path, "w");
	fprintf(f, "%d\n", pid);
	fclose(f);
	CU_ASSERT_EQUAL(domains_pidfile_resolve(dir, "other", &got), -ENOENT);
	CU_ASSERT_EQUAL(domains_pidfile_resolve(dir, "missing", &got), -ENOENT);
	CU_ASSERT_EQUAL(domains_pidfile_resolve(dir, "../x", &got), -ENOENT);
	unlink(path);
	snprintf(path, sizeof(path), "%s/vmp.pid", dir);
	unlink(path);
	rmdir(dir);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static CU_TestInfo registry_tests[] = {
	{ "register, resolve, unregister", test_register },
	{ "invalid registrations", test_register_invalid },
	{ "a dead pid does not resolve", test_dead_pid },
	{ "at most DOMAINS_MAX entries", test_bounded },
	{ "job results and placement", test_job_done },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo element_tests[] = {
	{ "placement element parser", test_placement_parse },
	{ "placement element too long", test_placement_long },
	{ "status element", test_status_format },
	{ "tier element parser", test_tier_parse },
	{ "tier element refusals", test_tier_refused },
	{ "tier element too long", test_tier_long },
	{ "tier-status element", test_tier_status_format },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo pid_tests[] = {
	{ "QEMU command line", test_cmdline },
	{ "pid file", test_pidfile },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ .pName = "registry", .pInitFunc = setup, .pCleanupFunc = teardown,
	  .pTests = registry_tests },
	{ .pName = "metadata elements", .pTests = element_tests },
	{ .pName = "QEMU pids", .pTests = pid_tests },
	CU_SUITE_INFO_NULL,
};

int main(void)
{
	return cunit_main(suites);
}
