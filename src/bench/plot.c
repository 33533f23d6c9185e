/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Benchmark pictures through gnuplot.  The data goes to a file in a
 * private temporary directory, the script down a pipe to a gnuplot child
 * that runs in that directory, so no user-given name ever reaches the
 * script; the picture is then copied next to FILE and renamed over it.
 */
#include "config.h"	/* _GNU_SOURCE */

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/plot.h"
#include "util/size.h"

#define GNUPLOT "gnuplot"
#define GNUPLOT_PACKAGE "gnuplot-nox"
#define GNUPLOT_TIMEOUT_MS 60000
#define MAX_PANELS 4
#define MAX_SERIES 24
#define MAX_TICS 32
#define NAME_MAX_LEN 96
#define SERIES_NAME_MAX 256	/* demo's legend holds tier paths */
#define SCRIPT_MAX (64 << 10)
#define WIDTH 1100
#define PANEL_HEIGHT 430
#define TITLE_HEIGHT 50
#define SIZE_TICS_MAX 12	/* power-of-two tics on a size axis */
#define KEY_MAX 24		/* legend characters the right margin holds */
#define HLINE_COLOUR "#9400d3"	/* a limit: apart from every series */

struct series {
	char name[SERIES_NAME_MAX];
	enum plot_style style;
	bool hline;		/* y[0] across the panel */
	double *x, *y;
	size_t n, cap;
	int index;		/* its block in the data file, -1: none */
};

struct tic {
	double x;
	char label[48];
};

struct panel {
	char title[NAME_MAX_LEN * 2], xlabel[NAME_MAX_LEN], ylabel[NAME_MAX_LEN];
	unsigned int flags;
	struct series s[MAX_SERIES];
	unsigned int ns;
	struct tic tics[MAX_TICS];
	unsigned int ntics;
};

struct plot {
	char title[320];
	struct panel p[MAX_PANELS];
	unsigned int np;
	int err;		/* the first builder error */
};

/* Distinct on white: the main lines dark, the peers warm (and dashed),
 * the many others from the rest. */
static const char *const main_colours[] = { "#000000", "#1f4fd6", "#6a3d9a" };
static const char *const peer_colours[] = { "#d62728", "#ff7f0e", "#8c564b" };
static const char *const thin_colours[] = {
	"#2ca02c", "#17becf", "#9467bd", "#e377c2", "#bcbd22", "#7f7f7f",
	"#1f77b4", "#98df8a", "#c5b0d5", "#ffbb78", "#9edae5", "#f7b6d2",
};
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

void plot_opt(struct plot_out *o, int c, const char *arg)
{
	if (c == PLOT_OPT_FILE)
		o->file = arg;
	else if (c == PLOT_OPT_DATA)
		o->data = arg;
}

/* ".svg" or ".png" (any case), else NULL. */
static const char *plot_format(const char *file)
{
	const char *dot = strrchr(file, '.');

	if (dot && strchr(dot, '/') == NULL) {
		if (!strcasecmp(dot, ".svg"))
			return "svg";
		if (!strcasecmp(dot, ".png"))
			return "png";
	}
	return NULL;
}

/* A file may be made at path: its directory is writable, it is no directory. */
static int check_path(const char *opt, const char *path, const char *who)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	struct stat st;

	if (!*path || (slash && !slash[1])) {
		cli_error("%s: %s '%s': a file name, not a directory\n", who, opt, path);
		return -EINVAL;
	}
	/* install() adds ".XXXXXX" for its temporary file. */
	if (strlen(path) + 8 > sizeof(dir)) {
		cli_error("%s: %s: the name is too long\n", who, opt);
		return -ENAMETOOLONG;
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash == path ? 1 : slash - path), path);
	if (access(dir, W_OK) < 0) {
		int err = errno;

		cli_error("%s: %s '%s': cannot write in %s: %s\n", who, opt, path, dir,
			  strerror(err));
		return -err;
	}
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		cli_error("%s: %s '%s' is a directory\n", who, opt, path);
		return -EISDIR;
	}
	return 0;
}

