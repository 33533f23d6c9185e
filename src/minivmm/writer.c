/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host-thread vCPU, for hosts without /dev/kvm: guest.S's algorithm
 * (or guest-hot.S's) in C, on the same RAM and state block, at the host's full speed.  It
 * checks for a pause between pages and parks as the KVM vCPU thread does.
 *
 * Its stores are plain: between two pauses nothing but the migration
 * (which tracks them by itself) looks at them.  A pause orders them: the
 * thread parks under the lock, and minivmm_park() is a call the compiler
 * cannot see into, so nothing stays in registers across it; the RAM's
 * address is read again after it, since the memory may have moved.
 *
 * It times its own stalls, from one write to the next, by the clock
 * every STALL_PAGES pages and right after a park, so that a pause is on
 * record before the writer writes on.  Not every page: a page takes it
 * ~150 ns, a clock read ~25 ns through the vDSO and a system call where the
 * clock source has none (HPET under TCG).  16 pages take a few µs natively,
 * the measure's resolution: a stall reads at most that much too long.
 */
#include "minivmm/vmm-private.h"

#define STALL_PAGES 16

/* The RAM is bytes, read and written as dwords here and as a qword. */
typedef uint32_t __attribute__((may_alias)) ram_u32;
typedef uint64_t __attribute__((may_alias)) ram_u64;

static uint8_t *ram_get(struct minivmm *vmm)
{
	uint8_t *ram;

	pthread_mutex_lock(&vmm->lock);
	ram = vmm->slot.hva;
	pthread_mutex_unlock(&vmm->lock);
	return ram;
}

/* As the guest's port MINIVMM_PORT_ERROR. */
__attribute__((noinline, cold))
static void report_error(struct minivmm *vmm, uint8_t *ram, uint32_t page)
{
	(*(ram_u32 *)(ram + MINIVMM_STATE_ERRORS))++;
	atomic_store(&vmm->last_error_page, page);
	atomic_fetch_add(&vmm->guest_errors, 1);
}

/* Page i in pass `pass`: the lines, then the page number. */
static void write_page(struct minivmm *vmm, uint8_t *ram, uint32_t i,
		       uint32_t pass)
{
	uint8_t *page = ram + (uint64_t)i * MINIVMM_PAGE;
	ram_u32 *pn = (ram_u32 *)(page + MINIVMM_PAGENUM_OFFSET);
	uint32_t old = pass - 1, j;

	for (j = 0; j < MINIVMM_LINES; j++) {
		ram_u32 *line = (ram_u32 *)(page + j * MINIVMM_LINE);

		if (__builtin_expect(*line != old, 0))
			report_error(vmm, ram, i);
		*line = pass;
	}
	/* 0 is right before pass 1 wrote it. */
	if (__builtin_expect(*pn != i && (*pn | old), 0))
		report_error(vmm, ram, i);
	*pn = i;
}

/* The hot-set guest's page i (guest-hot.S): its lines from its table
 * entry v to v + 1, its number, then the entry. */
static void write_page_hot(struct minivmm *vmm, uint8_t *ram, uint32_t i)
{
	uint8_t *page = ram + (uint64_t)i * MINIVMM_PAGE;
	ram_u32 *pn = (ram_u32 *)(page + MINIVMM_PAGENUM_OFFSET);
	ram_u32 *entry = (ram_u32 *)(ram + MINIVMM_HOT_TABLE * MINIVMM_PAGE) + i;
	uint32_t v = *entry, j;

	for (j = 0; j < MINIVMM_LINES; j++) {
		ram_u32 *line = (ram_u32 *)(page + j * MINIVMM_LINE);

		if (__builtin_expect(*line != v, 0))
			report_error(vmm, ram, i);
		*line = v + 1;
	}
	if (__builtin_expect(*pn != i && (*pn | v), 0))
		report_error(vmm, ram, i);
	*pn = i;
	*entry = v + 1;
}

/* This pass's pages: every data page, or the hot-set guest's window as
 * the VMM set it now (guest-hot.S reads it the same way). */
static void pass_pages(struct minivmm *vmm, const uint8_t *ram, uint32_t *first,
		       uint32_t *count)
{
	const struct minivmm_state *st = (const void *)(ram + MINIVMM_STATE_OFFSET);
	uint32_t ndata, n;

	minivmm_data_pages(vmm, NULL, &ndata);
	*first = 0;
	*count = ndata;
	if (vmm->guest != MINIVMM_GUEST_HOTSET)
		return;
	*first = __atomic_load_n(&st->hot_first, __ATOMIC_RELAXED) % ndata;
	n = __atomic_load_n(&st->hot_pages, __ATOMIC_RELAXED);
	if (n && n <= ndata)
		*count = n;
}

void *minivmm_writer_thread(void *arg)
{
	struct minivmm *vmm = arg;
	bool hot = vmm->guest == MINIVMM_GUEST_HOTSET;
	uint32_t pass, i, j, data0, ndata, first, count;
	uint8_t *ram = ram_get(vmm);
	uint64_t last = minivmm_now_ns();	/* the last look at the clock */

	minivmm_data_pages(vmm, &data0, &ndata);
	for (pass = 1;; pass++) {
		pass_pages(vmm, ram, &first, &count);
		for (j = 0; j < count; j++) {
			i = data0 + (first + j) % ndata;
			if (atomic_load_explicit(&vmm->pause_depth,
						 memory_order_relaxed) ||
			    atomic_load_explicit(&vmm->stop, memory_order_relaxed)) {
				if (!minivmm_park(vmm))
					goto out;
				ram = ram_get(vmm);
				last = minivmm_stall_mark(vmm, last, true);
			} else if (j % STALL_PAGES == 0) {
				last = minivmm_stall_mark(vmm, last, false);
			}
			/* pass and pos in one store, as the guest does
			 * (little-endian: pass first). */
			if (j == 0)
				__atomic_store_n((ram_u64 *)(ram + MINIVMM_STATE_PASS),
						 (uint64_t)i << 32 | pass,
						 __ATOMIC_RELAXED);
			else
				*(ram_u32 *)(ram + MINIVMM_STATE_POS) = i;
			if (hot)
				write_page_hot(vmm, ram, i);
			else
				write_page(vmm, ram, i, pass);
		}
		/* As the guest's port MINIVMM_PORT_PASS. */
		pthread_mutex_lock(&vmm->lock);
		atomic_store(&vmm->passes, pass);
		pthread_cond_broadcast(&vmm->pass);
		pthread_mutex_unlock(&vmm->lock);
	}
out:
	minivmm_thread_exit(vmm);
	return NULL;
}
