/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The raw-line checks of memmigd's protocol: see json-scan.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto/json-scan.h"

/* The length of the valid UTF-8 sequence at s (of n bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t c;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;	/* a continuation byte, C0/C1 (overlong), F5.. */
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* Overlong, surrogate, beyond Unicode. */
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	return len;
}

bool utf8_valid(const char *s, size_t len, size_t *bad)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(p + i, len - i);

		if (!n) {
			if (bad)
				*bad = i;
			return false;
		}
		i += n;
	}
	return true;
}

/* The n bytes at p are the start of a longer sequence: a character cut. */
static bool cut_at_end(const unsigned char *p, size_t n)
{
	size_t want = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;

	if (p[0] < 0xc2 || p[0] > 0xf4 || n >= want)
		return false;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return false;
	return true;
}

void utf8_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t len = strlen(s);

	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(p + i, len - i);

		if (n) {
			i += n;
		} else if (cut_at_end(p + i, len - i)) {
			p[i] = '\0';
			return;
		} else {
			p[i++] = '?';
		}
	}
}

void utf8_prefix(char *dst, size_t size, const char *src, size_t max)
{
	size_t n = strnlen(src, max < size ? max : size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
	utf8_sanitize(dst);
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The code unit of a \uXXXX escape at s[0] == '\\', or -1. */
static long escape_u(const char *s, size_t n)
{
	long v = 0;

	if (n < 6 || s[1] != 'u')
		return -1;
	for (int i = 2; i < 6; i++) {
		int d = hexval((unsigned char)s[i]);

		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	return v;
}

/* An integer literal at s: within [INT64_MIN, UINT64_MAX]?  Fractions and
 * exponents are doubles, which the parser refuses where it wants integers. */
static bool int_fits(const char *s, size_t n, size_t *used)
{
	static const char max_pos[] = "18446744073709551615", max_neg[] = "9223372036854775808";
	bool neg = s[0] == '-';
	size_t i = neg, d;
	const char *lim = neg ? max_neg : max_pos;

	while (i < n && s[i] == '0')
		i++;
	d = i;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	*used = i;
	if (i < n && (s[i] == '.' || s[i] == 'e' || s[i] == 'E'))
		return true;
	d = i - d;
	return d < strlen(lim) || (d == strlen(lim) && memcmp(s + i - d, lim, d) <= 0);
}

__attribute__((format(printf, 4, 5)))
static int scan_fail(char *err, size_t errlen, size_t at, const char *fmt, ...);

int json_scan(const char *s, size_t len, size_t *keys, char *err, size_t errlen)
{
	size_t bad, nkeys = 0;
	bool in_str = false;

	if (!utf8_valid(s, len, &bad))
		return scan_fail(err, errlen, bad, "not valid UTF-8");
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_str) {
			long u, lo;

			if (c == '"') {
				size_t j = i + 1;

				in_str = false;
				while (j < len && strchr(" \t\r\n", s[j]))
					j++;
				nkeys += j < len && s[j] == ':';
			} else if (c == '\\' && (u = escape_u(s + i, len - i)) >= 0) {
				if (u == 0)
					return scan_fail(err, errlen, i, "\\u0000 in a string");
				if (u >= 0xdc00 && u <= 0xdfff)
					return scan_fail(err, errlen, i, "a lone low surrogate");
				if (u >= 0xd800 && u <= 0xdbff) {
					lo = i + 12 <= len && s[i + 6] == '\\' ?
					     escape_u(s + i + 6, len - i - 6) : -1;
					if (lo < 0xdc00 || lo > 0xdfff)
						return scan_fail(err, errlen, i, "a lone high surrogate");
					i += 6;
				}
				i += 5;
			} else if (c == '\\') {
				i++;	/* \" \\ and the like: json-c judges them */
			}
		} else if (c == '"') {
			in_str = true;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			size_t used;

			if (!int_fits(s + i, len - i, &used))
				return scan_fail(err, errlen, i, "an integer beyond 64 bits");
			i += used ? used - 1 : 0;
		}
	}
	*keys = nkeys;
	return 0;
}

static int scan_fail(char *err, size_t errlen, size_t at, const char *fmt, ...)
{
	char what[96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (errlen)
		snprintf(err, errlen, "%s at offset %zu", what, at);
	return -EBADMSG;
}

size_t json_count_keys(struct json_object *o)
{
	size_t n = 0;

	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, key, v) {
			(void)key;
			n += 1 + json_count_keys(v);
		}
	} else if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			n += json_count_keys(json_object_array_get_idx(o, i));
	}
	return n;
}
