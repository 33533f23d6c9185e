/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Portable descriptor fill: memcpy of the template, then the two fields. */
#include <string.h>

#include "lib/copy/arch/arch.h"

static void fill_memcpy(struct memmig_desc *d, const struct memmig_desc *tmpl,
			size_t n, uint64_t offset, uint64_t head,
			uint64_t head_step)
{
	for (size_t k = 0; k < n; k++) {
		memcpy(&d[k], tmpl, sizeof(*tmpl));
		d[k].offset = offset + k * MEMMIG_DESC_PAGE_SIZE;
		d[k].head = head + k * head_step;
	}
}

memmig_desc_fill_fn memmig_arch_desc_filler(int nt_prim, int *store)
{
	*store = MEMMIG_DESC_STORE_TEMPORAL;	/* no NT stores in C */
	return fill_memcpy;
}