int plot_check(const struct plot_out *o, const char *who)
{
	if (o->file) {
		if (!plot_format(o->file)) {
			cli_error("%s: --plot '%s': the name must end in .svg or .png\n",
				  who, o->file);
			return CLI_EXIT_USAGE;
		}
		if (check_path("--plot", o->file, who) < 0)
			return CLI_EXIT_USAGE;
		if (!bench_on_path(GNUPLOT)) {
			cli_error("%s: --plot needs gnuplot, which is not on the PATH "
				  "(apt-get install " GNUPLOT_PACKAGE "); or write the numbers "
				  "with --plot-data FILE and plot them elsewhere\n", who);
			return CLI_EXIT_FAIL;
		}
	}
	if (o->data && check_path("--plot-data", o->data, who) < 0)
		return CLI_EXIT_USAGE;
	return CLI_EXIT_OK;
}

static void set_err(struct plot *p, int err)
{
	if (!p->err)
		p->err = err;
}

/* The host's CPU: /proc/cpuinfo's name (a guest's may be only the brand),
 * and CPUID's family and model as memmig-cli cpu shows them. */
static void cpu_name(char *buf, size_t len)
{
	struct memmig_cpu_info cpu = { .sz = sizeof(cpu) };
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[256], name[128] = "unknown CPU";

	while (f && fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && v) {
			v += 1 + strspn(v + 1, " \t");
			v[strcspn(v, "\n")] = 0;
			snprintf(name, sizeof(name), "%s", v);
			break;
		}
	}
	if (f)
		fclose(f);
	if (!memmig_cpu_detect(&cpu) && cpu.family)
		snprintf(buf, len, "%s (family %#x model %#x)", name, cpu.family, cpu.model);
	else
		snprintf(buf, len, "%s", name);
}

struct plot *plot_new(const char *title)
{
	struct plot *p = calloc(1, sizeof(*p));
	char cpu[192], date[32];
	time_t now = time(NULL);
	struct tm tm;

	if (!p)
		return NULL;
	cpu_name(cpu, sizeof(cpu));
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime_r(&now, &tm));
	snprintf(p->title, sizeof(p->title), "%s on %s, %s", title, cpu, date);
	return p;
}

void plot_free(struct plot *p)
{
	if (!p)
		return;
	for (unsigned int i = 0; i < p->np; i++)
		for (unsigned int j = 0; j < p->p[i].ns; j++) {
			free(p->p[i].s[j].x);
			free(p->p[i].s[j].y);
		}
	free(p);
}

static struct panel *cur_panel(struct plot *p)
{
	if (!p || !p->np) {
		if (p)
			set_err(p, -EINVAL);
		return NULL;
	}
	return &p->p[p->np - 1];
}

void plot_panel(struct plot *p, const char *title, const char *xlabel,
		const char *ylabel, unsigned int flags)
{
	struct panel *pn;

	if (!p)
		return;
	if (p->np == MAX_PANELS) {
		set_err(p, -E2BIG);
		return;
	}
	pn = &p->p[p->np++];
	snprintf(pn->title, sizeof(pn->title), "%s", title);
	snprintf(pn->xlabel, sizeof(pn->xlabel), "%s", xlabel);
	snprintf(pn->ylabel, sizeof(pn->ylabel), "%s", ylabel);
	pn->flags = flags;
}

static struct series *add_series(struct plot *p, const char *name, enum plot_style style)
{
	struct panel *pn = cur_panel(p);
	struct series *s;

	if (!pn)
		return NULL;
	if (pn->ns == MAX_SERIES) {
		set_err(p, -E2BIG);
		return NULL;
	}
	s = &pn->s[pn->ns++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->style = style;
	return s;
}

void plot_series(struct plot *p, const char *name, enum plot_style style)
{
	add_series(p, name, style);
}

static void series_add(struct plot *p, struct series *s, double x, double y)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		double *nx = realloc(s->x, cap * sizeof(*nx)), *ny;

