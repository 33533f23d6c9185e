// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for memmigd's request parser: any bytes either parse or
 * fail with one of the documented errors and a message; what parses comes
 * back the same through proto_request_to_json() and the parser again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
		return 0;
	}
	o = proto_request_to_json(&a);
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (proto_request_parse(s, strlen(s), &b, err, sizeof(err)) || memcmp(&a, &b, sizeof(a)))
		abort();
	json_object_put(o);
	return 0;
}
