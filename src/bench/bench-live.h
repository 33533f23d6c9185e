/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench live: memmig's live migration, and QEMU's beside it. */
#ifndef MEMMIG_BENCH_LIVE_H
#define MEMMIG_BENCH_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One QEMU local migration: a guest of mem bytes, writing or idle. */
struct qemu_peer {
	size_t mem;
	bool writing;
	bool kvm;		/* accel=kvm, else TCG */
	double timeout_s;	/* then cancelled: not converged */
};

struct qemu_result {
	double total_s;		/* QEMU's total-time (the timeout if cancelled) */
	double downtime_s;	/* QEMU's downtime: the guest stopped */
	double downtime_limit_s;	/* the limit it was given (its default) */
	uint64_t rounds;	/* dirty-sync-count */
	uint64_t transferred;	/* RAM bytes sent */
	bool converged;
};

/* qemu-system-x86_64 is on the PATH. */
bool bench_qemu_available(void);
/* Starts two QEMUs (the second -incoming), migrates the first's guest to
 * it over a UNIX socket, stops both.  0 or -errno. */
int bench_qemu_migrate(const struct qemu_peer *p, struct qemu_result *out);

#endif
