/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* proto.c: what the parser accepts and refuses, and round trips through
 * proto_request_to_json(). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "../unit/cunit-main.h"
#include "proto/job-json.h"
#include "proto/json-scan.h"
#include "proto/proto.h"

static int parse(const char *s, struct proto_request *req, char *err, size_t n)
{
	return proto_request_parse(s, strlen(s), req, err, n);
}

static void test_accepts(void)
{
	struct proto_request req;
	char err[256];

	CU_ASSERT_EQUAL(parse("{\"op\":\"version\"}", &req, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(req.op, PROTO_OP_VERSION);
	CU_ASSERT_FALSE(req.has_tag);
	CU_ASSERT_EQUAL(parse("{\"op\":\"move\",\"pid\":42,\"to_node\":3,\"tag\":-7,"
			      "\"ranges\":[{\"addr\":\"0x7f0000000000\",\"len\":2097152},"
			      "{\"addr\":4096,\"len\":\"0x1000\"}],\"strategy\":\"kernel\","
			      "\"threads\":4}  ", &req, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(req.pid, 42);
	CU_ASSERT_EQUAL(req.to_node, 3);
	CU_ASSERT(req.has_tag && req.tag == -7);
	CU_ASSERT_EQUAL(req.nranges, 2);
	CU_ASSERT_EQUAL(req.ranges[0].addr, 0x7f0000000000ULL);
	CU_ASSERT_EQUAL(req.ranges[0].len, 2097152);
	CU_ASSERT_EQUAL(req.ranges[1].addr, 4096);
	CU_ASSERT_EQUAL(req.ranges[1].len, 4096);
	CU_ASSERT_EQUAL(req.strategy, MEMMIG_STRATEGY_KERNEL);
	CU_ASSERT_EQUAL(req.threads, 4);
	CU_ASSERT_EQUAL(parse("{\"op\":\"move\",\"domain\":\"vm-1\",\"to_node\":1023}",
			      &req, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(req.domain, "vm-1");
	CU_ASSERT_EQUAL(req.strategy, MEMMIG_STRATEGY_AUTO);
	CU_ASSERT_EQUAL(parse("{\"op\":\"register\",\"name\":\"vm\",\"uuid\":"
			      "\"c7a5fdbd-cdaf-9455-926a-d65c16db1809\",\"pid\":9,\"nodeset\":\"0-1,3\"}",
			      &req, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(req.uuid, "c7a5fdbd-cdaf-9455-926a-d65c16db1809");
	CU_ASSERT_STRING_EQUAL(req.nodeset, "0-1,3");
	CU_ASSERT_EQUAL(parse("{\"op\":\"cancel\",\"job\":9223372036854775807}", &req, err,
			      sizeof(err)), 0);
	CU_ASSERT_EQUAL(req.job, INT64_MAX);
	/* The report's old names (docs/json.md), accepted for the new. */
	CU_ASSERT_EQUAL(parse("{\"op\":\"move\",\"pid\":1,\"target_node\":3,\"workers\":4}",
			      &req, err, sizeof(err)), 0);
	CU_ASSERT(req.to_node == 3 && req.threads == 4);
}

static const struct {
	const char *line;
	int err;
	const char *says;	/* in the message */
} bad[] = {
	{ "", -EBADMSG, "not JSON" },
	{ "{\"op\":\"version\"", -EBADMSG, "unexpected end" },
	{ "[]", -EBADMSG, "array" },
	{ "{\"op\":\"version\"}x", -EBADMSG, "not JSON" },
	{ "{\"op\":\"version\",}", -EBADMSG, "not JSON" },
	{ "{\"a\":[[[[[[[[[[1]]]]]]]]]]}", -EBADMSG, "not JSON" },
	{ "{\"op\":\"nope\"}", -EOPNOTSUPP, "nope" },
	{ "{\"tag\":1}", -EINVAL, "no \"op\"" },
	{ "{\"op\":[]}", -EINVAL, "op: a string" },
	{ "{\"op\":\"nodes\",\"pid\":1}", -EINVAL, "no member \"pid\"" },
	{ "{\"op\":\"move\",\"pid\":1}", -EINVAL, "needs \"to_node\"" },
	{ "{\"op\":\"move\",\"to_node\":1}", -EINVAL, "neither" },
	{ "{\"op\":\"move\",\"pid\":1,\"domain\":\"d\",\"to_node\":1}", -EINVAL, "both" },
	{ "{\"op\":\"move\",\"pid\":2147483648,\"to_node\":1}", -EINVAL, "out of range" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1.0}", -EINVAL, "an integer, not double" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"threads\":\"2\"}", -EINVAL, "threads" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"strategy\":\"Kernel\"}", -EINVAL, "Kernel" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"ranges\":[{\"addr\":\"4096\",\"len\":4096}]}",
	  -EINVAL, "ranges[0].addr" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"ranges\":[{\"addr\":\"0x11111111111111111\",\"len\":4096}]}",
	  -EINVAL, "16 digits" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"ranges\":[{\"addr\":4096,\"len\":4096},{\"addr\":1,\"len\":4096}]}",
	  -EINVAL, "ranges[1]" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"ranges\":[{\"addr\":4096}]}", -EINVAL, "exactly" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"ranges\":[{\"addr\":18446744073709547520,\"len\":8192}]}",
	  -EINVAL, "wraps" },
	{ "{\"op\":\"register\",\"name\":\"vm\",\"pid\":1,\"uuid\":\"0123456789012345678901234567890123456789\"}",
	  -EINVAL, "uuid" },
	{ "{\"op\":\"register\",\"name\":\"v\\u0001m\",\"pid\":1}", -EINVAL, "control" },
	{ "{\"op\":\"job\",\"job\":-1}", -EINVAL, "out of range" },
	{ "{\"op\":\"job\",\"job\":1,\"tag\":true}", -EINVAL, "tag" },
	/* Strict UTF-8: overlong '/', a surrogate, beyond U+10FFFF, a lone
	 * continuation byte, a character cut at the end of the line. */
	{ "{\"op\":\"register\",\"name\":\"a\xc0\xaf\",\"pid\":1}", -EBADMSG, "UTF-8" },
	{ "{\"op\":\"register\",\"name\":\"a\xed\xa0\x80\",\"pid\":1}", -EBADMSG, "UTF-8" },
	{ "{\"op\":\"register\",\"name\":\"a\xf4\x90\x80\x80\",\"pid\":1}", -EBADMSG, "UTF-8" },
	{ "{\"op\":\"register\",\"name\":\"a\x80\",\"pid\":1}", -EBADMSG, "UTF-8" },
	{ "{\"op\":\"version\"}\xc3", -EBADMSG, "UTF-8" },
	/* Escapes json-c takes: NUL, which cut "jobs\u0000version" to
	 * "jobs"; surrogates without their pair. */
	{ "{\"op\":\"jobs\\u0000version\"}", -EBADMSG, "\\u0000" },
	{ "{\"op\":\"job\",\"job\\u0000x\":1}", -EBADMSG, "\\u0000" },
	{ "{\"op\":\"register\",\"name\":\"\\ud800\",\"pid\":1}", -EBADMSG, "surrogate" },
	{ "{\"op\":\"register\",\"name\":\"\\udc00\\ud800\",\"pid\":1}", -EBADMSG, "surrogate" },
	/* Integers json-c would saturate, a tag below INT64_MIN above all. */
	{ "{\"op\":\"version\",\"tag\":-9223372036854775809}", -EBADMSG, "64 bits" },
	{ "{\"op\":\"job\",\"job\":18446744073709551616}", -EBADMSG, "64 bits" },
	/* A member twice: json-c kept the last. */
	{ "{\"op\":\"job\",\"job\":1,\"job\":2}", -EBADMSG, "twice" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"target_node\":2}", -EINVAL, "two names" },
	{ "{\"op\":\"cancel\",\"op\":\"job\",\"job\":2}", -EBADMSG, "twice" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"ranges\":[{\"addr\":4096,\"addr\":0,"
	  "\"len\":4096}]}", -EBADMSG, "twice" },
	/* Tiering (issue 19): what each op needs, the bounds of every
	 * member, and node lists as from_nodes takes them. */
	{ "{\"op\":\"tier_set\",\"pid\":1,\"slow\":[1]}", -EINVAL, "needs \"fast\"" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0]}", -EINVAL, "needs \"slow\"" },
	{ "{\"op\":\"tier_set\",\"fast\":[0],\"slow\":[1]}", -EINVAL, "tier_set needs \"pid\" or \"domain\", not neither" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"domain\":\"vm\",\"fast\":[0],\"slow\":[1]}", -EINVAL,
	  "tier_set needs \"pid\" or \"domain\", not both" },
	{ "{\"op\":\"tier_set\",\"pid\":0,\"fast\":[0],\"slow\":[1]}", -EINVAL, "pid: 0 is out of range" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"slow_share\":50,\"fast_free\":4096}",
	  -EINVAL, "\"slow_share\" or \"fast_free\", not both" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"slow_share\":0}", -EINVAL,
	  "slow_share: 0 is out of range 1..100" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"slow_share\":101}", -EINVAL,
	  "slow_share: 101 is out of range 1..100" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"slow_share\":50.0}", -EINVAL,
	  "slow_share: an integer, not double" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"slow_share\":\"50\"}", -EINVAL,
	  "slow_share: an integer, not string" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"fast_free\":0}", -EINVAL,
	  "fast_free: 0 is out of range 1..9223372036854775807" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"fast_free\":-1}", -EINVAL,
	  "fast_free: -1 is out of range" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"fast_free\":9223372036854775808}",
	  -EINVAL, "fast_free: 9223372036854775808 is out of range" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"fast_free\":\"0x1000\"}", -EINVAL,
	  "fast_free: an integer, not string" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"interval_ms\":99}", -EINVAL,
	  "interval_ms: 99 is out of range 100..3600000" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"interval_ms\":3600001}", -EINVAL,
	  "interval_ms: 3600001 is out of range 100..3600000" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"rate\":-1}", -EINVAL,
	  "rate: -1 is out of range 0..9223372036854775807" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"rate\":18446744073709551615}",
	  -EINVAL, "rate: 18446744073709551615 is out of range" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"rate\":null}", -EINVAL,
	  "rate: an integer, not null" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"cold_intervals\":0}", -EINVAL,
	  "cold_intervals: 0 is out of range 1..8" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"cold_intervals\":9}", -EINVAL,
	  "cold_intervals: 9 is out of range 1..8" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"min_stay\":-1}", -EINVAL,
	  "min_stay: -1 is out of range 0..1000" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"min_stay\":1001}", -EINVAL,
	  "min_stay: 1001 is out of range 0..1000" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"pause_ms\":0}", -EINVAL,
	  "pause_ms: 0 is out of range 1..10000" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"pause_ms\":10001}", -EINVAL,
	  "pause_ms: 10001 is out of range 1..10000" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[],\"slow\":[1]}", -EINVAL, "fast: 1 to 64 nodes, not 0" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[]}", -EINVAL, "slow: 1 to 64 nodes, not 0" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":0,\"slow\":[1]}", -EINVAL, "fast: an array, not int" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":{\"1\":1}}", -EINVAL,
	  "slow: an array, not object" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":\"1\"}", -EINVAL, "slow: an array, not string" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0,1024],\"slow\":[2]}", -EINVAL,
	  "fast[1]: 1024 is out of range 0..1023" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[-1]}", -EINVAL,
	  "slow[0]: -1 is out of range 0..1023" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[\"1\"]}", -EINVAL,
	  "slow[0]: an integer, not string" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[[0]],\"slow\":[1]}", -EINVAL,
	  "fast[0]: an integer, not array" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0,2,0],\"slow\":[1]}", -EINVAL, "fast: node 0 twice" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[3,3]}", -EINVAL, "slow: node 3 twice" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"to_node\":1}", -EINVAL,
	  "op tier_set has no member \"to_node\"" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"tier\":1}", -EINVAL,
	  "op tier_set has no member \"tier\"" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"Fast\":[2]}", -EINVAL,
	  "op tier_set has no member \"Fast\"" },
	{ "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1],\"fast\":[2]}", -EBADMSG, "twice" },
	{ "{\"op\":\"tier_clear\"}", -EINVAL, "tier_clear needs one of \"tier\", \"pid\" and \"domain\"" },
	{ "{\"op\":\"tier_clear\",\"tier\":1,\"pid\":2}", -EINVAL, "tier_clear needs one of" },
	{ "{\"op\":\"tier_clear\",\"pid\":2,\"domain\":\"vm\"}", -EINVAL, "tier_clear needs one of" },
	{ "{\"op\":\"tier_clear\",\"tier\":1,\"domain\":\"vm\"}", -EINVAL, "tier_clear needs one of" },
	{ "{\"op\":\"tier_clear\",\"tier\":0}", -EINVAL, "tier: 0 is out of range" },
	{ "{\"op\":\"tier_clear\",\"tier\":1,\"fast\":[0]}", -EINVAL, "op tier_clear has no member \"fast\"" },
	{ "{\"op\":\"tier_clear\",\"domain\":\"\"}", -EINVAL, "domain: 1 to 255 bytes, not 0" },
	{ "{\"op\":\"tier\"}", -EINVAL, "op tier needs \"tier\"" },
	{ "{\"op\":\"tier\",\"tier\":-1}", -EINVAL, "tier: -1 is out of range" },
	{ "{\"op\":\"tier\",\"tier\":\"1\"}", -EINVAL, "tier: an integer, not string" },
	{ "{\"op\":\"tier\",\"tier\":1,\"pid\":1}", -EINVAL, "op tier has no member \"pid\"" },
	{ "{\"op\":\"tiers\",\"tier\":1}", -EINVAL, "op tiers has no member \"tier\"" },
	{ "{\"op\":\"tiers\",\"pid\":1}", -EINVAL, "op tiers has no member \"pid\"" },
	{ "{\"op\":\"tier_sets\"}", -EOPNOTSUPP, "unknown op \"tier_sets\"" },
	/* from_nodes shares the node list parser: a node twice is refused
	 * (it was taken before issue 19). */
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"from_nodes\":[0,2,0]}", -EINVAL,
	  "from_nodes: node 0 twice" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"from_nodes\":[]}", -EINVAL,
	  "from_nodes: 1 to 1024 nodes, not 0" },
	{ "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"from_nodes\":[1024]}", -EINVAL,
	  "from_nodes[0]: 1024 is out of range 0..1023" },
};

