/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Members of a JSON reply or report, with a default when missing. */
#include "front/front.h"

int64_t cli_json_int(struct json_object *o, const char *key, int64_t def)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_int) ||
	      json_object_is_type(v, json_type_double)))
		return def;
	return json_object_get_int64(v);
}

double cli_json_double(struct json_object *o, const char *key, double def)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_int) ||
	      json_object_is_type(v, json_type_double)))
		return def;
	return json_object_get_double(v);
}

const char *cli_json_str(struct json_object *o, const char *key, const char *def)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return def;
	return json_object_get_string(v);
}
