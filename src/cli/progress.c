/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The progress bar of long work: only when a person watches (both stdout
 * and stderr are terminals), drawn on stderr so stdout stays clean. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/eta.h"
#include "util/size.h"

bool cli_progress_wanted(void)
{
	return isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
}

/* One bar a process: the samples it was drawn from. */
static struct cli_eta eta_state;

void cli_progress(uint64_t done, uint64_t total, double rate)
{
	struct timespec now;
	double left;
	const int width = 28;
	int fill = total ? (int)((double)width * done / total) : width;
	char d[32], t[32], eta[32] = "--:--";

	if (!cli_progress_wanted())
		return;
	if (fill > width)
		fill = width;
	util_size_human(done, d, sizeof(d));
	util_size_human(total, t, sizeof(t));
	clock_gettime(CLOCK_MONOTONIC, &now);
	left = cli_eta_sample(&eta_state, (double)now.tv_sec + now.tv_nsec / 1e9, done, total,
			      rate);
	if (left >= 0) {
		unsigned long s = (unsigned long)(left + 0.5);

		snprintf(eta, sizeof(eta), "%lu:%02lu", s / 60, s % 60);
	}
	/* done: what the move got through; rate: the job object's (docs/json.md). */
	fprintf(stderr, "\r[%.*s%*s] %3d%% %s / %s done  %.2f GB/s  ETA %s\033[K", fill,
		"############################", width - fill, "",
		total ? (int)(100.0 * done / total) : 100, d, t, rate / 1e9, eta);
	fflush(stderr);
}

void cli_progress_end(void)
{
	eta_state = (struct cli_eta){ 0 };
	if (cli_progress_wanted())
		fputs("\r\033[K", stderr);
}
