/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memmig-cli's tables (table.h): the rows are kept until printed, so that
 * a column is sized by all of its cells. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/table.h"

#define CUT "..."

struct cli_table {
	const struct cli_col *cols;
	size_t ncols;
	char **cells;
	size_t n, cap;
	bool short_of_memory;	/* a cell was lost: the rows would shift */
};

struct cli_table *cli_table_new(const struct cli_col *cols, size_t ncols)
{
	struct cli_table *t = calloc(1, sizeof(*t));

	if (t) {
		t->cols = cols;
		t->ncols = ncols;
	}
	return t;
}

void cli_table_cell(struct cli_table *t, const char *fmt, ...)
{
	char *s = NULL, **cells;
	va_list ap;

	if (!t)
		return;
	if (t->n == t->cap) {
		cells = realloc(t->cells, (t->cap ? 2 * t->cap : 64) * sizeof(*cells));
		if (!cells) {
			t->short_of_memory = true;
			return;
		}
		t->cells = cells;
		t->cap = t->cap ? 2 * t->cap : 64;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	t->cells[t->n++] = s;
}

/* Columns on a terminal: UTF-8 characters, not bytes. */
static int width(const char *s)
{
	int w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

/* The bytes of s that fill w columns. */
static size_t bytes_for(const char *s, int w)
{
	size_t i = 0;

	for (; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && w-- == 0)
			break;
	return i;
}

static void put(FILE *f, const char *s, const struct cli_col *c, int colw, bool last)
{
	int w = width(s), cut = c->max && w > c->max;
	int shown = cut ? c->max : w, pad = last && !c->right ? 0 : colw - shown;

	if (c->right && pad > 0)
		fprintf(f, "%*s", pad, "");
	if (cut)
		fprintf(f, "%.*s%s", (int)bytes_for(s, c->max - (int)strlen(CUT)), s, CUT);
	else
		fputs(s, f);
	if (!c->right && pad > 0)
		fprintf(f, "%*s", pad, "");
	fputs(last ? "\n" : "  ", f);
}

void cli_table_print(struct cli_table *t, FILE *f)
{
	int colw[t ? t->ncols : 1];

	if (!t)
		return;
	if (t->short_of_memory) {
		fputs("(out of memory for the table)\n", f);
		t->n = 0;
	}
	for (size_t c = 0; c < t->ncols; c++) {
		colw[c] = width(t->cols[c].head);
		for (size_t i = c; i < t->n; i += t->ncols) {
			int w = t->cells[i] ? width(t->cells[i]) : 1;

			if (t->cols[c].max && w > t->cols[c].max)
				w = t->cols[c].max;
			if (w > colw[c])
				colw[c] = w;
		}
	}
	for (size_t c = 0; c < t->ncols; c++)
		put(f, t->cols[c].head, &t->cols[c], colw[c], c + 1 == t->ncols);
	for (size_t i = 0; i < t->n; i++) {
		size_t c = i % t->ncols;

		put(f, t->cells[i] ? t->cells[i] : "?", &t->cols[c], colw[c], c + 1 == t->ncols);
	}
	/* A row left short still ends its line. */
	if (t->n % t->ncols)
		fputc('\n', f);
	for (size_t i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}
