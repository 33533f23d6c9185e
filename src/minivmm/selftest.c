/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * minivmm-selftest: runs the guest, checks it, moves its RAM the way a
 * live migration's swap does (without libmemmig), checks again, shows
 * that a lost write is caught, and times a pass and a pause.
 *
 *   minivmm-selftest [-m MiB] [-k kvm|thread] [-b anon|memfd]
 *                    [-r ring-entries] [-l]
 *
 * Without -k, -b or -r it runs, under KVM, anon, memfd, and anon with a
 * 4096-entry dirty ring, then the host-thread vCPU on anon and memfd.  The
 * ring must stay idle, dirty logging being off, unless -l turns logging
 * on for two passes (with a ring): then every page must come through the
 * ring.  Without /dev/kvm the KVM runs are skipped.
 * Exit: 0 pass, 1 fail, 77 when all it was to run needs a missing /dev/kvm.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "minivmm/vmm.h"

#define HUGE_ALIGN	(2ULL << 20)
#define PAUSES		21

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); return -1; } while (0)

struct harvest {
	struct minivmm *vmm;
	struct kvm_dirty_gfn *ring;
	uint32_t entries, fetch;
	uint64_t npages, entries_seen, bad;
	uint8_t *seen;		/* per guest page */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void nap(uint64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	nanosleep(&ts, NULL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint8_t *ram_of(struct minivmm *vmm)
{
	struct minivmm_slot s;

	minivmm_get_slot(vmm, &s);
	return s.hva;
}

static struct minivmm_state *state_of(struct minivmm *vmm)
{
	return (struct minivmm_state *)(ram_of(vmm) + MINIVMM_STATE_OFFSET);
}

static int fatal_check(struct minivmm *vmm)
{
	struct minivmm_stats st;

	minivmm_get_stats(vmm, &st);
	if (st.fatal)
		FAIL("vCPU stopped: %s (%d)\n", st.fatal_msg, st.fatal);
	return 0;
}

/* A pass takes about 50 ms per MiB where KVM emulates the guest. */
static int pass_timeout_ms(struct minivmm *vmm)
{
	struct minivmm_slot s;

	minivmm_get_slot(vmm, &s);
	return 60000 + (s.size >> 20) * 500;
}

/* Waits for `more` passes past the current one; returns the ns taken. */
static int64_t wait_passes(struct minivmm *vmm, unsigned int more)
{
	struct minivmm_stats st;
	uint64_t t0 = now_ns();
	int rc;

	minivmm_get_stats(vmm, &st);
	rc = minivmm_wait_pass(vmm, st.passes + more, more * pass_timeout_ms(vmm));
	if (rc < 0) {
		fatal_check(vmm);
		FAIL("waiting for pass %llu: %s\n",
		     (unsigned long long)(st.passes + more), strerror(-rc));
	}
	return now_ns() - t0;
}

static int verify_clean(struct minivmm *vmm, const char *when)
{
	struct minivmm_check c;
	struct minivmm_stats st;
	int rc = minivmm_verify(vmm, &c);

	if (rc < 0)
		FAIL("verify %s: %s\n", when, strerror(-rc));
	minivmm_get_stats(vmm, &st);
	printf("  verify %s: pass %u pos %u, %llu pages, %llu lost, %llu torn, "
	       "%u guest errors\n", when, c.pass, c.pos,
	       (unsigned long long)c.pages, (unsigned long long)c.lost,
	       (unsigned long long)c.torn, c.guest_errors);
	if (c.lost || c.torn || c.guest_errors || st.guest_errors)
		FAIL("verify %s found damage\n", when);
	return fatal_check(vmm);
}

static void *map_aligned_anon(uint64_t size)
{
	uint8_t *p, *at;

	p = mmap(NULL, size + HUGE_ALIGN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	at = (uint8_t *)(((uintptr_t)p + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1));
	if (at > p)
		munmap(p, at - p);
	munmap(at + size, p + HUGE_ALIGN - at);
	madvise(at, size, MADV_HUGEPAGE);
	return at;
}

static int slot_set(struct minivmm *vmm, const struct minivmm_slot *s,
		    uint32_t flags, void *hva, uint64_t size)
{
	struct kvm_userspace_memory_region r = {
		.slot = s->slot,
		.flags = flags,
		.guest_phys_addr = s->gpa,
		.memory_size = size,
		.userspace_addr = (uintptr_t)hva,
	};

	return ioctl(minivmm_vm_fd(vmm), KVM_SET_USER_MEMORY_REGION, &r) < 0 ?
	       -errno : 0;
}

/* An anonymous copy moved over the old address, as libmemmig swaps
 * anonymous RAM: KVM's slot keeps its address. */
static int move_mremap(struct minivmm *vmm, const struct minivmm_slot *s)
{
	void *copy = map_aligned_anon(s->size);

	if (!copy)
		return -errno;
	memcpy(copy, s->hva, s->size);
	if (mremap(copy, s->size, s->size, MREMAP_MAYMOVE | MREMAP_FIXED,
		   s->hva) == MAP_FAILED) {
		munmap(copy, s->size);
		return -errno;
	}
	return minivmm_set_slot_memory(vmm, s->hva, -1, 0);
}

/* A new memfd at a new address and the memslot re-added over it, as
 * libmemmig swaps fd-backed RAM. */
static int move_readd(struct minivmm *vmm, const struct minivmm_slot *s)
{
	int fd, rc;
	void *copy;

	fd = memfd_create("minivmm-selftest", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	copy = MAP_FAILED;
	if (!ftruncate(fd, s->size))
		copy = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (copy == MAP_FAILED) {
		rc = -errno;
		close(fd);
		return rc;
	}
	memcpy(copy, s->hva, s->size);
	/* The host-thread vCPU has no memslot in KVM. */
	rc = minivmm_vm_fd(vmm) < 0 ? 0 : slot_set(vmm, s, s->flags, s->hva, 0);
	if (!rc && minivmm_vm_fd(vmm) >= 0)
		rc = slot_set(vmm, s, s->flags, copy, s->size);
	if (!rc)
		rc = minivmm_set_slot_memory(vmm, copy, fd, 0);
	else
		munmap(copy, s->size);
	close(fd);
	return rc;
}

static int mapped(void *p)
{
	return msync(p, MINIVMM_PAGE, MS_ASYNC) == 0;
}

static int migrate(struct minivmm *vmm, int readd)
{
	const char *how = !readd ? "mremap" :
			  minivmm_vm_fd(vmm) < 0 ? "move to a new address" :
			  "memslot re-add";
	struct minivmm_slot s, now;
	uint64_t t0, t1, t2;
	char when[64];
	int rc, kept = 1;

	minivmm_pause(vmm);
	t0 = now_ns();
	minivmm_get_slot(vmm, &s);
	rc = readd ? move_readd(vmm, &s) : move_mremap(vmm, &s);
	t1 = now_ns();
	minivmm_get_slot(vmm, &now);
	/* The old memory outlives the pause... */
	if (!rc && now.hva != s.hva)
		kept = mapped(s.hva);
	minivmm_resume(vmm);
	t2 = now_ns();
	if (rc < 0)
		FAIL("moving the RAM (%s): %s\n", how, strerror(-rc));
	printf("  moved the RAM (%s) while paused: %.1f ms; resume, freeing "
	       "the old: %.1f ms\n", how, (t1 - t0) / 1e6, (t2 - t1) / 1e6);
	if (!kept)
		FAIL("the old memory was unmapped inside the pause\n");
	/* ...and not the resume. */
	if (now.hva != s.hva && mapped(s.hva))
		FAIL("the old memory is still mapped after the resume\n");
	if (wait_passes(vmm, 2) < 0)
		return -1;
	snprintf(when, sizeof(when), "after the %s", how);
	return verify_clean(vmm, when);
}

static int time_pauses(struct minivmm *vmm)
{
	uint64_t pause[PAUSES], both[PAUSES], t0, t1;
	int i;

	for (i = 0; i < PAUSES; i++) {
		nap(2000000);	/* the guest back in KVM_RUN */
		t0 = now_ns();
		minivmm_pause(vmm);
		t1 = now_ns();
		minivmm_resume(vmm);
		both[i] = now_ns() - t0;
		pause[i] = t1 - t0;
	}
	qsort(pause, PAUSES, sizeof(pause[0]), cmp_u64);
	qsort(both, PAUSES, sizeof(both[0]), cmp_u64);
	printf("  pause: median %.1f us (max %.1f); pause+resume: median %.1f us\n",
	       pause[PAUSES / 2] / 1e3, pause[PAUSES - 1] / 1e3,
	       both[PAUSES / 2] / 1e3);
	return fatal_check(vmm);
}

/* Takes every entry KVM published, hands it back, and has KVM re-arm
 * the pages.  On the vCPU thread when the ring fills, else paused. */
static int harvest(void *opaque, unsigned int vcpu)
{
	struct harvest *h = opaque;
	struct kvm_dirty_gfn *e;

	for (;;) {
		e = &h->ring[h->fetch & (h->entries - 1)];
		if (!(__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) &
		      KVM_DIRTY_GFN_F_DIRTY))
			break;
		if (e->slot != 0 || e->offset >= h->npages)
			h->bad++;
		else
			h->seen[e->offset] = 1;
		__atomic_store_n(&e->flags, KVM_DIRTY_GFN_F_RESET, __ATOMIC_RELEASE);
		h->fetch++;
		h->entries_seen++;
	}
	return ioctl(minivmm_vm_fd(h->vmm), KVM_RESET_DIRTY_RINGS, 0) < 0 ?
	       -errno : 0;
}

static int ring_idle_check(struct minivmm *vmm)
{
	struct minivmm_stats st;

	minivmm_get_stats(vmm, &st);
	if (st.ring_full_exits)
		FAIL("the ring filled with dirty logging off\n");
	printf("  dirty ring: idle with dirty logging off\n");
	return 0;
}

/* Dirty logging on for two passes: every page must come through the ring. */
static int ring_check(struct minivmm *vmm, struct harvest *h)
{
	struct minivmm_slot s;
	struct minivmm_stats st;
	uint64_t i, missing = 0;
	int rc;

	minivmm_get_slot(vmm, &s);
	minivmm_pause(vmm);
	rc = slot_set(vmm, &s, KVM_MEM_LOG_DIRTY_PAGES, s.hva, s.size);
	minivmm_resume(vmm);
	if (rc < 0)
		FAIL("dirty logging on: %s\n", strerror(-rc));
	if (wait_passes(vmm, 2) < 0)
		return -1;
	minivmm_pause(vmm);
	rc = slot_set(vmm, &s, s.flags, s.hva, s.size);
	if (!rc)
		rc = harvest(h, 0);
	minivmm_resume(vmm);
	if (rc < 0)
		FAIL("dirty logging off: %s\n", strerror(-rc));
	for (i = 0; i < h->npages; i++)
		missing += !h->seen[i];
	minivmm_get_stats(vmm, &st);
	printf("  dirty ring: %llu ring-full exits, %llu entries, %llu pages "
	       "never seen, %llu bad entries\n",
	       (unsigned long long)st.ring_full_exits,
	       (unsigned long long)h->entries_seen, (unsigned long long)missing,
	       (unsigned long long)h->bad);
	if (missing || h->bad)
		FAIL("the dirty ring missed writes\n");
	return verify_clean(vmm, "after dirty logging");
}

/* A write lost behind the guest's back: the verifier sees it at once, the
 * guest on its next pass. */
static int lost_write_check(struct minivmm *vmm)
{
	struct minivmm_state *state;
	struct minivmm_check c;
	struct minivmm_stats st;
	uint32_t page, pass;
	int tries, rc;

	for (tries = 0;; tries++) {
		minivmm_pause(vmm);
		state = state_of(vmm);
		if (state->pos >= 2)
			break;
		minivmm_resume(vmm);
		if (tries == 1000)
			FAIL("the guest never got past page 1\n");
		usleep(100);
	}
	pass = state->pass;
	page = state->pos - 1;
	*(uint32_t *)(ram_of(vmm) + (uint64_t)page * MINIVMM_PAGE +
		      5 * MINIVMM_LINE) = pass - 1;
	rc = minivmm_verify(vmm, &c);
	minivmm_resume(vmm);
	if (rc < 0)
		FAIL("verify: %s\n", strerror(-rc));
	printf("  lost write on page %u: verifier %llu lost, %llu torn\n", page,
	       (unsigned long long)c.lost, (unsigned long long)c.torn);
	if (c.lost != 1 || c.torn != 1)
		FAIL("the verifier missed the lost write\n");
	if (minivmm_wait_pass(vmm, pass + 1, pass_timeout_ms(vmm)) < 0)
		FAIL("the guest stopped after the lost write\n");
	minivmm_get_stats(vmm, &st);
	printf("  lost write on page %u: guest reported %llu error(s), page %u\n",
	       page, (unsigned long long)st.guest_errors, st.last_error_page);
	if (st.guest_errors != 1 || st.last_error_page != page ||
	    state_of(vmm)->errors != 1)
		FAIL("the guest missed the lost write\n");
	return fatal_check(vmm);
}

/* No VM, no ring, and none to be had. */
static int thread_api_check(struct minivmm *vmm, const struct minivmm_opts *opts)
{
	struct minivmm_opts o = *opts;
	struct minivmm *ringed;
	struct minivmm_slot s;
	uint32_t entries = 1;
	int rc;

	minivmm_get_slot(vmm, &s);
	if (minivmm_vm_fd(vmm) != -1 || minivmm_dirty_ring(vmm, &entries) ||
	    entries || s.slot || s.gpa || s.size != opts->mem)
		FAIL("the host-thread vCPU has a VM, a ring or another slot\n");
	o.dirty_ring = 4096;
	rc = minivmm_create(&o, &ringed);
	if (rc != -EINVAL) {
		if (!rc)
			minivmm_destroy(ringed);
		FAIL("a ring with the host-thread vCPU: %d, not -EINVAL\n", rc);
	}
	return 0;
}

static int run_one(const struct minivmm_opts *opts, int logging)
{
	struct harvest h = { 0 };
	struct minivmm *vmm;
	int64_t ns;
	int rc;

	printf("%s, %s, %llu MiB, dirty ring %u:\n",
	       opts->vcpu == MINIVMM_VCPU_THREAD ? "host thread" : "KVM",
	       opts->backing == MINIVMM_BACKING_MEMFD ? "memfd" : "anon",
	       (unsigned long long)(opts->mem >> 20), opts->dirty_ring);
	rc = minivmm_create(opts, &vmm);
	if (rc == -ENODEV) {
		printf("  SKIP: no /dev/kvm\n");
		return 77;
	}
	if (rc < 0)
		FAIL("minivmm_create: %s\n", strerror(-rc));
	if (opts->vcpu == MINIVMM_VCPU_THREAD && (rc = thread_api_check(vmm, opts))) {
		minivmm_destroy(vmm);
		return rc;
	}
	h.vmm = vmm;
	h.npages = opts->mem / MINIVMM_PAGE;
	h.ring = minivmm_dirty_ring(vmm, &h.entries);
	h.seen = calloc(h.npages, 1);
	minivmm_set_ring_full(vmm, harvest, &h);
	rc = h.seen ? minivmm_start(vmm) : -ENOMEM;
	if (rc < 0) {
		fprintf(stderr, "FAIL: minivmm_start: %s\n", strerror(-rc));
		goto out;
	}
	/* The first pass faults the RAM in; the next starts on a boundary. */
	rc = -1;
	if (wait_passes(vmm, 1) < 0 || (ns = wait_passes(vmm, 2)) < 0)
		goto out;
	printf("  one pass: %.2f ms\n", ns / 2 / 1e6);
	/* Checks land mid-pass, where page k is half written. */
	nap(ns / 5);
	if (verify_clean(vmm, "running") || time_pauses(vmm) ||
	    migrate(vmm, 0) ||
	    (opts->backing == MINIVMM_BACKING_MEMFD && migrate(vmm, 1)) ||
	    (h.ring && ring_idle_check(vmm)) ||
	    (h.ring && logging && ring_check(vmm, &h)))
		goto out;
	nap(ns / 3);
	if (lost_write_check(vmm))
		goto out;
	rc = 0;
out:
	minivmm_destroy(vmm);
	free(h.seen);
	return rc;
}

int main(int argc, char **argv)
{
	struct minivmm_opts opts = { .mem = 64ULL << 20 };
	static const struct minivmm_opts defaults[] = {
		{ .backing = MINIVMM_BACKING_ANON },
		{ .backing = MINIVMM_BACKING_MEMFD },
		{ .backing = MINIVMM_BACKING_ANON, .dirty_ring = 4096 },
		{ .backing = MINIVMM_BACKING_ANON, .vcpu = MINIVMM_VCPU_THREAD },
		{ .backing = MINIVMM_BACKING_MEMFD, .vcpu = MINIVMM_VCPU_THREAD },
	};
	int opt, all = 1, logging = 0, rc = 0, ran = 0;
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* progress, also into a log */
	while ((opt = getopt(argc, argv, "m:k:b:r:l")) != -1) {
		switch (opt) {
		case 'm':
			opts.mem = strtoull(optarg, NULL, 0) << 20;
			break;
		case 'k':
			all = 0;
			opts.vcpu = !strcmp(optarg, "kvm") ? MINIVMM_VCPU_KVM :
				    !strcmp(optarg, "thread") ? MINIVMM_VCPU_THREAD :
				    -1;
			break;
		case 'b':
			all = 0;
			opts.backing = !strcmp(optarg, "anon") ? MINIVMM_BACKING_ANON :
				       !strcmp(optarg, "memfd") ? MINIVMM_BACKING_MEMFD :
				       -1;
			break;
		case 'r':
			all = 0;
			opts.dirty_ring = strtoul(optarg, NULL, 0);
			break;
		case 'l':
			logging = 1;
			break;
		default:
			opts.backing = -1;
		}
	}
	if (opts.backing < 0 || opts.vcpu < 0 || optind < argc) {
		fprintf(stderr, "usage: %s [-m MiB] [-k kvm|thread] [-b anon|memfd] "
			"[-r ring-entries] [-l]\n", argv[0]);
		return 1;
	}
	if (!all) {
		rc = run_one(&opts, logging);
		ran = rc != 77;
		rc = rc == 77 ? 0 : rc;
	}
	for (i = 0; all && !rc && i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		struct minivmm_opts o = defaults[i];

		o.mem = opts.mem;
		rc = run_one(&o, logging);
		ran += rc != 77;
		rc = rc == 77 ? 0 : rc;
	}
	if (!rc && !ran) {
		printf("SKIP: no /dev/kvm\n");
		return 77;
	}
	printf("%s\n", rc ? "FAIL" : "PASS");
	return rc ? 1 : 0;
}
