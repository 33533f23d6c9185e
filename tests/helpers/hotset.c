/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hotset: a workload whose hot set moves, and which measures where its own
 * pages are while it runs: the program that tiering (memmigd's, the
 * kernel's) is judged by.  It maps MIB MiB of anonymous private memory
 * (2 MiB aligned, no memory policy: a VMA policy would stop the kernel's
 * tiering), fills every 4 KiB page with a pattern of its index, optionally
 * moves it all to --start-node, then runs N phases.  In phase k the hot set
 * is PCT% of the region (whole 2 MiB units) from unit k*PCT% on, wrapping;
 * the phase writes only those pages (a counter word each, over and over)
 * and never touches the others.  A second thread asks the kernel for the
 * node of every page every S ms (move_pages(2) without nodes).  At the end
 * every page is checked, and the figures of the run are summed up.
 *
 *   hotset --size MIB --hot-pct PCT --phase-ms MS --phases N
 *          --interval-ms I --fast NODES --slow NODES [--start-node N]
 *          [--sample-ms S] [--ready FILE] [--go-signal] [--qemu PATH]
 *
 * NODES: a list like 0,1 or 0-1.  I is the tiering's decision interval:
 * the summary reads the placement 1 and 2 intervals after each change of
 * phase.  S defaults to I/4.  --ready FILE gets the READY line too (written
 * whole, by rename); --go-signal waits for SIGUSR1 after READY before the
 * phases begin.  SIGINT or SIGTERM ends the phases early (still checked).
 *
 * Output on stdout, one line each, in this order (t_ms: milliseconds since
 * the phases began; percentages with one decimal; "na" where no sample
 * was taken):
 *   START node=<N> pages=<n> moved=<n> not_moved=<n> retries=<n>
 *         [err=<ENAME of a page not there>]      (with --start-node only)
 *   READY pid=<pid> addr=0x<hex> len=<bytes>
 *   PHASE k=<k> t_ms=<ms> first_page=<n> pages=<n>       (as it begins)
 *   SAMPLE t_ms=<ms> phase=<k> hot_fast_pct=<% of phase k's hot pages on
 *          a --fast node> slow_pct=<% of all pages on a --slow node>
 *          absent=<pages not present>
 *   VERIFY pages=<n> bad=<n>
 *   CHANGE k=<k> hot_fast_pct_at_1i=<pct> hot_fast_pct_at_2i=<pct>
 *          (for k >= 1: the first sample of phase k at or after the change
 *          plus 1 and 2 intervals)
 *   SUMMARY hot_fast_min_2i=<the least at_2i; na if a change has none>
 *          slow_pct_mean=<mean slow_pct of the samples in the second half
 *          of every phase> slow_phase_min=<the lowest such mean of one
 *          phase> slow_phase_max=<the highest> samples=<n>
 *          stall_max_ms=<the longest the writer went between two looks at
 *          the clock, 64 page writes apart: a write that waited for a page
 *          being migrated shows here, and so does the vCPU being scheduled
 *          out; the coarse clock's tick, a few ms, is its resolution>
 *   RUSAGE utime_s=<s> stime_s=<s> phases_utime_s=<s> phases_stime_s=<s>
 *          sampler_utime_s=<s> sampler_stime_s=<s>
 *          (the whole process; the process from the start of the phases on,
 *          which is what tiering costs it; the sampler thread's part)
 *   GUEST passes=<n> errors=<n>  (--qemu, before VERIFY: the guest's passes
 *          over its window during the phases, its failed checks)
 * --qemu PATH: the workload is a QEMU/KVM guest (hotset-qemu.h), MIB MiB of
 * RAM, the binary at PATH: a program inside the guest writes the hot set,
 * which hotset moves through the guest's state block.  Unit 0 (the guest's
 * code and its table of writes) is always hot, and the window takes the
 * rest of the hot share, from unit 1 on, the next units each phase.  READY
 * names QEMU's pid and where it holds the guest's RAM; stall_max_ms is the
 * guest's own (its TSC, page to page); RUSAGE's process times are QEMU's
 * (its sampler's: 0, it runs in hotset).  The guest counts its own failed
 * checks, and every page is checked with QEMU stopped at the end: VERIFY's
 * bad is the pages lost, plus those torn, plus the guest's failed checks.
 * Errors go to stderr with the errno name.
 * Exit: 0 every page verified, 1 a page was bad or an error, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/mempolicy.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hotset-qemu.h"

#define PAGE		4096UL
#define UNIT_PAGES	512UL		/* 2 MiB: the unit of the hot set */
#define WORDS		(PAGE / sizeof(uint64_t))
#define MAX_NODE	1024
#define MAX_SAMPLES	(1UL << 20)
#define MAX_BAD_SHOWN	5

struct nodeset {
	uint64_t bits[MAX_NODE / 64];
};

struct sample {
	uint32_t t_ms;
	uint32_t phase;
	double hot_fast_pct;
	double slow_pct;
	unsigned long absent;
};

struct opts {
	unsigned long size_mib, hot_pct, phase_ms, phases, interval_ms, sample_ms;
	long start_node;
	struct nodeset fast, slow;
	const char *ready;
	bool go_signal;
	const char *qemu;
};

/* The run: the region, the hot sets, what the sampler found. */
static struct {
	struct opts o;
	struct hotset_qemu q;		/* with --qemu: the guest */
	pid_t pid;			/* whose pages: 0 (ours) or QEMU's */
	uint64_t *mem;
	unsigned long npages, nunits, hot_units;
	uint64_t *expected;		/* the counter each page should hold */
	void **pages;			/* move_pages' page list */
	int *status;
	struct timespec t0;		/* when the phases began */
	uint32_t *phase_t;		/* when each phase began, ms since t0 */
	atomic_uint phase;
	atomic_bool sampler_stop;
	struct sample *samples;
	unsigned long nsamples, max_samples;
	struct rusage start_ru;		/* the process's, as the phases began */
	struct rusage sampler_ru;
	int sampler_err;
	double stall_max_ms;		/* the writer's longest gap */
	uint32_t guest_pass0;		/* --qemu: the guest's pass then */
} run;

static volatile sig_atomic_t stop_req;

static void on_stop(int sig)
{
	(void)sig;
	stop_req = 1;
}

static const char *errname(int e)
{
	static __thread char buf[24];
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	const char *n = strerrorname_np(e);

	if (n)
		return n;
#endif
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

static long sys_move_pages(unsigned long count, void **pages, const int *nodes,
			   int *status, int flags)
{
	return syscall(SYS_move_pages, run.pid, count, pages, nodes, status, flags);
}

static double ms_since(const struct timespec *t)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC, &n);
	return (n.tv_sec - t->tv_sec) * 1e3 + (n.tv_nsec - t->tv_nsec) / 1e6;
}

static double coarse_ms_since(const struct timespec *t)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &n);
	return (n.tv_sec - t->tv_sec) * 1e3 + (n.tv_nsec - t->tv_nsec) / 1e6;
}