		if (nx)
			s->x = nx;
		ny = nx ? realloc(s->y, cap * sizeof(*ny)) : NULL;
		if (!ny) {
			set_err(p, -ENOMEM);
			return;
		}
		s->y = ny;
		s->cap = cap;
	}
	s->x[s->n] = x;
	s->y[s->n++] = y;
}

void plot_point(struct plot *p, double x, double y)
{
	struct panel *pn = cur_panel(p);

	if (!pn)
		return;
	if (!pn->ns || pn->s[pn->ns - 1].hline) {
		set_err(p, -EINVAL);
		return;
	}
	series_add(p, &pn->s[pn->ns - 1], x, y);
}

void plot_hline(struct plot *p, double y, const char *name)
{
	struct series *s = add_series(p, name, PLOT_PEER);

	if (s) {
		s->hline = true;
		series_add(p, s, 0, y);
	}
}

void plot_xtic(struct plot *p, double x, const char *label)
{
	struct panel *pn = cur_panel(p);

	if (!pn)
		return;
	if (pn->ntics == MAX_TICS) {
		set_err(p, -E2BIG);
		return;
	}
	pn->tics[pn->ntics].x = x;
	snprintf(pn->tics[pn->ntics++].label, sizeof(pn->tics[0].label), "%s", label);
}

/* A point a panel can show: finite, and positive on a log axis. */
static bool shown(const struct panel *pn, double x, double y)
{
	return isfinite(x) && isfinite(y) && !((pn->flags & PLOT_LOGX) && x <= 0) &&
	       !((pn->flags & PLOT_LOGY) && y <= 0);
}

/* Where a stacked bar's part ends: its value on those of the series before. */
static double stack_top(const struct panel *pn, unsigned int si, size_t i)
{
	double x = pn->s[si].x[i], top = pn->s[si].y[i];

	for (unsigned int k = 0; k < si; k++)
		for (size_t j = 0; !pn->s[k].hline && j < pn->s[k].n; j++)
			if (pn->s[k].x[j] == x)
				top += pn->s[k].y[j];
	return top;
}

/* Text in a comment line: a newline in a name would end it. */
static void put_comment(FILE *f, const char *text)
{
	for (; *text; text++)
		fputc(*text == '\n' || *text == '\r' ? ' ' : *text, f);
}

/* Columns x, y and (stacked) the part's top; a block of each series, two
 * blank lines apart, as gnuplot's "index" counts them. */
static int write_data(struct plot *p, const char *path)
{
	FILE *f = fopen(path, "we");
	int index = 0, rc = 0;

	if (!f)
		return -errno;
	fprintf(f, "# %s\n# x y [stacked top]; one block per series, \"index\" "
		   "counts from 0\n", p->title);	/* the title: no user text */
	for (unsigned int i = 0; i < p->np; i++) {
		struct panel *pn = &p->p[i];

		for (unsigned int si = 0; si < pn->ns; si++) {
			struct series *s = &pn->s[si];
			size_t kept = 0;

			s->index = -1;
			for (size_t j = 0; j < s->n; j++)
				kept += shown(pn, s->x[j], s->y[j]);
			if (s->hline || !kept)
				continue;
			s->index = index++;
			fprintf(f, "# index %d, panel \"", s->index);
			put_comment(f, pn->title);
			fprintf(f, "\": ");
			put_comment(f, s->name);
			fprintf(f, "; x: %s, y: %s\n", pn->xlabel, pn->ylabel);
			for (size_t j = 0; j < s->n; j++) {
				if (!shown(pn, s->x[j], s->y[j]))
					continue;
				fprintf(f, "%.9g %.9g", s->x[j], s->y[j]);
				if (pn->flags & PLOT_STACKED)
					fprintf(f, " %.9g", stack_top(pn, si, j));
				fputc('\n', f);
			}
			fprintf(f, "\n\n");
		}
	}
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}

/* The script, bounded; text overflows are caught once at the end. */
struct script {
	char *buf;
	size_t len;
	bool over;
};

static void __attribute__((format(printf, 2, 3))) sc(struct script *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->over)
		return;
	va_start(ap, fmt);
	n = vsnprintf(s->buf + s->len, SCRIPT_MAX - s->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= SCRIPT_MAX - s->len)
		s->over = true;
	else
		s->len += (size_t)n;
}

