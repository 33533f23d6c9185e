/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* proto.c: what the parser accepts and refuses, and round trips through
 * proto_request_to_json(). */
#define _GNU_SOURCE
#include <errno.h>
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
	};
	struct json_object *o = proto_job_json(&j), *v;

	CU_ASSERT_EQUAL(json_object_object_length(o), 19);	/* docs/json.md */
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
		{ "round trips", test_roundtrip },
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