static double tv_s(const struct timeval *tv)
{
	return tv->tv_sec + tv->tv_usec / 1e6;
}

/* The pattern of word w of page p: its index, mixed, so that a page or a
 * word that lands in the wrong place shows. */
static uint64_t pattern(unsigned long p, unsigned long w)
{
	uint64_t x = ((uint64_t)p * WORDS + w + 1) * 0x9e3779b97f4a7c15ULL;

	x ^= x >> 29;
	return x ^ 0x686f74736574ULL;	/* "hotset" */
}

static bool node_in(const struct nodeset *s, int n)
{
	return n >= 0 && n < MAX_NODE && (s->bits[n / 64] >> (n % 64)) & 1;
}

/* "0,2-3" -> a set; 0 or -EINVAL */
static int parse_nodes(const char *arg, struct nodeset *s)
{
	const char *p = arg;
	char *end;

	memset(s, 0, sizeof(*s));
	if (!*p)
		return -EINVAL;
	for (;;) {
		unsigned long a, b;

		errno = 0;
		a = strtoul(p, &end, 10);
		if (end == p || errno || a >= MAX_NODE)
			return -EINVAL;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (end == p || errno || b >= MAX_NODE || b < a)
				return -EINVAL;
		}
		for (unsigned long n = a; n <= b; n++)
			s->bits[n / 64] |= 1ULL << (n % 64);
		if (!*end)
			return 0;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
}