/*
 * A gnuplot single-quoted string: gnuplot runs `commands` even inside
 * double quotes, never inside single ones, where only a quote is special
 * (doubled).  Newlines out; the terminals are noenhanced, so no other
 * character means anything.
 */
static void sc_str(struct script *s, const char *text)
{
	sc(s, "'");
	for (; *text; text++) {
		if (*text == '\'')
			sc(s, "''");
		else
			sc(s, "%c", *text == '\n' || *text == '\r' ? ' ' : *text);
	}
	sc(s, "'");
}

/* A legend entry: one that would not fit the right margin keeps its start
 * and its end (where names such as paths differ), "..." between. */
static void sc_key(struct script *s, const char *name)
{
	size_t len = strlen(name), head = KEY_MAX / 3;
	char buf[KEY_MAX + 1];

	if (len <= KEY_MAX) {
		sc_str(s, name);
		return;
	}
	snprintf(buf, sizeof(buf), "%.*s...%s", (int)head, name,
		 name + len - (KEY_MAX - 3 - head));
	sc_str(s, buf);
}

static void panel_range(const struct panel *pn, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (unsigned int si = 0; si < pn->ns; si++)
		for (size_t j = 0; !pn->s[si].hline && j < pn->s[si].n; j++)
			if (shown(pn, pn->s[si].x[j], pn->s[si].y[j])) {
				*lo = fmin(*lo, pn->s[si].x[j]);
				*hi = fmax(*hi, pn->s[si].x[j]);
			}
}

/* Whether every size the panel shows is a power of two: at most max of
 * them, distinct, in xs (ascending), *n of them. */
static bool data_tics(const struct panel *pn, double *xs, size_t max, size_t *n)
{
	*n = 0;
	for (unsigned int si = 0; si < pn->ns; si++)
		for (size_t j = 0; !pn->s[si].hline && j < pn->s[si].n; j++) {
			double x = pn->s[si].x[j];
			size_t k = 0;
			int e;

			if (!shown(pn, x, pn->s[si].y[j]))
				continue;
			if (frexp(x, &e) != 0.5)
				return false;
			while (k < *n && xs[k] < x)
				k++;
			if (k < *n && xs[k] == x)
				continue;
			if (*n == max)
				return false;
			memmove(&xs[k + 1], &xs[k], (*n - k) * sizeof(*xs));
			xs[k] = x;
			(*n)++;
		}
	return *n > 0;
}

/*
 * Sizes named as sizes: the measured ones where they are few powers of
 * two, else at most SIZE_TICS_MAX powers of two from the largest size down
 * (the end of a curve is where one reads most).
 */
static void size_tics(struct script *s, const struct panel *pn, double lo, double hi)
{
	int k0 = (int)ceil(log2(lo)), k1 = (int)floor(log2(hi));
	int step = (k1 - k0) / SIZE_TICS_MAX + 1;
	double xs[SIZE_TICS_MAX];
	bool any = false, apart;
	char name[32];
	size_t n;

	sc(s, "set xtics (");
	apart = data_tics(pn, xs, SIZE_TICS_MAX, &n);
	/* Measured sizes as tics only where their names cannot collide. */
	for (size_t i = 1; apart && i < n; i++)
		apart = log2(xs[i] / xs[i - 1]) >= step;
	if (apart) {
		for (size_t i = 0; i < n; i++, any = true)
			sc(s, "%s\"%s\" %.0f", any ? ", " : "",
			   util_size_format((size_t)xs[i], name, sizeof(name)), xs[i]);
	} else {
		for (int k = k1 > 62 ? 62 : k1; k >= k0 && k >= 0; k -= step, any = true)
			sc(s, "%s\"%s\" %.0f", any ? ", " : "",
			   util_size_format((size_t)1 << k, name, sizeof(name)), ldexp(1, k));
	}
	if (!any)	/* no power of two in range: the one size */
		sc(s, "\"%s\" %.0f", util_size_format((size_t)lo, name, sizeof(name)), lo);
	sc(s, ")\nset mxtics default\n");
}

