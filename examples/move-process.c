/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Embedding snippet: move another process's memory to a NUMA node, as a VMM
 * or an orchestrator moves a guest's QEMU (memmig_move_*).  Here the process
 * is a child holding 64 MiB of its own; it checks its bytes after the move.
 *   cc move-process.c $(pkg-config --cflags --libs libmemmig)
 *   ./move-process [NODE]		(default: node 0)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memmig.h>

#define CHILD_LEN (64UL << 20)

static uint64_t checksum(const uint64_t *p, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum = sum * 31 + p[i];
	return sum;
}

/* The process to move: it fills its memory, says so, waits for the word to
 * check it again, and exits 0 only if no byte changed. */
static int child(int ready_fd, int go_fd)
{
	size_t n = CHILD_LEN / sizeof(uint64_t);
	uint64_t *mem, before;
	char c = 'r';

	mem = mmap(NULL, CHILD_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < n; i++)
		mem[i] = i * 0x9e3779b97f4a7c15ULL;
	before = checksum(mem, n);
	if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 1)
		return 1;
	return checksum(mem, n) == before ? 0 : 2;
}

static int move_it(struct memmig_ctx *ctx, pid_t pid, int node)
{
	struct memmig_move_opts opts = {
		.sz = sizeof(opts),
		.pid = pid,
		.target_node = node,	/* every mapping: ranges NULL */
	};
	struct memmig_report_summary sum = { .sz = sizeof(sum) };
	struct memmig_report *rep = NULL;
	struct memmig_move *mv;
	int rc;

	rc = memmig_move_new(ctx, &opts, &mv);
	if (rc < 0) {
		fprintf(stderr, "memmig_move_new: %s\n", strerror(-rc));
		return rc;
	}
	/* Plan on this thread first, so that a bad request fails here. */
	rc = memmig_move_plan(mv);
	if (!rc)
		rc = memmig_move_start(mv);
	if (!rc)
		rc = memmig_move_wait(mv, &rep);
	if (rep && !memmig_report_get_summary(rep, &sum))
		printf("pid %d: %llu of %llu bytes moved to node %d in %.3f s, "
		       "%llu pages on it after, %llu not moved\n",
		       (int)pid, (unsigned long long)sum.bytes_moved,
		       (unsigned long long)sum.bytes_total, node, sum.total_s,
		       (unsigned long long)sum.pages_verified_on_target,
		       (unsigned long long)sum.pages_failed);
	if (rc < 0)
		fprintf(stderr, "move: %s\n", strerror(-rc));
	memmig_report_unref(rep);
	memmig_move_unref(mv);
	return rc;
}

int main(int argc, char **argv)
{
	int node = argc > 1 ? atoi(argv[1]) : 0;
	int ready[2], go[2], rc, status;
	struct memmig_ctx *ctx;
	pid_t pid;
	char c;

	rc = memmig_ctx_new(&ctx);
	if (rc < 0) {
		fprintf(stderr, "memmig_ctx_new: %s\n", strerror(-rc));
		return 1;
	}
	if (pipe(ready) || pipe(go))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(child(ready[1], go[0]));
	if (read(ready[0], &c, 1) != 1)
		return 1;
	rc = move_it(ctx, pid, node);
	/* Whatever the move did, the child checks its bytes and ends. */
	if (write(go[1], &c, 1) != 1 || waitpid(pid, &status, 0) != pid)
		return 1;
	printf("the child's bytes after the move: %s\n",
	       WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "intact" : "CHANGED");
	memmig_ctx_unref(ctx);
	return !rc && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
