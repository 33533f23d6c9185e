/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host's view of the guest's invariant.  With the guest paused in pass
 * P at page k: pages before k hold P in every line, pages after it P-1,
 * and page k a run of P followed by P-1 (the guest writes lines in order).
 */
#include <errno.h>
#include <stdbool.h>

#include "minivmm/vmm-private.h"

static uint32_t line(const uint8_t *page, uint32_t j)
{
	return *(const uint32_t *)(page + j * MINIVMM_LINE);
}

/* The page number is written after the lines, so from pass 2 on it is
 * always i; in pass 1 it goes from 0 to i once page k's lines are done. */
static bool pagenum_ok(uint32_t pn, uint32_t i, uint32_t pass, uint32_t pos,
		       uint32_t prefix)
{
	if (pass > 1 || i < pos)
		return pn == i;
	if (i > pos)
		return pn == 0;
	return pn == 0 || (pn == i && prefix == MINIVMM_LINES);
}

static void check_page(const uint8_t *page, uint32_t i, uint32_t pass,
		       uint32_t pos, struct minivmm_check *c)
{
	uint32_t old = pass ? pass - 1 : 0, prefix = 0, j, v, want;
	bool lost, torn = false;

	/* Lines [0, prefix) hold this pass, the rest the last one. */
	if (i < pos)
		prefix = MINIVMM_LINES;
	else if (i == pos)
		while (prefix < MINIVMM_LINES && line(page, prefix) == pass)
			prefix++;
	lost = !pagenum_ok(*(const uint32_t *)(page + MINIVMM_PAGENUM_OFFSET),
			   i, pass, pos, prefix);
	for (j = 0; j < MINIVMM_LINES; j++) {
		v = line(page, j);
		want = j < prefix ? pass : old;
		if (v < want)
			lost = true;
		/* Newer than the guest wrote, or a run not uniform. */
		if (v > want || (j != 0 && j != prefix && v != line(page, j - 1)))
			torn = true;
	}
	c->lost += lost;
	c->torn += torn;
}

static void check_page_hot(const uint8_t *ram, uint32_t i, uint32_t pos,
			   struct minivmm_check *c)
{
	const uint8_t *page = ram + (uint64_t)i * MINIVMM_PAGE;
	uint32_t v = ((const uint32_t *)(ram + MINIVMM_HOT_TABLE * MINIVMM_PAGE))[i];
	uint32_t pn = *(const uint32_t *)(page + MINIVMM_PAGENUM_OFFSET);
	uint32_t prefix = 0, j, x, want;
	bool lost, torn = false;

	if (i == pos)
		while (prefix < MINIVMM_LINES && line(page, prefix) == v + 1)
			prefix++;
	/* Numbered once its lines were first written. */
	lost = v ? pn != i : pn != 0 && !(pn == i && prefix == MINIVMM_LINES);
	for (j = 0; j < MINIVMM_LINES; j++) {
		x = line(page, j);
		want = j < prefix ? v + 1 : v;
		if (x < want)
			lost = true;
		if (x > want || (j != 0 && j != prefix && x != line(page, j - 1)))
			torn = true;
	}
	c->lost += lost;
	c->torn += torn;
}

/* Fills *out from the state block; -EPROTO where it is corrupt: before
 * pass 1 nothing is written, in a pass pos is a data page. */
static int state_read(const uint8_t *ram, uint32_t data0, uint64_t npages,
		      struct minivmm_check *out)
{
	const struct minivmm_state *st = (const struct minivmm_state *)(ram + MINIVMM_STATE_OFFSET);

	*out = (struct minivmm_check){
		.pass = st->pass,
		.pos = st->pos,
		.guest_errors = st->errors,
		.pages = npages - data0,
	};
	if (out->pass ? out->pos < data0 || out->pos >= npages : out->pos)
		return -EPROTO;
	return 0;
}

int minivmm_verify_hot_ram(const uint8_t *ram, uint64_t npages, struct minivmm_check *out)
{
	uint32_t data0 = minivmm_hot_data0(npages);
	int rc = state_read(ram, data0, npages, out);

	for (uint64_t i = data0; !rc && i < npages; i++)
		check_page_hot(ram, (uint32_t)i, out->pass ? out->pos : 0, out);
	return rc;
}

int minivmm_verify(struct minivmm *vmm, struct minivmm_check *out)
{
	struct minivmm_slot slot;
	const uint8_t *ram;
	uint32_t i, data0;
	int rc;

	rc = minivmm_pause(vmm);
	if (rc < 0)
		return rc;
	minivmm_get_slot(vmm, &slot);
	ram = slot.hva;
	if (vmm->guest == MINIVMM_GUEST_HOTSET) {
		rc = minivmm_verify_hot_ram(ram, vmm->npages, out);
		goto out;
	}
	minivmm_data_pages(vmm, &data0, NULL);
	rc = state_read(ram, data0, vmm->npages, out);
	for (i = data0; !rc && i < vmm->npages; i++)
		check_page(ram + (uint64_t)i * MINIVMM_PAGE, i, out->pass, out->pos, out);
out:
	minivmm_resume(vmm);
	return rc;
}