static void panel_axes(struct script *s, const struct panel *pn)
{
	double lo, hi;

	panel_range(pn, &lo, &hi);
	sc(s, "unset logscale\nunset xtics\nset xtics nomirror\nset ytics mirror\n"
	      "set format y \"%%g\"\nset yrange [%s:*]\n",
	   pn->flags & PLOT_LOGY ? "*" : "0");
	sc(s, "set title ");
	sc_str(s, pn->title);
	sc(s, "\nset xlabel ");
	sc_str(s, pn->xlabel);
	sc(s, "\nset ylabel ");
	sc_str(s, pn->ylabel);
	sc(s, "\n");
	if (pn->flags & PLOT_LOGX)
		sc(s, "set logscale x 2\n");
	if (pn->flags & PLOT_LOGY)
		sc(s, "set logscale y 10\n");
	if (lo > hi) {
		sc(s, "set xrange [*:*]\n");
		return;
	}
	if (pn->flags & PLOT_LOGX)
		sc(s, "set xrange [%.9g:%.9g]\n", lo / 1.3, hi * 1.3);
	else
		sc(s, "set xrange [%.9g:%.9g]\n", lo - 0.6, hi + 0.6);
	if (pn->ntics) {
		sc(s, "set xtics (");
		for (unsigned int i = 0; i < pn->ntics; i++) {
			sc(s, "%s", i ? ", " : "");
			sc_str(s, pn->tics[i].label);
			sc(s, " %.9g", pn->tics[i].x);
		}
		sc(s, ")\n");
	} else if (pn->flags & PLOT_SIZES) {
		size_tics(s, pn, lo, hi);
	} else if (pn->flags & PLOT_INTEGER_X) {
		sc(s, "set xtics %.0f\n", ceil((hi - lo + 1) / 16));
	}
}

/* The highest point drawn (a stack's top). */
static double panel_ymax(const struct panel *pn)
{
	double m = 0;

	for (unsigned int si = 0; si < pn->ns; si++)
		for (size_t j = 0; !pn->s[si].hline && j < pn->s[si].n; j++)
			if (shown(pn, pn->s[si].x[j], pn->s[si].y[j]))
				m = fmax(m, pn->flags & PLOT_STACKED ? stack_top(pn, si, j) :
								      pn->s[si].y[j]);
	return m;
}

/* The colour of series si: the next of its style's. */
static const char *series_colour(const struct panel *pn, unsigned int si)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < si; i++)
		k += pn->s[i].style == pn->s[si].style && !pn->s[i].hline;
	if (pn->flags & PLOT_STACKED)	/* parts of one bar: all different */
		return thin_colours[si % ARRAY_LEN(thin_colours)];
	if (pn->s[si].style == PLOT_MAIN)
		return main_colours[k % ARRAY_LEN(main_colours)];
	if (pn->s[si].style == PLOT_PEER)
		return peer_colours[k % ARRAY_LEN(peer_colours)];
	return thin_colours[k % ARRAY_LEN(thin_colours)];
}

