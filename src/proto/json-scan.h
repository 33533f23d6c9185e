/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What json-c lets through and memmigd's protocol must not: bytes that are
 * not strict UTF-8, \u0000 and lone surrogates in strings, integers beyond
 * 64 bits (json-c saturates them), a member named twice (json-c keeps the
 * last).  A scan of the raw line, before json-c parses it.
 */
#ifndef MEMMIG_PROTO_JSON_SCAN_H
#define MEMMIG_PROTO_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above
 * U+10FFFF); *bad (if not NULL) gets the offset of the first bad byte. */
bool utf8_valid(const char *s, size_t len, size_t *bad);
/* Makes a NUL-terminated string valid UTF-8 in place: a sequence cut at
 * the end is dropped, any other bad byte becomes '?'. */
void utf8_sanitize(char *s);
/* Copies at most max bytes of src to dst (size bytes), never half a
 * character. */
void utf8_prefix(char *dst, size_t size, const char *src, size_t max);
/*
 * Scans a JSON text: 0 and *keys (the members of all its objects), or
 * -EBADMSG with a message in err naming the offset.  It does not check
 * the grammar: json-c does, after.
 */
int json_scan(const char *s, size_t len, size_t *keys, char *err, size_t errlen);
/* The members of all objects in a parsed value. */
size_t json_count_keys(struct json_object *o);

#endif
