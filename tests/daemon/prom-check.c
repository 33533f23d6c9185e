/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A strict reader of Prometheus' text exposition format 0.0.4, for the
 * tests (promtool is not always installed): every line is a HELP, a TYPE
 * or a sample; a family is declared once, before its samples; names and
 * label names are well formed, label values escaped; values are floats;
 * a histogram's buckets grow with le, and its +Inf bucket is its count.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom-check.h"

#define MAX_FAMILIES 128

struct family {
	char name[128];
	char type[16];
	bool help, typed, sampled;
	double last_le, last_bucket, inf_bucket;
	bool has_inf;
};

__attribute__((format(printf, 3, 4)))
static bool bad(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return false;
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* (colons: metric names only). */
static size_t name_len(const char *s, bool colon)
{
	size_t n = 0;

	if (!(isalpha((unsigned char)s[0]) || s[0] == '_' || (colon && s[0] == ':')))
		return 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '_' || (colon && s[n] == ':'))
		n++;
	return n;
}

static bool parse_value(const char *s, double *v)
{
	char *end;

	if (!strcmp(s, "+Inf") || !strcmp(s, "-Inf") || !strcmp(s, "NaN")) {
		*v = !strcmp(s, "NaN") ? NAN : s[0] == '+' ? INFINITY : -INFINITY;
		return true;
	}
	*v = strtod(s, &end);
	return end != s && *end == '\0' && !isspace((unsigned char)s[0]);
}

static struct family *find(struct family *f, unsigned int n, const char *name, size_t len)
{
	for (unsigned int i = 0; i < n; i++)
		if (strlen(f[i].name) == len && !strncmp(f[i].name, name, len))
			return &f[i];
	return NULL;
}

/* "# HELP name text" or "# TYPE name type". */
static bool comment(char *line, struct family *fams, unsigned int *nfams, char *why, size_t wl)
{
	static const char *const types[] = { "counter", "gauge", "histogram", "summary", "untyped" };
	bool help = !strncmp(line, "# HELP ", 7), type = !strncmp(line, "# TYPE ", 7);
	char *name = line + 7, *rest;
	size_t n = name_len(name, true);
	struct family *f;

	if (!help && !type)
		return bad(why, wl, "a comment that is neither HELP nor TYPE: %s", line);
	if (!n || name[n] != ' ' || n >= sizeof(fams->name))
		return bad(why, wl, "a bad metric name: %s", line);
	rest = name + n + 1;
	f = find(fams, *nfams, name, n);
	if (!f) {
		if (*nfams == MAX_FAMILIES)
			return bad(why, wl, "more than %d families", MAX_FAMILIES);
		f = &fams[(*nfams)++];
		memset(f, 0, sizeof(*f));
		memcpy(f->name, name, n);
		f->last_le = -INFINITY;
	}
	if (f->sampled)
		return bad(why, wl, "%s declared after its samples", f->name);
	if ((help && f->help) || (type && f->typed))
		return bad(why, wl, "%s declared twice", f->name);
	if (help) {
		f->help = true;
		return true;
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(rest, types[i])) {
			snprintf(f->type, sizeof(f->type), "%s", rest);
			f->typed = true;
			return true;
		}
	return bad(why, wl, "unknown type: %s", line);
}

/* {name="value",...}: *le gets the le label's value when there is one. */
static char *labels(char *s, char *why, size_t wl, double *le, bool *has_le)
{
	*has_le = false;
	if (*s != '{')
		return s;
	s++;
	while (*s != '}') {
		size_t n = name_len(s, false);
		char val[256];
		size_t vl = 0;
		bool is_le = n == 2 && !strncmp(s, "le", 2);

		if (!n || s[n] != '=' || s[n + 1] != '"') {
			bad(why, wl, "a bad label at '%s'", s);
			return NULL;
		}
		for (s += n + 2; *s != '"'; s++) {
			if (!*s || *s == '\n') {
				bad(why, wl, "an unterminated label value");
				return NULL;
			}
			if (*s == '\\' && !strchr("\\\"n", *++s)) {
				bad(why, wl, "a bad escape in a label value");
				return NULL;
			}
			if (vl < sizeof(val) - 1)
				val[vl++] = *s;
		}
		val[vl] = '\0';
		if (is_le) {
			*has_le = parse_value(val, le);
			if (!*has_le) {
				bad(why, wl, "le=\"%s\" is not a number", val);
				return NULL;
			}
		}
		s++;
		if (*s == ',')
			s++;
		else if (*s != '}') {
			bad(why, wl, "a label list goes on with '%c'", *s);
			return NULL;
		}
	}
	return s + 1;
}