static void panel_plot(struct script *s, const struct panel *pn)
{
	bool stacked = pn->flags & PLOT_STACKED;
	char label[SERIES_NAME_MAX + 16];
	const char *sep = "plot ";

	/* A stack is drawn tallest first, each part over the one above it. */
	for (unsigned int n = 0; n < pn->ns; n++) {
		unsigned int si = stacked ? pn->ns - 1 - n : n;
		const struct series *r = &pn->s[si];
		const char *colour = series_colour(pn, si);

		if (r->hline) {
			/* Far above the data on a linear axis it would flatten
			 * what the panel is for: named, not drawn. */
			double top = panel_ymax(pn);
			bool off = !(pn->flags & PLOT_LOGY) && top > 0 && r->y[0] > 2 * top;
			char y[32];

			snprintf(y, sizeof(y), "%.9g", r->y[0]);
			snprintf(label, sizeof(label), "%s%s", r->name,
				 off ? " (above)" : "");
			sc(s, "%s%s with lines dt 3 lw 3 lc rgb \"" HLINE_COLOUR "\" title ", sep,
			   off ? "1/0" : y);
		} else if (r->index < 0) {
			continue;
		} else if (stacked) {
			sc(s, "%s\"data\" index %d using 1:3 with boxes fs solid 0.85 "
			      "border lc rgb \"#404040\" lc rgb \"%s\" title ", sep, r->index,
			   colour);
		} else {
			sc(s, "%s\"data\" index %d using 1:2 with linespoints lc rgb \"%s\" "
			      "pt %u %s title ", sep, r->index, colour, si % 13 + 1,
			   r->style == PLOT_MAIN ? "lw 3.5 ps 1.2" :
			   r->style == PLOT_PEER ? "lw 3 dt 2 ps 1.1" : "lw 1.5 ps 1");
		}
		sc_key(s, r->hline ? label : r->name);
		sep = ", \\\n     ";
	}
	/* gnuplot needs something to plot: an empty panel says so. */
	if (!strcmp(sep, "plot "))
		sc(s, "set label 1 \"no data\" at graph 0.5, graph 0.5 center\n"
		      "plot 1/0 notitle\nunset label 1\n");
	else
		sc(s, "\n");
}

static int write_script(const struct plot *p, const char *format, struct script *s)
{
	int h = TITLE_HEIGHT + PANEL_HEIGHT * (int)p->np;

	if (!strcmp(format, "svg"))
		sc(s, "set terminal svg noenhanced size %d,%d font \"sans,12\" "
		      "background rgb \"white\"\n", WIDTH, h);
	else
		sc(s, "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
		      "  set terminal pngcairo noenhanced size %d,%d font \"sans,10\"\n"
		      "} else {\n  set terminal png noenhanced size %d,%d\n}\n",
		   WIDTH, h, WIDTH, h);
	sc(s, "set output \"picture.%s\"\nset encoding utf8\n", format);
	/* Panels share their margins so that their x axes line up; the
	 * legends sit in the right margin. */
	sc(s, "set lmargin at screen 0.08\nset rmargin at screen 0.77\n"
	      "set key outside right top vertical Left reverse noenhanced spacing 1.1 "
	      "samplen 3 width 1\nset grid xtics ytics lc rgb \"#d0d0d0\"\n"
	      "set boxwidth 0.6\nset style fill solid 0.85\n");
	sc(s, "set multiplot layout %u,1 title ", p->np);
	sc_str(s, p->title);
	sc(s, " font \",13\"\n");
	for (unsigned int i = 0; i < p->np; i++) {
		panel_axes(s, &p->p[i]);
		panel_plot(s, &p->p[i]);
	}
	sc(s, "unset multiplot\n");
	return s->over ? -E2BIG : 0;
}

/* Writes len bytes to fd, whatever the reader did (EPIPE, not SIGPIPE). */
static int write_all(int fd, const char *buf, size_t len)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	int rc = 0;

	sigaction(SIGPIPE, &ign, &old);
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		buf += n;
		len -= (size_t)n;
	}
	sigaction(SIGPIPE, &old, NULL);
	return rc;
}

/* Waits for pid up to timeout_ms, then kills it: its wait status, or -errno. */
static int wait_child(pid_t pid, int timeout_ms)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int st;

	for (int waited = 0;; waited += 10) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (waited >= timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		nanosleep(&tick, NULL);
	}
}

