/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pictures of what a benchmark measured: panels of named series, drawn by
 * gnuplot (a child process) as SVG or PNG, or written as a data file to
 * plot by hand.  Builder calls record the first error; plot_emit()
 * returns it, so callers need not check each point.
 */
#ifndef MEMMIG_BENCH_PLOT_H
#define MEMMIG_BENCH_PLOT_H

#include <stdbool.h>
#include <stddef.h>

struct plot;

/* Where the picture and the data go (--plot FILE, --plot-data FILE). */
struct plot_out {
	const char *file;	/* .svg or .png; NULL: none */
	const char *data;	/* gnuplot-readable columns; NULL: none */
};

/* getopt_long entries and values for --plot and --plot-data. */
enum { PLOT_OPT_FILE = 0x1000, PLOT_OPT_DATA };
#define PLOT_LONG_OPTIONS \
	{ "plot", required_argument, NULL, PLOT_OPT_FILE }, \
	{ "plot-data", required_argument, NULL, PLOT_OPT_DATA }
#define PLOT_USAGE \
	"  --plot FILE      draw the results with gnuplot (FILE: .svg or .png)\n" \
	"  --plot-data FILE write the plotted numbers (gnuplot columns, one block\n" \
	"                   per series)\n"

/* Takes getopt's PLOT_OPT_* value c and its argument. */
void plot_opt(struct plot_out *o, int c, const char *arg);
static inline bool plot_wanted(const struct plot_out *o)
{
	return o->file || o->data;
}
/*
 * Before measuring: FILE's extension, its directory, gnuplot on the PATH.
 * CLI_EXIT_OK, CLI_EXIT_USAGE (a bad name) or CLI_EXIT_FAIL (no gnuplot),
 * the reason printed (prefixed with who).
 */
int plot_check(const struct plot_out *o, const char *who);

/* Panel flags. */
#define PLOT_LOGX	(1u << 0)
#define PLOT_LOGY	(1u << 1)
#define PLOT_SIZES	(1u << 2)	/* x is bytes: tics as "4 KiB" */
#define PLOT_STACKED	(1u << 3)	/* series stack as bars at each x */
#define PLOT_INTEGER_X	(1u << 4)	/* x tics at whole numbers only */

/* Series styles. */
enum plot_style {
	PLOT_THIN,		/* one of many: thin, small points */
	PLOT_MAIN,		/* what the picture is about: thick */
	PLOT_PEER,		/* the comparison: thick, dashed */
};

/* title: "memmig bench copy" or the like; the host CPU and the date are
 * added.  NULL only when out of memory (plot_emit() then says so). */
struct plot *plot_new(const char *title);
void plot_free(struct plot *p);
/* Starts a panel below the last: its title, axis labels (with units). */
void plot_panel(struct plot *p, const char *title, const char *xlabel,
		const char *ylabel, unsigned int flags);
/* Starts a series in the current panel. */
void plot_series(struct plot *p, const char *name, enum plot_style style);
void plot_point(struct plot *p, double x, double y);
/* A dashed horizontal line across the current panel, in the legend. */
void plot_hline(struct plot *p, double y, const char *name);
/* Names tic x of the current panel (a category: "#1 to node 0"). */
void plot_xtic(struct plot *p, double x, const char *label);
/*
 * Writes the data file and/or draws the picture (into a private temporary
 * directory, then renamed into place: no partial FILE).  0, or -errno
 * with the reason printed.
 */
int plot_emit(struct plot *p, const struct plot_out *o, const char *who);

#endif
