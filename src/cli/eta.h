/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The progress bar's time left: shown only once the rate is steady. */
#ifndef MEMMIG_CLI_ETA_H
#define MEMMIG_CLI_ETA_H

#include <stdbool.h>
#include <stdint.h>

/* Samples in a row whose predicted end held before the time left shows. */
#define CLI_ETA_AGREE 2

struct cli_eta {
	bool any;		/* a sample came */
	double t_first;		/* the first sample's time */
	double t_prev, end_prev;	/* the last one's, and the end it predicted */
	unsigned int agreed;	/* samples in a row whose end held */
};

/*
 * One sample: at now (seconds, a monotonic clock), done of total bytes at
 * rate bytes/s.  Returns the seconds left, or -1 while the rate is not
 * steady: a sample agrees when the end it predicts (now + left / rate)
 * is within the time watched so far of the end the last one predicted,
 * so that a guess never claims more than the samples have shown.
 */
double cli_eta_sample(struct cli_eta *e, double now, uint64_t done, uint64_t total,
		      double rate);

#endif
