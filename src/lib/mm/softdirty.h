/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's soft-dirty bits (Documentation/admin-guide/mm/soft-dirty.rst):
 * writing "4" to /proc/PID/clear_refs clears them and write-protects every
 * page of the process; a write sets the page's bit again, which its
 * pagemap entry shows.  Live migration's dirty tracking (lib/live) and the
 * tiering's write source (lib/tier) both read them.
 */
#ifndef MEMMIG_SOFTDIRTY_H
#define MEMMIG_SOFTDIRTY_H

#define MEMMIG_PM_SOFT_DIRTY	(1ULL << 55)	/* in a pagemap entry */

/*
 * Whether the kernel keeps the bits: 0, -ENOENT (built without
 * CONFIG_MEM_SOFT_DIRTY: clear_refs takes "4" and no bit is ever set), or
 * -errno.  Asked once, of a page of this process written after a clear
 * (which clears the bits of the whole process: the first caller's).
 */
int memmig_softdirty_probe(void);
/* Clears the bits of the process of clear_refs (an fd open for writing on
 * its /proc/PID/clear_refs): 0 or -errno (-ESRCH: it ended). */
int memmig_softdirty_clear(int clear_refs);
/* The same of this process. */
int memmig_softdirty_clear_self(void);

#endif
