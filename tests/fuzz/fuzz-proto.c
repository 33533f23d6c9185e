/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for memmigd's request parser: any bytes either parse or
 * fail with one of the documented errors and a message; what parses comes
 * back the same through proto_request_to_json() and the parser again; and
 * every reply memmigd would send -- the error with its message, or the
 * request echoed -- is one line of strict UTF-8 JSON (the oracle).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/json-scan.h"
#include "proto/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The oracle: one line, strict UTF-8, JSON that parses back. */
static void reply_ok(struct json_object *reply)
{
	struct json_object *back;
	size_t len, keys;
	char *line = proto_reply_line(reply, &len);

	if (!line || len < 2 || line[len - 1] != '\n' || memchr(line, '\n', len - 1) ||
	    !utf8_valid(line, len, NULL) || json_scan(line, len - 1, &keys, NULL, 0))
		abort();
	back = json_tokener_parse(line);
	if (!back)
		abort();
	json_object_put(back);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct proto_request a, b;
	struct json_object *o;
	const char *s;
	char err[256];
	int rc = proto_request_parse((const char *)data, size, &a, err, sizeof(err));

	if (rc) {
		if (rc != -EMSGSIZE && rc != -EBADMSG && rc != -EOPNOTSUPP && rc != -EINVAL)
			abort();
		if (!err[0])
			abort();	/* every refusal says why */
		o = proto_reply_error(NULL, rc, "%s", err);
		reply_ok(o);
		json_object_put(o);
		return 0;
	}
	o = proto_request_to_json(&a);
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (proto_request_parse(s, strlen(s), &b, err, sizeof(err)) || memcmp(&a, &b, sizeof(a)))
		abort();
	reply_ok(o);
	json_object_put(o);
	return 0;
}