static int parse_ul(const char *name, const char *arg, unsigned long min,
		    unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(arg, &end, 10);
	if (end == arg || *end || errno || *v < min || *v > max || arg[0] == '-') {
		fprintf(stderr, "hotset: --%s wants a number from %lu to %lu, not '%s'\n",
			name, min, max, arg);
		return -EINVAL;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: hotset --size MIB --hot-pct PCT --phase-ms MS --phases N\n"
		"              --interval-ms I --fast NODES --slow NODES [--start-node N]\n"
		"              [--sample-ms S] [--ready FILE] [--go-signal] [--qemu PATH]\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "hot-pct", required_argument, NULL, 'p' },
		{ "phase-ms", required_argument, NULL, 'm' },
		{ "phases", required_argument, NULL, 'n' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "fast", required_argument, NULL, 'f' },
		{ "slow", required_argument, NULL, 'w' },
		{ "start-node", required_argument, NULL, 'S' },
		{ "sample-ms", required_argument, NULL, 'I' },
		{ "ready", required_argument, NULL, 'r' },
		{ "go-signal", no_argument, NULL, 'g' },
		{ "qemu", required_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 }
	};
	unsigned long v;
	bool fast = false, slow = false;
	int c, rc = 0;

	memset(o, 0, sizeof(*o));
	o->start_node = -1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1 && !rc) {
		switch (c) {
		case 's': rc = parse_ul("size", optarg, 2, 65536, &o->size_mib); break;
		case 'p': rc = parse_ul("hot-pct", optarg, 1, 100, &o->hot_pct); break;
		case 'm': rc = parse_ul("phase-ms", optarg, 10, 3600000, &o->phase_ms); break;
		case 'n': rc = parse_ul("phases", optarg, 1, 1000, &o->phases); break;
		case 'i': rc = parse_ul("interval-ms", optarg, 1, 600000, &o->interval_ms); break;
		case 'I': rc = parse_ul("sample-ms", optarg, 1, 60000, &o->sample_ms); break;
		case 'S':
			rc = parse_ul("start-node", optarg, 0, MAX_NODE - 1, &v);
			o->start_node = (long)v;
			break;
		case 'f':
		case 'w':
			rc = parse_nodes(optarg, c == 'f' ? &o->fast : &o->slow);
			if (rc)
				fprintf(stderr, "hotset: bad node list '%s'\n", optarg);
			*(c == 'f' ? &fast : &slow) = true;
			break;
		case 'r': o->ready = optarg; break;
		case 'g': o->go_signal = true; break;
		case 'q': o->qemu = optarg; break;
		default: rc = -EINVAL;
		}
	}
	if (rc || optind != argc)
		return -EINVAL;
	if (!o->size_mib || !o->hot_pct || !o->phase_ms || !o->phases ||
	    !o->interval_ms || !fast || !slow) {
		fprintf(stderr, "hotset: --size, --hot-pct, --phase-ms, --phases, --interval-ms,"
			" --fast and --slow are needed\n");
		return -EINVAL;
	}
	if (o->size_mib % 2) {
		fprintf(stderr, "hotset: --size is in whole 2 MiB units\n");
		return -EINVAL;
	}
	if (!o->sample_ms)
		o->sample_ms = o->interval_ms / 4 ? o->interval_ms / 4 : 1;
	return 0;
}

/* The units the hot set moves through: with --qemu, unit 0 is hot anyway. */
static unsigned long window_units(void)
{
	return run.o.qemu ? run.hot_units - 1 : run.hot_units;
}

