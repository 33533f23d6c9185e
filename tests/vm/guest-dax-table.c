/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Part of guest-dax: the descriptor table a DAX region gets, kept by its
 * migration.  An 8 MiB MAP_SYNC file on the fsdax mount is registered: its
 * table has one clean descriptor per page, at the file's offsets, in 2 MB
 * compounds.  Then a real memory error is injected into one page
 * (MADV_HWPOISON on the DAX mapping: the kernel's memory-failure path for
 * device memory), and another page is recorded poisoned in the table by
 * hand, as an earlier migration would have.  The region moves to node 2:
 *  - the page the table knew is not read (no machine check, not even a
 *    SIGBUS): reported EHWPOISON, left where it is -- or, where the kernel
 *    has poison markers (UFFDIO_POISON), a marker in its copy's place;
 *  - the injected one: the kernel signals the processes that map it at
 *    once (SIGBUS); if the page then faults, the copy finds
 *    it and the table marks it poisoned.  (Linux 6.1 on fsdax maps it
 *    again, readable: a software injection leaves no media error, and the
 *    page moves like the others);
 *  - every other page is on node 2 with its bytes, clean in the table,
 *    its generation moved on (in flight, then clean).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memmig.h>

#include "guest-check.h"
#include "guest-dax-migrate.h"

#define T_LEN (8UL << 20)
#define T_PAGE 4096UL
#define KNOWN 37	/* poisoned in the table beforehand */
#define HIT 1100	/* MADV_HWPOISON */

/*
 * After a migration: the known page (-1: none) poisoned, the hit page (-1:
 * none) in hit_state when that is set, every other page clean and through
 * in flight (generation 2 or more), at its device offset.
 */
static void check_table(struct memmig_desc_table *t, uint64_t base, long known, long hit,
			int hit_state)
{
	uint64_t clean = 0, moved_on = 0, want = T_LEN / T_PAGE;

	for (uint64_t i = 0; i < T_LEN / T_PAGE; i++) {
		const struct memmig_desc *d;
		int s = memmig_desc_get_state(t, i);

		if (memmig_desc_get(t, i, &d)) {
			CHECK(0, "descriptor %llu", (unsigned long long)i);
			return;
		}
		if ((long)i == known) {
			CHECK(s == MEMMIG_DESC_POISONED, "the known page: state %d", s);
			want--;
			continue;
		}
		if ((long)i == hit && hit_state >= 0) {
			CHECK(s == hit_state, "the hit page: state %d, want %d", s, hit_state);
			want--;
			continue;
		}
		clean += s == MEMMIG_DESC_CLEAN;
		moved_on += d->generation >= 2 && d->offset == base + i * T_PAGE;
	}
	printf("table after: %llu pages clean, %llu with generation >= 2 at their "
	       "device offset, of %llu\n", (unsigned long long)clean,
	       (unsigned long long)moved_on, (unsigned long long)want);
	CHECK(clean == moved_on && clean == want, "pages not clean, or not through in flight");
}

static size_t on_node2(void *p)
{
	void *pages[T_LEN / T_PAGE];
	int status[T_LEN / T_PAGE];
	size_t n = 0;

	for (size_t i = 0; i < T_LEN / T_PAGE; i++)
		pages[i] = (uint8_t *)p + i * T_PAGE;
	if (syscall(SYS_move_pages, 0, T_LEN / T_PAGE, pages, NULL, status, 0))
		return 0;
	for (size_t i = 0; i < T_LEN / T_PAGE; i++)
		n += status[i] == 2;
	return n;
}

