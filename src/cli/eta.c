/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The progress bar's time left.  The first rates of a move swing (the
 * first units fault memory in, the pace is measured over little), and a
 * time left from them jumped between 2:53 and 3:46 for a move of 0.57 s:
 * none is shown until the end each sample predicts holds, measured by
 * the samples' own time, not a constant of one host's.
 */
#include <math.h>

#include "cli/eta.h"

double cli_eta_sample(struct cli_eta *e, double now, uint64_t done, uint64_t total,
		      double rate)
{
	double end;

	if (rate <= 0 || done > total) {
		e->agreed = 0;
		return -1;
	}
	end = now + (double)(total - done) / rate;
	if (!e->any) {
		e->any = true;
		e->t_first = now;
	} else if (now > e->t_prev) {
		if (fabs(end - e->end_prev) <= now - e->t_first)
			e->agreed++;
		else
			e->agreed = 0;
	}
	e->t_prev = now;
	e->end_prev = end;
	return e->agreed >= CLI_ETA_AGREE ? end - now : -1;
}