static unsigned long hot_first_unit(unsigned long k)
{
	unsigned long w = window_units();

	return run.o.qemu ? 1 + k * w % (run.nunits - w) : (k * run.hot_units) % run.nunits;
}

static bool page_hot(unsigned long p, unsigned long k)
{
	unsigned long u = p / UNIT_PAGES, first = hot_first_unit(k);

	if (run.o.qemu)
		return !u || (u >= first && u - first < window_units());
	return (u + run.nunits - first) % run.nunits < run.hot_units;
}

/* The guest's window for phase k. */
static int qemu_window(unsigned long k)
{
	return hotset_qemu_window(&run.q, (uint32_t)(hot_first_unit(k) * UNIT_PAGES - run.q.data0),
				  (uint32_t)(window_units() * UNIT_PAGES));
}

static void qemu_end(void)
{
	hotset_qemu_stop(&run.q);
}

/* The QEMU guest, running, its window at phase 0's; 0 or -errno. */
static int qemu_setup(void)
{
	char why[256] = "";
	int rc;

	if (run.hot_units < 2 || run.hot_units >= run.nunits) {
		fprintf(stderr, "hotset: --qemu: %lu units of 2 MiB: too few for %lu %% hot"
			" besides unit 0\n", run.nunits, run.o.hot_pct);
		return -EINVAL;
	}
	atexit(qemu_end);
	rc = hotset_qemu_start(&run.q, run.o.qemu, run.o.size_mib, why, sizeof(why));
	if (!rc && (rc = qemu_window(0)))
		snprintf(why, sizeof(why), "the guest's window: %s", errname(-rc));
	if (rc)
		fprintf(stderr, "hotset: --qemu %s: %s\n", run.o.qemu, why);
	run.pid = run.q.pid;
	return rc;
}

/* Maps and fills the region (or starts the QEMU guest), and the
 * bookkeeping; 0 or -errno. */
