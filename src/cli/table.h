/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memmig-cli's tables: each column as wide as its widest cell (its head
 * included), up to the column's max, where a longer cell is cut and ends
 * in "..."; the last column is not padded.
 */
#ifndef MEMMIG_CLI_TABLE_H
#define MEMMIG_CLI_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cli_col {
	const char *head;
	int max;		/* the widest a cell shows; 0: no limit */
	bool right;		/* right-aligned (numbers) */
};

struct cli_table;

/* A table of ncols columns (cols is kept, not copied); NULL without memory. */
struct cli_table *cli_table_new(const struct cli_col *cols, size_t ncols);
/* The next cell, row after row; a failed allocation shows as "?". */
void cli_table_cell(struct cli_table *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints the head and the rows on f, and frees the table. */
void cli_table_print(struct cli_table *t, FILE *f);

#endif