static void test_refuses(void)
{
	struct proto_request req;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(bad[i].line, &req, err, sizeof(err));

		if (rc != bad[i].err || !strstr(err, bad[i].says))
			CUNIT_FAILF("'%s': %d '%s', not %d '%s'", bad[i].line, rc, err,
				    bad[i].err, bad[i].says);
	}
}

/* Messages that quote the request cut it at a character, not in one:
 * the reply stays UTF-8. */
static void test_utf8_messages(void)
{
	struct proto_request req;
	char err[256], line[128];
	struct json_object *o;
	size_t len;
	char *reply;

	/* 39 bytes, then a 2-byte character across the 40-byte cut. */
	snprintf(line, sizeof(line), "{\"op\":\"%s\xc3\xa9\"}",
		 "abcdefghijklmnopqrstuvwxyzabcdefghijklm");
	CU_ASSERT_EQUAL(parse(line, &req, err, sizeof(err)), -EOPNOTSUPP);
	CU_ASSERT(utf8_valid(err, strlen(err), NULL));
	o = proto_reply_error(NULL, EOPNOTSUPP, "%s", err);
	reply = proto_reply_line(o, &len);
	CU_ASSERT(reply && utf8_valid(reply, len, NULL));
	free(reply);
	json_object_put(o);
	/* A message cut in a character, or with bad bytes, is mended. */
	o = proto_reply_error(NULL, EINVAL, "x\xc3");
	reply = proto_reply_line(o, &len);
	CU_ASSERT(reply && utf8_valid(reply, len, NULL) && strstr(reply, "\"message\":\"x\""));
	free(reply);
	json_object_put(o);
	o = proto_reply_error(NULL, EINVAL, "a\xff" "b");
	reply = proto_reply_line(o, &len);
	CU_ASSERT(reply && strstr(reply, "\"message\":\"a?b\""));
	free(reply);
	json_object_put(o);
}

