/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A VMM's own guest as a tiering's units, writes and moves (see tier-vm.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memmig.h"
#include "lib/tier/tier-units.h"
#include "lib/tier/tier-vm.h"

struct tier_vm {
	struct memmig_vm *vm;
	uint32_t slot;
	struct memmig_vm_track *track;
	uint64_t *written;		/* the last read, a bit a slot page */
	size_t words;
};

int tier_vm_open(struct memmig_vm *vm, uint32_t slot, struct tier_vm **out, char *why,
		 size_t len)
{
	struct memmig_vm_slot s = { .sz = sizeof(s) };
	struct tier_vm *tv;
	int rc = memmig_vm_get_slot(vm, slot, &s);

	if (rc) {
		snprintf(why, len, "slot %u: %s", slot, strerror(-rc));
		return rc;
	}
	if (s.fd >= 0) {
		snprintf(why, len, "slot %u is file-backed: a live migration moves it whole, "
			 "not 2 MiB at a time", slot);
		return -EOPNOTSUPP;
	}
	tv = calloc(1, sizeof(*tv));
	if (!tv)
		return -ENOMEM;
	tv->vm = memmig_vm_ref(vm);
	tv->slot = slot;
	tv->words = (s.size / MEMMIG_PAGE_SIZE + 63) / 64;
	tv->written = calloc(tv->words, sizeof(uint64_t));
	rc = tv->written ? memmig_vm_track_new(vm, slot, MEMMIG_DIRTY_AUTO, &tv->track) : -ENOMEM;
	if (!rc)
		rc = memmig_vm_track_start(tv->track);
	if (rc) {
		snprintf(why, len, "slot %u: no tracking of the guest's writes: %s%s", slot,
			 strerror(-rc), rc == -EBUSY ? " (a live migration of the vm runs)" : "");
		tier_vm_close(tv);
		return rc;
	}
	*out = tv;
	return 0;
}

int tier_vm_units(struct tier_vm *tv, const struct tier_unit *old, size_t nold,
		  struct tier_unit **units, size_t *n)
{
	struct memmig_vm_slot s = { .sz = sizeof(s) };
	struct tier_unit *u;
	size_t k = 0, j = 0, count;
	int rc = memmig_vm_get_slot(tv->vm, tv->slot, &s);

	if (rc)
		return rc;
	count = (s.size + TIER_UNIT - 1) / TIER_UNIT;
	if (count > TIER_MAX_UNITS)
		return -E2BIG;
	u = calloc(count ? count : 1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	/* Units from the slot's start: a live migration takes offsets. */
	for (uint64_t off = 0; off < s.size; off += TIER_UNIT, k++) {
		u[k].addr = (uintptr_t)s.hva + off;
		u[k].len = (uint32_t)(s.size - off < TIER_UNIT ? s.size - off : TIER_UNIT);
		u[k].node = -1;
		u[k].vma = 1;
		tier_unit_carry(&u[k], old, nold, &j);
	}
	*units = u;
	*n = k;
	return 0;
}

int tier_vm_mark(struct tier_vm *tv, struct tier_unit *units, size_t n)
{
	const uint64_t words_a_unit = TIER_UNIT / MEMMIG_PAGE_SIZE / 64;
	uint64_t pages;
	int rc, marked = 0;

	memset(tv->written, 0, tv->words * sizeof(uint64_t));
	rc = memmig_vm_track_read(tv->track, tv->written, tv->words, &pages);
	if (rc)
		return rc;
	/* Unit k is words [k * 8, k * 8 + 8) of the slot's bitmap. */
	for (size_t k = 0; k < n && pages; k++) {
		bool w = false;

		for (uint64_t i = k * words_a_unit; i < (k + 1) * words_a_unit && i < tv->words; i++)
			w |= tv->written[i] != 0;
		if (w) {
			units[k].hist |= 1;
			units[k].src |= TIER_SRC_DIRTYLOG;
			marked++;
		}
	}
	return marked;
}

static int by_addr(const void *a, const void *b, void *arg)
{
	const struct tier_unit *u = arg;
	uint64_t x = u[*(const size_t *)a].addr, y = u[*(const size_t *)b].addr;

	return x < y ? -1 : x > y;
}

/* One run [first, first + len) of the slot to node, live. */
static int move_run(struct tier_vm *tv, uint64_t off, uint64_t len, int node,
		    unsigned int pause_ms, uint64_t *bytes, double *pause, bool *over)
{
	struct memmig_live_opts o = {
		.sz = sizeof(o), .slot = tv->slot, .offset = off, .length = len,
		.target_node = node, .pause_budget_ns = (uint64_t)pause_ms * 1000000,
	};
	struct memmig_live_report rep = { .sz = sizeof(rep) };
	int rc = memmig_vm_migrate(tv->vm, &o, &rep);

	*bytes += rep.bytes_switched;
	if (rep.pause_s > *pause)
		*pause = rep.pause_s;
	*over = rep.pause_s * 1e3 > pause_ms;
	return rc;
}

int tier_vm_move(struct tier_vm *tv, const struct tier_unit *units, const size_t *idx,
		 size_t n, int node, unsigned int pause_ms, uint64_t *bytes, double *pause,
		 uint64_t *over_budget)
{
	struct memmig_vm_slot s = { .sz = sizeof(s) };
	size_t *order;
	int rc, rc2;

	if (!n)
		return 0;
	rc = memmig_vm_get_slot(tv->vm, tv->slot, &s);
	if (rc)
		return rc;
	order = malloc(n * sizeof(*order));
	if (!order)
		return -ENOMEM;
	memcpy(order, idx, n * sizeof(*order));
	qsort_r(order, n, sizeof(*order), by_addr, (void *)units);
	rc = memmig_vm_track_stop(tv->track);
	for (size_t i = 0; i < n && !rc;) {
		uint64_t start = units[order[i]].addr, end = start + units[order[i]].len;
		size_t k = i + 1;
		bool over = false;

		while (k < n && units[order[k]].addr == end)
			end += units[order[k++]].len;
		rc = move_run(tv, start - (uintptr_t)s.hva, end - start, node, pause_ms, bytes,
			      pause, &over);
		if (over)
			*over_budget += k - i;
		i = k;
	}
	free(order);
	/* The guest's writes count again from here. */
	rc2 = memmig_vm_track_start(tv->track);
	return rc ? rc : rc2;
}

void tier_vm_close(struct tier_vm *tv)
{
	if (!tv)
		return;
	memmig_vm_track_unref(tv->track);
	memmig_vm_unref(tv->vm);
	free(tv->written);
	free(tv);
}
