/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A pause is the guest's downtime: for its length the thread that runs the
 * migration runs at real-time priority (SCHED_FIFO 1), so that no
 * CPU-bound task takes its CPU in the middle.  Under a busy loop on each
 * CPU, a swap woken by the userfaultfd reader waited 3-4 ms for its CPU
 * again on a 2-CPU host.  A thread that is real-time or deadline already
 * stays as it is, and so does one without the right (CAP_SYS_NICE or
 * RLIMIT_RTPRIO), or where the VMM asked (MEMMIG_LIVE_KEEP_SCHED).
 */
#define _GNU_SOURCE	/* SCHED_BATCH, SCHED_IDLE */
#include <pthread.h>
#include <sched.h>

#include "lib/live/live-private.h"

void memmig_live_sched_raise(const struct memmig_live *l, struct memmig_sched_was *was)
{
	was->raised = false;
	if ((l->opts.flags & MEMMIG_LIVE_KEEP_SCHED) ||
	    pthread_getschedparam(pthread_self(), &was->policy, &was->param) ||
	    (was->policy != SCHED_OTHER && was->policy != SCHED_BATCH &&
	     was->policy != SCHED_IDLE))
		return;
	was->raised = !pthread_setschedparam(pthread_self(), SCHED_FIFO,
					     &(struct sched_param){ .sched_priority = 1 });
}

void memmig_live_sched_restore(const struct memmig_sched_was *was)
{
	/* Back to the policy it had: its nice value went nowhere. */
	if (was->raised)
		pthread_setschedparam(pthread_self(), was->policy, &was->param);
}
