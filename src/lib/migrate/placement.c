/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where the pages of a range are: the kernel's move_pages() query. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/migrate/migrate-private.h"
#include "lib/migrate/placement.h"
#include "lib/mm/frames.h"
#include "lib/mm/proc.h"

/* Pages per system call: bounded memory for the address array. */
#define QUERY_BATCH 16384

long memmig_sys_move_pages(int pid, unsigned long count, void **pages,
			   const int *nodes, int *status, int flags)
{
	long rc = syscall(SYS_move_pages, pid, count, pages, nodes, status, flags);

	return rc < 0 ? -errno : rc;
}

/*
 * The pid of a system call is looked up by the kernel when the call
 * starts; the pin is an fd on the process's /proc directory, which names
 * that process and no other.  The pid names it too for as long as it has
 * not been reaped -- a pid is only reused once free -- so a lookup in the
 * pinned directory that succeeds after the call says that the call reached
 * the pinned process; one before it says the pid is still its own.  What
 * remains is a process that ends, is reaped, and whose pid is taken again
 * between the lookup before and the call's own: the call then acts on the
 * process that took it, and the lookup after says so (-ESRCH), so the
 * caller stops there and the answer is dropped (one call's worth of
 * pages placed elsewhere is what such a call can do; nothing is read or
 * written).  Taking a given pid again takes the kernel cycling through
 * every other free pid of the namespace first (pid_max of them: 32768 by
 * default, or more) within those microseconds, or a write to ns_last_pid,
 * which needs CAP_SYS_ADMIN over the caller's pid namespace (a namespace
 * an unprivileged client may own is a child one: the pid it picks there is
 * not the number the caller, in its own, names that process by).
 *
 * The caller's check (a client's permission) is asked before the call
 * only: a process that execs a setuid program between the check and the
 * call has one call's worth of pages moved (the next check stops the
 * move).  The kernel's own check would close that, but under the client's
 * credentials, which a daemon's worker threads do not have.
 */
int memmig_pin_call_before(const struct memmig_pin *pin)
{
	int rc = pin->check ? pin->check(pin->opaque) : 0;

	if (!rc && !memmig_proc_pinned(pin->procfd))
		rc = -ESRCH;
	return rc;
}

long memmig_pin_call_after(const struct memmig_pin *pin, long rc)
{
	return memmig_proc_pinned(pin->procfd) ? rc : -ESRCH;
}

long memmig_job_move_pages(struct memmig_job *job, unsigned long count, void **pages,
			   const int *nodes, int *status, int flags)
{
	int denied = __atomic_load_n(&job->pin_denied, __ATOMIC_ACQUIRE);
	long rc = 0;

	if (denied)
		return denied;
	denied = memmig_pin_call_before(&job->pin);
	if (!denied) {
		rc = memmig_sys_move_pages(job->pid, count, pages, nodes, status, flags);
		if (memmig_pin_call_after(&job->pin, 0))
			denied = -ESRCH;
	}
	if (!denied)
		return rc;
	__atomic_store_n(&job->pin_denied, denied, __ATOMIC_RELEASE);
	return denied;
}

/* The nodes of [addr, addr + len), QUERY_BATCH pages a call: through
 * job's pin where there is a job, else of pid. */
static int query(struct memmig_job *job, int pid, uint64_t addr, uint64_t len, int *status)
{
	uint64_t npages = len / MEMMIG_PAGE_SIZE;
	void **pages = malloc(QUERY_BATCH * sizeof(*pages));
	long rc = 0;

	if (!pages)
		return -ENOMEM;
	for (uint64_t first = 0; first < npages; first += QUERY_BATCH) {
		uint64_t n = npages - first < QUERY_BATCH ? npages - first : QUERY_BATCH;

		for (uint64_t i = 0; i < n; i++)
			pages[i] = (void *)(uintptr_t)(addr + (first + i) * MEMMIG_PAGE_SIZE);
		rc = job ? memmig_job_move_pages(job, n, pages, NULL, status + first, 0) :
			   memmig_sys_move_pages(pid, n, pages, NULL, status + first, 0);
		if (rc < 0)
			break;
	}
	free(pages);
	return rc < 0 ? (int)rc : 0;
}

int memmig_job_placement_query(struct memmig_job *job, uint64_t addr, uint64_t len,
			       int *status)
{
	return query(job, 0, addr, len, status);
}

int memmig_placement_query(int pid, uint64_t addr, uint64_t len, int *status)
{
	return query(NULL, pid, addr, len, status);
}

/* The unit's pages' nodes from their frames: false when one frame cannot
 * say (the kernel is asked for the unit). */
static bool from_frames(const struct memmig_frames *f, const uint64_t *e, size_t n, int *out)
{
	for (size_t p = 0; p < n; p++)
		if (memmig_frames_status(f, e[p], &out[p]) < 0)
			return false;
	return true;
}

int memmig_placement_query_units(struct memmig_job *job,
				 const struct memmig_thp_probe *probe,
				 struct memmig_unit *u, size_t n, int *pages,
				 bool set_thp)
{
	size_t max = MEMMIG_CALL_UNITS * MEMMIG_UNIT_PAGES, e = 0, first = 0;
	bool thp[MEMMIG_CALL_UNITS], asked[MEMMIG_CALL_UNITS];
	void **addr = malloc(max * sizeof(*addr));
	uint64_t *ent = malloc(MEMMIG_UNIT_PAGES * sizeof(*ent));
	int *st = malloc(max * sizeof(*st));
	bool *scanned = malloc(n * sizeof(*scanned));
	long rc = 0;
	/* One walk for all the units where the kernel has it: the entries are
	 * then read only for the frames of what is no THP (a THP takes one
	 * query entry, cheaper than reading 512). */
	bool scan = scanned && memmig_thp_probe_scan(probe, u, n, scanned);

	if (!addr || !st || !ent || !scanned)
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < n; i++) {
		size_t np = u[i].len / MEMMIG_PAGE_SIZE;
		bool huge = scan && scanned[i];
		bool read = (!scan || (job->frames && !huge)) &&
			    memmig_thp_probe_entries(probe, &u[i], ent);

		if (!scan)
			huge = read && memmig_thp_probe_is_thp(probe, &u[i], ent);

		thp[i - first] = huge;
		if (set_thp)
			u[i].thp = huge;
		asked[i - first] = !(read && job->frames &&
				     from_frames(job->frames, ent, np,
						 pages + memmig_job_page(job, u[i].addr)));
		for (size_t k = 0; asked[i - first] && k < (huge ? 1 : np); k++)
			addr[e++] = (void *)(uintptr_t)(u[i].addr + k * MEMMIG_PAGE_SIZE);
		if (i + 1 < n && i + 1 - first < MEMMIG_CALL_UNITS)
			continue;
		rc = e ? memmig_job_move_pages(job, e, addr, NULL, st, 0) : 0;
		/* Spread the answers over the pages of each unit asked. */
		for (size_t k = first, at = 0; rc >= 0 && k <= i; k++) {
			int *out = pages + memmig_job_page(job, u[k].addr);
			bool h = thp[k - first];

			if (!asked[k - first])
				continue;
			for (size_t p = 0; p < u[k].len / MEMMIG_PAGE_SIZE; p++)
				out[p] = st[h ? at : at + p];
			at += h ? 1 : u[k].len / MEMMIG_PAGE_SIZE;
		}
		e = 0;
		first = i + 1;
	}
	free(addr);
	free(st);
	free(ent);
	free(scanned);
	return rc < 0 ? (int)rc : 0;
}