/* The family of a sample name: itself, or a histogram's with its suffix. */
static struct family *family_of(struct family *fams, unsigned int n, const char *name,
				size_t len, const char **suffix)
{
	static const char *const sfx[] = { "_bucket", "_sum", "_count" };
	struct family *f = find(fams, n, name, len);

	*suffix = "";
	for (size_t i = 0; !f && i < 3; i++) {
		size_t sl = strlen(sfx[i]);

		if (len > sl && !strncmp(name + len - sl, sfx[i], sl)) {
			f = find(fams, n, name, len - sl);
			*suffix = sfx[i];
			if (f && strcmp(f->type, "histogram") && strcmp(f->type, "summary"))
				f = NULL;
		}
	}
	return f;
}

static bool sample_line(char *line, struct family *fams, unsigned int nfams, char *why,
			size_t wl)
{
	size_t n = name_len(line, true);
	const char *suffix;
	struct family *f = n ? family_of(fams, nfams, line, n, &suffix) : NULL;
	double v, le = 0;
	bool has_le;
	char *s;

	if (!f || !f->typed)
		return bad(why, wl, "a sample of no declared family: %s", line);
	f->sampled = true;
	s = labels(line + n, why, wl, &le, &has_le);
	if (!s)
		return false;
	if (*s != ' ' || !parse_value(s + 1, &v))
		return bad(why, wl, "a bad value: %s", line);
	if (!strcmp(f->type, "counter") && (v < 0 || isnan(v)))
		return bad(why, wl, "a counter below 0: %s", line);
	if (!strcmp(suffix, "_bucket")) {
		if (!has_le || le <= f->last_le || v < f->last_bucket)
			return bad(why, wl, "buckets out of order: %s", line);
		f->last_le = le;
		f->last_bucket = v;
		if (isinf(le)) {
			f->has_inf = true;
			f->inf_bucket = v;
		}
	}
	if (!strcmp(suffix, "_count") && !strcmp(f->type, "histogram") &&
	    (!f->has_inf || f->inf_bucket != v))
		return bad(why, wl, "%s_count is not its +Inf bucket", f->name);
	return true;
}

bool prom_check(const char *text, char *why, size_t wl)
{
	struct family *fams = calloc(MAX_FAMILIES, sizeof(*fams));
	unsigned int nfams = 0;
	char *copy = strdup(text), *line, *save = NULL;
	size_t len = strlen(text);
	bool ok = fams && copy;

	if (!len || text[len - 1] != '\n')
		ok = bad(why, wl, "the text does not end with a newline");
	for (line = strtok_r(copy, "\n", &save); ok && line; line = strtok_r(NULL, "\n", &save)) {
		ok = line[0] == '#' ? comment(line, fams, &nfams, why, wl) :
		     sample_line(line, fams, nfams, why, wl);
	}
	for (unsigned int i = 0; ok && i < nfams; i++)
		if (!fams[i].typed || !fams[i].help)
			ok = bad(why, wl, "%s has no %s", fams[i].name, fams[i].typed ? "HELP" : "TYPE");
	if (ok && strstr(text, "\n\n"))
		ok = bad(why, wl, "an empty line");
	free(copy);
	free(fams);
	return ok;
}

double prom_value(const char *text, const char *sample)
{
	size_t n = strlen(sample);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, sample, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}