static int region_setup(void)
{
	size_t len = run.o.size_mib << 20, align = UNIT_PAGES * PAGE;
	uint8_t *p;
	int rc;

	run.npages = len / PAGE;
	run.nunits = run.npages / UNIT_PAGES;
	run.hot_units = (run.nunits * run.o.hot_pct + 50) / 100;
	if (!run.hot_units)
		run.hot_units = 1;
	if (run.o.qemu) {
		rc = qemu_setup();
		if (rc)
			return rc;
		p = (uint8_t *)(uintptr_t)run.q.hva;
	} else {
		p = mmap(NULL, len + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
		if (p == MAP_FAILED)
			return -errno;
		p = (uint8_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
		run.mem = (uint64_t *)p;
	}
	run.expected = malloc(run.npages * sizeof(*run.expected));
	run.pages = malloc(run.npages * sizeof(*run.pages));
	run.status = malloc(run.npages * sizeof(*run.status));
	run.phase_t = calloc(run.o.phases, sizeof(*run.phase_t));
	run.max_samples = run.o.phases * run.o.phase_ms / run.o.sample_ms + 16;
	if (run.max_samples > MAX_SAMPLES)
		run.max_samples = MAX_SAMPLES;
	run.samples = calloc(run.max_samples, sizeof(*run.samples));
	if (!run.expected || !run.pages || !run.status || !run.phase_t || !run.samples)
		return -ENOMEM;
	for (unsigned long i = 0; i < run.npages; i++) {
		uint64_t *pg = (uint64_t *)(p + i * PAGE);

		run.pages[i] = pg;
		if (run.o.qemu)
			continue;
		run.expected[i] = pattern(i, 0);
		for (unsigned long w = 0; w < WORDS; w++)
			pg[w] = pattern(i, w);
	}
	return 0;
}

/* Every page to --start-node; says how many did not go.  A page of a
 * huge page whose head went in the same call can say EBUSY while it went
 * with it: where each page is is asked afterwards, and the pages not there
 * are tried again, a few times. */
static int region_move(int node)
{
	unsigned long not_moved = run.npages, retries = 0, batch = 4096;
	int *nodes = malloc(batch * sizeof(*nodes)), last_err = 0;
	void **left = malloc(run.npages * sizeof(*left));

	if (!nodes || !left) {
		free(nodes);
		free(left);
		return -ENOMEM;
	}
	for (unsigned long i = 0; i < batch; i++)
		nodes[i] = node;
	memcpy(left, run.pages, run.npages * sizeof(*left));
	for (int round = 0; round < 4 && not_moved; round++) {
		unsigned long n_left = not_moved;

		retries += round > 0;
		for (unsigned long i = 0; i < n_left; i += batch) {
			unsigned long n = n_left - i < batch ? n_left - i : batch;

			if (sys_move_pages(n, left + i, nodes, run.status, MPOL_MF_MOVE) < 0) {
				int e = errno;

				fprintf(stderr, "hotset: move_pages to node %d: %s\n", node, errname(e));
				free(nodes);
				free(left);
				return -e;
			}
		}
		/* Where they are now. */
		if (sys_move_pages(n_left, left, NULL, run.status, 0) < 0) {
			int e = errno;

			fprintf(stderr, "hotset: move_pages (query): %s\n", errname(e));
			free(nodes);
			free(left);
			return -e;
		}
		not_moved = 0;
		for (unsigned long i = 0; i < n_left; i++) {
			if (run.status[i] == node)
				continue;
			if (run.status[i] < 0)
				last_err = -run.status[i];
			left[not_moved++] = left[i];
		}
	}
	free(nodes);
	free(left);
	printf("START node=%d pages=%lu moved=%lu not_moved=%lu retries=%lu", node, run.npages,
	       run.npages - not_moved, not_moved, retries);
	if (not_moved && last_err)
		printf(" err=%s", errname(last_err));
	printf("\n");
	fflush(stdout);
	return 0;
}

/* One look at where every page is. */
static int sample_take(void)
{
	unsigned long hot = 0, hot_fast = 0, slow = 0, absent = 0;
	unsigned int k = atomic_load(&run.phase);
	double t = ms_since(&run.t0);
	struct sample *s;

	if (sys_move_pages(run.npages, run.pages, NULL, run.status, 0) < 0)
		return -errno;
	for (unsigned long p = 0; p < run.npages; p++) {
		int st = run.status[p];
		bool h = page_hot(p, k);

		hot += h;
		if (st < 0) {
			absent++;
			continue;
		}
		hot_fast += h && node_in(&run.o.fast, st);
		slow += node_in(&run.o.slow, st);
	}
	if (run.nsamples == run.max_samples)
		return 0;
	s = &run.samples[run.nsamples++];
	s->t_ms = (uint32_t)t;
	s->phase = k;
	s->hot_fast_pct = 100.0 * hot_fast / hot;
	s->slow_pct = 100.0 * slow / run.npages;
	s->absent = absent;
	printf("SAMPLE t_ms=%u phase=%u hot_fast_pct=%.1f slow_pct=%.1f absent=%lu\n",
	       s->t_ms, s->phase, s->hot_fast_pct, s->slow_pct, s->absent);
	fflush(stdout);
	return 0;
}

static void *sampler(void *arg)
{
	struct timespec next = run.t0;

	(void)arg;
	while (!atomic_load(&run.sampler_stop)) {
		int rc = sample_take();

		if (rc) {
			run.sampler_err = rc;
			break;
		}
		/* The next deadline after now: a slow look skips, not drifts. */
		do {
			next.tv_nsec += (long)(run.o.sample_ms % 1000) * 1000000;
			next.tv_sec += run.o.sample_ms / 1000 + next.tv_nsec / 1000000000;
			next.tv_nsec %= 1000000000;
		} while (ms_since(&next) > 0);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	getrusage(RUSAGE_THREAD, &run.sampler_ru);
	return NULL;
}

/* Phase k of the QEMU guest: its window moved, then its time. */
static void phase_run_qemu(unsigned long k, double end)
{
	int rc = qemu_window(k);

	if (rc) {
		fprintf(stderr, "hotset: the guest's window: %s\n", errname(-rc));
		stop_req = 1;
		return;
	}
	while (!stop_req && ms_since(&run.t0) < end) {
		double d = end - ms_since(&run.t0);

		usleep((useconds_t)((d > 100 ? 100 : d > 0 ? d : 0) * 1000));
	}
}

/* Phase k: write every page of its hot set, over and over, until its end. */
static void phase_run(unsigned long k)
{
	unsigned long first = hot_first_unit(k) * UNIT_PAGES, n = window_units() * UNIT_PAGES;
	double end = (double)(k + 1) * run.o.phase_ms, last = 0;
	struct timespec c0;

	/* The end, on the coarse clock: read without a system call whatever
	 * the clock source (HPET in a TCG guest: a call each time). */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &c0);
	end -= ms_since(&run.t0);

	run.phase_t[k] = (uint32_t)ms_since(&run.t0);
	atomic_store(&run.phase, (unsigned int)k);
	printf("PHASE k=%lu t_ms=%u first_page=%lu pages=%lu\n", k, run.phase_t[k], first, n);
	fflush(stdout);
	if (run.o.qemu) {
		phase_run_qemu(k, (double)(k + 1) * run.o.phase_ms);
		return;
	}
	while (!stop_req) {
		for (unsigned long j = 0; j < n; j++) {
			unsigned long p = (first + j) % run.npages;

			run.mem[p * WORDS]++;
			run.expected[p]++;
			if (!(j & 63)) {
				double now = coarse_ms_since(&c0);

				/* A write that waited on a migration entry. */
				if (now - last > run.stall_max_ms)
					run.stall_max_ms = now - last;
				last = now;
				if (stop_req || now >= end)
					return;
			}
		}
	}
}

/* The QEMU guest's pages, with QEMU stopped, and the guest's own checks;
 * its longest stall.  Bad pages. */
static unsigned long region_verify_qemu(void)
{
	struct minivmm_check c;
	struct minivmm_state st;
	unsigned long bad;
	int rc = hotset_qemu_state(&run.q, &st);

	if (!rc)
		run.stall_max_ms = (double)st.stall_max / run.q.tsc_hz * 1e3;
	if (!rc)
		rc = hotset_qemu_verify(&run.q, &c);
	if (!rc)
		printf("GUEST passes=%u errors=%u\n", c.pass - run.guest_pass0, c.guest_errors);
	if (rc) {
		fprintf(stderr, "hotset: the guest's RAM: %s\n", errname(-rc));
		return run.npages;
	}
	bad = c.lost + c.torn + c.guest_errors;
	if (bad)
		fprintf(stderr, "hotset: the guest: pages lost %llu, torn %llu, failed checks"
			" of its own %u (pass %u, page %u)\n", (unsigned long long)c.lost,
			(unsigned long long)c.torn, c.guest_errors, c.pass, c.pos);
	return bad;
}

/* Every page, hot or cold: its counter and its pattern.  Bad pages. */
static unsigned long region_verify(void)
{
	unsigned long bad = 0;

	if (run.o.qemu)
		return region_verify_qemu();
	for (unsigned long p = 0; p < run.npages; p++) {
		const uint64_t *pg = run.mem + p * WORDS;
		unsigned long w = 1;

		if (pg[0] == run.expected[p])
			while (w < WORDS && pg[w] == pattern(p, w))
				w++;
		if (pg[0] == run.expected[p] && w == WORDS)
			continue;
		if (bad++ < MAX_BAD_SHOWN)
			fprintf(stderr, "hotset: page %lu (%p) bad: counter %#llx, expected %#llx%s\n",
				p, (void *)pg, (unsigned long long)pg[0],
				(unsigned long long)run.expected[p],
				pg[0] == run.expected[p] ? ", pattern broken" : "");
	}
	return bad;
}

/* The first sample of phase k at or after ms; NULL if none. */
static const struct sample *sample_at(unsigned long k, double ms)
{
	for (unsigned long i = 0; i < run.nsamples; i++)
		if (run.samples[i].phase == k && run.samples[i].t_ms >= ms)
			return &run.samples[i];
	return NULL;
}

static void pct_print(const char *name, const struct sample *s, bool last)
{
	if (s)
		printf("%s=%.1f%s", name, s->hot_fast_pct, last ? "\n" : " ");
	else
		printf("%s=na%s", name, last ? "\n" : " ");
}

static void summary_print(unsigned long phases_done)
{
	double min2 = 101, slow_sum = 0, ph_min = 101, ph_max = -1;
	unsigned long slow_n = 0;
	bool min2_na = phases_done < 2, phase_na = !phases_done;

	for (unsigned long k = 1; k < phases_done; k++) {
		const struct sample *s1 = sample_at(k, run.phase_t[k] + (double)run.o.interval_ms);
		const struct sample *s2 = sample_at(k, run.phase_t[k] + 2.0 * run.o.interval_ms);

		printf("CHANGE k=%lu ", k);
		pct_print("hot_fast_pct_at_1i", s1, false);
		pct_print("hot_fast_pct_at_2i", s2, true);
		if (!s2)
			min2_na = true;
		else if (s2->hot_fast_pct < min2)
			min2 = s2->hot_fast_pct;
	}
	/* The slow share in the second half of each phase, and of all. */
	for (unsigned long k = 0; k < phases_done; k++) {
		double sum = 0, m;
		unsigned long n = 0;

		for (unsigned long i = 0; i < run.nsamples; i++) {
			const struct sample *s = &run.samples[i];

			if (s->phase == k && s->t_ms >= run.phase_t[k] + run.o.phase_ms / 2) {
				sum += s->slow_pct;
				n++;
			}
		}
		if (!n) {
			phase_na = true;
			continue;
		}
		slow_sum += sum;
		slow_n += n;
		m = sum / n;
		ph_min = m < ph_min ? m : ph_min;
		ph_max = m > ph_max ? m : ph_max;
	}
	printf("SUMMARY hot_fast_min_2i=");
	if (min2_na)
		printf("na");
	else
		printf("%.1f", min2);
	printf(" slow_pct_mean=");
	if (slow_n)
		printf("%.1f", slow_sum / slow_n);
	else
		printf("na");
	if (phase_na)
		printf(" slow_phase_min=na slow_phase_max=na");
	else
		printf(" slow_phase_min=%.1f slow_phase_max=%.1f", ph_min, ph_max);
	printf(" samples=%lu stall_max_ms=%.0f\n", run.nsamples, run.stall_max_ms);
}

static int ready_announce(void)
{
	char line[128], tmpname[PATH_MAX];
	FILE *f;

	snprintf(line, sizeof(line), "READY pid=%d addr=%p len=%lu\n",
		 run.pid ? (int)run.pid : (int)getpid(), run.pages[0], run.npages * PAGE);
	fputs(line, stdout);
	fflush(stdout);
	if (!run.o.ready)
		return 0;
	/* Whole or not at all, for a script that polls for it. */
	if (snprintf(tmpname, sizeof(tmpname), "%s.tmp", run.o.ready) >= (int)sizeof(tmpname))
		return -ENAMETOOLONG;
	f = fopen(tmpname, "w");
	if (!f)
		return -errno;
	fputs(line, f);
	if (fclose(f) || rename(tmpname, run.o.ready))
		return -errno;
	return 0;
}

/* The workload's process times: ours, or QEMU's from /proc. */
static void usage_get(struct rusage *ru)
{
	unsigned long ut = 0, st = 0;
	char path[32], buf[1024], *p = NULL;
	long tck = sysconf(_SC_CLK_TCK);
	FILE *f;

	if (!run.o.qemu) {
		getrusage(RUSAGE_SELF, ru);
		return;
	}
	memset(ru, 0, sizeof(*ru));
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)run.pid);
	f = fopen(path, "r");
	if (f && fgets(buf, sizeof(buf), f))
		p = strrchr(buf, ')');
	/* After "pid (comm)": state is field 3, utime and stime 14 and 15. */
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
			&st) == 2) {
		ru->ru_utime.tv_sec = (time_t)(ut / tck);
		ru->ru_utime.tv_usec = (suseconds_t)(ut % tck * 1000000 / tck);
		ru->ru_stime.tv_sec = (time_t)(st / tck);
		ru->ru_stime.tv_usec = (suseconds_t)(st % tck * 1000000 / tck);
	}
	if (f)
		fclose(f);
}