/* nr_hugepages, or -1. */
static long hugepages(long set)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", set >= 0 ? "w" : "r");
	long n = -1;

	if (!f)
		return -1;
	if (set >= 0)
		n = fprintf(f, "%ld\n", set) > 0 ? set : -1;
	else if (fscanf(f, "%ld", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

/*
 * Where 2 MB pages are reserved, an eager table takes them (a lazy one
 * stays off the pool, which is the guests'): 256 MiB of device, a 4 MiB
 * table on two hugetlb pages, every descriptor right.
 */
static void hugetlb_table(struct memmig_ctx *ctx)
{
	struct memmig_desc_opts o = { .sz = sizeof(o), .base = 1ULL << 30,
				      .len = 256UL << 20, .node = 2 };
	struct memmig_desc_table_info info = { .sz = sizeof(info) };
	struct memmig_desc_table *t = NULL;
	long before = hugepages(-1);
	uint64_t bad = 0;
	int rc;

	printf("== a descriptor table on hugetlb pages\n");
	if (before < 0 || hugepages(before + 4) < 0) {
		CHECK(0, "cannot reserve 2 MB pages");
		return;
	}
	rc = memmig_desc_table_new(ctx, &o, &t);
	CHECK(rc == 0, "eager table: %s", strerror(-rc));
	if (!rc) {
		memmig_desc_table_get_info(t, &info);
		for (uint64_t i = 0; i < info.count; i++) {
			const struct memmig_desc *d;

			bad += memmig_desc_get(t, i, &d) || d->offset != o.base + i * T_PAGE ||
			       d->head != (i & ~511ULL) || d->node != 2;
		}
		printf("eager table: backing %d (hugetlb %d), %llu descriptors, %llu wrong\n",
		       info.backing, MEMMIG_DESC_BACKING_HUGETLB,
		       (unsigned long long)info.count, (unsigned long long)bad);
		CHECK(info.backing == MEMMIG_DESC_BACKING_HUGETLB, "not on hugetlb pages");
		CHECK(bad == 0, "%llu descriptors wrong", (unsigned long long)bad);
		memmig_desc_table_unref(t);
	}
	o.flags = MEMMIG_DESC_LAZY;
	rc = memmig_desc_table_new(ctx, &o, &t);
	if (!rc) {
		memmig_desc_table_get_info(t, &info);
		printf("lazy table: backing %d\n", info.backing);
		CHECK(info.backing != MEMMIG_DESC_BACKING_HUGETLB, "a lazy table took hugetlb pages");
		memmig_desc_table_unref(t);
	}
	hugepages(before);
}

/* Fills the table's 8 MiB with a pattern of its own and keeps each page's
 * checksum. */
static void table_fill(uint64_t *w, uint64_t salt, uint64_t *sums)
{
	for (size_t i = 0; i < T_LEN / 8; i++)
		w[i] = i * 0x9e3779b97f4a7c15ULL ^ salt;
	for (size_t p = 0; p < T_LEN / T_PAGE; p++)
		sums[p] = guest_csum((uint8_t *)w + p * T_PAGE, T_PAGE);
}

/* A new table: one descriptor a page from offset 8 MiB, heads of 2 MB
 * compounds, all clean. */
static void check_fresh_table(struct memmig_desc_table *t,
			      const struct memmig_desc_table_info *info)
{
	const struct memmig_desc *desc;

	CHECK(info->count == T_LEN / T_PAGE && info->base == T_LEN, "table geometry");
	CHECK(!memmig_desc_get(t, 512, &desc) && (desc->flags & MEMMIG_DESC_HEAD) &&
	      desc->offset == T_LEN + 512 * T_PAGE &&
	      memmig_desc_get_state(t, 512) == MEMMIG_DESC_CLEAN,
	      "descriptor 512: not a clean head at its offset");
}

int dax_table_case(struct memmig_ctx *ctx, const char *dir)
{
	struct sigaction sa = { .sa_sigaction = guest_on_sigbus, .sa_flags = SA_SIGINFO }, old;
	struct memmig_region_desc d = { .sz = sizeof(d), .len = T_LEN };
	struct memmig_migrate_opts o = { .sz = sizeof(o), .target_node = 2 };
	struct memmig_desc_table_info info = { .sz = sizeof(info) };
	struct memmig_desc_table *t = NULL;
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t *w, sums[T_LEN / T_PAGE];
	int fd, rc, hit_code, ao_code, hit_state = -1;
	bool markers = dax_poison_markers(ctx);
	char path[256];

	fails = 0;
	hugetlb_table(ctx);
	printf("== the DAX region's descriptor table, with poisoned pages -> node 2\n");
	snprintf(path, sizeof(path), "%s/table.data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && !posix_fallocate(fd, 0, 2 * T_LEN), "%s: %s", path, strerror(errno));
	/* At file offset 8 MiB: the table's offsets are the file's. */
	w = mmap(NULL, T_LEN, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd,
		 T_LEN);
	CHECK(w != MAP_FAILED, "MAP_SYNC: %s", strerror(errno));
	if (fd < 0 || w == MAP_FAILED)
		return fails;
	table_fill(w, 0x7461626c65ULL, sums);

	d.addr = (uintptr_t)w;
	rc = memmig_region_new(ctx, &d, &r);
	CHECK(rc == 0, "region: %s", strerror(-rc));
	if (rc)
		goto out;
	rc = memmig_region_get_table(r, &t);
	CHECK(rc == 0, "the DAX region has no descriptor table: %d", rc);
	if (rc)
		goto out;
	memmig_desc_table_get_info(t, &info);
	printf("table: %llu descriptors, base %#llx, device %#x, %llu of %llu chunks "
	       "initialized\n", (unsigned long long)info.count,
	       (unsigned long long)info.base, info.node,
	       (unsigned long long)info.chunks_ready, (unsigned long long)info.chunks);
	check_fresh_table(t, &info);
	CHECK(memmig_desc_set_state(t, KNOWN, MEMMIG_DESC_POISONED, NULL) == 0,
	      "marking the known page");

	/* The kernel signals the processes that map a failed DAX page at
	 * once (the injecting one gets BUS_MCEERR_AR): noted, not fatal. */
	rc = hwpoison_page((uint8_t *)w + HIT * T_PAGE, &ao_code);
	sigaction(SIGBUS, &sa, &old);
	hit_code = rc ? 0 : guest_probe((uint8_t *)w + HIT * T_PAGE);
	printf("MADV_HWPOISON on a DAX page: %s (signal si_code %d); reading it: "
	       "si_code %d\n", rc ? strerror(-rc) : "done", ao_code, hit_code);
	if (hit_code == BUS_MCEERR_AR || hit_code == BUS_ADRERR)
		hit_state = MEMMIG_DESC_POISONED;

	rc = memmig_migrate(r, &o, &rep);
	printf("memmig_migrate: %d; EHWPOISON pages %llu, EIO pages %llu, EFAULT pages "
	       "%llu\n", rc, (unsigned long long)memmig_report_errno_pages(rep, EHWPOISON),
	       (unsigned long long)memmig_report_errno_pages(rep, EIO),
	       (unsigned long long)memmig_report_errno_pages(rep, EFAULT));
	CHECK(rc == 0, "memmig_migrate: %d", rc);
	CHECK(memmig_report_errno_pages(rep, EHWPOISON) >= 1, "the known page not reported");
	/* The known page was never read.  With poison markers its copy is
	 * one (a memory error when read); without, it stays mapped from the
	 * file, with the file's bytes. */
	rc = guest_probe((uint8_t *)w + KNOWN * T_PAGE);
	printf("the known page after: si_code %d (%s)\n", rc,
	       markers ? "a poison marker" : "the file's page, left where it was");
	if (markers)
		CHECK(rc == BUS_MCEERR_AR, "the known page's copy is no poison marker: %d", rc);
	else
		CHECK(rc == 0 && guest_csum((uint8_t *)w + KNOWN * T_PAGE, T_PAGE) == sums[KNOWN],
		      "the known page is not the file's any more");
	for (size_t p = 0; p < T_LEN / T_PAGE; p++) {
		if (p == KNOWN || (p == HIT && hit_state >= 0))
			continue;
		if (guest_csum((uint8_t *)w + p * T_PAGE, T_PAGE) != sums[p]) {
			CHECK(0, "page %zu: bytes changed", p);
			break;
		}
	}
	printf("pages on node 2: %zu of %lu\n", on_node2(w),
	       T_LEN / T_PAGE - 1 - (hit_state >= 0));
	CHECK(on_node2(w) == T_LEN / T_PAGE - 1 - (hit_state >= 0),
	      "not every readable page is on node 2");
	check_table(t, T_LEN, KNOWN, HIT, hit_state);
	sigaction(SIGBUS, &old, NULL);
out:
	memmig_report_unref(rep);
	memmig_desc_table_unref(t);
	memmig_region_unref(r);
	munmap(w, T_LEN);
	close(fd);
	unlink(path);
	return fails;
}

int dax_devdax_table_case(struct memmig_ctx *ctx, const char *dev)
{
	struct memmig_region_desc d = { .sz = sizeof(d), .len = T_LEN };
	struct memmig_migrate_opts o = { .sz = sizeof(o), .target_node = 2 };
	struct memmig_desc_table_info info = { .sz = sizeof(info) };
	struct memmig_desc_table *t = NULL;
	struct memmig_report *rep = NULL;
	struct memmig_region *r = NULL;
	uint64_t *w, sums[T_LEN / T_PAGE];
	int fd, rc;
	size_t bad = 0;

	fails = 0;
	printf("== the descriptor table of %s's region -> node 2\n", dev);
	fd = open(dev, O_RDWR | O_CLOEXEC);
	/* At device offset 8 MiB: the table's offsets are the device's. */
	w = fd < 0 ? MAP_FAILED : mmap(NULL, T_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, T_LEN);
	CHECK(w != MAP_FAILED, "%s: %s", dev, strerror(errno));
	if (w == MAP_FAILED) {
		if (fd >= 0)
			close(fd);
		return fails;
	}
	table_fill(w, 0x63786c64ULL, sums);
	d.addr = (uintptr_t)w;
	rc = memmig_region_new(ctx, &d, &r);
	CHECK(rc == 0, "region: %s", strerror(-rc));
	if (!rc)
		rc = memmig_region_get_table(r, &t);
	CHECK(rc == 0, "the device DAX region has no descriptor table: %d", rc);
	if (!rc) {
		memmig_desc_table_get_info(t, &info);
		printf("table: %llu descriptors, base %#llx\n", (unsigned long long)info.count,
		       (unsigned long long)info.base);
		check_fresh_table(t, &info);
		rc = memmig_migrate(r, &o, &rep);
		printf("memmig_migrate: %d\n", rc);
		CHECK(rc == 0, "memmig_migrate: %d (%s)", rc, strerror(-rc));
		for (size_t p = 0; p < T_LEN / T_PAGE; p++)
			bad += guest_csum((uint8_t *)w + p * T_PAGE, T_PAGE) != sums[p];
		printf("pages on node 2: %zu of %lu, %zu with other bytes\n", on_node2(w),
		       T_LEN / T_PAGE, bad);
		CHECK(on_node2(w) == T_LEN / T_PAGE && !bad, "not all on node 2 intact");
		check_table(t, T_LEN, -1, -1, -1);
	}
	memmig_report_unref(rep);
	memmig_region_unref(r);
	munmap(w, T_LEN);
	close(fd);
	return fails;
}
