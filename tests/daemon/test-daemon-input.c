/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bad input against a running memmigd: each request gets the error the
 * protocol names (and its tag back), the connection stays usable except
 * after an oversize line, and the daemon answers "version" after all of
 * it.  Also: half a line then a disconnect, 300 connections at once (256
 * served, the rest told EBUSY), 100 pipelined requests answered in order.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "client.h"
#include "proto/proto.h"

struct bad {
	const char *line;
	const char *error;
};

/* %d in a line is replaced by a live pid of ours, %g by a gone one. */
static const struct bad cases[] = {
	{ "{\"op\":\"version\"}", "OK" },
	{ "not json", "EBADMSG" },
	{ "", "EBADMSG" },
	{ "[1,2]", "EBADMSG" },
	{ "\"op\"", "EBADMSG" },
	{ "42", "EBADMSG" },
	{ "{\"op\":\"version\"} {}", "EBADMSG" },
	{ "{\"op\":\"version\",}", "EBADMSG" },
	{ "{'op':'version'}", "EBADMSG" },
	{ "{\"op\":\"\xff\xfe\"}", "EBADMSG" },
	{ "{\"op\":\"version\",\"x\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}", "EBADMSG" },
	{ "{}", "EINVAL" },
	{ "{\"op\":5}", "EINVAL" },
	{ "{\"op\":null}", "EINVAL" },
	{ "{\"op\":\"frobnicate\"}", "EOPNOTSUPP" },
	{ "{\"op\":\"VERSION\"}", "EOPNOTSUPP" },
	{ "{\"op\":\"version\",\"extra\":1}", "EINVAL" },
	{ "{\"op\":\"version\",\"tag\":\"x\"}", "EINVAL" },
	{ "{\"op\":\"version\",\"tag\":1.5}", "EINVAL" },
	{ "{\"op\":\"version\",\"tag\":18446744073709551615}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":\"12\",\"to_node\":0}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":-1,\"to_node\":0}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":0,\"to_node\":0}", "EINVAL" },
	/* Beyond 64 bits: json-c would saturate it. */
	{ "{\"op\":\"move\",\"pid\":99999999999999999999999,\"to_node\":0}", "EBADMSG" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":1024}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":-1}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":true}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d}", "EINVAL" },
	{ "{\"op\":\"move\",\"to_node\":0}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"domain\":\"vm\",\"to_node\":0}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"color\":\"red\"}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":0}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"threads\":257}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"strategy\":\"fast\"}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"strategy\":\"copy\"}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"ranges\":[]}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"ranges\":{}}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"ranges\":[{\"addr\":\"0x1001\",\"len\":4096}]}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"ranges\":[{\"addr\":4096,\"len\":0}]}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"ranges\":[{\"addr\":-4096,\"len\":4096}]}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"ranges\":[{\"addr\":\"0xzz\",\"len\":4096}]}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"ranges\":[{\"addr\":\"0x10000000000000000\",\"len\":4096}]}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"ranges\":[{\"addr\":\"0xfffffffffffff000\",\"len\":8192}]}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"ranges\":[{\"addr\":4096,\"len\":4096,\"x\":1}]}", "EINVAL" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":0,\"ranges\":[{\"addr\":\"0x1000\",\"len\":4096}]}", "EFAULT" },
	{ "{\"op\":\"move\",\"pid\":%d,\"to_node\":1000}", "ENOENT" },
	{ "{\"op\":\"move\",\"pid\":%g,\"to_node\":0}", "ESRCH" },
	{ "{\"op\":\"move\",\"domain\":\"no-such-vm\",\"to_node\":0}", "ENOENT" },
	{ "{\"op\":\"move\",\"domain\":\"\",\"to_node\":0}", "EINVAL" },
	{ "{\"op\":\"move\",\"domain\":\"a\\nb\",\"to_node\":0}", "EINVAL" },
	{ "{\"op\":\"job\"}", "EINVAL" },
	{ "{\"op\":\"job\",\"job\":0}", "EINVAL" },
	{ "{\"op\":\"job\",\"job\":1.5}", "EINVAL" },
	{ "{\"op\":\"job\",\"job\":\"1\"}", "EINVAL" },
	{ "{\"op\":\"job\",\"job\":123456}", "ESRCH" },
	{ "{\"op\":\"cancel\",\"job\":123456}", "ESRCH" },
	{ "{\"op\":\"jobs\",\"job\":1}", "EINVAL" },
	{ "{\"op\":\"unregister\",\"name\":\"no-such-vm\"}", "ENOENT" },
	{ "{\"op\":\"register\",\"name\":\"vm\"}", "EINVAL" },
	{ "{\"op\":\"register\",\"name\":\"vm\",\"pid\":1,\"nodeset\":\"0;rm\"}", "EINVAL" },
	{ "{\"op\":\"nodes\"}", "OK" },
	{ "{\"op\":\"domains\"}", "OK" },
};