/* gnuplot in dir, the script on its stdin, its output in dir/gnuplot.log. */
static int run_gnuplot(const char *dir, const struct script *s)
{
	int fds[2], st, rc;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(fds[0]);
		close(fds[1]);
		return rc;
	}
	if (pid == 0) {
		int log;

		if (chdir(dir) < 0)
			_exit(126);
		log = open("gnuplot.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (log < 0 || dup2(fds[0], 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
			_exit(126);
		execlp(GNUPLOT, GNUPLOT, (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	rc = write_all(fds[1], s->buf, s->len);
	close(fds[1]);
	st = wait_child(pid, GNUPLOT_TIMEOUT_MS);
	if (st < 0)
		return st;
	if (rc == -EPIPE || !rc)
		rc = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		rc = -ENOENT;
	return rc;
}

/* gnuplot's own words, after a failure. */
static void print_log(const char *dir)
{
	char path[4200], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/gnuplot.log", dir);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "  gnuplot: %s", line);
	if (f)
		fclose(f);
}

/* Copies src to dst through a temporary file beside dst, renamed over it:
 * dst is whole or as it was. */
static int install(const char *src, const char *dst)
{
	char tmp[4200], buf[65536];
	int in, out, rc = 0;
	ssize_t n;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", dst) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = mkostemp(tmp, O_CLOEXEC);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	while (!rc && (n = read(in, buf, sizeof(buf))) != 0)
		rc = n < 0 ? -errno : write_all(out, buf, (size_t)n);
	if (!rc && fchmod(out, 0644) < 0)
		rc = -errno;
	if (close(out) < 0 && !rc)
		rc = -errno;
	close(in);
	if (!rc && rename(tmp, dst) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

static int draw(struct plot *p, const char *dir, const char *file, const char *who)
{
	struct script s = { .buf = malloc(SCRIPT_MAX) };
	const char *format = plot_format(file);
	char pic[4200];
	struct stat st;
	int rc;

	if (!s.buf)
		return -ENOMEM;
	rc = write_script(p, format, &s);
	if (!rc)
		rc = run_gnuplot(dir, &s);
	free(s.buf);
	snprintf(pic, sizeof(pic), "%s/picture.%s", dir, format);
	if (!rc && (stat(pic, &st) < 0 || !st.st_size))
		rc = -EIO;
	if (rc == -ENOENT) {
		cli_error("%s: cannot run gnuplot (apt-get install " GNUPLOT_PACKAGE ")\n", who);
	} else if (rc == -ETIMEDOUT) {
		cli_error("%s: gnuplot ran past %d s: killed\n", who, GNUPLOT_TIMEOUT_MS / 1000);
	} else if (rc) {
		cli_error("%s: gnuplot failed: %s\n", who, strerror(-rc));
		print_log(dir);
	} else {
		rc = install(pic, file);
		if (rc)
			cli_error("%s: --plot %s: %s\n", who, file, strerror(-rc));
	}
	unlink(pic);
	return rc;
}

static void remove_dir(const char *dir)
{
	static const char *const names[] = {
		"data", "gnuplot.log", "picture.svg", "picture.png",
	};
	char path[4200];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

int plot_emit(struct plot *p, const struct plot_out *o, const char *who)
{
	const char *tmpdir = getenv("TMPDIR");
	char dir[4096], data[4200];
	int rc;

	if (!p || p->err) {
		rc = p ? p->err : -ENOMEM;
		cli_error("%s: cannot build the plot: %s\n", who, strerror(-rc));
		return rc;
	}
	if (snprintf(dir, sizeof(dir), "%s/memmig-plot-XXXXXX",
		     tmpdir && *tmpdir ? tmpdir : "/tmp") >= (int)sizeof(dir))
		errno = ENAMETOOLONG;
	else if (mkdtemp(dir))
		errno = 0;
	if (errno) {
		rc = -errno;
		cli_error("%s: cannot make a temporary directory: %s\n", who, strerror(-rc));
		return rc;
	}
	snprintf(data, sizeof(data), "%s/data", dir);
	rc = write_data(p, data);
	if (rc)
		cli_error("%s: cannot write the plot's data: %s\n", who, strerror(-rc));
	if (!rc && o->data) {
		rc = install(data, o->data);
		if (rc)
			cli_error("%s: --plot-data %s: %s\n", who, o->data, strerror(-rc));
	}
	if (!rc && o->file)
		rc = draw(p, dir, o->file, who);
	remove_dir(dir);
	/* On stderr: stdout may be --json. */
	if (!rc)
		fprintf(stderr, "%s: wrote%s%s%s%s\n", who, o->file ? " " : "",
			o->file ? o->file : "", o->data ? (o->file ? " and " : " ") : "",
			o->data ? o->data : "");
	return rc;
}