/* A tier_set line for pid 1 with fast [0], slow [1] and more members. */
static int tier_set(const char *more, struct proto_request *req, char *err, size_t n)
{
	char line[512];

	snprintf(line, sizeof(line), "{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[1]%s}",
		 more);
	return parse(line, req, err, n);
}

/* Tiering: each member read into its field with its bit; the defaults
 * (nothing given) left to the daemon; the bounds' last values taken. */
static void test_tier_accepts(void)
{
	static const struct {
		const char *more;
		unsigned int given;
		size_t off;
		bool u64;
		uint64_t value;
	} ok[] = {
#define T(more, bit, field, u64, v) \
	{ more, bit, offsetof(struct proto_tier_request, field), u64, v }
		T(",\"slow_share\":1", PROTO_TIER_SHARE, slow_share, false, 1),
		T(",\"slow_share\":100", PROTO_TIER_SHARE, slow_share, false, 100),
		T(",\"fast_free\":1", PROTO_TIER_FREE, fast_free, true, 1),
		T(",\"fast_free\":9223372036854775807", PROTO_TIER_FREE, fast_free, true, INT64_MAX),
		T(",\"interval_ms\":100", PROTO_TIER_INTERVAL, interval_ms, false, 100),
		T(",\"interval_ms\":3600000", PROTO_TIER_INTERVAL, interval_ms, false, 3600000),
		T(",\"rate\":0", PROTO_TIER_RATE, rate, true, 0),
		T(",\"rate\":9223372036854775807", PROTO_TIER_RATE, rate, true, INT64_MAX),
		T(",\"cold_intervals\":1", PROTO_TIER_COLD, cold_intervals, false, 1),
		T(",\"cold_intervals\":8", PROTO_TIER_COLD, cold_intervals, false, 8),
		T(",\"min_stay\":0", PROTO_TIER_STAY, min_stay, false, 0),
		T(",\"min_stay\":1000", PROTO_TIER_STAY, min_stay, false, 1000),
		T(",\"pause_ms\":1", PROTO_TIER_PAUSE, pause_ms, false, 1),
		T(",\"pause_ms\":10000", PROTO_TIER_PAUSE, pause_ms, false, 10000),
#undef T
	};
	struct proto_request req;
	char err[256];

	/* Defaults: nothing given, nothing set but the nodes and the pid. */
	CU_ASSERT_EQUAL(tier_set("", &req, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(req.op, PROTO_OP_TIER_SET);
	CU_ASSERT(req.pid == 1 && !req.domain[0]);
	CU_ASSERT(req.tier.nfast == 1 && req.tier.fast[0] == 0);
	CU_ASSERT(req.tier.nslow == 1 && req.tier.slow[0] == 1);
	CU_ASSERT_EQUAL(req.tier.given, 0);
	CU_ASSERT(!req.tier.slow_share && !req.tier.fast_free && !req.tier.interval_ms &&
		  !req.tier.rate && !req.tier.cold_intervals && !req.tier.min_stay &&
		  !req.tier.pause_ms && !req.tier.id);
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		const char *p;
		uint64_t v;

		if (tier_set(ok[i].more, &req, err, sizeof(err))) {
			CUNIT_FAILF("'%s': %s", ok[i].more, err);
			continue;
		}
		p = (const char *)&req.tier + ok[i].off;
		v = ok[i].u64 ? *(const uint64_t *)(const void *)p :
				*(const unsigned int *)(const void *)p;
		if (req.tier.given != ok[i].given || v != ok[i].value)
			CUNIT_FAILF("'%s': given %#x, value %llu", ok[i].more, req.tier.given,
				    (unsigned long long)v);
	}
	/* Every member at once (but fast_free, which excludes slow_share). */
	CU_ASSERT_EQUAL(parse("{\"op\":\"tier_set\",\"domain\":\"vm-1\",\"fast\":[3,1],"
			      "\"slow\":[1023,2,0],\"slow_share\":30,\"interval_ms\":500,"
			      "\"rate\":1048576,\"cold_intervals\":3,\"min_stay\":4,\"pause_ms\":20,"
			      "\"tag\":9}", &req, err, sizeof(err)), 0);
	CU_ASSERT(req.pid == 0 && !strcmp(req.domain, "vm-1") && req.has_tag && req.tag == 9);
	CU_ASSERT(req.tier.nfast == 2 && req.tier.fast[0] == 3 && req.tier.fast[1] == 1);
	CU_ASSERT(req.tier.nslow == 3 && req.tier.slow[0] == 1023 && req.tier.slow[1] == 2 &&
		  req.tier.slow[2] == 0);
	CU_ASSERT_EQUAL(req.tier.given, PROTO_TIER_SHARE | PROTO_TIER_INTERVAL | PROTO_TIER_RATE |
			PROTO_TIER_COLD | PROTO_TIER_STAY | PROTO_TIER_PAUSE);
	CU_ASSERT(req.tier.slow_share == 30 && req.tier.interval_ms == 500 &&
		  req.tier.rate == 1048576 && req.tier.cold_intervals == 3 &&
		  req.tier.min_stay == 4 && req.tier.pause_ms == 20 && !req.tier.fast_free);
	/* The parser leaves "fast and slow overlap" to tier_policy_check. */
	CU_ASSERT_EQUAL(parse("{\"op\":\"tier_set\",\"pid\":1,\"fast\":[0],\"slow\":[0]}",
			      &req, err, sizeof(err)), 0);
	/* tier_clear: by one of tier, pid, domain; tier; tiers. */
	CU_ASSERT_EQUAL(parse("{\"op\":\"tier_clear\",\"tier\":9223372036854775807}", &req, err,
			      sizeof(err)), 0);
	CU_ASSERT(req.op == PROTO_OP_TIER_CLEAR && req.tier.id == INT64_MAX && !req.pid);
	CU_ASSERT_EQUAL(parse("{\"op\":\"tier_clear\",\"pid\":7}", &req, err, sizeof(err)), 0);
	CU_ASSERT(req.pid == 7 && !req.tier.id && !req.domain[0]);
	CU_ASSERT_EQUAL(parse("{\"op\":\"tier_clear\",\"domain\":\"vm\"}", &req, err, sizeof(err)), 0);
	CU_ASSERT(!strcmp(req.domain, "vm") && !req.pid && !req.tier.id);
	CU_ASSERT_EQUAL(parse("{\"op\":\"tier\",\"tier\":1,\"tag\":2}", &req, err, sizeof(err)), 0);
	CU_ASSERT(req.op == PROTO_OP_TIER && req.tier.id == 1);
	CU_ASSERT_EQUAL(parse("{\"op\":\"tiers\"}", &req, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(req.op, PROTO_OP_TIERS);
	CU_ASSERT_STRING_EQUAL(proto_op_name(PROTO_OP_TIER_SET), "tier_set");
	CU_ASSERT_STRING_EQUAL(proto_op_name(PROTO_OP_TIER), "tier");
	/* from_nodes: distinct nodes still taken. */
	CU_ASSERT_EQUAL(parse("{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"from_nodes\":[0,2,1023]}",
			      &req, err, sizeof(err)), 0);
	CU_ASSERT(req.nfrom_nodes == 3 && req.from_nodes[2] == 1023);
}

/* Node lists at their length bounds: 64 for fast and slow (TIER_MAX_NODES),
 * 1024 distinct ones for from_nodes. */
static void test_tier_limits(void)
{
	static char line[PROTO_MAX_LINE];
	struct proto_request req;
	char err[256], *p;

	for (int n = 64; n <= 65; n++) {
		for (int which = 0; which < 2; which++) {
			p = line + sprintf(line, "{\"op\":\"tier_set\",\"pid\":1,\"%s\":[",
					   which ? "slow" : "fast");
			for (int i = 0; i < n; i++)
				p += sprintf(p, "%s%d", i ? "," : "", i);
			sprintf(p, "],\"%s\":[1000]}", which ? "fast" : "slow");
			if (n == 64) {
				CU_ASSERT_EQUAL(parse(line, &req, err, sizeof(err)), 0);
				CU_ASSERT_EQUAL(which ? req.tier.nslow : req.tier.nfast, 64);
				CU_ASSERT_EQUAL((which ? req.tier.slow : req.tier.fast)[63], 63);
			} else {
				CU_ASSERT_EQUAL(parse(line, &req, err, sizeof(err)), -EINVAL);
				CU_ASSERT_PTR_NOT_NULL(strstr(err, which ? "slow: 1 to 64 nodes, not 65" :
							      "fast: 1 to 64 nodes, not 65"));
			}
		}
	}
	/* from_nodes: 1024 distinct nodes (the most), then one twice at the end. */
	p = line + sprintf(line, "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"from_nodes\":[");
	for (int i = 0; i <= PROTO_MAX_NODE; i++)
		p += sprintf(p, "%s%d", i ? "," : "", PROTO_MAX_NODE - i);
	strcpy(p, "]}");
	CU_ASSERT_EQUAL(parse(line, &req, err, sizeof(err)), 0);
	CU_ASSERT(req.nfrom_nodes == PROTO_MAX_NODE + 1 && req.from_nodes[PROTO_MAX_NODE] == 0);
	strcpy(p, ",5]}");
	CU_ASSERT_EQUAL(parse(line, &req, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "from_nodes: 1 to 1024 nodes, not 1025"));
	/* 1023..1, then 1 again: 1024 nodes, one twice. */
	p = line + sprintf(line, "{\"op\":\"move\",\"pid\":1,\"to_node\":1,\"from_nodes\":[");
	for (int i = PROTO_MAX_NODE; i >= 1; i--)
		p += sprintf(p, "%d,", i);
	strcpy(p, "1]}");
	CU_ASSERT_EQUAL(parse(line, &req, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "from_nodes: node 1 twice"));
}

static void test_limits(void)
{
	static char line[PROTO_MAX_LINE + 8];
	struct proto_request req;
	char err[256], *p = line;
	int rc;

	/* 257 ranges */
	p += sprintf(p, "{\"op\":\"move\",\"pid\":1,\"to_node\":0,\"ranges\":[");
	for (int i = 0; i <= PROTO_MAX_RANGES; i++)
		p += sprintf(p, "%s{\"addr\":%d,\"len\":4096}", i ? "," : "", (i + 1) * 4096);
	strcpy(p, "]}");
	CU_ASSERT_EQUAL(parse(line, &req, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "1 to 256 ranges"));
	/* NUL inside, tag still read before other errors */
	CU_ASSERT_EQUAL(proto_request_parse("{\"op\":\"version\"}\0", 17, &req, err, sizeof(err)),
			-EBADMSG);
	CU_ASSERT_EQUAL(parse("{\"tag\":5,\"op\":\"what\"}", &req, err, sizeof(err)), -EOPNOTSUPP);
	CU_ASSERT(req.has_tag && req.tag == 5);
	/* line length: PROTO_MAX_LINE - 1 bytes is the most */
	memset(line, ' ', sizeof(line));
	memcpy(line, "{\"op\":\"version\"}", 16);
	CU_ASSERT_EQUAL(proto_request_parse(line, PROTO_MAX_LINE - 1, &req, err, sizeof(err)), 0);
	rc = proto_request_parse(line, PROTO_MAX_LINE, &req, err, sizeof(err));
	CU_ASSERT_EQUAL(rc, -EMSGSIZE);
}

static void roundtrip(const char *line)
{
	struct proto_request a, b;
	struct json_object *o;
	const char *s;
	char err[256];

	if (parse(line, &a, err, sizeof(err))) {
		CUNIT_FAILF("'%s': %s", line, err);
		return;
	}
	o = proto_request_to_json(&a);
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (parse(s, &b, err, sizeof(err)) || memcmp(&a, &b, sizeof(a)))
		CUNIT_FAILF("'%s' came back as '%s' (%s)", line, s, err);
	json_object_put(o);
}

static void test_roundtrip(void)
{
	roundtrip("{\"op\":\"version\",\"tag\":-9223372036854775808}");
	roundtrip("{\"op\":\"nodes\"}");
	roundtrip("{\"op\":\"jobs\",\"tag\":1}");
	roundtrip("{\"op\":\"domains\"}");
	roundtrip("{\"op\":\"job\",\"job\":77}");
	roundtrip("{\"op\":\"cancel\",\"job\":1,\"tag\":2}");
	roundtrip("{\"op\":\"move\",\"pid\":5,\"to_node\":0}");
	roundtrip("{\"op\":\"move\",\"domain\":\"vm\",\"to_node\":2,\"strategy\":\"copy\",\"threads\":256}");
	roundtrip("{\"op\":\"move\",\"pid\":5,\"to_node\":1,\"ranges\":[{\"addr\":\"0xffffffffffffe000\","
		  "\"len\":4096},{\"addr\":0,\"len\":\"0x7ffffffffffff000\"}]}");
	roundtrip("{\"op\":\"register\",\"name\":\"vm \\u00e9\",\"uuid\":\"u\",\"pid\":1,\"nodeset\":\"0-3\"}");
	roundtrip("{\"op\":\"register\",\"name\":\"vm\",\"pid\":1}");
	roundtrip("{\"op\":\"unregister\",\"name\":\"vm\"}");
	roundtrip("{\"op\":\"move\",\"pid\":5,\"to_node\":1,\"from_nodes\":[3,0,1023]}");
	roundtrip("{\"op\":\"tier_set\",\"pid\":5,\"fast\":[0],\"slow\":[1]}");
	roundtrip("{\"op\":\"tier_set\",\"domain\":\"vm\",\"fast\":[2,0],\"slow\":[3,1],\"tag\":4,"
		  "\"slow_share\":100,\"interval_ms\":3600000,\"rate\":0,\"cold_intervals\":8,"
		  "\"min_stay\":0,\"pause_ms\":10000}");
	roundtrip("{\"op\":\"tier_set\",\"pid\":5,\"fast\":[0],\"slow\":[1],"
		  "\"fast_free\":9223372036854775807,\"rate\":9223372036854775807}");
	roundtrip("{\"op\":\"tier_clear\",\"tier\":3}");
	roundtrip("{\"op\":\"tier_clear\",\"pid\":3}");
	roundtrip("{\"op\":\"tier_clear\",\"domain\":\"vm\"}");
	roundtrip("{\"op\":\"tiers\",\"tag\":0}");
	roundtrip("{\"op\":\"tier\",\"tier\":9223372036854775807}");
}

/* tier_set to JSON: each member given comes back with its value, the
 * defaults stay absent (the daemon's, not the client's, apply). */
static void test_tier_to_json(void)
{
	static const char *const keys[] = { "slow_share", "fast_free", "interval_ms", "rate",
					    "cold_intervals", "min_stay", "pause_ms" };
	struct proto_request req;
	struct json_object *o, *v;
	char err[256];

	CU_ASSERT_EQUAL(parse("{\"op\":\"tier_set\",\"pid\":5,\"fast\":[0],\"slow\":[1]}",
			      &req, err, sizeof(err)), 0);
	o = proto_request_to_json(&req);
	CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
			       "{\"op\":\"tier_set\",\"pid\":5,\"fast\":[0],\"slow\":[1]}");
	json_object_put(o);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		/* A value in range for each: 8 is. */
		char more[64];

		snprintf(more, sizeof(more), ",\"%s\":%d", keys[i], i == 2 ? 100 : 8);
		if (tier_set(more, &req, err, sizeof(err))) {
			CUNIT_FAILF("'%s': %s", more, err);
			continue;
		}
		o = proto_request_to_json(&req);
		/* op, pid, fast, slow and the one given */
		if (json_object_object_length(o) != 5 ||
		    !json_object_object_get_ex(o, keys[i], &v) ||
		    json_object_get_int64(v) != (i == 2 ? 100 : 8))
			CUNIT_FAILF("'%s' came back as '%s'", more,
				    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	}
}

static void test_replies(void)
{
	struct proto_request req = { .has_tag = true, .tag = 12 };
	struct json_object *o = proto_reply_error(&req, -EPERM, "uid %d", 7);
	char buf[16], *line;
	size_t len;

	line = proto_reply_line(o, &len);
	CU_ASSERT_STRING_EQUAL(line, "{\"ok\":false,\"tag\":12,\"error\":\"EPERM\",\"errno\":1,"
			       "\"message\":\"uid 7\"}\n");
	CU_ASSERT_EQUAL(len, strlen(line));
	free(line);
	json_object_put(o);
	CU_ASSERT_STRING_EQUAL(proto_errno_name(0, buf, sizeof(buf)), "OK");
	CU_ASSERT_STRING_EQUAL(proto_errno_name(-EMSGSIZE, buf, sizeof(buf)), "EMSGSIZE");
	CU_ASSERT_STRING_EQUAL(proto_errno_name(4000, buf, sizeof(buf)), "E4000");
	CU_ASSERT_EQUAL(proto_errno_value("EBADMSG"), EBADMSG);
	CU_ASSERT_EQUAL(proto_errno_value("E4000"), 4000);
	CU_ASSERT_EQUAL(proto_errno_value("EWHAT"), 0);
	CU_ASSERT_EQUAL(proto_strategy_parse("copy"), MEMMIG_STRATEGY_COPY);
	CU_ASSERT_EQUAL(proto_strategy_parse("fast"), -1);
	CU_ASSERT_STRING_EQUAL(proto_strategy_name(MEMMIG_STRATEGY_KERNEL), "kernel");
}

/* docs/json.md: 6 significant digits, whatever the double. */
static void test_doubles(void)
{
	struct json_object *o = json_object_new_object();
	char *line;
	size_t len;

	json_object_object_add(o, "s", json_object_new_double(0.26185284399999997));
	json_object_object_add(o, "t", json_object_new_double(3.0));
	json_object_object_add(o, "u", json_object_new_double(1.5e-5));
	line = proto_reply_line(o, &len);
	CU_ASSERT_STRING_EQUAL(line, "{\"s\":0.261853,\"t\":3.0,\"u\":1.5e-05}\n");
	free(line);
	json_object_put(o);
}

/* The job object: every key, null where unknown; one rate. */
static void test_job(void)
{
	struct proto_job j = {
		.via = "local", .state = "done", .pid = 9, .to_node = 1,
		.p = { .bytes_total = 4096, .bytes_done = 4096, .elapsed_s = 0.5 },
		.ended = true, .bytes_moved = 2048, .message = "moved",
		.created_at = 1700000000, .started_at = 1700000001,
	};
	struct json_object *o = proto_job_json(&j), *v;

	CU_ASSERT_EQUAL(json_object_object_length(o), 23);	/* docs/json.md */
	/* Times in whole Unix seconds; one not known (yet) is null. */
	CU_ASSERT(json_object_object_get_ex(o, "created_at_s", &v) &&
		  json_object_is_type(v, json_type_int) && json_object_get_int64(v) == 1700000000);
	CU_ASSERT(json_object_object_get_ex(o, "started_at_s", &v) &&
		  json_object_get_int64(v) == 1700000001);
	CU_ASSERT(json_object_object_get_ex(o, "ended_at_s", &v) && !v);
	CU_ASSERT(json_object_object_get_ex(o, "waits_for", &v) && !v);
	CU_ASSERT(json_object_object_get_ex(o, "id", &v) && !v);
	CU_ASSERT(json_object_object_get_ex(o, "report", &v) && !v);
	CU_ASSERT(json_object_object_get_ex(o, "eta_s", &v) && !v);
	CU_ASSERT(json_object_object_get_ex(o, "rate", &v) && json_object_get_int64(v) == 4096);
	CU_ASSERT(json_object_object_get_ex(o, "result", &v) &&
		  !strcmp(json_object_get_string(v), "OK"));
	json_object_put(o);
	j.ended = false;
	j.running = true;
	j.state = "running";
	j.p.rate = 1000;
	j.p.bytes_done = 2096;
	o = proto_job_json(&j);
	CU_ASSERT(json_object_object_get_ex(o, "bytes_moved", &v) && !v);
	CU_ASSERT(json_object_object_get_ex(o, "rate", &v) && json_object_get_int64(v) == 1000);
	CU_ASSERT(json_object_object_get_ex(o, "eta_s", &v) && json_object_get_double(v) == 2.0);
	json_object_put(o);
}

int main(void)
{
	static CU_TestInfo tests[] = {
		{ "accepts", test_accepts },
		{ "refuses with a reason", test_refuses },
		{ "messages stay UTF-8", test_utf8_messages },
		{ "limits", test_limits },
		{ "tiering: accepts", test_tier_accepts },
		{ "tiering: node list limits", test_tier_limits },
		{ "round trips", test_roundtrip },
		{ "tiering: to JSON", test_tier_to_json },
		{ "replies and names", test_replies },
		{ "doubles", test_doubles },
		{ "the job object", test_job },
		CU_TEST_INFO_NULL,
	};
	static CU_SuiteInfo suites[] = {
		{ "proto", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	return cunit_main(suites);
}