static void expand(const char *fmt, int live, int gone, char *out, size_t len)
{
	const char *p = strchr(fmt, '%');

	if (!p || (p[1] != 'd' && p[1] != 'g')) {
		snprintf(out, len, "%s", fmt);
		return;
	}
	snprintf(out, len, "%.*s%d%s", (int)(p - fmt), fmt, p[1] == 'd' ? live : gone, p + 2);
}

static int gone_pid(void)
{
	pid_t p = fork();

	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	return p;
}

/* Every case on one connection, each with a tag that must come back. */
static void bad_requests(struct tc_daemon *d)
{
	struct tc_conn *c = tc_connect(d->sock);
	int gone = gone_pid();
	char line[1024];

	CHECK(c, "connect");
	if (!c)
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *r;

		expand(cases[i].line, getpid(), gone, line, sizeof(line));
		r = tc_call(c, "%s", line);
		CHECK(!strcmp(tc_error(r), cases[i].error), "'%s': %s, not %s (%s)", line,
		      tc_error(r), cases[i].error, tc_str(r, "message"));
		CHECK(!r || json_object_get_boolean(tc_get(r, "ok")) || tc_int(r, "errno") > 0,
		      "'%s': no errno", line);
		json_object_put(r);
	}
	/* The tag comes back on errors too. */
	{
		struct json_object *r = tc_call(c, "{\"op\":\"nope\",\"tag\":-42}");

		CHECK(tc_int(r, "tag") == -42, "tag on an error: %lld", (long long)tc_int(r, "tag"));
		json_object_put(r);
	}
	tc_close(c);
}

/* Binary garbage and NUL bytes are a bad line, not the end of the world. */
static void binary(struct tc_daemon *d)
{
	static const char nul[] = "{\"op\":\"version\"}\0\0\0\n";
	struct tc_conn *c = tc_connect(d->sock);
	char junk[4096];
	struct json_object *r;

	srand(7);
	for (size_t i = 0; i < sizeof(junk); i++) {
		junk[i] = (char)(rand() & 0xff);
		if (junk[i] == '\n')
			junk[i] = 0;
	}
	junk[sizeof(junk) - 1] = '\n';
	CHECK(!tc_write(c, junk, sizeof(junk)), "write garbage");
	r = tc_read(c, 5000);
	CHECK(!strcmp(tc_error(r), "EBADMSG"), "garbage: %s", tc_error(r));
	json_object_put(r);
	CHECK(!tc_write(c, nul, sizeof(nul) - 1), "write NULs");
	r = tc_read(c, 5000);
	CHECK(!strcmp(tc_error(r), "EBADMSG"), "NUL bytes: %s", tc_error(r));
	json_object_put(r);
	r = tc_call(c, "{\"op\":\"version\"}");
	CHECK(!strcmp(tc_error(r), "OK"), "version after garbage: %s", tc_error(r));
	json_object_put(r);
	tc_close(c);
}

/* A line of 64 KiB - 1 bytes plus its newline is the largest there is. */
static void sizes(struct tc_daemon *d)
{
	static char big[PROTO_MAX_LINE + 16];
	struct tc_conn *c = tc_connect(d->sock);
	struct json_object *r;
	size_t n;

	n = (size_t)snprintf(big, sizeof(big), "{\"op\":\"version\",\"tag\":9}");
	memset(big + n, ' ', PROTO_MAX_LINE - 1 - n);
	big[PROTO_MAX_LINE - 1] = '\n';
	CHECK(!tc_write(c, big, PROTO_MAX_LINE), "write max line");
	r = tc_read(c, 5000);
	CHECK(!strcmp(tc_error(r), "OK") && tc_int(r, "tag") == 9, "largest line: %s", tc_error(r));
	json_object_put(r);
	/* One byte more: EMSGSIZE, then the daemon closes. */
	memset(big + n, ' ', PROTO_MAX_LINE - n);
	big[PROTO_MAX_LINE] = '\n';
	CHECK(!tc_write(c, big, PROTO_MAX_LINE + 1), "write oversize line");
	r = tc_read(c, 5000);
	CHECK(!strcmp(tc_error(r), "EMSGSIZE"), "oversize: %s", tc_error(r));
	json_object_put(r);
	CHECK(tc_closed(c, 5000), "closed after EMSGSIZE");
	tc_close(c);
	/* A megabyte without a newline: the same, and no more memory. */
	c = tc_connect(d->sock);
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 2 && c; i++)
		tc_write(c, big, sizeof(big));	/* may fail once it closed */
	r = tc_read(c, 5000);
	CHECK(!strcmp(tc_error(r), "EMSGSIZE"), "endless line: %s", tc_error(r));
	json_object_put(r);
	tc_close(c);
}

