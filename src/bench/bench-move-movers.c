/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The movers bench move times: libmemmig in this process, memmigd through
 * `memmig-cli move --wait` (a process of its own, as an operator runs it),
 * numactl's migratepages(8), and the two system calls underneath them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bench/bench.h"
#include "bench/bench-move.h"
#include "front/front.h"

#define MPOL_MF_MOVE_ 2
#define MPOL_MF_MOVE_ALL_ 4

int mover_memmig(struct memmig_ctx *ctx, const struct move_child *c, int from, int to,
		 unsigned int workers, struct move_sample *out)
{
	struct memmig_move_opts o = {
		.sz = sizeof(o), .pid = c->pid, .target_node = to,
		.strategy = MEMMIG_STRATEGY_KERNEL, .workers = workers,
		.from_nodes = &from, .nfrom_nodes = 1,
	};
	struct memmig_report_summary s = { .sz = sizeof(s) };
	struct memmig_report *rep = NULL;
	struct memmig_move *mv = NULL;
	double t0 = bench_now();
	int rc = memmig_move_new(ctx, &o, &mv);

	if (!rc)
		rc = memmig_move_start(mv);
	if (!rc)
		rc = memmig_move_wait(mv, &rep);
	out->s = bench_now() - t0;
	if (rep && memmig_report_get_summary(rep, &s) == 0) {
		out->plan_s = s.plan_s;
		out->query_s = s.query_s;
		out->kernel_s = s.copy_s;
		out->other_s = out->s - s.plan_s - s.query_s - s.copy_s;
		out->moved = s.bytes_moved;
	}
	memmig_report_unref(rep);
	memmig_move_unref(mv);
	return rc;
}

bool mover_memmigd_up(void)
{
	int fd = cli_unix_connect(cli_global.socket);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Runs argv with its stdout into *text (NULL: to /dev/null); the exit
 * status, or -errno.  posix_spawn, as a shell starts a command: a fork of
 * this process would copy its page tables, a cost in the command's wall
 * time that the command does not have when an operator runs it. */
static int run_prog(char *const argv[], char **text)
{
	posix_spawn_file_actions_t fa;
	int fds[2], status, rc;
	size_t len = 0, cap = 0;
	char *buf = NULL;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	rc = posix_spawn_file_actions_init(&fa);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	if (!rc)
		rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc) {
		close(fds[0]);
		return -rc;
	}
	for (;;) {
		ssize_t r;

		if (len + 1 >= cap) {
			char *b = realloc(buf, cap = cap ? cap * 2 : 4096);

			if (!b)
				break;
			buf = b;
		}
		r = read(fds[0], buf + len, cap - len - 1);
		if (r <= 0 && !(r < 0 && errno == EINTR))
			break;
		len += r > 0 ? (size_t)r : 0;
	}
	close(fds[0]);
	if (buf)
		buf[len] = 0;
	if (waitpid(pid, &status, 0) < 0) {
		free(buf);
		return -ECHILD;
	}
	if (text)
		*text = buf;
	else
		free(buf);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -EINTR;
}

static double json_num(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : 0;
}

/* The ended job `move --wait --json` printed: memmigd's side of the time. */
static int read_job(const char *text, struct move_sample *out)
{
	struct json_object *job = text ? json_tokener_parse(text) : NULL, *rep, *res;
	int rc = -EPROTO;

	if (job && json_object_object_get_ex(job, "report", &rep) &&
	    json_object_is_type(rep, json_type_object)) {
		out->plan_s = json_num(rep, "plan_s");
		out->query_s = json_num(rep, "query_s");
		out->kernel_s = json_num(rep, "copy_s");
		out->s = json_num(job, "elapsed_s") + out->plan_s;
		out->other_s = out->s - out->plan_s - out->query_s - out->kernel_s;
		out->moved = (uint64_t)json_num(job, "bytes_moved");
		rc = json_object_object_get_ex(job, "result", &res) &&
		     !strcmp(json_object_get_string(res), "OK") ? 0 : -EIO;
	}
	json_object_put(job);
	return rc;
}