static void go_wait(const sigset_t *usr1)
{
	while (!stop_req) {
		int s = sigwaitinfo(usr1, NULL);

		if (s == SIGUSR1)
			return;
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_stop };
	sigset_t usr1, all;
	struct rusage ru;
	pthread_t thr;
	unsigned long k, bad;
	int rc;

	if (parse_opts(argc, argv, &run.o)) {
		usage();
		return 2;
	}
	/* SIGUSR1 held from the start: one sent early is kept, not fatal. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (run.o.go_signal)
		sigprocmask(SIG_BLOCK, &usr1, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	rc = region_setup();
	if (rc) {
		fprintf(stderr, "hotset: %lu MiB: %s\n", run.o.size_mib, errname(-rc));
		return 1;
	}
	if (run.o.start_node >= 0 && region_move((int)run.o.start_node))
		return 1;
	rc = ready_announce();
	if (rc) {
		fprintf(stderr, "hotset: --ready %s: %s\n", run.o.ready, errname(-rc));
		return 1;
	}
	if (run.o.go_signal)
		go_wait(&usr1);

	if (run.o.qemu) {
		struct minivmm_state st;

		rc = hotset_qemu_stall_reset(&run.q);
		if (!rc)
			rc = hotset_qemu_state(&run.q, &st);
		if (rc) {
			fprintf(stderr, "hotset: the guest's state: %s\n", errname(-rc));
			return 1;
		}
		run.guest_pass0 = st.pass;
	}
	usage_get(&run.start_ru);
	clock_gettime(CLOCK_MONOTONIC, &run.t0);
	/* The signals are the main thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &usr1);
	rc = pthread_create(&thr, NULL, sampler, NULL);
	pthread_sigmask(SIG_SETMASK, &usr1, NULL);
	if (rc) {
		fprintf(stderr, "hotset: sampler thread: %s\n", errname(rc));
		return 1;
	}
	for (k = 0; k < run.o.phases && !stop_req; k++)
		phase_run(k);
	atomic_store(&run.sampler_stop, true);
	pthread_join(thr, NULL);
	if (run.sampler_err)
		fprintf(stderr, "hotset: move_pages (query): %s\n", errname(-run.sampler_err));

	bad = region_verify();
	printf("VERIFY pages=%lu bad=%lu\n", run.npages, bad);
	summary_print(k);
	usage_get(&ru);
	if (run.o.qemu)
		memset(&run.sampler_ru, 0, sizeof(run.sampler_ru));
	printf("RUSAGE utime_s=%.3f stime_s=%.3f phases_utime_s=%.3f phases_stime_s=%.3f"
	       " sampler_utime_s=%.3f sampler_stime_s=%.3f\n",
	       tv_s(&ru.ru_utime), tv_s(&ru.ru_stime),
	       tv_s(&ru.ru_utime) - tv_s(&run.start_ru.ru_utime),
	       tv_s(&ru.ru_stime) - tv_s(&run.start_ru.ru_stime),
	       tv_s(&run.sampler_ru.ru_utime), tv_s(&run.sampler_ru.ru_stime));
	fflush(stdout);
	return bad || run.sampler_err ? 1 : 0;
}
