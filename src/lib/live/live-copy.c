/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Guest memory that cannot be read during a live migration.  Every copy
 * of guest pages is machine-check-safe: a page that faults (a memory
 * error, a backing file cut short) is asked of the kernel through the
 * slot's fd, and if it stays unreadable it is recorded, its copy gets a
 * poison marker (the guest then gets a machine check there, as it would
 * have on the old memory, never zeros), it is not copied again, and the
 * VMM is told its guest-physical address.  Where no marker can be
 * installed the migration stops before the swap: the guest keeps its old
 * memory, whose page still faults.
 */
#include <errno.h>
#include <stdlib.h>

#include "lib/copy/copy-private.h"
#include "lib/live/live-private.h"

struct lost_ctx {
	struct memmig_live *l;
	uint64_t page;		/* slot page of the copy's first byte */
};

/* The slot pages [p, p + n) are lost: record, mark, never copy again. */
static void lost_add(struct memmig_live *l, uint64_t p, uint64_t n, int err)
{
	struct live_lost *last = l->nlost ? &l->lost[l->nlost - 1] : NULL;
	uint8_t *dst = l->dest.base + (p - l->first) * MEMMIG_PAGE_SIZE;

	for (uint64_t i = p; i < p + n; i++)
		bitmap_set(l->lost_map, i);
	l->rep.pages_poisoned += n;
	if (memmig_poison_mark(l->vm->ctx, dst, n * MEMMIG_PAGE_SIZE) < 0)
		l->unmarked += n;
	if (last && last->page + last->n == p && last->err == err) {
		last->n += n;
		return;
	}
	if (l->nlost == l->lost_cap) {
		unsigned int cap = l->lost_cap ? 2 * l->lost_cap : 16;
		struct live_lost *v = realloc(l->lost, cap * sizeof(*v));

		if (!v) {
			l->lost_enomem = true; /* the run fails: nothing is hidden */
			return;
		}
		l->lost = v;
		l->lost_cap = cap;
	}
	l->lost[l->nlost++] = (struct live_lost){ .page = p, .n = n, .err = err };
}

static void on_bad(void *opaque, uint64_t off, uint64_t len, int err)
{
	struct lost_ctx *c = opaque;
	uint64_t first = c->page + off / MEMMIG_PAGE_SIZE;

	/* A span is one page at most; a page-aligned copy gives whole ones. */
	lost_add(c->l, first, (off % MEMMIG_PAGE_SIZE + len + MEMMIG_PAGE_SIZE - 1) / MEMMIG_PAGE_SIZE, err);
}

void memmig_live_copy(struct memmig_live *l, uint64_t page, uint64_t n,
		      unsigned int flags)
{
	struct lost_ctx c = { .l = l, .page = page };
	const struct memmig_mc_opts o = {
		.sz = sizeof(o), .flags = flags | l->dest.copy_flags | MEMMIG_COPY_NODRAIN,
		.src_fd = l->slot.fd,
		.src_offset = l->slot.fd_offset + page * MEMMIG_PAGE_SIZE,
		.bad = on_bad, .opaque = &c,
	};

	/* In copy_dirty()'s batch. */
	memmig_copy_mc(l->vm->ctx, l->dest.base + (page - l->first) * MEMMIG_PAGE_SIZE,
		       (const uint8_t *)l->slot.hva + page * MEMMIG_PAGE_SIZE,
		       n * MEMMIG_PAGE_SIZE, &o);
}

int memmig_live_lost_check(struct memmig_live *l)
{
	if (l->lost_enomem)
		return -ENOMEM;
	if (!l->unmarked)
		return 0;
	err(l->vm->ctx, "slot %u: guest memory that cannot be read, and no poison "
			"marker for its copy (UFFDIO_POISON: Linux 6.6, anonymous or "
			"shmem memory): the guest stays where it is\n", l->slot.slot);
	return -EHWPOISON;
}

void memmig_live_lost_mask(struct memmig_live *l, size_t w, size_t n)
{
	if (!l->rep.pages_poisoned)
		return;
	for (size_t i = w; i < w + n; i++)
		l->dirty[i] &= ~l->lost_map[i];
}

static int cmp_lost(const void *a, const void *b)
{
	const struct live_lost *x = a, *y = b;

	return x->page < y->page ? -1 : x->page > y->page;
}

/* After the run: sorted for the report, said to the VMM. */
int memmig_live_lost_finish(struct memmig_live *l)
{
	struct memmig_vm *vm = l->vm;

	if (!l->nlost && !l->lost_enomem)
		return 0;
	qsort(l->lost, l->nlost, sizeof(*l->lost), cmp_lost);
	l->rep.poisoned_ranges = l->nlost;
	warn(vm->ctx, "slot %u: %llu pages could not be read\n", l->slot.slot,
	     (unsigned long long)l->rep.pages_poisoned);
	for (unsigned int i = 0; vm->ops.poisoned && i < l->nlost; i++)
		vm->ops.poisoned(vm->opaque, l->slot.slot,
				 l->slot.gpa + l->lost[i].page * MEMMIG_PAGE_SIZE,
				 l->lost[i].n * MEMMIG_PAGE_SIZE, l->lost[i].err);
	return l->lost_enomem ? -ENOMEM : 0;
}

int memmig_live_get_poisoned(const struct memmig_live *l, unsigned int idx,
			     uint64_t *gpa, uint64_t *len, int *err)
{
	if (!l || idx >= l->rep.poisoned_ranges)
		return -EINVAL;
	if (gpa)
		*gpa = l->slot.gpa + l->lost[idx].page * MEMMIG_PAGE_SIZE;
	if (len)
		*len = l->lost[idx].n * MEMMIG_PAGE_SIZE;
	if (err)
		*err = l->lost[idx].err;
	return 0;
}
