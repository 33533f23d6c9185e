/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process bench move moves: a forked child whose buffer is faulted
 * under a bind policy on one node, then left to the default policy, as a
 * guest's RAM would be.  It checksums its data when asked, so every case
 * proves that the movers lost nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench-move.h"

#define MPOL_DEFAULT_ 0
#define MPOL_BIND_ 2
#define SEED 0x6d6f7665ULL

struct hello {
	uint64_t addr;
	int64_t err;		/* 0 or -errno: the child could not set up */
	uint64_t sum;
};

static bool full_io(ssize_t (*io)(int, void *, size_t), int fd, void *p, size_t n)
{
	for (size_t done = 0; done < n; ) {
		ssize_t r = io(fd, (char *)p + done, n - done);

		if (r <= 0 && !(r < 0 && errno == EINTR))
			return false;
		done += r > 0 ? (size_t)r : 0;
	}
	return true;
}

static ssize_t write_io(int fd, void *p, size_t n)
{
	return write(fd, p, n);
}

static bool put(int fd, const void *p, size_t n)
{
	return full_io(write_io, fd, (void *)p, n);
}

static bool get(int fd, void *p, size_t n)
{
	return full_io(read, fd, p, n);
}

/* The child's set-up: 2 MiB-aligned, THP-advised or not, faulted on node. */
static int child_fill(size_t len, bool thp, int node, uint8_t **out)
{
	unsigned long mask = 1UL << node;
	size_t map = len + MEMMIG_UNIT_SIZE;
	uint8_t *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	p = (uint8_t *)(((uintptr_t)p + MEMMIG_UNIT_SIZE - 1) & ~(uintptr_t)(MEMMIG_UNIT_SIZE - 1));
	if (madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) && thp)
		return -errno;
	if (syscall(SYS_set_mempolicy, MPOL_BIND_, &mask, sizeof(mask) * 8 + 1))
		return -errno;
	bench_fill(p, len, SEED);
	if (syscall(SYS_set_mempolicy, MPOL_DEFAULT_, NULL, 0))
		return -errno;
	*out = p;
	return 0;
}

static void child_main(int in, int out, size_t len, bool thp, int node)
{
	struct hello h = { 0 };
	uint8_t *p = NULL;
	char cmd;

	h.err = child_fill(len, thp, node, &p);
	if (!h.err) {
		h.addr = (uintptr_t)p;
		h.sum = bench_checksum(p, len);
	}
	if (!put(out, &h, sizeof(h)) || h.err)
		_exit(1);
	while (get(in, &cmd, 1) && cmd == 'c') {
		uint64_t sum = bench_checksum(p, len);

		if (!put(out, &sum, sizeof(sum)))
			break;
	}
	_exit(0);
}

int move_child_start(struct move_child *c, size_t len, bool thp, int node)
{
	int down[2], up[2];
	struct hello h;

	*c = (struct move_child){ .pid = -1, .to_child = -1, .from_child = -1, .len = len };
	if (node < 0 || node >= 64)
		return -EINVAL;
	if (pipe2(down, O_CLOEXEC))
		return -errno;
	if (pipe2(up, O_CLOEXEC)) {
		close(down[0]);
		close(down[1]);
		return -errno;
	}
	fflush(NULL);
	c->pid = fork();
	if (c->pid == 0) {
		close(down[1]);
		close(up[0]);
		child_main(down[0], up[1], len, thp, node);
	}
	close(down[0]);
	close(up[1]);
	c->to_child = down[1];
	c->from_child = up[0];
	if (c->pid < 0 || !get(c->from_child, &h, sizeof(h)) || h.err) {
		int rc = c->pid < 0 ? -errno : h.err ? (int)h.err : -ECHILD;

		move_child_stop(c);
		return rc;
	}
	c->addr = h.addr;
	c->sum = h.sum;
	return 0;
}

int move_child_check(struct move_child *c)
{
	uint64_t sum;

	if (!put(c->to_child, "c", 1) || !get(c->from_child, &sum, sizeof(sum)))
		return -ECHILD;
	return sum == c->sum ? 0 : -EIO;
}

void move_child_stop(struct move_child *c)
{
	if (c->to_child >= 0)
		close(c->to_child);	/* EOF: the child exits */
	if (c->from_child >= 0)
		close(c->from_child);
	if (c->pid > 0)
		waitpid(c->pid, NULL, 0);
	c->pid = -1;
	c->to_child = c->from_child = -1;
}

int move_child_pages_on(const struct move_child *c, int node, uint64_t *pages)
{
	size_t n = c->len / MEMMIG_PAGE_SIZE;
	void **addr = malloc(n * sizeof(*addr));
	int *st = malloc(n * sizeof(*st));
	long rc = -ENOMEM;

	*pages = 0;
	if (addr && st) {
		for (size_t i = 0; i < n; i++)
			addr[i] = (void *)(uintptr_t)(c->addr + i * MEMMIG_PAGE_SIZE);
		rc = syscall(SYS_move_pages, c->pid, n, addr, NULL, st, 0) < 0 ? -errno : 0;
		for (size_t i = 0; !rc && i < n; i++)
			*pages += st[i] == node;
	}
	free(addr);
	free(st);
	return (int)rc;
}

uint64_t move_child_thp_bytes(const struct move_child *c)
{
	char path[64], line[256];
	unsigned long long start, end, kb;
	bool in = false;
	uint64_t bytes = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", c->pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx ", &start, &end) == 2)
			in = start < c->addr + c->len && end > c->addr;
		else if (in && sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
			bytes += kb * 1024;
	}
	if (f)
		fclose(f);
	return bytes;
}