static void half_line(struct tc_daemon *d)
{
	for (int i = 0; i < 10; i++) {
		struct tc_conn *c = tc_connect(d->sock);

		CHECK(c && !tc_write(c, "{\"op\":\"vers", 11), "half a line");
		tc_close(c);
	}
	/* A whole request, then gone before the answer. */
	for (int i = 0; i < 10; i++) {
		struct tc_conn *c = tc_connect(d->sock);

		CHECK(c && !tc_write(c, "{\"op\":\"nodes\"}\n", 15), "request then leave");
		tc_close(c);
	}
}

static void many(struct tc_daemon *d)
{
	enum { N = 300, MAX = 256 };
	static struct tc_conn *c[N];
	unsigned int served = 0, refused = 0;

	for (int i = 0; i < N; i++) {
		c[i] = tc_connect(d->sock);
		CHECK(c[i], "connection %d", i);
		/* Each one accepted before the next, so that the count is exact. */
		if (c[i] && i < MAX) {
			struct json_object *r = tc_call(c[i], "{\"op\":\"version\"}");

			served += !strcmp(tc_error(r), "OK");
			json_object_put(r);
		}
	}
	for (int i = MAX; i < N; i++) {
		struct json_object *r = c[i] ? tc_read(c[i], 5000) : NULL;

		refused += !strcmp(tc_error(r), "EBUSY") && tc_closed(c[i], 5000);
		json_object_put(r);
	}
	CHECK(served == MAX, "%u of %d clients served", served, MAX);
	CHECK(refused == N - MAX, "%u of %d extra clients told EBUSY", refused, N - MAX);
	for (int i = 0; i < N; i++)
		tc_close(c[i]);
}

static void pipelined(struct tc_daemon *d)
{
	struct tc_conn *c = tc_connect(d->sock);
	char *buf = malloc(100 * 64), *p = buf;
	int in_order = 0;

	for (int i = 0; i < 100; i++)
		p += sprintf(p, i % 2 ? "{\"op\":\"version\",\"tag\":%d}\n" :
			     "{\"op\":\"jobs\",\"tag\":%d}\n", i);
	CHECK(!tc_write(c, buf, (size_t)(p - buf)), "write 100 requests");
	for (int i = 0; i < 100; i++) {
		struct json_object *r = tc_read(c, 5000);

		in_order += !strcmp(tc_error(r), "OK") && tc_int(r, "tag") == i &&
			    tc_get(r, i % 2 ? "version" : "jobs");
		json_object_put(r);
	}
	CHECK(in_order == 100, "%d of 100 pipelined replies right and in order", in_order);
	free(buf);
	tc_close(c);
}

static void still_answers(struct tc_daemon *d, const char *after)
{
	struct tc_conn *c = tc_connect(d->sock);
	struct json_object *r = c ? tc_call(c, "{\"op\":\"version\",\"tag\":1}") : NULL;

	CHECK(!strcmp(tc_error(r), "OK") && !strcmp(tc_str(r, "version"), PACKAGE_VERSION),
	      "version after %s: %s", after, tc_error(r));
	json_object_put(r);
	tc_close(c);
}

int main(void)
{
	struct tc_daemon d;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (tc_daemon_start(&d, NULL))
		return 1;
	bad_requests(&d);
	still_answers(&d, "bad requests");
	binary(&d);
	still_answers(&d, "binary garbage");
	sizes(&d);
	still_answers(&d, "oversize lines");
	half_line(&d);
	still_answers(&d, "half lines");
	many(&d);
	still_answers(&d, "300 connections");
	pipelined(&d);
	still_answers(&d, "pipelining");
	rc = tc_daemon_stop(&d);
	CHECK(rc == 0, "memmigd exit status %d", rc);
	return tc_summary();
}