/* memmig-cli, the program an operator runs (beside this one, else in
 * bindir); NULL when it is not there. */
static char *cli_program(void)
{
	static char path[4096];

	return path[0] || !cli_program_path("memmig-cli", path, sizeof(path)) ? path : NULL;
}

int mover_memmigd(const struct move_child *c, int from, int to, unsigned int workers,
		  struct move_sample *out)
{
	char pid[16], src[16], node[16], threads[16], *text = NULL;
	char *argv[] = { cli_program(), "-q", "--socket", (char *)cli_global.socket, "move",
			 "--pid", pid, "--from", src, "--to-node", node, "--strategy", "kernel",
			 "--threads", threads, "--wait", "--json", NULL };
	double t0;
	int rc;

	if (!argv[0])
		return -ENOENT;
	snprintf(pid, sizeof(pid), "%d", c->pid);
	snprintf(src, sizeof(src), "%d", from);
	snprintf(node, sizeof(node), "%d", to);
	snprintf(threads, sizeof(threads), "%u", workers);
	t0 = bench_now();
	rc = run_prog(argv, &text);
	out->wall_s = bench_now() - t0;
	if (rc >= 0)
		rc = read_job(text, out) ? -EIO : rc ? -EIO : 0;
	free(text);
	return rc;
}

double mover_cli_start_s(void)
{
	char *argv[] = { cli_program(), "--version", NULL };
	double v[5];

	if (!argv[0])
		return 0;
	for (int i = 0; i < 5; i++) {
		double t0 = bench_now();

		if (run_prog(argv, NULL) != 0)
			return 0;
		v[i] = bench_now() - t0;
	}
	return bench_median(v, 5);
}

int mover_migratepages(const struct move_child *c, int from, int to,
		       struct move_sample *out)
{
	char pid[16], f[16], t[16];
	char *argv[] = { "migratepages", pid, f, t, NULL };
	double t0;
	int rc;

	snprintf(pid, sizeof(pid), "%d", c->pid);
	snprintf(f, sizeof(f), "%d", from);
	snprintf(t, sizeof(t), "%d", to);
	t0 = bench_now();
	rc = run_prog(argv, NULL);
	out->s = bench_now() - t0;
	return rc == 0 ? 0 : rc < 0 ? rc : -EIO;
}

/* As root moves another process's pages: shared ones too, where allowed. */
static long move_pages_all(pid_t pid, size_t n, void **addr, const int *nodes, int *st)
{
	long rc = syscall(SYS_move_pages, pid, n, addr, nodes, st, MPOL_MF_MOVE_ALL_);

	if (rc < 0 && errno == EPERM)
		rc = syscall(SYS_move_pages, pid, n, addr, nodes, st, MPOL_MF_MOVE_);
	return rc < 0 ? -errno : rc;
}

/* One call over every 4 KiB page of the buffer, as a simple caller would. */
int mover_move_pages(const struct move_child *c, int to, struct move_sample *out)
{
	size_t n = c->len / MEMMIG_PAGE_SIZE;
	void **addr = malloc(n * sizeof(*addr));
	int *nodes = malloc(n * sizeof(*nodes)), *st = malloc(n * sizeof(*st));
	long rc = -ENOMEM;

	if (addr && nodes && st) {
		double t0;

		for (size_t i = 0; i < n; i++) {
			addr[i] = (void *)(uintptr_t)(c->addr + i * MEMMIG_PAGE_SIZE);
			nodes[i] = to;
		}
		t0 = bench_now();
		rc = move_pages_all(c->pid, n, addr, nodes, st);
		out->s = bench_now() - t0;
	}
	free(addr);
	free(nodes);
	free(st);
	return rc < 0 ? (int)rc : 0;
}

int mover_migrate_pages(const struct move_child *c, int from, int to,
			struct move_sample *out)
{
	unsigned long old = 1UL << from, new = 1UL << to;
	double t0 = bench_now();
	long rc = syscall(SYS_migrate_pages, c->pid, sizeof(old) * 8 + 1, &old, &new);

	out->s = bench_now() - t0;
	return rc < 0 ? -errno : 0;
}
